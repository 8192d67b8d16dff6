"""Local best response's check-down equity: one hole against every hand of the agent's range.

LBR (:mod:`bot.evaluation.lbr`; Lisy & Bowling 2017) values calling and raising by its equity
``P(win) + P(tie)/2`` at a showdown on the rest of the board, against each hand the agent may
hold. Per runout (final board) that takes the strength of LBR's hole and of every range hand:
with two hole cards :mod:`bot.pair_strengths` gets all of them from ~100
evaluations (the non-flush strength of the board plus each pair of ranks, full evaluation only
for hands that may flush), instead of one evaluation per hand; each range hand is then one
lookup and one comparison. Wins and ties are counted as integers (twice the score), so the
equity is the same float whatever the order or the thread that counted it. Runouts are split
over numba's threads when the block is large (flop and preflop equities in hold'em).

Known cards are fixed (LBR sees one hole), so no sort is needed here: comparing every range
hand with one strength is already linear. The all-hands-against-all sweep (Johanson et al.
2011) is what the agent's bucket features use (:mod:`bot.abstraction.range_buckets`).

LBR's options (:class:`LBRConfig`) and its index of private hands (:class:`PrivateHands`) live
here too: the equities read both, and :mod:`bot.evaluation.lbr` builds on this module, not the
other way round.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from math import comb

import numpy as np
from numba import get_num_threads, njit, prange

from bot.agents.infosets import card_masks
from bot.errors import PokerbotError
from bot.pair_strengths import (
    CODES,
    evaluator_tables,
    fill_rank_pairs,
    full_strength,
    runouts_holding,
)
from protocol.cards import NUM_RANKS
from protocol.evaluator import _eval_row
from protocol.gamedef import Game

#: Hand x runout comparisons from which the runouts are split over threads.
PARALLEL_MIN = 1 << 15


class LBRError(PokerbotError, ValueError):
    """A game, option or agent answer LBR cannot work with."""


@dataclass(frozen=True)
class LBRConfig:
    """How LBR plays: rounds where it only calls, and how it computes check-down equity."""

    call_rounds: frozenset[int] = frozenset()
    """Rounds (0 = preflop) in which LBR only checks or calls."""
    max_enumeration: int = 4_000_000
    """Enumerate the remaining board when runouts x range hands is at most this; else sample."""
    runout_samples: int = 1_000
    """Runouts drawn when enumerating is too costly (HULH preflop, FHP preflop)."""

    def __post_init__(self) -> None:
        if self.max_enumeration < 0 or self.runout_samples < 1:
            raise LBRError("--max-enumeration must be >= 0 and --runout-samples >= 1")

    def to_dict(self) -> dict:
        return asdict(self) | {"call_rounds": sorted(self.call_rounds)}


class PrivateHands:
    """Every private hand of a game (rows of card codes, descending), with bit masks."""

    def __init__(self, game: Game) -> None:
        combos = list(itertools.combinations(sorted(game.deck, reverse=True), game.num_hole_cards))
        self.cards = np.array(combos, dtype=np.int64).reshape(len(combos), game.num_hole_cards)
        self.masks = card_masks(self.cards)
        self._row = {frozenset(h): i for i, h in enumerate(combos)}

    def __len__(self) -> int:
        return len(self.cards)

    def row(self, hand: tuple[int, ...]) -> int:
        return self._row[frozenset(hand)]

    def disjoint(self, cards: tuple[int, ...] | np.ndarray) -> np.ndarray:
        """bool ``[H]``: hands sharing no card with ``cards``."""
        mask = 0
        for card in cards:
            mask |= 1 << int(card)
        return (self.masks & np.int64(mask)) == 0


@dataclass
class EquityCounters:
    """How LBR's equities were computed over a run (the sample count the method must state)."""

    enumerated: int = 0
    sampled: int = 0
    runouts_enumerated: int = 0
    runouts_sampled: int = 0


def runouts(rest: np.ndarray, missing: int, count: int | None, rng: np.random.Generator) -> np.ndarray:
    """All ``missing``-card runouts from ``rest`` (``count`` None), or ``count`` uniform draws."""
    if count is None:
        if not missing:
            return np.zeros((1, 0), dtype=np.int64)
        return np.array(list(itertools.combinations(rest.tolist(), missing)), dtype=np.int64).reshape(-1, missing)
    keys = rng.random((count, len(rest)))
    if not 0 < missing < len(rest):
        return rest[np.argsort(keys, axis=1)[:, :missing]]
    # argsort(keys)[:, :missing] (the cards of the smallest keys, in order) in a fifth of the time
    smallest = np.argpartition(keys, missing - 1, axis=1)[:, :missing]
    order = np.take_along_axis(smallest, np.argsort(np.take_along_axis(keys, smallest, axis=1), axis=1), axis=1)
    return rest[order]


def checkdown_equity(
    game: Game,
    hands: PrivateHands,
    hole: tuple[int, ...],
    board: tuple[int, ...],
    config: LBRConfig,
    rng: np.random.Generator,
    counters: EquityCounters | None = None,
    among: np.ndarray | None = None,
) -> np.ndarray:
    """``[H]``: P(win) + P(tie)/2 of ``hole`` against each hand at a showdown on the rest of
    the board, averaged over runouts missing both hands (0 for hands that hit known cards).

    Given the agent's hand, every runout of the other cards is equally likely, so the equity
    against a range is ``range @ equity``. Enumerates when runouts x hands is at most
    ``config.max_enumeration``, else draws ``config.runout_samples`` runouts (a hand no draw
    misses counts as even, 0.5). ``among`` (bool ``[H]``) limits the work to those hands: a
    range only shrinks within a round, so its support at LBR's first decision of the round
    covers every later one.
    """
    rest, missing, rows, exact = equity_plan(game, hands, hole, board, config, among)
    drawn = runouts(rest, missing, None if exact else config.runout_samples, rng)
    if counters is not None:
        if exact:
            counters.enumerated += 1
            counters.runouts_enumerated += len(drawn)
        else:
            counters.sampled += 1
            counters.runouts_sampled += len(drawn)
    score2 = np.zeros(len(rows), dtype=np.int64)
    seen = np.zeros(len(rows), dtype=np.int64)
    threads = get_num_threads() if len(drawn) * len(rows) >= PARALLEL_MIN else 1
    kernel = _count_parallel if threads > 1 else _count_serial
    nonflush, flush, colex, offset = evaluator_tables(game.num_hole_cards + game.total_board_cards)
    theirs = hands.cards[rows]
    kernel(np.array(hole, dtype=np.int64), np.array(board, dtype=np.int64), drawn.astype(np.int64), theirs,
           hands.masks[rows], card_masks(drawn), threads, nonflush, flush, colex, offset, score2, seen)  # fmt: skip
    equity = np.zeros(len(hands))
    equity[rows] = np.where(seen > 0, 0.5 * score2 / np.maximum(seen, 1), 0.5)
    return equity


def equity_plan(game: Game, hands: PrivateHands, hole: tuple[int, ...], board: tuple[int, ...], config: LBRConfig,
                among: np.ndarray | None) -> tuple[np.ndarray, int, np.ndarray, bool]:  # fmt: skip
    """(cards not seen, board cards to come, range rows to compute, whether to enumerate) of
    :func:`checkdown_equity`."""
    known = tuple(hole) + tuple(board)
    rest = np.array([c for c in game.deck if c not in known], dtype=np.int64)
    missing = game.total_board_cards - len(board)
    live = hands.disjoint(known)
    rows = np.flatnonzero(live if among is None else live & among)
    return rest, missing, rows, comb(len(rest), missing) * len(rows) <= config.max_enumeration


def _count(hole, board, drawn, theirs, their_masks, runout_masks, chunks, nonflush, flush, colex, offset,
           score2, seen):  # pragma: no cover - numba  # fmt: skip
    """score2[h] += 2 wins + ties of ``hole`` over hand h, seen[h] += runouts, over the runouts
    (rows of ``drawn`` completing ``board``) that miss hand h; ``chunks`` parts counted apart
    (one per thread) and added. ``theirs[h]``: hand h's cards.

    Two hole cards: a hand that cannot make a flush on a runout has the outcome of its pair of
    ranks there (``outcome[x, y]``), so each runout adds its 13 x 13 outcome table to running
    sums per pair of ranks (not one addition per hand), and only the hands that may flush get a
    correction (their evaluated outcome minus their ranks'). A hand's count is then its ranks'
    sum minus the outcomes of the runouts holding one of its cards (found through a list of
    runouts per card: ~2 x 46 of 1,081 on a flop), plus its corrections: the same integers as
    counting every hand on every runout that misses it, at a tenth of the cost. Other hole
    counts are evaluated hand by hand."""
    n_hands, k = theirs.shape[0], hole.shape[0]
    visible, missing = board.shape[0], drawn.shape[1]
    n_runs = drawn.shape[0]
    cards = k + visible + missing
    part_score = np.zeros((chunks, n_hands), dtype=np.int64)
    part_seen = np.zeros((chunks, n_hands), dtype=np.int64)
    part_cells = np.zeros((chunks, NUM_RANKS, NUM_RANKS), dtype=np.int64)
    outcomes = np.empty((n_runs if k == 2 else 0, NUM_RANKS, NUM_RANKS), dtype=np.int8)  # 2 win, 1 tie, 0 loss by ranks
    everyone = np.arange(n_hands)
    by_suit, suited_start, touching_start = _hands_by_suit(theirs if k == 2 else theirs[:0, :2])
    for t in prange(chunks):
        final = np.empty(visible + missing, dtype=np.int64)
        final[:visible] = board
        row = np.empty(visible + missing + 2, dtype=np.int64)
        full = np.empty(cards, dtype=np.int64)
        table = np.empty((NUM_RANKS, NUM_RANKS), dtype=np.int64)
        suit_count = np.zeros(4, dtype=np.int64)
        my_score, my_seen, cells = part_score[t], part_seen[t], part_cells[t]
        for r in range(t, n_runs, chunks):
            final[visible:] = drawn[r]
            full[k:] = final
            mask = runout_masks[r]
            if k != 2:
                full[:k] = hole
                mine = _eval_row(full, cards, nonflush, flush, colex, offset)
                for h in range(n_hands):
                    if not mask & their_masks[h]:
                        full[:k] = theirs[h]
                        s = _eval_row(full, cards, nonflush, flush, colex, offset)
                        my_seen[h] += 1
                        my_score[h] += 2 * (mine > s) + (mine == s)
                continue
            suited = fill_rank_pairs(final, row, table, suit_count, nonflush, flush, colex, offset)
            mine = full_strength(hole[0], hole[1], row, nonflush, flush, colex, offset)
            outcome = outcomes[r]
            for x in range(NUM_RANKS):
                for y in range(NUM_RANKS):
                    outcome[x, y] = 2 * (mine > table[x, y]) + (mine == table[x, y])
                    cells[x, y] += outcome[x, y]
            if suited + 2 < 5:  # no hand can flush: every outcome by ranks
                continue
            for suit in range(4):  # the one suit with 3+ board cards (a board holds at most 5)
                if suit_count[suit] < 3:
                    continue
                if suited >= 5:  # every hand may flush
                    listed, first, last = everyone, 0, n_hands
                elif suit_count[suit] == 3:  # hands of two cards of the suit
                    listed, first, last = by_suit, suited_start[suit], suited_start[suit + 1]
                else:  # hands with a card of the suit
                    listed, first, last = by_suit, touching_start[suit], touching_start[suit + 1]
                for m in range(first, last):
                    h = listed[m]
                    if mask & their_masks[h]:
                        continue
                    a, b = theirs[h, 0], theirs[h, 1]
                    s = full_strength(a, b, row, nonflush, flush, colex, offset)
                    my_score[h] += 2 * (mine > s) + (mine == s) - outcome[a >> 2, b >> 2]
    for t in range(chunks):
        score2 += part_score[t]
        seen += part_seen[t]
    if k != 2:
        return
    for t in range(1, chunks):
        part_cells[0] += part_cells[t]
    holding, runs = runouts_holding(drawn, np.arange(CODES), CODES)
    for h in prange(n_hands):
        a, b = theirs[h, 0], theirs[h, 1]
        x, y = a >> 2, b >> 2
        total = part_cells[0, x, y]
        hits = 0
        for m in range(holding[a], holding[a + 1]):
            total -= outcomes[runs[m], x, y]
            hits += 1
        for m in range(holding[b], holding[b + 1]):
            if not runout_masks[runs[m]] & (np.int64(1) << a):
                total -= outcomes[runs[m], x, y]
                hits += 1
        score2[h] += total
        seen[h] += n_runs - hits


@njit(cache=True)
def _hands_by_suit(theirs):  # pragma: no cover - numba
    """Two-card hands listed by suit: ``by_suit[suited_start[s] : suited_start[s + 1]]`` hold
    both cards in suit ``s`` (the hands that may flush on a board with 3 of it),
    ``by_suit[touching_start[s] : touching_start[s + 1]]`` at least one (4 of it)."""
    by_suit = np.empty(3 * theirs.shape[0], dtype=np.int64)
    starts = np.zeros((2, 5), dtype=np.int64)  # suited, touching
    m = 0
    for kind in range(2):
        for s in range(4):
            starts[kind, s] = m
            for h in range(theirs.shape[0]):
                first, second = theirs[h, 0] & 3 == s, theirs[h, 1] & 3 == s
                if (first and second) if kind == 0 else (first or second):
                    by_suit[m] = h
                    m += 1
            starts[kind, s + 1] = m
    return by_suit, starts[0], starts[1]


#: Compiled twice: threads pay off only on large blocks.
_count_serial = njit(cache=True)(_count)
_count_parallel = njit(cache=True, parallel=True)(_count)
