"""Percentile buckets: equal-mass cuts of a per-class feature, weighted by raw combo counts.

The classic imperfect-recall E[HS^2] abstraction (Johanson et al., *Evaluating State-Space
Abstractions in Extensive-Form Games*, AAMAS 2013): sort every
(hole, board) point of a round by its feature and cut the sorted list into ``b`` pieces of equal
*probability mass*. A canonical class stands for as many raw deals as its orbit has members, so
mass is the class's raw count, not 1. Points with equal feature values always share a bucket
(a bucket is a function of the feature), so a discrete feature caps the number of non-empty
buckets at its number of distinct values (e.g. the river's E[HS] takes 1,950 values).
"""

from __future__ import annotations

import numpy as np
from numba import njit


def percentile_buckets(feature: np.ndarray, weight: np.ndarray, num_buckets: int) -> np.ndarray:
    """Bucket (uint16, or uint32 above 65,536 buckets) of each class, by equal-mass cuts.

    Distinct feature values are visited in increasing order and packed greedily: a new bucket
    starts when the current one would pass its share of the remaining mass (counting half of
    the next value's mass), or when the values left are only just enough to give every
    remaining bucket one. So exactly ``min(num_buckets, distinct values)`` buckets are used,
    even when a few values carry much of the mass (board-playing hands on the river).

    >>> percentile_buckets(np.array([0.1, 0.9, 0.5, 0.5]), np.array([1, 1, 1, 1]), 2).tolist()
    [0, 1, 0, 0]
    >>> percentile_buckets(np.array([0.3, 0.1, 0.2]), np.array([5, 1, 1]), 3).tolist()
    [2, 0, 1]
    """
    if num_buckets < 1:
        raise ValueError(f"need at least one bucket, got {num_buckets}")
    feature = np.asarray(feature)
    order = np.argsort(feature, kind="stable")
    values = feature[order]
    starts = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    group_mass = np.add.reduceat(np.asarray(weight, dtype=np.float64)[order], starts)
    group_bucket = _greedy_cuts(group_mass, num_buckets)
    sizes = np.diff(np.append(starts, len(values)))
    dtype = np.uint16 if num_buckets <= np.iinfo(np.uint16).max + 1 else np.uint32
    buckets = np.empty(len(values), dtype=dtype)
    buckets[order] = np.repeat(group_bucket.astype(dtype), sizes)
    return buckets


@njit(cache=True)
def _greedy_cuts(mass: np.ndarray, num_buckets: int) -> np.ndarray:
    groups = mass.shape[0]
    out = np.empty(groups, dtype=np.int64)
    bucket = 0
    acc = 0.0
    remaining = mass.sum()
    target = remaining / num_buckets
    for g in range(groups):
        if acc > 0 and bucket < num_buckets - 1 and (acc + 0.5 * mass[g] > target or groups - g <= num_buckets - 1 - bucket):
            bucket += 1
            remaining -= acc
            acc = 0.0
            target = remaining / (num_buckets - bucket)
        out[g] = bucket
        acc += mass[g]
    return out
