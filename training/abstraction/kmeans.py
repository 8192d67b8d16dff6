"""Distribution-aware buckets: weighted mini-batch k-means on final-HS histograms (EMD as L2 on CDFs).

Johanson et al. 2013 ("KE"): a flop or turn hand is described by the histogram of its HS on
the final board over every runout, and hands are clustered by earth mover's distance, so a
made hand (one tall spike) and a draw (two humps) with the same E[HS] land in different
buckets. In one dimension EMD is the L1 distance between CDFs; ``shared/methods.md`` §1.3
approximates it by L2 between CDF vectors so that plain k-means applies. With 14M turn classes
full Lloyd iterations cost minutes each on 2 cores, so centres are fitted by mini-batch
k-means (Sculley 2010, "Web-scale k-means clustering": per-centre learning rate 1/count) on
weighted samples after k-means++ seeding (Arthur & Vassilvitskii 2007), and every class is then
assigned to its nearest centre once. Class weights (raw deals per class) drive the sampling.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit, prange


def cdf_vectors(hist: np.ndarray) -> np.ndarray:
    """Rows of a histogram array as normalised CDFs (float32)."""
    hist = np.asarray(hist, dtype=np.float32)
    cdf = np.cumsum(hist, axis=1)
    return cdf / np.maximum(cdf[:, -1:], 1.0)


def kmeans_buckets(
    hist: np.ndarray,
    weight: np.ndarray,
    k: int,
    seed: int = 0,
    batch: int = 20_000,
    steps: int = 200,
    chunk: int = 1_000_000,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Bucket (uint16/uint32) of every class: its nearest centre of a weighted k-means fit.

    ``hist`` is ``[classes, bins]`` (memory-mapped is fine: it is read in ``chunk`` rows).
    """
    n = hist.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= {n} clusters, got {k}")
    rng = np.random.default_rng(seed)
    p = np.asarray(weight, dtype=np.float64)
    p = p / p.sum()
    seed_rows = np.sort(rng.choice(n, size=min(n, max(20 * k, batch)), p=p))
    centres = _kmeans_pp(cdf_vectors(hist[seed_rows]), k, rng)
    counts = np.zeros(k)
    total = steps + n // chunk + 1
    for step in range(steps):
        rows = np.sort(rng.choice(n, size=min(n, batch), p=p))
        _minibatch_step(cdf_vectors(hist[rows]), centres, counts)
        if progress is not None:
            progress(step + 1, total)
    out = np.empty(n, dtype=np.uint16 if k <= 65536 else np.uint32)
    for start in range(0, n, chunk):
        out[start : start + chunk] = _assign(cdf_vectors(hist[start : start + chunk]), centres)
        if progress is not None:
            progress(steps + start // chunk + 1, total)
    return out


def _kmeans_pp(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: each next centre drawn with probability proportional to D^2."""
    centres = np.empty((k, points.shape[1]), dtype=np.float32)
    centres[0] = points[rng.integers(len(points))]
    d2 = ((points - centres[0]) ** 2).sum(axis=1)
    for j in range(1, k):
        total = d2.sum()
        pick = rng.choice(len(points), p=d2 / total) if total > 0 else rng.integers(len(points))
        centres[j] = points[pick]
        d2 = np.minimum(d2, ((points - centres[j]) ** 2).sum(axis=1))
    return centres


@njit(cache=True, parallel=True)
def _assign(points, centres):
    out = np.empty(points.shape[0], dtype=np.int64)
    for i in prange(points.shape[0]):
        best, best_d = 0, np.inf
        for c in range(centres.shape[0]):
            d = 0.0
            for j in range(points.shape[1]):
                x = points[i, j] - centres[c, j]
                d += x * x
            if d < best_d:
                best, best_d = c, d
        out[i] = best
    return out


@njit(cache=True)
def _minibatch_step(points, centres, counts):
    nearest = _assign(points, centres)
    for i in range(points.shape[0]):
        c = nearest[i]
        counts[c] += 1.0
        rate = 1.0 / counts[c]
        for j in range(points.shape[1]):
            centres[c, j] += rate * (points[i, j] - centres[c, j])
