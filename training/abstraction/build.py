"""Build (once, cached on disk) the bucket tables of a named abstraction.

``build_abstraction(spec)`` computes the per-round features each method needs (shared by every
size of a game and memory-mapped: the HULH river has 123,156,254 classes), buckets every round
by its method (:mod:`bot.abstraction.spec`), last round first so that a potential-aware round
finds the next round's buckets, and writes ``buckets_r<round>.npy`` and ``meta.json`` under the
abstraction's directory. A round whose recipe (method, bucket count, and for ``pa`` the next
round's recipe) equals a built round of another abstraction of the same game is hard-linked, not
rebuilt. A ``pa`` round over a ``pa`` round (``abstraction_3e6_pa2``'s flop over its turn) takes
as ground distance the lifted distances between the next round's mean histograms. Every file is
written to a temporary name and renamed, so an interrupted build leaves no half file behind and
is simply re-run; each finished round's table is recorded beside it with its recipe
(``buckets_r<round>.json``), so a re-run after an interruption (Ctrl-C during abstraction_3e8's
flop, after its ~25-50 minute river k-means) keeps the rounds it finished. The build fails
unless every round has exactly its named number of non-empty buckets.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bot.abstraction.cost import HIST_BINS, OCHS_CLUSTERS, PA_BATCH, PA_STEPS
from bot.abstraction.spec import SPECS, AbstractionSpec, abstractions_dir, bucket_path, spec_dir
from protocol.files import atomic_write, atomic_write_text, temporary_name
from protocol.gamedef import Game
from protocol.isomorphism import round_indexer
from training.abstraction.buckets import percentile_buckets
from training.abstraction.features import (
    OCHS_SCALE,
    RoundFeatures,
    compute_round_features,
    hole_combinations,
)
from training.abstraction.kmeans import cdf_vectors, kmeans_buckets, l2_metric
from training.abstraction.potential import emd_metric, lift, mean_histograms, next_round_histograms

FORMAT_VERSION = 1
FEATURE_NAMES = ("ehs", "ehs2", "weight")
PREFLOP_RUNOUTS = 50_000
"""Final boards sampled per preflop hand for the opponent clusters (HULH has 2.6M)."""

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; phase names what is being built."""


def _stem(game: Game) -> str:
    return game.name.split(".")[0]


def features_paths(game: Game, round_index: int, hist_bins: int = 0, ochs: int = 0) -> dict[str, Path]:
    """Cache files of a round's features, plus its ``hist_bins``-bin histograms and its OCHS
    against ``ochs`` opponent clusters when those are > 0."""
    base = abstractions_dir() / "features"
    stem = f"{_stem(game)}_r{round_index}"
    paths = {f: base / f"{stem}_{f}_v{FORMAT_VERSION}.npy" for f in FEATURE_NAMES}
    if hist_bins:
        paths["hist"] = base / f"{stem}_hist{hist_bins}_v{FORMAT_VERSION}.npy"
    if ochs:
        paths["ochs"] = base / f"{stem}_ochs{ochs}_v{FORMAT_VERSION}.npy"
    return paths


def cached_feature_rounds(spec: AbstractionSpec) -> set[int]:
    """Rounds of ``spec`` whose features are already on disk (for the cost estimate)."""
    game = spec.load_game()
    return {r for r in range(game.num_rounds) if all(p.exists() for p in _round_paths(spec, game, r).values())}


def _round_paths(spec: AbstractionSpec, game: Game, r: int) -> dict[str, Path]:
    method = spec.round_methods[r]
    return features_paths(game, r, HIST_BINS if method == "ke" else 0, _num_opponent_clusters(game) if method == "ochs" else 0)


def _atomic_npy(path: Path, array: np.ndarray) -> None:
    atomic_write(path, lambda handle: np.save(handle, array))


def round_features(game: Game, round_index: int, progress: Progress | None = None, hist_bins: int = 0,
                   ochs: bool = False) -> RoundFeatures:  # fmt: skip
    """E[HS], E[HS^2], weights (and, on request, final-HS histograms and OCHS) of a round's
    classes, computed once and cached (memory-mapped)."""
    clusters = _num_opponent_clusters(game) if ochs else 0
    paths = features_paths(game, round_index, hist_bins, clusters)
    if not all(p.exists() for p in paths.values()):
        labels = opponent_clusters(game, progress) if ochs else None
        size = round_indexer(game, round_index).size
        tmp = {f: temporary_name(p) for f, p in paths.items()}
        paths["ehs"].parent.mkdir(parents=True, exist_ok=True)
        kinds = {"ehs": (np.float32, (size,)), "ehs2": (np.float32, (size,)), "weight": (np.uint8, (size,)),
                 "hist": (np.uint16, (size, hist_bins)), "ochs": (np.uint16, (size, clusters))}  # fmt: skip
        arrays = {f: np.lib.format.open_memmap(tmp[f], mode="w+", dtype=kinds[f][0], shape=kinds[f][1]) for f in paths}
        phase = f"features {_stem(game)} round {round_index}"
        compute_round_features(game, round_index, RoundFeatures(**arrays),
                               None if progress is None else lambda d, t: progress(phase, d, t), labels)  # fmt: skip
        for f, array in arrays.items():
            array.flush()
            del array
            os.replace(tmp[f], paths[f])
    return RoundFeatures(**{f: np.load(p, mmap_mode="r") for f, p in paths.items()})


def _num_opponent_clusters(game: Game) -> int:
    return min(OCHS_CLUSTERS, round_indexer(game, 0).size)


def opponent_clusters(game: Game, progress: Progress | None = None) -> np.ndarray:
    """OCHS's opponent cluster of every hole of :func:`hole_combinations` (int64).

    As in Johanson et al. 2013, the preflop classes are clustered (8 clusters, fewer when the
    game has fewer classes) by EMD between their final-HS histograms (k-means on CDFs, as
    ``ke``); the histograms come from ``PREFLOP_RUNOUTS`` seeded sampled final boards per hand.
    """
    count = _num_opponent_clusters(game)
    path = abstractions_dir() / "features" / f"{_stem(game)}_opponents{count}_v{FORMAT_VERSION}.npy"
    preflop = round_indexer(game, 0)
    if not path.exists():
        out = RoundFeatures(np.zeros(preflop.size, np.float32), np.zeros(preflop.size, np.float32),
                            np.zeros(preflop.size, np.uint8), np.zeros((preflop.size, HIST_BINS), np.uint16))  # fmt: skip
        phase = f"opponent clusters {_stem(game)}"
        compute_round_features(game, 0, out, None if progress is None else lambda d, t: progress(phase, d, t),
                               max_runouts=PREFLOP_RUNOUTS)  # fmt: skip
        _atomic_npy(path, kmeans_buckets(out.hist, out.weight, count, l2_metric(HIST_BINS, cdf_vectors)).astype(np.int64))
    return np.load(path)[preflop.index_batch(hole_combinations(game))]


def ochs_vectors(rows: np.ndarray) -> np.ndarray:
    """Stored OCHS rows as float32 win rates."""
    return np.asarray(rows, dtype=np.float32) / OCHS_SCALE


def _recipe(spec: AbstractionSpec, r: int) -> tuple:
    """What determines round ``r``'s table: game, method, count (and the next round's for pa)."""
    own = (spec.game, r, spec.round_methods[r], spec.buckets[r])
    return own + _recipe(spec, r + 1) if spec.round_methods[r] == "pa" else own


def _reuse(spec: AbstractionSpec, r: int) -> bool:
    """Hard-link round ``r``'s table from a built abstraction with the same recipe, if any."""
    for other in SPECS.values():
        if other.name == spec.name or other.game != spec.game or len(other.buckets) != len(spec.buckets):
            continue
        source = bucket_path(other, r)
        if _recipe(other, r) == _recipe(spec, r) and (spec_dir(other) / "meta.json").exists() and source.exists():
            target = bucket_path(spec, r)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            os.link(source, target)
            return True
    return False


def _recipe_path(spec: AbstractionSpec, r: int) -> Path:
    return bucket_path(spec, r).with_suffix(".json")


def _recipe_record(spec: AbstractionSpec, r: int) -> dict:
    """What ``buckets_r<round>.json`` holds for a round built by this code."""
    return {"format": FORMAT_VERSION, "recipe": list(_recipe(spec, r))}


def _finished(spec: AbstractionSpec, r: int) -> bool:
    """Round ``r``'s table of ``spec`` was written whole by a build of this recipe and format
    (an earlier, interrupted build of the same abstraction)."""
    try:
        recorded = json.loads(_recipe_path(spec, r).read_text())
    except (OSError, ValueError):
        return False
    return recorded == _recipe_record(spec, r) and bucket_path(spec, r).exists()


def build_abstraction(spec: AbstractionSpec, progress: Progress | None = None, force: bool = False) -> Path:
    """Build the bucket tables of ``spec`` (a no-op when they exist); returns its directory."""
    directory = spec_dir(spec)
    meta_path = directory / "meta.json"
    if meta_path.exists() and not force:
        return directory
    game = spec.load_game()
    started = time.monotonic()
    effective: dict[int, int] = {}
    for r in reversed(range(game.num_rounds)):
        count, method = spec.buckets[r], spec.round_methods[r]
        if count is None:
            effective[r] = round_indexer(game, r).size
            continue
        if force or not (_finished(spec, r) or _reuse(spec, r)):
            _atomic_npy(bucket_path(spec, r), _bucket_round(spec, game, r, progress))
        atomic_write_text(_recipe_path(spec, r), json.dumps(_recipe_record(spec, r)))
        table = np.load(bucket_path(spec, r), mmap_mode="r")
        effective[r] = int(np.count_nonzero(np.bincount(table, minlength=count)))
        if effective[r] != count:
            raise ValueError(f"{spec.name} round {r}: {effective[r]} non-empty buckets, not {count} ({method})")
    meta = {
        "format": FORMAT_VERSION,
        "name": spec.name,
        "game": game.name,
        "buckets": list(spec.buckets),
        "non_empty_buckets": [effective[r] for r in range(game.num_rounds)],
        "methods": list(spec.round_methods),
        "build_seconds": round(time.monotonic() - started, 1),
    }
    atomic_write_text(meta_path, json.dumps(meta, indent=2))
    return directory


def _bucket_round(spec: AbstractionSpec, game: Game, r: int, progress: Progress | None) -> np.ndarray:
    count, method = spec.buckets[r], spec.round_methods[r]
    phase = f"{method} k-means round {r}"
    report = None if progress is None else lambda d, t: progress(phase, d, t)
    first_level = {} if progress is None else {"coarse_progress": lambda d, t: progress(f"{phase}, first level", d, t)}
    if method == "ehs2":
        features = round_features(game, r, progress)
        return percentile_buckets(features.ehs2, features.weight, count)
    if method == "ke":
        features = round_features(game, r, progress, hist_bins=HIST_BINS)
        return kmeans_buckets(features.hist, features.weight, count, l2_metric(HIST_BINS, cdf_vectors), seed=r, progress=report,
                              **first_level)  # fmt: skip
    if method == "ochs":
        features = round_features(game, r, progress, ochs=True)
        metric = l2_metric(features.ochs.shape[1], ochs_vectors)
        return kmeans_buckets(features.ochs, features.weight, count, metric, seed=r, progress=report, **first_level)
    # pa: histograms over the next round's buckets, EMD with their distances as ground distance
    weight = round_features(game, r, progress).weight
    if progress is not None:
        progress(f"next-round ground distances round {r}", 0, 1)
    centroids, norm, ground = _next_round_ground(spec, game, r + 1)
    return kmeans_buckets(_pa_histograms(spec, game, r, progress), weight, count, emd_metric(centroids, norm, ground),
                          seed=r, batch=PA_BATCH, steps=PA_STEPS, chunk=200_000, progress=report, **first_level)  # fmt: skip


def _pa_histograms(spec: AbstractionSpec, game: Game, r: int, progress: Progress | None) -> np.ndarray:
    """Round ``r``'s packed histograms over round ``r + 1``'s buckets, computed once (memory-mapped)."""
    hist_path = spec_dir(spec) / f"pa_hist_r{r}.npy"
    if not hist_path.exists():
        if progress is not None:
            progress(f"next-round histograms round {r}", 0, 1)
        _atomic_npy(hist_path, next_round_histograms(game, r, np.load(bucket_path(spec, r + 1), mmap_mode="r")))
    return np.load(hist_path, mmap_mode="r")


def _next_round_ground(spec: AbstractionSpec, game: Game, r: int) -> tuple[np.ndarray, int, np.ndarray | None]:
    """Centroids of round ``r``'s buckets, the norm between them and, when round ``r`` is itself
    potential-aware, the ground distances :func:`training.abstraction.potential.lift` gives its
    buckets (None: the norm is the ground distance)."""
    table = np.load(bucket_path(spec, r), mmap_mode="r")
    if spec.round_methods[r] != "pa":
        return *_centroids(spec, game, r, table), None
    below, norm, ground = _next_round_ground(spec, game, r + 1)
    centres = mean_histograms(_pa_histograms(spec, game, r, None), table, round_features(game, r).weight,
                              spec.buckets[r], len(below))  # fmt: skip
    embed, lifted = lift(centres, below, norm, ground)
    return embed, norm, lifted


def _centroids(spec: AbstractionSpec, game: Game, r: int, table: np.ndarray, chunk: int = 2_000_000) -> tuple[np.ndarray, int]:
    """Weighted mean feature of each bucket of round ``r`` and the norm its method clusters by."""
    method, count = spec.round_methods[r], spec.buckets[r]
    features = round_features(game, r, hist_bins=HIST_BINS if method == "ke" else 0, ochs=method == "ochs")
    read, norm = {
        "ke": (lambda s: cdf_vectors(features.hist[s]), 1),
        "ochs": (lambda s: ochs_vectors(features.ochs[s]), 2),
        "ehs2": (lambda s: np.asarray(features.ehs2[s], dtype=np.float32)[:, None], 1),
    }[method]  # fmt: skip
    sums, mass = None, np.zeros(count)
    for start in range(0, len(table), chunk):
        s = slice(start, start + chunk)
        values, labels, w = read(s), np.asarray(table[s], dtype=np.int64), np.asarray(features.weight[s], dtype=np.float64)
        if sums is None:
            sums = np.zeros((count, values.shape[1]))
        for j in range(values.shape[1]):
            sums[:, j] += np.bincount(labels, weights=values[:, j] * w, minlength=count)
        mass += np.bincount(labels, weights=w, minlength=count)
    return sums / np.maximum(mass, 1e-12)[:, None], norm
