"""Strengths of many two-card hands on one final board, at the cost of ~100 evaluations.

Every card-abstraction feature (:mod:`bot.abstraction.runtime_buckets`,
:mod:`bot.abstraction.range_buckets`) and every check-down equity of local best response
(:mod:`bot.evaluation.lbr_equity`) needs, per final board, the strength of each of ~1,000
two-card hands. Without a flush a hand's strength depends only on the ranks of its cards, so
the non-flush strength of the board plus each *pair of ranks* is computed once (91 pairs for
13 ranks, each a few additions of the evaluator's colex weights) and looked up per hand; a hand
is evaluated in full only when the board's suits let it make a flush. The values are the evaluator's (:func:`protocol.evaluator.hand_strength_batch`) exactly.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from protocol.cards import NUM_RANKS
from protocol.evaluator import _COLEX, _NF_OFFSETS, _eval_row, _get_tables

#: Card codes are below this (rank * 4 + suit, 13 ranks): the size of position tables.
CODES = 64


def evaluator_tables(cards: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(non-flush table, flush table, colex weights, offset) for ``cards``-card hands: the
    arguments :func:`rest_pair_strengths` passes to the evaluator."""
    nonflush, flush = _get_tables()
    return nonflush, flush, _COLEX, int(_NF_OFFSETS[cards - 1])


@njit(cache=True)
def fill_rank_pairs(final, row, pair_table, suit_count, nonflush, flush, colex, offset):  # pragma: no cover - numba
    """Prepare ``final`` (a complete board): ``pair_table[x, y]`` = non-flush strength of the
    board plus ranks x and y; ``suit_count`` = the board's cards per suit; ``row`` (length
    ``len(final) + 2``) = two free slots then the board, for :func:`full_strength`. Returns
    the board's largest suit count.

    The evaluator's non-flush strength is ``nonflush[offset + sum_i colex[i, r_i]]`` over the
    ranks sorted ascending (:mod:`protocol.evaluator`). With the board's ranks plus x sorted
    as ``s``, inserting y at position ``p`` (after the ranks <= y) gives
    ``sum_{i<p} colex[i, s_i] + colex[p, y] + sum_{i>=p} colex[i+1, s_i]``: two running sums
    per x make every (x, y) a few additions instead of an evaluation."""
    n = final.shape[0]
    suit_count[:] = 0
    row[0] = row[1] = 0
    for j in range(n):
        row[j + 2] = final[j]
        suit_count[final[j] & 3] += 1
    board = np.sort(final >> 2)
    ranks = np.empty(n + 1, dtype=np.int64)
    before = np.empty(n + 2, dtype=np.int64)  # before[p] = sum_{i<p} colex[i, s_i]
    after = np.empty(n + 2, dtype=np.int64)  # after[p] = sum_{i>=p} colex[i+1, s_i]
    for x in range(NUM_RANKS):
        m = 0
        for j in range(n):
            if board[j] <= x:
                ranks[m] = board[j]
                m += 1
        ranks[m] = x
        for j in range(m, n):
            ranks[j + 1] = board[j]
        before[0] = 0
        for i in range(n + 1):
            before[i + 1] = before[i] + colex[i, ranks[i]]
        after[n + 1] = 0
        for i in range(n, -1, -1):
            after[i] = after[i + 1] + colex[i + 1, ranks[i]]
        p = 0
        for y in range(x, NUM_RANKS):
            while p <= n and ranks[p] <= y:
                p += 1
            pair_table[x, y] = nonflush[offset + before[p] + colex[p, y] + after[p]]
            pair_table[y, x] = pair_table[x, y]
    return suit_count.max()


@njit(cache=True)
def rest_pair_strengths(rest, row, pair_table, suit_count, suited, nonflush, flush, colex, offset, out):  # pragma: no cover - numba
    """``out[p]`` = strength of the ``p``-th pair of ``rest`` (pairs ``i < j`` of positions in
    row-major order) with the board :func:`fill_rank_pairs` prepared (``suited``: what it
    returned); pairs holding a card of the board get values without meaning (callers skip
    them). The loop is written out here: through a per-hand helper function numba's code ran
    ~5x slower."""
    n = rest.shape[0]
    p = 0
    for i in range(n):
        a = rest[i]
        sa, ra = a & 3, a >> 2
        for j in range(i + 1, n):
            b = rest[j]
            sb = b & 3
            if suited >= 5 or suit_count[sa] + 1 + (sa == sb) >= 5 or suit_count[sb] + 1 >= 5:
                out[p] = full_strength(a, b, row, nonflush, flush, colex, offset)
            else:
                out[p] = pair_table[ra, b >> 2]
            p += 1


@njit(cache=True)
def full_strength(a, b, row, nonflush, flush, colex, offset):  # pragma: no cover - numba
    """The evaluator on cards ``a``, ``b`` and the board :func:`fill_rank_pairs` put in ``row``."""
    row[0] = a
    row[1] = b
    return np.int64(_eval_row(row, row.shape[0], nonflush, flush, colex, offset))


@njit(cache=True)
def runouts_holding(runouts, slot, slots):  # pragma: no cover - numba
    """(``start``, ``runs``): the runouts (rows of card codes) holding each card, as one list
    in index order, ``runs[start[slot[c]] : start[slot[c] + 1]]`` for card ``c``; ``slot``
    maps card codes to ``0 .. slots - 1``. Counting per pair of ranks and taking back the
    runouts a hand's cards block needs exactly these lists."""
    start = np.zeros(slots + 1, dtype=np.int64)
    for r in range(runouts.shape[0]):
        for j in range(runouts.shape[1]):
            start[slot[runouts[r, j]] + 1] += 1
    for c in range(slots):
        start[c + 1] += start[c]
    runs = np.empty(max(start[slots], 1), dtype=np.int64)
    fill = start[:slots].copy()
    for r in range(runouts.shape[0]):
        for j in range(runouts.shape[1]):
            runs[fill[slot[runouts[r, j]]]] = r
            fill[slot[runouts[r, j]]] += 1
    return start, runs


def pair_rows(rest: np.ndarray, hands: np.ndarray) -> np.ndarray:
    """Row of each hand ``[n, 2]`` among the pairs of ``rest`` in :func:`rest_pair_strengths`'s
    order (row-major ``i < j`` over positions in ``rest``)."""
    position = np.full(CODES, -1, dtype=np.int64)
    position[rest] = np.arange(len(rest))
    i, j = np.sort(position[hands], axis=1).T
    return i * (2 * len(rest) - i - 1) // 2 + j - i - 1
