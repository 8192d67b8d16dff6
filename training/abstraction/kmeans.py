"""Weighted k-means that scales to 123M points and 51,800 clusters, with exactly k non-empty buckets.

Used for three features (``bot/abstraction/spec.py``): final-HS histograms (``ke``; EMD between
1-D histograms is the L1 distance between CDFs, approximated by L2 between CDF vectors so plain
k-means applies, as in Johanson et al. 2013), OCHS vectors (``ochs``, L2 as in Johanson et al.
2013) and next-round bucket histograms (``pa``, greedy EMD, :mod:`training.abstraction.potential`).
A :class:`Metric` supplies the distance kernels; this module does the rest:

* **Sampled fitting.** Centres are seeded by k-means++ (Arthur & Vassilvitskii 2007) on a
  weighted sample and refined by mini-batch k-means (Sculley 2010, "Web-scale k-means
  clustering": per-centre learning rate 1/count); only the final assignment touches every point,
  in chunks read from the memory-mapped features by a parallel numba kernel. Class weights (raw
  deals per class) drive the sampling.
* **Two levels for large k.** From ``TWO_LEVEL_MIN_K`` clusters on, points are first split into
  sqrt(k) coarse clusters and each coarse cluster is clustered again into a share of k
  proportional to its mass, so a point meets ~2 sqrt(k) centres instead of k (455 instead of
  51,800 for ``abstraction_3e8``'s river): hierarchical k-means, the ``methods.md`` §1.2 fallback.
* **Exactly k buckets.** k-means can leave clusters empty; each empty one then takes, from a
  cluster with more than one distinct point, the point farthest from its centre together with
  every point equal to it, until k clusters are used (or the points have fewer than k distinct
  values, which is an error: the feature cannot support the named size).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from bot.abstraction.cost import KMEANS_BATCH, KMEANS_STEPS, WHOLE_PASSES, two_level_split
from bot.abstraction.runtime_buckets import cdf_vectors

__all__ = ["KMeansFit", "Metric", "cdf_vectors", "kmeans_buckets", "kmeans_fit", "l2_metric"]


@dataclass(frozen=True)
class Metric:
    """How points are read and compared: ``prepare`` turns stored feature rows into float32
    points; ``embed`` maps points to vectors whose L2 distances guide k-means++ seeding (the
    points themselves for L2); the kernels (numba) assign points to their nearest centre
    (labels, distances) and move centres in a mini-batch step; ``as_centre`` turns a point into
    a centre row (``centre_dim`` columns)."""

    prepare: Callable[[np.ndarray], np.ndarray]
    embed: Callable[[np.ndarray], np.ndarray]
    assign: Callable  # (points, centres) -> (int64 [n], float64 [n])
    step: Callable  # (points, centres, counts) -> None
    as_centre: Callable  # (point, centre_dim) -> float32 [centre_dim]
    centre_dim: int


def l2_metric(dim: int, prepare: Callable[[np.ndarray], np.ndarray]) -> Metric:
    """Squared-L2 k-means on ``dim``-dimensional points."""
    return Metric(prepare, _identity, _l2_assign, _l2_step, lambda point, dim: point, dim)


@dataclass(frozen=True)
class KMeansFit:
    """A clustering and what assigns any other point the same bucket: the centres (bucket =
    nearest centre, first on ties, as :func:`_l2_assign` picks it; for a two-level fit, nearest
    coarse centre ``c`` first, then ``coarse_offsets[c]`` + the nearest of that coarse cluster's
    centres ``centres[coarse_offsets[c]:coarse_offsets[c + 1]]``) and the reassignments that
    filled empty clusters, in the order they were made: a point equal to ``point`` in bucket
    ``source`` went to ``target``. A shipped bot replays these at play time
    (:mod:`bot.abstraction.runtime_buckets`) instead of carrying the table."""

    buckets: np.ndarray  # uint16 (uint32 above 65,536 clusters) [rows]
    centres: np.ndarray  # float32 [k, centre_dim], in bucket order
    moves: tuple[tuple[int, np.ndarray, int], ...]  # (source, prepared point, target)
    coarse_centres: np.ndarray | None = None  # float32 [coarse, centre_dim] of a two-level fit
    coarse_offsets: np.ndarray | None = None  # int64 [coarse + 1]: each coarse cluster's first bucket


def kmeans_buckets(features: np.ndarray, weight: np.ndarray, k: int, metric: Metric, **schedule) -> np.ndarray:
    """Bucket (uint16, or uint32 above 65,536) of every row of ``features`` (memory-mapped is
    fine), ``k`` of them non-empty; raises ValueError when the rows have fewer distinct points.
    ``schedule``: :func:`kmeans_fit`'s ``seed``, ``batch``, ``steps``, ``chunk``, ``progress``,
    ``coarse_progress``."""
    return kmeans_fit(features, weight, k, metric, **schedule).buckets


def kmeans_fit(
    features: np.ndarray,
    weight: np.ndarray,
    k: int,
    metric: Metric,
    seed: int = 0,
    batch: int = KMEANS_BATCH,
    steps: int = KMEANS_STEPS,
    chunk: int = 1_000_000,
    progress: Callable[[int, int], None] | None = None,
    coarse_progress: Callable[[int, int], None] | None = None,
) -> KMeansFit:
    """:func:`kmeans_buckets` with the fitted centres and empty-cluster moves (same draws, same
    buckets: the seeded fit is deterministic). ``progress(done, total)`` counts the fit's steps,
    or for a two-level fit its coarse clusters refined; ``coarse_progress`` counts a two-level
    fit's first level (its steps over all the points) on a separate count, because one of its
    steps costs nothing like one refined cluster and a shared count would show an ETA of hours
    after the first (abstraction_3e8's river: ~3 minutes for the level, then ~227 clusters)."""
    n = features.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= {n} clusters, got {k}")
    rng = np.random.default_rng(seed)
    weight = np.asarray(weight, dtype=np.float64)
    coarse = two_level_split(k)
    labels = np.empty(n, dtype=np.int64)
    dist = np.empty(n, dtype=np.float64)
    report = progress or (lambda done, total: None)
    coarse_centres = coarse_offsets = None
    if coarse == 1:
        centres = _one_level(features, weight, k, metric, rng, batch, steps, chunk, labels, dist, report)
    else:
        coarse_centres = _one_level(features, weight, coarse, metric, rng, batch, steps, chunk, labels, dist,
                                    coarse_progress or (lambda d, t: None))  # fmt: skip
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(coarse + 1))
        shares = _shares(np.bincount(labels, weights=weight, minlength=coarse), np.diff(bounds), k)
        grouped = np.asarray(features[order])  # one pass, so each coarse cluster is contiguous
        coarse_offsets = np.concatenate([[0], np.cumsum(shares)]).astype(np.int64)
        fine: list[np.ndarray] = []
        for c in range(coarse):
            rows = order[bounds[c] : bounds[c + 1]]
            sub = np.empty(len(rows), dtype=np.int64)
            sub_dist = np.empty(len(rows), dtype=np.float64)
            fine.append(_one_level(grouped[bounds[c] : bounds[c + 1]], weight[rows], int(shares[c]), metric, rng, batch,
                                   steps, chunk, sub, sub_dist, lambda d, t: None))  # fmt: skip
            labels[rows] = coarse_offsets[c] + sub
            dist[rows] = sub_dist
            report(c + 1, coarse)
        del grouped
        centres = np.concatenate(fine)
    moves = _fill_empty(features, labels, dist, k, metric, chunk)
    return KMeansFit(labels.astype(np.uint16 if k <= 65536 else np.uint32), centres, moves, coarse_centres, coarse_offsets)


def _shares(mass: np.ndarray, sizes: np.ndarray, k: int) -> np.ndarray:
    """Clusters per coarse cluster: proportional to mass (largest remainders), each at least 1
    and at most its number of points, summing to ``k``."""
    exact = mass / mass.sum() * k
    shares = np.clip(np.floor(exact).astype(np.int64), 1, sizes)
    while shares.sum() != k:
        if shares.sum() < k:
            room = np.flatnonzero(shares < sizes)
            shares[room[np.argmax((exact - shares)[room])]] += 1
        else:
            room = np.flatnonzero(shares > 1)
            shares[room[np.argmin((exact - shares)[room])]] -= 1
    return shares


def _rows(features: np.ndarray, pick: np.ndarray, metric: Metric) -> np.ndarray:
    """Prepared points of rows ``pick``, read in increasing order (memory-mapped features)."""
    return metric.prepare(features[np.sort(pick)])


def _one_level(features, weight, k, metric, rng, batch, steps, chunk, labels, dist, report) -> np.ndarray:
    """Fit ``k`` centres on weighted samples of ``features``, assign every row; returns the centres."""
    n = features.shape[0]
    cumulative = np.cumsum(weight)

    def sample(size: int) -> np.ndarray:
        # draws sorted: the rows are read in index order anyway (_rows), and a sorted search
        # reads the cumulative weights in order instead of ~27 cache misses a draw (123M rows)
        return np.minimum(_sorted_search(cumulative, np.sort(rng.random(size)) * cumulative[-1]), n - 1)

    # small sets: every step is a pass over all points, and fewer passes are needed
    everything = _rows(features, np.arange(n), metric) if n <= batch else None
    steps = steps if everything is None else min(steps, WHOLE_PASSES)
    seeds = everything if everything is not None else _rows(features, sample(min(20 * k, 100_000) + batch), metric)
    centres = _kmeans_pp(seeds, k, metric, rng)
    counts = np.zeros(k)
    total = steps + n // chunk + 1
    for step in range(steps):
        points = everything if everything is not None else _rows(features, sample(batch), metric)
        metric.step(points, centres, counts)
        report(step + 1, total)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        labels[start:stop], dist[start:stop] = metric.assign(metric.prepare(features[start:stop]), centres)
        report(steps + start // chunk + 1, total)
    return centres


def _kmeans_pp(points: np.ndarray, k: int, metric: Metric, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: each next centre drawn with probability proportional to D^2 (in the
    metric's seeding embedding)."""
    vectors = np.asarray(metric.embed(points), dtype=np.float32)
    centres = np.empty((k, metric.centre_dim), dtype=np.float32)
    pick = rng.integers(len(points))
    d2 = np.full(len(points), np.inf, dtype=np.float32)
    for j in range(k):
        centres[j] = metric.as_centre(points[pick], metric.centre_dim)
        d2 = np.minimum(d2, ((vectors - vectors[pick]) ** 2).sum(axis=1))
        total = d2.sum()
        pick = rng.choice(len(points), p=d2 / total) if total > 0 else rng.integers(len(points))
    return centres


def _fill_empty(features, labels, dist, k, metric, chunk) -> tuple[tuple[int, np.ndarray, int], ...]:
    """Give every empty cluster the farthest point (and its duplicates) of a splittable cluster,
    largest clusters first; a cluster is splittable when its farthest point is not all of it.
    Returns the moves made, in order: (source cluster, point, target cluster)."""
    moves: list[tuple[int, np.ndarray, int]] = []
    while True:
        counts = np.bincount(labels, minlength=k)
        empty = np.flatnonzero(counts == 0)
        if not len(empty):
            return tuple(moves)
        far = np.full(k, -1, dtype=np.int64)
        _farthest(labels, dist, far)
        candidates = np.flatnonzero(counts > 1)
        chosen = np.full((k,) + metric.prepare(features[:1]).shape[1:], np.nan, dtype=np.float32)
        if len(candidates):
            chosen[candidates] = metric.prepare(features[far[candidates]])
        target = np.full(k, -1, dtype=np.int64)
        target[candidates] = 0
        equal = np.zeros(k, dtype=np.int64)
        for start in range(0, len(labels), chunk):
            _count_equal(metric.prepare(features[start : start + chunk]), labels[start : start + chunk], chosen, target, equal)
        donors = [b for b in candidates[np.argsort(-counts[candidates], kind="stable")] if equal[b] < counts[b]][: len(empty)]
        if not donors:
            raise ValueError(f"only {k - len(empty)} of {k} clusters can be filled: too few distinct feature values")
        target[:] = -1
        target[donors] = empty[: len(donors)]
        moves += [(int(b), chosen[b].copy(), int(target[b])) for b in donors]
        for start in range(0, len(labels), chunk):
            _move_equal(metric.prepare(features[start : start + chunk]), labels[start : start + chunk],
                        dist[start : start + chunk], chosen, target)  # fmt: skip


@njit(cache=True)
def _sorted_search(cumulative, keys):
    """``np.searchsorted(cumulative, keys, side="right")`` for ascending ``keys``: each search
    gallops forward from the previous answer, so it touches the array near where it last read."""
    n = cumulative.shape[0]
    out = np.empty(keys.shape[0], dtype=np.int64)
    lo = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        hi, step = lo, 1
        while hi < n and cumulative[hi] <= key:
            lo = hi + 1
            hi += step
            step *= 2
        hi = min(hi, n)
        while lo < hi:
            mid = (lo + hi) // 2
            if cumulative[mid] <= key:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out


@njit(cache=True)
def _farthest(labels, dist, far):
    for i in range(labels.shape[0]):
        b = labels[i]
        if far[b] < 0 or dist[i] > dist[far[b]]:
            far[b] = i


@njit(cache=True, inline="always")
def _same(point, chosen) -> bool:
    flat_p = point.ravel()
    flat_c = chosen.ravel()
    for j in range(flat_p.shape[0]):
        if flat_p[j] != flat_c[j]:
            return False
    return True


@njit(cache=True)
def _count_equal(points, labels, chosen, target, equal):
    for i in range(points.shape[0]):
        b = labels[i]
        if target[b] >= 0 and _same(points[i], chosen[b]):
            equal[b] += 1


@njit(cache=True)
def _move_equal(points, labels, dist, chosen, target):
    for i in range(points.shape[0]):
        b = labels[i]
        if target[b] >= 0 and _same(points[i], chosen[b]):
            labels[i] = target[b]
            dist[i] = 0.0


# ---- squared-L2 kernels ----------------------------------------------------------------------


#: Points a parallel task of :func:`_l2_assign` takes (each task allocates one distance row).
_ASSIGN_BLOCK = 256


@njit(cache=True, parallel=True)
def _l2_assign(points, centres):
    """Nearest centre (first on ties) and its distance for every point, with exactly the
    arithmetic of :func:`bot.abstraction.runtime_buckets.squared_l2` (float32 terms summed in
    float64 in index order), so the play-time nearest centre agrees. The centres are read
    column by column (one feature of every centre) so the innermost loop runs over centres,
    which the compiler vectorises; point by point over a row of centres it cannot (the
    3e8 river's 8 features are too few to fill a vector): 2-5x faster, same results."""
    n, k, dim = points.shape[0], centres.shape[0], points.shape[1]
    columns = np.ascontiguousarray(centres.T)
    labels = np.empty(n, dtype=np.int64)
    dist = np.empty(n)
    for block in prange((n + _ASSIGN_BLOCK - 1) // _ASSIGN_BLOCK):
        d = np.empty(k)
        for i in range(block * _ASSIGN_BLOCK, min(n, (block + 1) * _ASSIGN_BLOCK)):
            d[:] = 0.0
            for j in range(dim):
                p = points[i, j]
                for c in range(k):
                    x = p - columns[j, c]
                    d[c] += x * x
            best, best_d = 0, np.inf
            for c in range(k):
                if d[c] < best_d:
                    best, best_d = c, d[c]
            labels[i] = best
            dist[i] = np.sqrt(best_d)
    return labels, dist


@njit(cache=True)
def _l2_step(points, centres, counts):
    nearest, _ = _l2_assign(points, centres)
    for i in range(points.shape[0]):
        c = nearest[i]
        counts[c] += 1.0
        rate = 1.0 / counts[c]
        for j in range(points.shape[1]):
            centres[c, j] += rate * (points[i, j] - centres[c, j])


def _identity(points: np.ndarray) -> np.ndarray:
    return points
