"""Potential-aware buckets (Ganzfried & Sandholm 2014, "GS14"): cluster a round's hands by where
they can go, not only by where they end.

Bottom-up: the next round is bucketed first. A hand of round r is then described by the
histogram of its *next-round buckets* over every card the next round can deal (47 turn cards for
a flop hand, 46 river cards for a turn hand), and hands are clustered by earth mover's distance
between those histograms, whose ground distance is the distance between the next-round buckets'
centroids in the feature they were clustered on (L1 between CDF vectors for ``ke``, i.e. the 1-D
EMD between final-HS histograms; L2 for ``ochs``; |difference| of E[HS^2] for ``ehs2``). Unlike
the final-HS histogram (``ke``), this keeps apart two flop hands whose river equities end alike
but whose turn situations differ (a draw that resolves on the turn against one that waits).

EMD over hundreds of clusters has no closed form; GS14's greedy approximation (their
Algorithm 2) moves each point mass, for increasing rank, to its rank-th nearest centre bucket
that still has mass left, and is what k-means uses as the distance (an upper bound of the exact
EMD, equal to it on small cases such as :func:`greedy_emd`'s doctest). Centres are the mean
histograms (dense over the next round's buckets).

k-means++ seeds in that mean embedding (below), and assignment prunes with a lower bound: when the ground distance is a norm between centroids
``c_i``, any transport plan moves the mean ``sum_i p_i c_i`` onto ``sum_j q_j c_j``, so (by the
triangle inequality) ``EMD(p, q) >= |sum_i p_i c_i - sum_j q_j c_j|``. Centres are visited by
increasing bound and the search stops when the bound passes the best distance found; a greedy
EMD that passes it is abandoned early. Both are exact shortcuts: the nearest centre is the same.

The same step applies again one round up (the bottom-up order of Johanson et al. 2013): once
the turn is bucketed potential-aware over the river, the flop is clustered over those turn
buckets. A turn bucket is then a mean histogram over river buckets; :func:`lift` gives it an
embedding (its mean river centroid) and a ground distance to every other turn bucket (the
greedy EMD between their mean histograms, the smaller of the two directions), which is at
least the embedding distance, so the lower bound above stays exact at every level.

Histograms are stored packed, one uint32 per (class, next card): ``bucket << 8 | count``,
bucket-sorted, zero-padded (``count`` is at most 48), so they memory-map like any other feature.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from protocol.gamedef import Game
from protocol.isomorphism import HandIndexer, canonical_representatives, index_one, round_indexer
from training.abstraction.features import hole_board_index, hole_combinations
from training.abstraction.kmeans import Metric

_COUNT_BITS = 8


def next_cards(game: Game, round_index: int) -> int:
    """Cards the next round can deal to a hand of ``round_index`` (one per next-round outcome)."""
    return len(game.deck) - game.num_hole_cards - game.board_cards_through(round_index)


def next_round_histograms(game: Game, round_index: int, next_table: np.ndarray) -> np.ndarray:
    """Packed ``[classes, next_cards]`` histograms of next-round buckets (``next_table`` maps
    next-round classes to buckets; the next round must add exactly one board card)."""
    visible = game.board_cards_through(round_index)
    if game.board_cards_through(round_index + 1) != visible + 1:
        raise ValueError("potential-aware histograms need a next round of one board card")
    this, following = round_indexer(game, round_index), round_indexer(game, round_index + 1)
    if visible:
        reps = canonical_representatives(HandIndexer((visible,), game.num_ranks, game.num_suits), game.deck)[0]
    else:
        reps = np.zeros((1, 0), dtype=np.int64)
    out = np.zeros((this.size, next_cards(game, round_index)), dtype=np.uint32)
    groups_a, binom, suits_a, keys_a, offsets_a, ranks, suits = this._tables
    groups_b, _, suits_b, keys_b, offsets_b, _, _ = following._tables
    _histograms(reps.astype(np.int64), hole_combinations(game), np.array(game.deck, dtype=np.int64), binom, ranks, suits,
                groups_a, suits_a, keys_a, offsets_a, groups_b, suits_b, keys_b, offsets_b, np.asarray(next_table), out)  # fmt: skip
    return out


@njit(cache=True, parallel=True)
def _histograms(reps, holes, deck, binom, ranks, suits, groups_a, suits_a, keys_a, offsets_a,
                groups_b, suits_b, keys_b, offsets_b, next_table, out):  # fmt: skip
    """Every (hole, canonical board) class's next-round buckets, counted and packed. A class is
    met only through the canonical board of its orbit, so reps never write the same row."""
    k = holes.shape[1]
    v = reps.shape[1]
    for r in prange(reps.shape[0]):
        cards = np.empty(k + v, dtype=np.int64)
        more = np.empty(k + v + 1, dtype=np.int64)
        buckets = np.empty(out.shape[1], dtype=np.int64)
        for h in range(holes.shape[0]):
            idx = hole_board_index(holes[h], reps[r], cards, groups_a, binom, suits_a, keys_a, offsets_a, ranks, suits)
            if idx < 0 or out[idx, 0] != 0:
                continue
            more[: k + v] = cards
            n = 0
            for c in deck:
                used = False
                for j in range(k + v):
                    if cards[j] == c:
                        used = True
                if used:
                    continue
                more[k + v] = c
                buckets[n] = next_table[index_one(more, groups_b, binom, suits_b, keys_b, offsets_b, ranks, suits)]
                n += 1
            buckets.sort()
            slot, i = 0, 0
            while i < n:
                e = i
                while e < n and buckets[e] == buckets[i]:
                    e += 1
                out[idx, slot] = (np.uint32(buckets[i]) << np.uint32(8)) | np.uint32(e - i)
                slot += 1
                i = e


def unpack(packed: np.ndarray) -> np.ndarray:
    """Packed histograms as float32 points ``[n, slots, 2]``: (bucket, probability mass)."""
    packed = np.asarray(packed, dtype=np.uint32)
    counts = (packed & np.uint32((1 << _COUNT_BITS) - 1)).astype(np.float32)
    points = np.empty(packed.shape + (2,), dtype=np.float32)
    points[..., 0] = (packed >> np.uint32(_COUNT_BITS)).astype(np.float32)
    points[..., 1] = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    return points


def ground_distances(centroids: np.ndarray, ord: int) -> tuple[np.ndarray, np.ndarray]:
    """Ground distance between next-round buckets (``ord``-norm between their centroids) and,
    per bucket, all buckets sorted by that distance (nearest first)."""
    c = np.asarray(centroids, dtype=np.float64)
    return _sorted(np.linalg.norm(c[:, None, :] - c[None, :, :], ord=ord, axis=2))


def _sorted(ground: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ground distances as float32 and, per bucket, all buckets nearest first."""
    ground = np.asarray(ground, dtype=np.float32)
    return ground, np.argsort(ground, axis=1, kind="stable").astype(np.int32)


def emd_metric(centroids: np.ndarray, ord: int, ground: np.ndarray | None = None) -> Metric:
    """k-means metric over packed next-round histograms: greedy EMD whose ground distance is
    ``ground`` (default: the ``ord``-norm between the next round's ``centroids``). A given
    ``ground`` must be at least that norm (as :func:`lift`'s is) for the pruning to stay exact."""
    ground, nearest = ground_distances(centroids, ord) if ground is None else _sorted(ground)
    embed = np.asarray(centroids, dtype=np.float64)
    return Metric(
        unpack,
        lambda points: (points[..., 1:] * embed[points[..., 0].astype(np.int64)]).sum(axis=1),
        lambda points, centres: _emd_assign(points, centres, nearest, ground, embed, ord),
        lambda points, centres, counts: _emd_step(points, centres, counts, nearest, ground, embed, ord),
        _dense,
        ground.shape[0],
    )


def mean_histograms(packed: np.ndarray, labels: np.ndarray, weight: np.ndarray, count: int, next_count: int,
                    chunk: int = 1_000_000) -> np.ndarray:  # fmt: skip
    """Dense mean next-round histogram ``[count, next_count]`` of each of ``count`` buckets
    (classes weighted by their raw deals): the centres a potential-aware round ends with."""
    sums, mass = np.zeros((count, next_count)), np.zeros(count)
    for start in range(0, len(labels), chunk):
        s = slice(start, start + chunk)
        points, w = unpack(packed[s]), np.asarray(weight[s], dtype=np.float64)
        label = np.asarray(labels[s], dtype=np.int64)
        rows = np.repeat(label, points.shape[1])
        cols = points[..., 0].astype(np.int64).ravel()
        np.add.at(sums, (rows, cols), (points[..., 1] * w[:, None]).ravel())
        mass += np.bincount(label, weights=w, minlength=count)
    return sums / np.maximum(mass, 1e-12)[:, None]


def lift(centres: np.ndarray, centroids: np.ndarray, ord: int, ground: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Embedding and ground distances of a potential-aware round's buckets, whose ``centres``
    are mean histograms over next-round buckets with ``centroids``/``ord``/``ground`` (as in
    :func:`emd_metric`), for clustering the round before over them.

    The embedding is each centre's mean next-round centroid; the ground distance between two
    buckets is the greedy EMD between their centres (the smaller of both directions: each is an
    upper bound of the exact, symmetric EMD), at least the embedding distance (module docstring).
    """
    ground, nearest = ground_distances(centroids, ord) if ground is None else _sorted(ground)
    dense = np.asarray(centres, dtype=np.float32)
    k = dense.shape[1]
    points = np.zeros((dense.shape[0], k, 2), dtype=np.float32)
    points[..., 0] = np.arange(k, dtype=np.float32)
    points[..., 1] = dense
    lifted = _pairwise_emd(points, dense, nearest, ground)
    return dense.astype(np.float64) @ np.asarray(centroids, dtype=np.float64), np.minimum(lifted, lifted.T)


@njit(cache=True, parallel=True)
def _pairwise_emd(points, centres, nearest, ground):
    out = np.zeros((points.shape[0], centres.shape[0]), dtype=np.float32)
    k = centres.shape[1]
    for i in prange(points.shape[0]):
        used = np.zeros(k)
        touched = np.empty(k, dtype=np.int64)
        for j in range(centres.shape[0]):
            if i != j:
                out[i, j] = _greedy_emd(points[i], centres[j], nearest, ground, used, touched, np.inf)
    return out


def greedy_emd(point: np.ndarray, centre: np.ndarray, ground: np.ndarray) -> float:
    """Greedy EMD between an unpacked point ``[slots, 2]`` and a dense centre histogram.

    >>> ground, _ = ground_distances(np.array([[0.0], [1.0], [2.0]]), 1)
    >>> greedy_emd(np.array([[0, 0.5], [2, 0.5]], np.float32), np.array([0, 1, 0], np.float32), ground)
    1.0
    >>> greedy_emd(np.array([[0, 1.0]], np.float32), np.array([0, 0.5, 0.5], np.float32), ground)
    1.5
    """
    ground, nearest = _sorted(ground)
    k = ground.shape[0]
    return float(_greedy_emd(point, centre, nearest, ground, np.zeros(k), np.empty(k, dtype=np.int64), np.inf))


@njit(cache=True, inline="always")
def _greedy_emd(point, centre, nearest, ground, used, touched, cap):
    """GS14 Algorithm 2: for rank = 0, 1, ..., move each point mass to its rank-th nearest
    centre bucket, as much as that bucket has left; ``used``/``touched`` are zeroed scratch.
    Gives up (returning a value >= ``cap``) once the cost reaches ``cap``."""
    slots = point.shape[0]
    todo = np.empty(slots)
    left = 0.0
    for j in range(slots):
        todo[j] = point[j, 1]
        left += todo[j]
    cost = 0.0
    n_touched = 0
    for rank in range(nearest.shape[1]):
        if left <= 1e-6 or cost >= cap:
            break
        for j in range(slots):
            if todo[j] <= 0.0:
                continue
            src = int(point[j, 0])
            dst = nearest[src, rank]
            amount = min(todo[j], centre[dst] - used[dst])
            if amount > 0.0:
                if used[dst] == 0.0:
                    touched[n_touched] = dst
                    n_touched += 1
                used[dst] += amount
                todo[j] -= amount
                left -= amount
                cost += amount * ground[src, dst]
    for t in range(n_touched):
        used[touched[t]] = 0.0
    return cost


@njit(cache=True, inline="always")
def _norm(x, ord):
    if ord == 1:
        return np.abs(x).sum()
    return np.sqrt((x * x).sum())


@njit(cache=True, parallel=True)
def _emd_assign(points, centres, nearest, ground, embed, ord):
    """Nearest centre of every point by greedy EMD, visiting centres by increasing lower bound
    (module docstring) and stopping when the bound passes the best distance."""
    labels = np.empty(points.shape[0], dtype=np.int64)
    dist = np.empty(points.shape[0])
    k = centres.shape[1]
    centre_means = np.zeros((centres.shape[0], embed.shape[1]))
    for c in prange(centres.shape[0]):
        for b in range(k):
            centre_means[c] += centres[c, b] * embed[b]
    for i in prange(points.shape[0]):
        used = np.zeros(k)
        touched = np.empty(k, dtype=np.int64)
        mean = np.zeros(embed.shape[1])
        for j in range(points.shape[1]):
            if points[i, j, 1] > 0.0:
                mean += points[i, j, 1] * embed[int(points[i, j, 0])]
        bound = np.empty(centres.shape[0])
        for c in range(centres.shape[0]):
            bound[c] = _norm(mean - centre_means[c], ord)
        best, best_d = 0, np.inf
        for c in np.argsort(bound):
            if bound[c] >= best_d:
                break
            d = _greedy_emd(points[i], centres[c], nearest, ground, used, touched, best_d)
            if d < best_d:
                best, best_d = c, d
        labels[i] = best
        dist[i] = best_d
    return labels, dist


@njit(cache=True)
def _emd_step(points, centres, counts, nearest, ground, embed, ord):
    """Mini-batch step: each point pulls its nearest centre (a mean histogram) towards itself."""
    labels, _ = _emd_assign(points, centres, nearest, ground, embed, ord)
    for i in range(points.shape[0]):
        c = labels[i]
        counts[c] += 1.0
        rate = 1.0 / counts[c]
        for b in range(centres.shape[1]):
            centres[c, b] *= 1.0 - rate
        for j in range(points.shape[1]):
            if points[i, j, 1] > 0.0:
                centres[c, int(points[i, j, 0])] += rate * points[i, j, 1]


def _dense(point: np.ndarray, dim: int) -> np.ndarray:
    out = np.zeros(dim, dtype=np.float32)
    np.add.at(out, point[:, 0].astype(np.int64), point[:, 1])
    return out
