"""Turn a built and solved abstraction into a compact bot folder (:mod:`bot.abstraction.compact`).

For each bucketed round this extracts what maps a hand's feature to its bucket and checks it
against the built table on *every* class before anything is written:

* percentile rounds (``ehs2``): the largest cached feature value of each bucket, and that the
  buckets' value ranges do not overlap (so a binary search reproduces the table);
* ``ke`` rounds: the k-means centres (and, for a two-level fit of thousands of buckets, the
  coarse centres and how the buckets split among them) and empty-cluster moves, obtained by
  running the build's seeded k-means again on the cached histograms
  (:func:`training.abstraction.kmeans.kmeans_fit`; deterministic), and that its buckets equal
  the built table's.

Usage (the shipped hold'em bot)::

    python -m training.abstraction.compact --abstraction abstraction_3e6_ke \\
        --out bot/shipped/holdem --name pokerbot-hulh-ke --description "..."
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from bot.abstraction.compact import write_compact
from bot.abstraction.cost import HIST_BINS
from bot.abstraction.runtime_buckets import (
    CentreBuckets,
    PercentileBuckets,
    RoundBuckets,
    cdf_vectors,
)
from bot.abstraction.spec import SPECS, AbstractionSpec, bucket_path, policy_path, spec_dir
from training.abstraction.build import round_features
from training.abstraction.kmeans import KMeansFit, kmeans_fit, l2_metric


def percentile_upper(feature: np.ndarray, table: np.ndarray, count: int, chunk: int = 8_000_000) -> np.ndarray:
    """Largest feature value (float32) of each of ``count`` percentile buckets; raises
    ValueError when a bucket is empty or two buckets' value ranges overlap (then no threshold
    search can reproduce the table)."""
    low = np.full(count, np.inf, dtype=np.float64)
    high = np.full(count, -np.inf, dtype=np.float64)
    for start in range(0, len(table), chunk):
        _min_max(np.asarray(feature[start : start + chunk]), np.asarray(table[start : start + chunk]), low, high)
    if np.isinf(high).any():
        raise ValueError(f"bucket {int(np.flatnonzero(np.isinf(high))[0])} is empty")
    overlap = np.flatnonzero(high[:-1] >= low[1:])
    if len(overlap):
        b = int(overlap[0])
        raise ValueError(f"buckets {b} and {b + 1} overlap: [{low[b]}, {high[b]}] vs [{low[b + 1]}, {high[b + 1]}]")
    return high.astype(np.float32)


@njit(cache=True)
def _min_max(values, labels, low, high):
    for i in range(values.shape[0]):
        b = labels[i]
        v = values[i]
        if v < low[b]:
            low[b] = v
        if v > high[b]:
            high[b] = v


def centre_buckets(spec: AbstractionSpec, r: int, table: np.ndarray, fit: KMeansFit | None = None) -> CentreBuckets:
    """The k-means centres and moves of a ``ke`` round, refitted exactly as the build fits them
    (same features, seed and schedule: :func:`refit`) unless ``fit`` is given; raises ValueError
    unless they reproduce ``table`` on every class. The checked result is cached next to the
    tables (``centres_r<round>.npz``), so the refit runs once."""
    cache = spec_dir(spec) / f"centres_r{r}.npz"
    if cache.exists():
        with np.load(cache) as data:
            return CentreBuckets.from_arrays({name: data[name] for name in data.files})
    fit = fit if fit is not None else refit(spec, r)
    differ = int(np.count_nonzero(fit.buckets != np.asarray(table)))
    if differ:
        raise ValueError(f"{spec.name} round {r}: the refitted k-means gives {differ:,} of {len(table):,} classes another bucket")
    coarse = None if fit.coarse_centres is None else np.asarray(fit.coarse_centres, dtype=np.float32)
    buckets = CentreBuckets(np.asarray(fit.centres, dtype=np.float32), np.array([m[0] for m in fit.moves], dtype=np.int64),
                            np.array([m[1] for m in fit.moves], dtype=np.float32).reshape(len(fit.moves), HIST_BINS),
                            np.array([m[2] for m in fit.moves], dtype=np.int64), coarse, fit.coarse_offsets)  # fmt: skip
    tmp = cache.with_name(f"{cache.stem}.tmp.npz")
    np.savez(tmp, **buckets.to_arrays())
    os.replace(tmp, cache)
    return buckets


def refit(spec: AbstractionSpec, r: int) -> KMeansFit:
    """The build's k-means of ``ke`` round ``r`` run again on the cached histograms (the same
    call as :func:`training.abstraction.build._bucket_round` makes, hence the same result)."""
    features = round_features(spec.load_game(), r, hist_bins=HIST_BINS)
    return kmeans_fit(features.hist, features.weight, spec.buckets[r], l2_metric(HIST_BINS, cdf_vectors), seed=r)


def compact_rounds(spec: AbstractionSpec, log=print) -> tuple[RoundBuckets | None, ...]:
    """Play-time bucketing of every round of a built abstraction, each checked on all classes."""
    game = spec.load_game()
    rounds: list[RoundBuckets | None] = [None]
    for r in range(1, game.num_rounds):
        method, count = spec.round_methods[r], spec.buckets[r]
        table = np.load(bucket_path(spec, r), mmap_mode="r")
        started = time.monotonic()
        if method == "ehs2":
            rounds.append(PercentileBuckets(percentile_upper(round_features(game, r).ehs2, table, count)))
        elif method == "ke":
            rounds.append(centre_buckets(spec, r, table))
        else:
            raise ValueError(f"{spec.name} round {r}: method {method!r} has no play-time bucketing")
        log(f"round {r} ({method}, {count} buckets): reproduces all {len(table):,} classes ({time.monotonic() - started:.0f} s)")
    if spec.round_methods[0] != "lossless":
        raise ValueError(f"{spec.name}: play-time bucketing needs a lossless preflop")
    return tuple(rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstraction", required=True, choices=sorted(SPECS))
    parser.add_argument("--policy", type=Path, help="average-strategy .npy (default: the published one)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--description", required=True)
    parser.add_argument("--strength", default="{}", help='JSON object of measured figures, e.g. {"vs abstraction_3e6": "+20 mbb/g"}')
    args = parser.parse_args(argv)
    try:
        strength = json.loads(args.strength)
    except json.JSONDecodeError as error:
        parser.error(f"--strength is not a JSON object: {error}")
    spec = SPECS[args.abstraction]
    policy = args.policy or policy_path(spec)
    if not policy.is_file():
        parser.error(f"{policy}: no solved policy (solve {spec.name} first, or give --policy)")
    average = np.load(policy, mmap_mode="r")
    rounds = compact_rounds(spec)
    manifest = {"name": args.name, "description": args.description, "strength": strength,
                "source": spec.name}  # fmt: skip
    path = write_compact(args.out, spec.load_game(), rounds, spec.round_methods, np.asarray(average), manifest)
    sizes = {p.name: p.stat().st_size for p in sorted(args.out.iterdir())}
    print(f"wrote {path}: " + ", ".join(f"{n} {s / 1e6:.2f} MB" for n, s in sizes.items()))


if __name__ == "__main__":
    main()
