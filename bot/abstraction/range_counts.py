"""Counts behind HS for every two-card hand on one final board, and the histogram-only path.

HS (Zinkevich et al. 2007; Johanson et al. 2013) is the share of opponent hands a hand beats,
ties half, with card removal; :mod:`bot.abstraction.range_buckets` needs it for every hand of a
board on each runout. Two ways to count, both exact integers (``2 less + equal``):

* no hand can flush on the final board: every hand's strength is that of its pair of ranks,
  so the counts are sums over the 91 pairs of ranks (:func:`rank_numerators`);
* otherwise the sweep of Johanson et al. (2011), *Accelerating Best Response Calculation in
  Large Extensive Games*: the live hands sorted by strength once and walked up while counting,
  per card, the hands holding it that were passed (:func:`sweep_numerators`); card removal is
  inclusion-exclusion, ``less = L - L_a - L_b`` and ``equal = E - E_a - E_b + 1`` (the pair
  itself counted once in ``E`` and in each of ``E_a``, ``E_b``).

k-means rounds read only the histogram of HS over the runouts, integer counts that do not
depend on the order they are added in; :func:`board_histograms` therefore counts the runouts on
which no hand can flush once per pair of ranks instead of once per hand.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bot.pair_strengths import (
    CODES,
    evaluator_tables,
    fill_rank_pairs,
    rest_pair_strengths,
    runouts_holding,
)
from protocol.cards import NUM_RANKS
from protocol.isomorphism import all_combinations


def board_histograms(game, board: tuple[int, ...], bins: int) -> np.ndarray:
    """The histogram ``[pairs, bins]`` of :func:`board_features` alone (what ``ke`` buckets
    read), the same integers at a fraction of the cost: counts do not depend on the order they
    are added in, so the runouts on which no hand can flush (most of them) add one count per
    *pair of ranks* (:func:`_histogram_counts`) instead of one per hand."""
    nonflush, flush, colex, offset = evaluator_tables(game.num_hole_cards + game.total_board_cards)
    rest = np.array([c for c in game.deck if c not in board], dtype=np.int64)
    runouts = all_combinations(rest, game.total_board_cards - len(board)).astype(np.int64)
    live = len(rest) - runouts.shape[1]
    hist = np.zeros((len(rest) * (len(rest) - 1) // 2, bins), dtype=np.int64)
    _histogram_counts(np.array(board, dtype=np.int64), rest, runouts, nonflush, flush, colex, offset,
                      (live - 2) * (live - 3) // 2, hist)  # fmt: skip
    return hist


@njit(cache=True)
def _histogram_counts(board, rest, runouts, nonflush, flush, colex, offset, total, hist):  # pragma: no cover - numba
    """``hist[p, bin(HS)]`` summed over the runouts missing pair ``p``, bins as
    :func:`bot.abstraction.range_buckets._sum_features` computes them.

    A runout on which no hand can flush gives every live hand of ranks (x, y) the same HS
    (:func:`rank_numerators`), and that HS depends only on the *ranks* of the runout's cards
    (the board's rank-pair strengths and the live cards per rank do): it is computed once per
    multiset of runout ranks (``combo_bin``, 91 for a flop's 1,176 runouts), each runout adding
    1 to that bin of every pair of ranks (``by_ranks``). A pair's histogram is then its ranks'
    counts minus the bins of the runouts that hold one of its cards (the hands they do not
    reach). Runouts where a hand may flush are swept (:func:`sweep_numerators`) and counted
    hand by hand."""
    visible, runout_size = board.shape[0], runouts.shape[1]
    n_rest, n_runs, bins = rest.shape[0], runouts.shape[0], hist.shape[1]
    first, second = pair_positions(n_rest)
    n_pairs = first.shape[0]
    ranks = rest >> 2
    final, row, table, suit_count = board_scratch(board, runout_size)
    strength, hit, count, numerator, live, order, dense, values, start, below, ties = sweep_scratch(n_rest)
    out = np.empty(n_pairs, dtype=np.int64)
    by_ranks = np.zeros((NUM_RANKS, NUM_RANKS, bins), dtype=np.int64)
    combo_bin = np.full((NUM_RANKS**runout_size, NUM_RANKS, NUM_RANKS), -1, dtype=np.int64)
    combo_runs = np.zeros(NUM_RANKS**runout_size, dtype=np.int64)
    run_combo = np.full(n_runs, -1, dtype=np.int64)  # -1: a swept runout
    swept = np.empty((n_runs, n_pairs), dtype=np.int8)  # per swept runout, each pair's bin (-1: hit)
    n_swept = 0
    position = np.full(CODES, -1, dtype=np.int64)
    for i in range(n_rest):
        position[rest[i]] = i
    for run in range(n_runs):
        final[visible:] = runouts[run]
        count[:] = 0
        for i in range(n_rest):
            hit[i] = False
        for j in range(runout_size):
            hit[position[runouts[run, j]]] = True
        suit_count[:] = 0
        for j in range(visible + runout_size):
            suit_count[final[j] & 3] += 1
        if suit_count.max() + 2 < 5:
            key = 0
            for r in np.sort(runouts[run] >> 2):
                key = key * NUM_RANKS + r
            run_combo[run] = key
            combo_runs[key] += 1
            if combo_runs[key] > 1:
                continue
            count[:] = 0
            for i in range(n_rest):
                if not hit[i]:
                    count[ranks[i]] += 1
            fill_rank_pairs(final, row, table, suit_count, nonflush, flush, colex, offset)
            numerator[:, :] = 0  # ranks no live hand has: counted, then taken back from every hand
            rank_numerators(table, count, numerator)
            for x in range(NUM_RANKS):
                for y in range(NUM_RANKS):
                    hs = 0.5 * numerator[x, y] / total
                    combo_bin[key, x, y] = min(int(hs * bins), bins - 1)
        else:
            suited = fill_rank_pairs(final, row, table, suit_count, nonflush, flush, colex, offset)
            rest_pair_strengths(rest, row, table, suit_count, suited, nonflush, flush, colex, offset, strength)
            out[:] = -1
            sweep_numerators(strength, hit, first, second, live, order, dense, values, start, below, ties, out)
            swept_bin = swept[n_swept]
            for p in range(n_pairs):
                swept_bin[p] = -1 if out[p] < 0 else min(int(0.5 * out[p] / total * bins), bins - 1)
            n_swept += 1
    for key in range(combo_runs.shape[0]):
        if combo_runs[key]:
            for x in range(NUM_RANKS):
                for y in range(NUM_RANKS):
                    by_ranks[x, y, combo_bin[key, x, y]] += combo_runs[key]
    holding, runs = runouts_holding(runouts, position, n_rest)
    for p in range(n_pairs):
        i, j = first[p], second[p]
        x, y = ranks[i], ranks[j]
        hist[p] += by_ranks[x, y]
        for run in range(n_swept):
            if swept[run, p] >= 0:
                hist[p, swept[run, p]] += 1
        for m in range(holding[i], holding[i + 1]):
            if run_combo[runs[m]] >= 0:
                hist[p, combo_bin[run_combo[runs[m]], x, y]] -= 1
        for m in range(holding[j], holding[j + 1]):
            run = runs[m]
            if run_combo[run] >= 0:
                b = combo_bin[run_combo[run], x, y]
                held = False  # a runout holding both cards was taken back once already
                for k in range(runout_size):
                    held = held or runouts[run, k] == rest[i]
                if not held:
                    hist[p, b] -= 1


@njit(cache=True)
def pair_positions(n):  # pragma: no cover - numba
    """(first, second): the positions ``i < j`` of every pair of ``n`` cards, row-major (the
    build's pair order)."""
    first = np.empty(n * (n - 1) // 2, dtype=np.int64)
    second = np.empty(n * (n - 1) // 2, dtype=np.int64)
    p = 0
    for i in range(n):
        for j in range(i + 1, n):
            first[p], second[p] = i, j
            p += 1
    return first, second


@njit(cache=True)
def board_scratch(board, runout_size):  # pragma: no cover - numba
    """(final board with ``board`` in front, :func:`bot.pair_strengths.fill_rank_pairs`'s
    row, rank-pair table and suit counts) for runouts of ``runout_size`` cards."""
    final = np.empty(board.shape[0] + runout_size, dtype=np.int64)
    final[: board.shape[0]] = board
    return (final, np.empty(board.shape[0] + runout_size + 2, dtype=np.int64),
            np.empty((NUM_RANKS, NUM_RANKS), dtype=np.int64), np.zeros(4, dtype=np.int64))


@njit(cache=True)
def sweep_scratch(n_rest):  # pragma: no cover - numba
    """Scratch arrays of one runout's counting over the pairs of ``n_rest`` live cards:
    strengths, hit cards, live cards per rank, rank numerators, and :func:`sweep_numerators`'s
    own (``dense`` filled with -1: strengths up to 7,462, a royal flush)."""
    n_pairs = n_rest * (n_rest - 1) // 2
    return (np.empty(n_pairs, dtype=np.int64), np.zeros(n_rest, dtype=np.bool_), np.zeros(NUM_RANKS, dtype=np.int64),
            np.zeros((NUM_RANKS, NUM_RANKS), dtype=np.int64), np.empty(n_pairs, dtype=np.int64),
            np.empty(n_pairs, dtype=np.int64), np.full(7463, -1, dtype=np.int64), np.empty(n_pairs, dtype=np.int64),
            np.empty(n_pairs + 1, dtype=np.int64), np.zeros(n_rest, dtype=np.int64), np.zeros(n_rest, dtype=np.int64))


@njit(cache=True)
def rank_numerators(table, count, numerator):  # pragma: no cover - numba
    """``numerator[x, y]`` = 2 less + equal of a hand of ranks x, y when no hand can flush:
    every hand's strength is ``table[x, y]``, so the counts of the module docstring are sums
    over ranks (``count``: live cards per rank), the same for every hand of those ranks."""
    n = NUM_RANKS
    cells = 0
    value = np.empty(n * n, dtype=np.int64)  # per cell (a pair of ranks that live hands have)
    weight = np.empty(n * n, dtype=np.int64)
    cell_x = np.empty(n * n, dtype=np.int64)
    cell_y = np.empty(n * n, dtype=np.int64)
    for x in range(n):
        for y in range(x, n):
            hands = count[x] * count[y] if x != y else count[x] * (count[x] - 1) // 2
            if hands:
                value[cells], weight[cells], cell_x[cells], cell_y[cells] = table[x, y], hands, x, y
                cells += 1
    order = np.argsort(value[:cells])
    weaker = np.empty(cells, dtype=np.int64)  # per cell: live hands weaker, and as strong
    same = np.empty(cells, dtype=np.int64)
    passed = 0
    g = 0
    while g < cells:
        end = g
        group = 0
        while end < cells and value[order[end]] == value[order[g]]:
            group += weight[order[end]]
            end += 1
        for m in range(g, end):
            weaker[order[m]] = passed
            same[order[m]] = group
        passed += group
        g = end
    for c in range(cells):
        x, y = cell_x[c], cell_y[c]
        s = value[c]
        less, equal = weaker[c], same[c]
        for z in (x, y):  # hands holding one of our cards: the card's partners by rank
            for w in range(n):
                partners = count[w] - (w == z)
                if table[z, w] < s:
                    less -= partners
                elif table[z, w] == s:
                    equal -= partners
        numerator[x, y] = numerator[y, x] = 2 * less + equal + 1


@njit(cache=True)
def sweep_numerators(strength, hit, first, second, live, order, dense, values, start, below, ties, out):  # pragma: no cover - numba
    """``out[p] = 2 less + equal`` of every live pair ``p`` (neither card ``hit``) by the sweep
    of Johanson et al. (2011): the live hands sorted by strength once (a counting sort over the
    board's few distinct strengths), then walked up in groups of equal strength while counting,
    per card, the hands holding it that were passed (``below``: weaker) or are in the group
    (``ties``); card removal is the inclusion-exclusion of the module docstring. The other
    arrays are scratch: ``dense`` must hold -1 (it is left so)."""
    n_live = 0
    n_values = 0
    for p in range(strength.shape[0]):
        if not (hit[first[p]] or hit[second[p]]):
            live[n_live] = p
            n_live += 1
            if dense[strength[p]] < 0:
                dense[strength[p]] = 0
                values[n_values] = strength[p]
                n_values += 1
    values[:n_values].sort()
    start[: n_values + 1] = 0
    for v in range(n_values):
        dense[values[v]] = v
    for m in range(n_live):
        start[dense[strength[live[m]]] + 1] += 1
    for v in range(1, n_values + 1):
        start[v] += start[v - 1]
    for m in range(n_live):
        p = live[m]
        v = dense[strength[p]]
        order[start[v]] = p
        start[v] += 1
    for v in range(n_values):
        dense[values[v]] = -1
    below[:] = 0
    g = 0
    while g < n_live:
        s = strength[order[g]]
        end = g
        while end < n_live and strength[order[end]] == s:
            ties[first[order[end]]] += 1
            ties[second[order[end]]] += 1
            end += 1
        for m in range(g, end):
            p = order[m]
            a, b = first[p], second[p]
            out[p] = 2 * (g - below[a] - below[b]) + (end - g) - ties[a] - ties[b] + 1
        for m in range(g, end):
            p = order[m]
            a, b = first[p], second[p]
            below[a] += ties[a]
            below[b] += ties[b]
            ties[a] = 0
            ties[b] = 0
        g = end
