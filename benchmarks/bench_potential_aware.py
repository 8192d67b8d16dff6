"""Pruned greedy-EMD rate of a potential-aware round on its real next-round histograms, the
figure behind ``EMD_DISTANCES_PER_SECOND`` (``bot/abstraction_cost.py``) for each ``pa`` round:

    NUMBA_NUM_THREADS=1 python benchmarks/bench_potential_aware.py abstraction_3e6_pa 1     # flop
    NUMBA_NUM_THREADS=1 python benchmarks/bench_potential_aware.py abstraction_3e6_pa2 2    # turn
    NUMBA_NUM_THREADS=1 python benchmarks/bench_potential_aware.py --lift   # 518^2 lifted distances

It needs the round's histograms (``<name>/pa_hist_r<round>.npy``, written early in the build)
and the next round's bucket table; 2,000 sampled classes are assigned to 518 centres that are
other sampled classes' histograms (point-like centres: fitted ones are more spread and about
half as fast), with the same ground distance the build uses.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_abstraction import machine  # noqa: E402
from bot.abstraction_spec import SPECS, bucket_path, spec_dir  # noqa: E402
from training.abstraction.build import _next_round_ground  # noqa: E402
from training.abstraction.potential import emd_metric, lift  # noqa: E402


def emd_rate(name: str, round_index: int, points: int = 2_000, centres: int = 518) -> None:
    spec = SPECS[name]
    hist_path = spec_dir(spec) / f"pa_hist_r{round_index}.npy"
    if not hist_path.exists() or not bucket_path(spec, round_index + 1).exists():
        raise SystemExit(f"{hist_path} or the round {round_index + 1} table is missing: start the build of {name} first")
    game = spec.load_game()
    metric = emd_metric(*_next_round_ground(spec, game, round_index + 1))
    hist = np.load(hist_path, mmap_mode="r")
    rows = np.sort(np.random.default_rng(0).choice(hist.shape[0], points + centres, replace=False))
    sample = metric.prepare(hist[rows])
    fixed = np.stack([metric.as_centre(p, metric.centre_dim) for p in sample[:centres]])
    metric.assign(sample[:5], fixed)  # compile
    t = time.perf_counter()
    metric.assign(sample[centres:], fixed)
    seconds = time.perf_counter() - t
    print(machine())
    print(f"{name} round {round_index}: greedy EMD assignment on real histograms ({hist.shape[1]} next cards, "
          f"{metric.centre_dim} next-round buckets): {points * centres / seconds / 1e6:.2f} M point-centre pairs/s "
          f"({points / seconds:,.0f} classes/s)")  # fmt: skip


def lift_seconds(k: int = 518) -> None:
    """Time of :func:`lift` on ``k`` dense random mean histograms (a ``pa`` round's centres as
    the round before sees them) over ``k`` next-round buckets with 1-D ground distances."""
    rng = np.random.default_rng(0)
    centres, centroids = rng.dirichlet(np.full(k, 0.05), size=k), np.sort(rng.random(k))[:, None]
    lift(centres[:3], centroids, 1)  # compile
    t = time.perf_counter()
    lift(centres, centroids, 1)
    print(machine())
    print(f"lift: {k}x{k} greedy EMDs between dense mean histograms in {time.perf_counter() - t:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", choices=[n for n, s in SPECS.items() if "pa" in s.round_methods])
    parser.add_argument("round", nargs="?", type=int)
    parser.add_argument("--lift", action="store_true", help="time the lifted ground distances instead")
    args = parser.parse_args()
    if args.lift:
        lift_seconds()
    elif args.name is None or args.round is None:
        parser.error("give an abstraction name and a potential-aware round, or --lift")
    else:
        emd_rate(args.name, args.round)


if __name__ == "__main__":
    main()
