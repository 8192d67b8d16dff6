"""The play-time buckets of every hand of a range at one public state, in one pass.

Local best response (:mod:`bot.evaluation.lbr`) asks an agent for its action probabilities with every hand
of its range at each decision (``Agent.range_probabilities``): ~1,000 hands on a flop. The
compact abstraction bot computes a hand's bucket from its cards (:mod:`bot.abstraction.runtime_buckets`),
and one flop hand costs 1,081 runouts x 990 opponent hands; asked hand by hand, a flop range
costs ~1,000 times that. But every hand of the range shares the public board, so the work can
be shared: per runout (final board) the strength of every two-card hand of the live cards is
evaluated *once*, and each hand's HS (Zinkevich et al. 2007; Johanson et al. 2013: the share
of opponent hands beaten, ties half, with card removal) follows by counting, for the whole
range at the cost of ~one hand's features.

**Card removal by inclusion-exclusion.** For our hand (a, b) on a final board, the opponent
holds any pair of live cards disjoint from {a, b}. With ``L`` = #pairs weaker than ours among
all live pairs, ``L_a`` = #pairs (a, c) weaker (the pair (a, b) itself is not weaker), and the
same for b: ``less = L - L_a - L_b``; for ties, the pair (a, b) is counted once in ``E`` and
once in each of ``E_a``, ``E_b``: ``equal = E - E_a - E_b + 1``. All four come from one walk
up the live pairs sorted by strength (the sweep of Johanson et al. 2011, *Accelerating Best
Response Calculation in Large Extensive Games*), per runout; the strengths themselves cost
~100 evaluations per final board (:mod:`bot.pair_strengths`), the counting kernels are in
:mod:`bot.abstraction.range_counts`. k-means rounds need only the HS histogram, which
:func:`bot.abstraction.range_counts.board_histograms` counts per pair of ranks where it can.

**Bit-identical to the per-hand path.** The counts are integers, so each HS is the same float64
``(less + 0.5 equal) / total``; each hand's sum runs over the runouts of its board's canonical
representative in the build's lexicographic order, skipping those that hit the hand, exactly as
:func:`bot.abstraction.runtime_buckets.runout_features` sums for the pair :func:`build_order_hand` gives;
the float32 features, and so the buckets, are the same bits (``tests/bot/abstraction/test_range_buckets.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import numpy as np
from numba import get_num_threads, njit, prange

from bot.abstraction.range_counts import (
    board_histograms,
    board_scratch,
    pair_positions,
    rank_numerators,
    sweep_numerators,
    sweep_scratch,
)
from bot.abstraction.runtime_buckets import (
    CentreBuckets,
    HandBucketer,
    PercentileBuckets,
    RoundBuckets,
    _renamings,
    cdf_vectors,
    squared_l2,
)
from bot.pair_strengths import (
    CODES,
    evaluator_tables,
    fill_rank_pairs,
    pair_rows,
    rest_pair_strengths,
)
from protocol.cards import NUM_SUITS
from protocol.isomorphism import all_combinations


def canonical_board_and_holes(suits: tuple[int, ...], board: tuple[int, ...], hands: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
    """Vectorised :func:`bot.abstraction.runtime_buckets.build_order_hand` over ``hands`` ``[n, 2]`` sharing
    ``board``: the canonical board (the orbit's smallest sorted renaming) and each hand's hole
    under the renaming fixing that board that makes it lexicographically largest (sorted)."""
    best_board, perms = _canonical_renamings(suits, tuple(board))
    hands = np.asarray(hands, dtype=np.int64)
    images = (hands - hands % NUM_SUITS)[None] + perms[:, hands % NUM_SUITS]  # [renamings, n, 2]
    best = (images.min(axis=2) * CODES + images.max(axis=2)).max(axis=0)  # sorted hole (x < y) as x * CODES + y
    return best_board, np.stack([best // CODES, best % CODES], axis=1)


@lru_cache(maxsize=4096)
def _canonical_renamings(suits: tuple[int, ...], board: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray]:
    """(the orbit's smallest sorted renaming of ``board``, ``[k, 4]`` every renaming giving it):
    the per-board part of :func:`canonical_board_and_holes`, remembered (LBR asks one board
    several times a round)."""
    renamed = {perm: tuple(sorted((c - c % NUM_SUITS) + perm[c % NUM_SUITS] for c in board)) for perm in _renamings(suits)}
    best_board = min(renamed.values())
    return best_board, np.array([perm for perm, b in renamed.items() if b == best_board], dtype=np.int64)


def board_features(game, board: tuple[int, ...], bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pair index ``[CODES, CODES]``, E[HS] and E[HS^2] float32 ``[pairs]``, histogram
    ``[pairs, bins]``) of every two-card hand disjoint from ``board`` (a canonical board: its
    runouts are enumerated in the build's order); the index maps cards (x, y) to the hand's row,
    -1 for hands touching the board."""
    nonflush, flush, colex, offset = evaluator_tables(game.num_hole_cards + game.total_board_cards)
    rest = np.array([c for c in game.deck if c not in board], dtype=np.int64)
    pairs = len(rest) * (len(rest) - 1) // 2
    index = np.full((CODES, CODES), -1, dtype=np.int64)
    first, second = np.triu_indices(len(rest), 1)  # the build's pair order
    index[rest[first], rest[second]] = index[rest[second], rest[first]] = np.arange(pairs)
    runouts = all_combinations(rest, game.total_board_cards - len(board))  # the build's order
    # twice HS's numerator (2 less + equal) of every hand on every runout, -1 where the runout hits it
    numerators = np.full((len(runouts), pairs), -1, dtype=np.int32)
    threads = get_num_threads() if len(runouts) * pairs >= PARALLEL_MIN else 1
    kernel = _hs_numerators_parallel if threads > 1 else _hs_numerators_serial
    kernel(np.array(board, dtype=np.int64), rest, runouts.astype(np.int64), threads, nonflush, flush, colex, offset, numerators)
    live = len(rest) - runouts.shape[1]
    ehs, ehs2 = np.empty(pairs, dtype=np.float32), np.empty(pairs, dtype=np.float32)
    hist = np.zeros((pairs, max(bins, 1)), dtype=np.int64)
    _sum_features(numerators, (live - 2) * (live - 3) // 2, ehs, ehs2, hist)
    return index, ehs, ehs2, hist[:, :bins]


def _hs_numerators(board, rest, runouts, chunks, nonflush, flush, colex, offset, out):  # pragma: no cover - numba
    """``out[run, p] = 2 less + equal`` (HS's numerator, twice) for every live hand ``p`` (the
    p-th pair of ``rest``) on each final board; runouts are split into ``chunks`` parts (one
    per thread), each writing its own rows. A board on which no hand can make a flush is
    counted over ranks (:func:`rank_numerators`), any other by the sweep (:func:`sweep_numerators`)."""
    visible, runout_size = board.shape[0], runouts.shape[1]
    n_rest = rest.shape[0]
    first, second = pair_positions(n_rest)  # positions in rest of each pair's cards
    n_pairs = first.shape[0]
    ranks = rest >> 2
    for t in prange(chunks):
        final, row, table, suit_count = board_scratch(board, runout_size)
        strength, hit, count, numerator, live, order, dense, values, start, below, ties = sweep_scratch(n_rest)
        for run in range(t, runouts.shape[0], chunks):
            final[visible:] = runouts[run]
            count[:] = 0
            for i in range(n_rest):
                hit[i] = False
                for j in range(runout_size):
                    if runouts[run, j] == rest[i]:
                        hit[i] = True
                if not hit[i]:
                    count[ranks[i]] += 1
            suited = fill_rank_pairs(final, row, table, suit_count, nonflush, flush, colex, offset)
            if suited + 2 < 5:
                rank_numerators(table, count, numerator)
                for p in range(n_pairs):
                    if not (hit[first[p]] or hit[second[p]]):
                        out[run, p] = numerator[ranks[first[p]], ranks[second[p]]]
            else:
                rest_pair_strengths(rest, row, table, suit_count, suited, nonflush, flush, colex, offset, strength)
                sweep_numerators(strength, hit, first, second, live, order, dense, values, start, below, ties, out[run])


_hs_numerators_serial = njit(cache=True)(_hs_numerators)
_hs_numerators_parallel = njit(cache=True, parallel=True)(_hs_numerators)
#: Hand x runout strengths from which the runouts are split over threads (flop and turn boards).
PARALLEL_MIN = 1 << 15


@njit(cache=True, parallel=True)
def _sum_features(numerators, total, ehs, ehs2, hist):  # pragma: no cover - numba
    """Each hand's E[HS], E[HS^2] and HS histogram over the runouts missing it, summed in
    runout order (the build's), so the float32 values are the per-hand path's bits."""
    bins = hist.shape[1]
    for p in prange(numerators.shape[1]):
        s1 = 0.0
        s2 = 0.0
        count = 0
        for run in range(numerators.shape[0]):
            numerator = numerators[run, p]
            if numerator < 0:
                continue
            hs = 0.5 * numerator / total
            s1 += hs
            s2 += hs * hs
            count += 1
            hist[p, min(int(hs * bins), bins - 1)] += 1
        ehs[p] = np.float32(s1 / count)
        ehs2[p] = np.float32(s2 / count)


def buckets_of(buckets: RoundBuckets, ehs2: np.ndarray, hist: np.ndarray) -> np.ndarray:
    """:meth:`RoundBuckets.bucket_of` for many hands at once (same values, row by row)."""
    if isinstance(buckets, PercentileBuckets):
        return np.searchsorted(buckets.upper, ehs2, side="left").astype(np.int64)
    if isinstance(buckets, CentreBuckets):
        points = cdf_vectors(hist)
        if buckets.coarse_centres is None or buckets.coarse_offsets is None:  # one level (both or neither)
            out = nearest_centres(points, buckets.centres)
        else:
            coarse = nearest_centres(points, buckets.coarse_centres)
            out = np.empty(len(points), dtype=np.int64)
            for c in np.unique(coarse):
                rows = coarse == c
                first, stop = int(buckets.coarse_offsets[c]), int(buckets.coarse_offsets[c + 1])
                out[rows] = first + nearest_centres(points[rows], buckets.centres[first:stop])
        for source, moved, target in zip(buckets.move_source, buckets.move_point, buckets.move_target, strict=True):
            out[(out == source) & (points == moved).all(axis=1)] = target
        return out
    raise TypeError(f"no batched bucketing for {type(buckets).__name__}")


def nearest_centres(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """:func:`bot.abstraction.runtime_buckets.nearest_centre` of every row of ``points``, the
    same indices at a fraction of the cost: squared distances by one float32 matrix product
    (``|p|^2 - 2 p.c + |c|^2``, the norms in float64), then the exact kernel only on the
    centres within :data:`NEAR` of each point's smallest product distance.

    Why that keeps every tie: the kernel's float32 differences and squares are each within
    2^-24 relative, so its distance is within ~2e-7 relative of the real one (distances of CDFs
    over 50 bins are at most 50, so ~1e-5 absolute); the float32 product of 50 terms in [0, 1]
    is off by at most 50 * 2^-24 * 50 < 1.5e-4, a product distance by twice that. A centre the
    kernel could rank first is therefore within ~7e-4 of the product minimum (both distances'
    errors, both ways), inside :data:`NEAR`, and the kernel sees every such centre in index
    order."""
    p = np.ascontiguousarray(points, dtype=np.float32)
    c = np.ascontiguousarray(centres, dtype=np.float32)
    return _nearest_screened(p, c, p @ c.T)


#: Margin of :func:`nearest_centres`'s product-distance screen (squared-distance units).
NEAR = 2e-3


@njit(cache=True)
def _nearest_screened(points, centres, products):  # pragma: no cover - numba
    """For each point the first centre of least exact distance among those whose product
    distance (``products``: the float32 ``points @ centres.T``, norms in float64) is within
    :data:`NEAR` of the point's smallest; one pass per point, no ``[points, centres]``
    temporaries."""
    n_centres, dims = centres.shape
    norms_c = np.zeros(n_centres)
    for c in range(n_centres):
        for j in range(dims):
            norms_c[c] += np.float64(centres[c, j]) ** 2
    approx = np.empty(n_centres)
    out = np.empty(points.shape[0], dtype=np.int64)
    for i in range(points.shape[0]):
        norm_p = 0.0
        for j in range(dims):
            norm_p += np.float64(points[i, j]) ** 2
        least = np.inf
        for c in range(n_centres):
            approx[c] = norm_p - 2.0 * np.float64(products[i, c]) + norms_c[c]
            least = min(least, approx[c])
        best, best_d = 0, np.inf
        for c in range(n_centres):
            if approx[c] <= least + NEAR:
                d = squared_l2(points[i], centres[c])
                if d < best_d:
                    best, best_d = c, d
        out[i] = best
    return out


class RangeBucketer:
    """Buckets of many hands at one public state, equal to :meth:`HandBucketer.bucket` hand by
    hand. The buckets of every live hand of the last ``boards_kept`` canonical boards of each
    round are kept (int16 per hand, ~2 KB a board): LBR asks several decisions of one round on
    one board, plays each deal in both seats, and a long LBR run meets each of the 1,755
    canonical flops many times; a cache per round keeps the flops, the costliest boards, from
    being pushed out by the stream of new rivers."""

    def __init__(self, hands: HandBucketer, boards_kept: int = 20_000) -> None:
        self.hand_bucketer = hands
        self.suits = tuple(sorted({c % NUM_SUITS for c in hands.game.deck}))
        self.boards_kept = boards_kept
        self._boards: list[OrderedDict[tuple[int, ...], np.ndarray]] = [OrderedDict() for _ in hands.rounds]

    def buckets(self, round_index: int, hands: np.ndarray, board: tuple[int, ...]) -> np.ndarray:
        """Bucket (int64) of each row of ``hands`` ``[n, 2]`` (disjoint from ``board``)."""
        hands = np.asarray(hands, dtype=np.int64)
        if round_index == 0:
            return self.hand_bucketer.preflop.index_batch(hands)
        if np.isin(hands, board).any():
            raise ValueError(f"range buckets: a hand shares a card with the board {board}")
        canonical_board, holes = canonical_board_and_holes(self.suits, tuple(board), hands)
        kept = self._boards[round_index]
        bucket = kept.get(canonical_board)
        if bucket is None:
            bucket = kept[canonical_board] = self.board_buckets(round_index, canonical_board)
            if len(kept) > self.boards_kept:
                kept.popitem(last=False)
        else:
            kept.move_to_end(canonical_board)
        rest = np.array([c for c in self.hand_bucketer.game.deck if c not in canonical_board], dtype=np.int64)
        return bucket[pair_rows(rest, holes)].astype(np.int64)

    def board_buckets(self, round_index: int, canonical_board: tuple[int, ...]) -> np.ndarray:
        """int16 bucket of every pair of the cards off ``canonical_board`` (in
        :func:`bot.pair_strengths.pair_rows` order): k-means rounds from the histograms alone
        (:func:`board_histograms`), percentile rounds from E[HS^2] (:func:`board_features`)."""
        buckets = self.hand_bucketer.rounds[round_index]
        game = self.hand_bucketer.game
        if isinstance(buckets, CentreBuckets):
            hist = board_histograms(game, canonical_board, buckets.bins)
            return buckets_of(buckets, np.zeros(len(hist), dtype=np.float32), hist).astype(np.int16)
        assert buckets is not None
        _, _, ehs2, hist = board_features(game, canonical_board, buckets.bins)
        return buckets_of(buckets, ehs2, hist).astype(np.int16)

