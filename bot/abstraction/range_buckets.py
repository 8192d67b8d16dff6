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
once in each of ``E_a``, ``E_b``: ``equal = E - E_a - E_b + 1``. ``L`` and ``E`` come from a
count of the pairs per strength value (strengths are small integers), ``L_a`` and ``E_a`` from
sorting each card's 46 pairs once per runout.

**Bit-identical to the per-hand path.** The counts are integers, so each HS is the same float64
``(less + 0.5 equal) / total``; each hand's sum runs over the runouts of its board's canonical
representative in the build's lexicographic order, skipping those that hit the hand, exactly as
:func:`bot.abstraction.runtime_buckets.runout_features` sums for the pair :func:`build_order_hand` gives;
the float32 features, and so the buckets, are the same bits (``tests/bot/abstraction/test_range_buckets.py``).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from numba import njit

from bot.abstraction.runtime_buckets import (
    CentreBuckets,
    HandBucketer,
    PercentileBuckets,
    RoundBuckets,
    _renamings,
    cdf_vectors,
    nearest_centre,
)
from protocol.cards import NUM_SUITS
from protocol.evaluator import _COLEX, _NF_OFFSETS, _eval_row, _get_tables
from protocol.isomorphism import all_combinations

#: Card codes are below this (rank * 4 + suit, 13 ranks): the size of the pair-index tables.
CODES = 64


def canonical_board_and_holes(suits: tuple[int, ...], board: tuple[int, ...], hands: np.ndarray) -> tuple[tuple[int, ...], np.ndarray]:
    """Vectorised :func:`bot.abstraction.runtime_buckets.build_order_hand` over ``hands`` ``[n, 2]`` sharing
    ``board``: the canonical board (the orbit's smallest sorted renaming) and each hand's hole
    under the renaming fixing that board that makes it lexicographically largest (sorted)."""
    renamed = {perm: tuple(sorted((c - c % NUM_SUITS) + perm[c % NUM_SUITS] for c in board)) for perm in _renamings(suits)}
    best_board = min(renamed.values())
    hands = np.asarray(hands, dtype=np.int64)
    best = np.full(len(hands), -1, dtype=np.int64)  # sorted hole (x < y) as x * CODES + y
    for perm, renamed_board in renamed.items():
        if renamed_board != best_board:
            continue
        images = (hands - hands % NUM_SUITS) + np.asarray(perm, dtype=np.int64)[hands % NUM_SUITS]
        low, high = images.min(axis=1), images.max(axis=1)
        best = np.maximum(best, low * CODES + high)
    return best_board, np.stack([best // CODES, best % CODES], axis=1)


def board_features(game, board: tuple[int, ...], bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pair index ``[CODES, CODES]``, E[HS] and E[HS^2] float32 ``[pairs]``, histogram
    ``[pairs, bins]``) of every two-card hand disjoint from ``board`` (a canonical board: its
    runouts are enumerated in the build's order); the index maps cards (x, y) to the hand's row,
    -1 for hands touching the board."""
    nonflush, flush = _get_tables()
    offset = int(_NF_OFFSETS[game.num_hole_cards + game.total_board_cards - 1])
    rest = np.array([c for c in game.deck if c not in board], dtype=np.int64)
    pairs = len(rest) * (len(rest) - 1) // 2
    index = np.full((CODES, CODES), -1, dtype=np.int64)
    ehs, ehs2 = np.empty(pairs, dtype=np.float32), np.empty(pairs, dtype=np.float32)
    hist = np.zeros((pairs, max(bins, 1)), dtype=np.int64)
    _board_features(np.array(board, dtype=np.int64), rest, game.total_board_cards - len(board),
                    nonflush, flush, _COLEX, offset, index, ehs, ehs2, hist)  # fmt: skip
    return index, ehs, ehs2, hist[:, :bins]


@njit(cache=True)
def _board_features(board, rest, runout_size, nonflush, flush, colex, offset, index, ehs, ehs2, hist):
    """Fill ``index`` and every live hand's features (see the module docstring)."""
    visible = board.shape[0]
    cards = 2 + visible + runout_size
    n_rest = rest.shape[0]
    pairs = 0
    for i in range(n_rest):
        for j in range(i + 1, n_rest):
            index[rest[i], rest[j]] = pairs
            index[rest[j], rest[i]] = pairs
            pairs += 1
    s1 = np.zeros(pairs)
    s2 = np.zeros(pairs)
    count = np.zeros(pairs, dtype=np.int64)
    bins = hist.shape[1]
    cards_row = np.empty(cards, dtype=np.int64)
    cards_row[2 : 2 + visible] = board
    live = np.empty(n_rest, dtype=np.int64)
    strength = np.empty((n_rest, n_rest), dtype=np.int64)  # by positions in live
    # below[i, j] / ties[i, j]: how many pairs (live[i], c) are weaker than / as strong as (live[i], live[j])
    below = np.empty((n_rest, n_rest), dtype=np.int64)
    ties = np.empty((n_rest, n_rest), dtype=np.int64)
    row = np.empty(n_rest - 1, dtype=np.int64)
    partner = np.empty(n_rest - 1, dtype=np.int64)
    flat = np.empty(pairs, dtype=np.int64)
    counts = np.zeros(1, dtype=np.int64)  # pairs per strength value, then pairs below it
    runouts = all_combinations(rest, runout_size)  # the build's order
    for run in range(runouts.shape[0]):
        n_live = 0
        for i in range(n_rest):
            hit = False
            for j in range(runout_size):
                if runouts[run, j] == rest[i]:
                    hit = True
            if not hit:
                live[n_live] = rest[i]
                n_live += 1
        for j in range(runout_size):
            cards_row[2 + visible + j] = runouts[run, j]
        n_flat = 0
        for i in range(n_live):
            cards_row[0] = live[i]
            for j in range(i + 1, n_live):
                cards_row[1] = live[j]
                s = _eval_row(cards_row, cards, nonflush, flush, colex, offset)
                strength[i, j] = s
                strength[j, i] = s
                flat[n_flat] = s
                n_flat += 1
        top = flat[:n_flat].max()
        if counts.shape[0] < top + 2:
            counts = np.zeros(top + 2, dtype=np.int64)
        counts[: top + 2] = 0
        for k in range(n_flat):
            counts[flat[k] + 1] += 1
        equal_all = counts[: top + 2].copy()  # equal_all[v + 1]: pairs of strength v
        for v in range(1, top + 2):
            counts[v] += counts[v - 1]  # counts[v]: pairs weaker than v
        for i in range(n_live):
            m = 0
            for j in range(n_live):
                if j != i:
                    row[m] = strength[i, j]
                    partner[m] = j
                    m += 1
            order = np.argsort(row[:m])
            start = 0
            for k in range(1, m + 1):
                if k == m or row[order[k]] != row[order[start]]:
                    for t in range(start, k):
                        below[i, partner[order[t]]] = start
                        ties[i, partner[order[t]]] = k - start
                    start = k
        total = (n_live - 2) * (n_live - 3) // 2  # opponent hands disjoint from ours and the board
        for i in range(n_live):
            for j in range(i + 1, n_live):
                ours = strength[i, j]
                less = counts[ours] - below[i, j] - below[j, i]
                equal = equal_all[ours + 1] - ties[i, j] - ties[j, i] + 1
                hs = (less + 0.5 * equal) / total
                p = index[live[i], live[j]]
                s1[p] += hs
                s2[p] += hs * hs
                count[p] += 1
                hist[p, min(int(hs * bins), bins - 1)] += 1
    for p in range(pairs):
        ehs[p] = np.float32(s1[p] / count[p])
        ehs2[p] = np.float32(s2[p] / count[p])


def buckets_of(buckets: RoundBuckets, ehs2: np.ndarray, hist: np.ndarray) -> np.ndarray:
    """:meth:`RoundBuckets.bucket_of` for many hands at once (same values, row by row)."""
    if isinstance(buckets, PercentileBuckets):
        return np.searchsorted(buckets.upper, ehs2, side="left").astype(np.int64)
    if isinstance(buckets, CentreBuckets):
        points = cdf_vectors(hist)
        out = _nearest_centres(points, buckets.centres)
        for source, moved, target in zip(buckets.move_source, buckets.move_point, buckets.move_target, strict=True):
            out[(out == source) & (points == moved).all(axis=1)] = target
        return out
    raise TypeError(f"no batched bucketing for {type(buckets).__name__}")


@njit(cache=True)
def _nearest_centres(points, centres):
    out = np.empty(points.shape[0], dtype=np.int64)
    for i in range(points.shape[0]):
        out[i] = nearest_centre(points[i], centres)
    return out


class RangeBucketer:
    """Buckets of many hands at one public state, equal to :meth:`HandBucketer.bucket` hand by
    hand. A board's bucket of every live hand is kept for the next few queries: LBR asks
    several decisions of one round on the same board."""

    def __init__(self, hands: HandBucketer, boards_kept: int = 8) -> None:
        self.hand_bucketer = hands
        self.suits = tuple(sorted({c % NUM_SUITS for c in hands.game.deck}))
        self.boards_kept = boards_kept
        self._boards: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def buckets(self, round_index: int, hands: np.ndarray, board: tuple[int, ...]) -> np.ndarray:
        """Bucket (int64) of each row of ``hands`` ``[n, 2]`` (disjoint from ``board``)."""
        hands = np.asarray(hands, dtype=np.int64)
        if round_index == 0:
            return self.hand_bucketer.preflop.index_batch(hands)
        if np.isin(hands, board).any():
            raise ValueError(f"range buckets: a hand shares a card with the board {board}")
        canonical_board, holes = canonical_board_and_holes(self.suits, tuple(board), hands)
        key = (round_index, canonical_board)
        if key not in self._boards:
            buckets = self.hand_bucketer.rounds[round_index]
            assert buckets is not None
            index, _, ehs2, hist = board_features(self.hand_bucketer.game, canonical_board, buckets.bins)
            self._boards[key] = (index, buckets_of(buckets, ehs2, hist))
            if len(self._boards) > self.boards_kept:
                self._boards.popitem(last=False)
        index, bucket = self._boards[key]
        return bucket[index[holes[:, 0], holes[:, 1]]]
