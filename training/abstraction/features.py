"""Hand-strength features per canonical (hole, board) class: E[HS] and E[HS^2].

HS is the probability of beating a uniformly random opponent hand (ties count half) on the
final board, with card removal; E[HS] and E[HS^2] average HS and HS^2 over every runout of the
board cards still to come (the classic E[HS^2] bucketing of Zinkevich et al. 2007 / Johanson
et al. 2013; squaring ranks draws above made hands of equal
E[HS]).

Work is organised *board first*: for each canonical board of the round (134,459 river boards
instead of 2.6M raw ones) every runout is dealt, all hole hands are evaluated in one batched
call to :func:`protocol.evaluator.hand_strength_batch`, and HS for all holes at once comes from
one sort of their strengths (the sort-and-count trick, with inclusion-exclusion over the two
hole cards for card removal). Every (hole, board) class is met through the canonical board of
its orbit, and the class's raw combo count (its orbit size, used to weight percentiles) is the
sum of the canonical board's orbit sizes over the holes that land in it.

The same counting, split by a label per opponent hole, gives OCHS (opponent cluster hand
strength, Johanson et al. 2013 "KO"): HS against each cluster of opponent hands separately, the
river feature that separates far more hands than the scalar E[HS] (1,950 distinct river values).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import comb

import numpy as np
from numba import njit, prange

from protocol.evaluator import hand_strength_batch
from protocol.gamedef import Game
from protocol.isomorphism import (
    HandIndexer,
    all_combinations,
    canonical_representatives,
    index_one,
    round_indexer,
)

#: OCHS values are stored as uint16 fixed point (numba has no float16): HS * OCHS_SCALE, rounded.
OCHS_SCALE = 65535
#: Evaluator rows per batch: large enough to amortise the call, small enough for cache/RAM.
_ROWS_PER_CHUNK = 2_000_000


@dataclass(frozen=True)
class RoundFeatures:
    """Per class of the round's (hole, board) indexer: E[HS], E[HS^2] and raw combo count."""

    ehs: np.ndarray  # float32 [size]
    ehs2: np.ndarray  # float32 [size]
    weight: np.ndarray  # uint8 [size]: raw (hole, board) deals in the class (<= 24 with 4 suits)
    hist: np.ndarray | None = None  # uint16 [size, bins]: runouts per final-HS bin (optional)
    ochs: np.ndarray | None = None  # uint16 [size, clusters]: mean HS against each cluster, times OCHS_SCALE


def compute_round_features(
    game: Game,
    round_index: int,
    out: RoundFeatures,
    progress: Callable[[int, int], None] | None = None,
    hole_labels: np.ndarray | None = None,
    max_runouts: int | None = None,
    boards: np.ndarray | None = None,
) -> None:
    """Fill ``out`` (arrays of the round indexer's size, possibly memory-mapped) for one round;
    ``out.hist``, when given, receives each class's histogram of final-board HS over runouts
    (the distribution-aware feature of Johanson et al. 2013); ``out.ochs``, when given, the mean
    HS against each opponent cluster, ``hole_labels`` giving the cluster of every hole of
    :func:`hole_combinations`.

    ``max_runouts`` replaces the runouts of each board by that many drawn without replacement
    (seeded, so repeatable): enough for the preflop opponent clusters, where the exact
    enumeration (2.6M HULH boards x 1,326 holes) would take most of an hour.
    ``boards`` restricts the work to those canonical boards (positions in the round's canonical
    board order; tests compare a few boards with play-time features, :mod:`bot.abstraction.runtime_buckets`).
    ``progress(done, total)`` is called after each chunk of canonical boards.
    """
    indexer = round_indexer(game, round_index)
    visible = game.board_cards_through(round_index)
    final = game.total_board_cards
    k = game.num_hole_cards
    deck_arr = np.array(game.deck, dtype=np.int64)
    holes = hole_combinations(game)
    if (out.ochs is None) != (hole_labels is None):
        raise ValueError("OCHS needs both out.ochs and hole_labels")
    labels = np.zeros(len(holes), np.int64) if hole_labels is None else np.asarray(hole_labels, np.int64)
    num_labels = 1 if out.ochs is None else out.ochs.shape[1]
    if visible:
        reps, rep_weight = canonical_representatives(HandIndexer((visible,), game.num_ranks, game.num_suits), game.deck)
        reps = reps.astype(np.int64)
    else:
        reps, rep_weight = np.zeros((1, 0), dtype=np.int64), np.ones(1, dtype=np.int64)
    if boards is not None:
        reps, rep_weight = reps[boards], rep_weight[boards]
    runout_size = final - visible
    runouts_per_rep = comb(len(deck_arr) - visible, runout_size)
    if max_runouts is not None:
        runouts_per_rep = min(runouts_per_rep, max_runouts)
    rng = np.random.default_rng(0)
    reps_per_chunk = max(1, _ROWS_PER_CHUNK // (runouts_per_rep * len(holes)))
    out.weight[:] = 0
    hist = out.hist if out.hist is not None else np.zeros((0, 1), dtype=np.uint16)
    ochs = out.ochs if out.ochs is not None else np.zeros((0, 1), dtype=np.uint16)
    for start in range(0, len(reps), reps_per_chunk):
        chunk = reps[start : start + reps_per_chunk]
        boards = _final_boards(chunk, deck_arr, runout_size)  # [reps, runouts, final]
        if boards.shape[1] > runouts_per_rep:
            boards = boards[:, np.sort(rng.choice(boards.shape[1], runouts_per_rep, replace=False))]
        rows, valid = _deal_rows(boards.reshape(-1, final), holes)
        strength = hand_strength_batch(rows).reshape(len(chunk), boards.shape[1], len(holes))
        valid = valid.reshape(strength.shape)
        _accumulate(strength, valid, holes, labels, num_labels, chunk, rep_weight[start : start + len(chunk)], k,
                    *indexer._tables, out.ehs, out.ehs2, out.weight, hist, ochs)  # fmt: skip
        if progress is not None:
            progress(min(start + reps_per_chunk, len(reps)), len(reps))


@njit(cache=True)
def _final_boards(reps, deck, runout_size):
    """Every completion of each visible board by ``runout_size`` cards from the rest of the deck."""
    n_reps, visible = reps.shape
    rest = np.empty(deck.shape[0] - visible, dtype=np.int64)
    first = True
    out = np.empty((0, 0, 0), dtype=np.int64)
    for r in range(n_reps):
        n = 0
        for c in deck:
            clash = False
            for j in range(visible):
                if reps[r, j] == c:
                    clash = True
            if not clash:
                rest[n] = c
                n += 1
        runs = all_combinations(rest, runout_size) if runout_size else np.zeros((1, 0), dtype=np.int8)
        if first:
            out = np.empty((n_reps, runs.shape[0], visible + runout_size), dtype=np.int64)
            first = False
        for i in range(runs.shape[0]):
            out[r, i, :visible] = reps[r]
            out[r, i, visible:] = runs[i]
    return out


@njit(cache=True, parallel=True)
def _deal_rows(boards, holes):
    """Rows hole+board for every (board, hole); rows whose hole clashes get distinct filler cards."""
    nb, f = boards.shape
    nh, k = holes.shape
    rows = np.empty((nb * nh, k + f), dtype=np.int8)
    valid = np.empty(nb * nh, dtype=np.bool_)
    for b in prange(nb):
        for h in range(nh):
            i = b * nh + h
            ok = True
            for a in range(k):
                for j in range(f):
                    if holes[h, a] == boards[b, j]:
                        ok = False
            valid[i] = ok
            for a in range(k + f):
                rows[i, a] = (holes[h, a] if a < k else boards[b, a - k]) if ok else a
    return rows, valid


@njit(cache=True, inline="always")
def _hs_one_board(strength, valid, holes, labels, k, order, wins, total, less_card, eq_card, cnt_card, eq_label, cnt_label):
    """Wins (ties half) and opponent counts of every valid hole against each label's holes on one
    final board: sort by strength, count per label with card removal (inclusion-exclusion over
    the hole's cards; a two-card hand's own combo is removed twice and added back once)."""
    nh = strength.shape[0]
    n = 0
    for h in range(nh):
        if valid[h]:
            order[n] = h
            n += 1
    keys = strength[order[:n]]
    perm = np.argsort(keys, kind="mergesort")
    sorted_holes = order[:n][perm]
    less_card[:] = 0
    cnt_card[:] = 0
    cnt_label[:] = 0
    for i in range(n):
        h = sorted_holes[i]
        cnt_label[labels[h]] += 1
        for a in range(k):
            cnt_card[labels[h], holes[h, a]] += 1
    less_label = np.zeros(cnt_label.shape[0], dtype=np.int64)
    i = 0
    while i < n:
        s = strength[sorted_holes[i]]
        e = i
        while e < n and strength[sorted_holes[e]] == s:
            e += 1
        eq_card[:] = 0
        eq_label[:] = 0
        for j in range(i, e):
            h = sorted_holes[j]
            eq_label[labels[h]] += 1
            for a in range(k):
                eq_card[labels[h], holes[h, a]] += 1
        for j in range(i, e):
            h = sorted_holes[j]
            for lab in range(cnt_label.shape[0]):
                less = less_label[lab]
                eq = eq_label[lab]
                tot = cnt_label[lab]
                for a in range(k):
                    c = holes[h, a]
                    less -= less_card[lab, c]
                    eq -= eq_card[lab, c]
                    tot -= cnt_card[lab, c]
                if k == 2 and lab == labels[h]:
                    eq += 1
                    tot += 1
                wins[h, lab] = less + 0.5 * eq
                total[h, lab] = tot
        for j in range(i, e):
            h = sorted_holes[j]
            less_label[labels[h]] += 1
            for a in range(k):
                less_card[labels[h], holes[h, a]] += 1
        i = e


@njit(cache=True, parallel=True)
def _accumulate(strength, valid, holes, labels, num_labels, reps, rep_weight, k,
                groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits,
                ehs, ehs2, weight, hist, ochs):  # fmt: skip
    n_reps, n_runs, nh = strength.shape
    visible = reps.shape[1]
    bins = hist.shape[1]
    with_hist = hist.shape[0] > 0
    with_ochs = ochs.shape[0] > 0
    for r in prange(n_reps):
        counts = np.zeros((nh if with_hist else 0, bins), dtype=np.uint16)
        s1 = np.zeros(nh)
        s2 = np.zeros(nh)
        so = np.zeros((nh if with_ochs else 0, num_labels))
        cnt = np.zeros(nh, dtype=np.int64)
        wins = np.zeros((nh, num_labels))
        total = np.zeros((nh, num_labels))
        order = np.empty(nh, dtype=np.int64)
        less_card = np.zeros((num_labels, 64), dtype=np.int64)
        eq_card = np.zeros((num_labels, 64), dtype=np.int64)
        cnt_card = np.zeros((num_labels, 64), dtype=np.int64)
        eq_label = np.zeros(num_labels, dtype=np.int64)
        cnt_label = np.zeros(num_labels, dtype=np.int64)
        for b in range(n_runs):
            _hs_one_board(strength[r, b], valid[r, b], holes, labels, k, order, wins, total,
                          less_card, eq_card, cnt_card, eq_label, cnt_label)  # fmt: skip
            for h in range(nh):
                if valid[r, b, h]:
                    hs = wins[h].sum() / total[h].sum()
                    s1[h] += hs
                    s2[h] += hs * hs
                    cnt[h] += 1
                    if with_hist:
                        counts[h, min(int(hs * bins), bins - 1)] += 1
                    if with_ochs:  # an empty cluster (card removal) counts as plain HS
                        for lab in range(num_labels):
                            so[h, lab] += wins[h, lab] / total[h, lab] if total[h, lab] > 0 else hs
        cards = np.empty(k + visible, dtype=np.int64)
        for h in range(nh):
            idx = hole_board_index(holes[h], reps[r], cards, groups, binom, suit_size, class_keys, class_offsets,
                                   num_ranks, num_suits)  # fmt: skip
            if idx < 0:
                continue
            ehs[idx] = s1[h] / cnt[h]
            ehs2[idx] = s2[h] / cnt[h]
            weight[idx] += rep_weight[r]
            if with_hist:
                hist[idx] = counts[h]
            if with_ochs:
                for lab in range(num_labels):
                    ochs[idx, lab] = np.uint16(round(so[h, lab] / cnt[h] * OCHS_SCALE))


@njit(cache=True, inline="always")
def hole_board_index(hole, board, cards, groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits):
    """Class index of ``hole`` + ``board`` (``cards``: scratch of their total length), or -1
    when they share a card."""
    k = hole.shape[0]
    for a in range(k):
        for j in range(board.shape[0]):
            if hole[a] == board[j]:
                return -1
    cards[:k] = hole
    cards[k:] = board
    return index_one(cards, groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits)


def hole_combinations(game: Game) -> np.ndarray:
    """Every hole-card combination of the game's deck (int64 rows, lexicographic order)."""
    return all_combinations(np.array(game.deck, dtype=np.int64), game.num_hole_cards).astype(np.int64)
