"""The fast check-down equities and pair strengths (:mod:`bot.evaluation.lbr_equity`,
:mod:`bot.pair_strengths`, the screened nearest centres of
:mod:`bot.abstraction.range_buckets`) give the same bits as the straightforward computations
they replaced, kept here as slow references; a whole LBR run plays the same chips with either."""

from __future__ import annotations

import numpy as np
import pytest

from bot.abstraction.range_buckets import nearest_centres
from bot.abstraction.runtime_buckets import nearest_centre
from bot.agents.base import RandomAgent
from bot.agents.infosets import card_masks
from bot.evaluation import lbr
from bot.evaluation.lbr import LBRConfig, PrivateHands, run_lbr
from bot.evaluation.lbr_equity import EquityCounters, checkdown_equity, equity_plan, runouts
from bot.pair_strengths import (
    evaluator_tables,
    fill_rank_pairs,
    pair_rows,
    rest_pair_strengths,
)
from bot.registry import resolve_agent
from protocol.cards import NUM_RANKS, cards_from_str
from protocol.evaluator import hand_strength_batch
from protocol.gamedef import Game, load_game
from tests.bot.evaluation.test_lbr import MINI_FHP

HOLDEM, FHP, LEDUC = load_game("holdem"), load_game("fhp"), load_game("leduc")


def reference_equity(game: Game, hands: PrivateHands, hole: tuple[int, ...], board: tuple[int, ...],
                     config: LBRConfig, rng: np.random.Generator, counters: EquityCounters | None = None,
                     among: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """The implementation before the pair-strength kernel: every range hand evaluated on every
    runout by the batch evaluator, runouts drawn by a full argsort."""
    rest, missing, rows, exact = equity_plan(game, hands, hole, board, config, among)
    if exact:
        drawn = runouts(rest, missing, None, rng)
    else:
        drawn = rest[np.argsort(rng.random((config.runout_samples, len(rest))), axis=1)[:, :missing]]
    if counters is not None:
        counters.enumerated += exact
        counters.sampled += not exact
        counters.runouts_enumerated += len(drawn) * exact
        counters.runouts_sampled += len(drawn) * (not exact)
    boards = np.concatenate([np.broadcast_to(np.array(board, dtype=np.int64), (len(drawn), len(board))), drawn], axis=1)
    mine = hand_strength_batch(np.concatenate([np.broadcast_to(np.array(hole), (len(drawn), len(hole))), boards], axis=1))
    theirs = hands.cards[rows]
    cards = np.concatenate([np.repeat(theirs[:, None, :], len(drawn), axis=1),
                            np.broadcast_to(boards, (len(rows),) + boards.shape)], axis=2)  # fmt: skip
    strength = hand_strength_batch(cards.reshape(-1, cards.shape[2])).reshape(len(rows), len(drawn))
    misses = (card_masks(drawn)[None, :] & hands.masks[rows][:, None]) == 0
    score = ((mine[None, :] > strength) + 0.5 * (mine[None, :] == strength)) * misses
    count = misses.sum(axis=1)
    equity = np.zeros(len(hands))
    equity[rows] = np.where(count > 0, score.sum(axis=1) / np.maximum(count, 1), 0.5)
    return equity


CASES = [(HOLDEM, "Ah7d", ""), (HOLDEM, "2c2d", "Kd9s2h"), (HOLDEM, "QsJs", "Ts9s2s"), (HOLDEM, "Ah7d", "Kd9s2c5h"),
         (HOLDEM, "AsKs", "QsJs3s4d2s"), (FHP, "9h8h", ""), (FHP, "KcKd", "Kh7h2h"), (LEDUC, "Ks", ""),
         (LEDUC, "Qh", "Qs"), (MINI_FHP, "AsKh", ""), (MINI_FHP, "JhJs", "AhKsQs")]  # fmt: skip


@pytest.mark.parametrize(("game", "hole", "board"), CASES)
def test_equity_equals_the_reference_bit_for_bit(game, hole, board):
    """Enumerated and sampled (a small enumeration budget forces sampling), over the whole
    range and over a random part of it: the same floats and the same counters."""
    hole, board = cards_from_str(hole), cards_from_str(board)
    hands = PrivateHands(game)
    among = np.random.default_rng(1).random(len(hands)) < 0.6
    for config in (LBRConfig(), LBRConfig(max_enumeration=0, runout_samples=300)):
        for part in (None, among):
            counted, expected = EquityCounters(), EquityCounters()
            fast = checkdown_equity(game, hands, hole, board, config, np.random.default_rng(4), counted, part)
            slow = reference_equity(game, hands, hole, board, config, np.random.default_rng(4), expected, part)
            assert np.array_equal(fast, slow) and counted == expected


def random_board(rng: np.random.Generator, game: Game, size: int, flush_suit: int | None) -> tuple[int, ...]:
    deck = [c for c in game.deck if flush_suit is None or c % 4 == flush_suit]
    suited = tuple(int(c) for c in rng.choice(deck, min(size, 4 if flush_suit is not None else size), replace=False))
    others = [c for c in game.deck if c not in suited]
    return suited + tuple(int(c) for c in rng.choice(others, size - len(suited), replace=False))


@pytest.mark.parametrize("game", [HOLDEM, FHP, MINI_FHP], ids=["holdem", "fhp", "mini_fhp"])
def test_rest_pair_strengths_equal_the_evaluator(game):
    """Every pair of the cards off the board, on complete boards with and without three or
    four cards of one suit (where hands need the full evaluation)."""
    rng = np.random.default_rng(3)
    size = game.total_board_cards
    nonflush, flush, colex, offset = evaluator_tables(2 + size)
    suits = sorted({c % 4 for c in game.deck})
    for trial in range(12):
        final = np.array(random_board(rng, game, size, suits[trial % len(suits)] if trial % 3 else None), dtype=np.int64)
        rest = np.array([c for c in game.deck if c not in final], dtype=np.int64)
        out = np.empty(len(rest) * (len(rest) - 1) // 2, dtype=np.int64)
        row, table, suit_count = np.empty(size + 2, dtype=np.int64), np.empty((NUM_RANKS, NUM_RANKS), dtype=np.int64), np.zeros(4, dtype=np.int64)
        suited = fill_rank_pairs(final, row, table, suit_count, nonflush, flush, colex, offset)
        assert suited == np.bincount(final % 4).max()
        rest_pair_strengths(rest, row, table, suit_count, suited, nonflush, flush, colex, offset, out)
        first, second = np.triu_indices(len(rest), 1)
        pairs = np.stack([rest[first], rest[second]], axis=1)
        assert np.array_equal(pair_rows(rest, pairs[:, ::-1]), np.arange(len(pairs)))
        expected = hand_strength_batch(np.concatenate([pairs, np.broadcast_to(final, (len(pairs), size))], axis=1))
        assert np.array_equal(out, expected)


def test_screened_nearest_centres_equal_the_exact_kernel_with_ties():
    """Points on centres, midway between two, repeated centres (exact ties: the first wins)
    and random CDFs: the same index as the per-point kernel."""
    rng = np.random.default_rng(0)
    centres = np.sort(rng.random((40, 50)), axis=1).astype(np.float32)
    centres[-1] = centres[3]
    points = np.concatenate([centres, (centres[:20] + centres[20:]) / 2,
                             np.sort(rng.random((200, 50)), axis=1)]).astype(np.float32)  # fmt: skip
    fast = nearest_centres(points, centres)
    assert fast.tolist() == [nearest_centre(p, centres) for p in points]
    assert fast[3] == fast[39] == 3


@pytest.mark.parametrize(("game", "agent_name", "deals"), [(HOLDEM, "default", 2), (HOLDEM, "random", 3), (FHP, "random", 6)])
def test_lbr_runs_play_the_same_chips_with_the_reference_equities(monkeypatch, game, agent_name, deals):
    """Whole duplicate deals (sampled preflop equities, every later round) against the shipped
    hold'em bot and a card-blind agent: the same chips and counters as with the reference."""
    agent = resolve_agent(agent_name, game) if agent_name != "random" else RandomAgent(game)
    fast = run_lbr(game, agent, deals, seed=11)
    monkeypatch.setattr(lbr, "checkdown_equity", reference_equity)
    slow = run_lbr(game, agent, deals, seed=11)
    assert fast.chips == slow.chips and fast.counters == slow.counters
