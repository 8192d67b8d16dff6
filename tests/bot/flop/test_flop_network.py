"""The suit-canonical flop network policy: exact evaluation, suit invariance, the shipped bot."""

import itertools

import numpy as np
import pytest
import torch

from bot.evaluation.best_response import exploitability
from bot.flop.best_response import flop_exploitability, flop_game_for
from bot.flop.network import FlopNet, FlopNetAgent, FlopNetPolicy, canonical_cards
from bot.flop.policies import expand_canonical, policy_strategy
from bot.registry import resolve_agent, resolve_flop_policy
from bot.shipped import shipped_manifest
from protocol.cards import NUM_SUITS
from protocol.gamedef import load_game
from protocol.matchstate import MatchState
from tests.training.flop.test_flop_solver import TINY_FHP

FHP = load_game("fhp")


@pytest.fixture(scope="module")
def tiny_policy():
    torch.manual_seed(0)
    fg = flop_game_for(TINY_FHP, True)
    net = FlopNet(fg.flop.num_decisions, width=16, depth=2)
    size = int(fg.hand_class.max()) + 1
    preflop = np.random.default_rng(1).random((fg.preflop.num_decisions, size, 3)) * fg.preflop.legal[:, None, :]
    return FlopNetPolicy(TINY_FHP, preflop, net)


def test_network_fast_path_equals_dense_table(tiny_policy):
    """The canonical-flop evaluation of the network equals brute force on its dense table."""
    fast = flop_exploitability(tiny_policy.fg, tiny_policy.flop_policy())
    raw = flop_game_for(TINY_FHP, False)
    strategy = policy_strategy(raw, expand_canonical(tiny_policy.fg, tiny_policy.flop_policy(), raw))
    brute = exploitability(TINY_FHP, strategy)
    assert fast.best_response_values == pytest.approx(brute.best_response_values, abs=1e-5)
    assert fast.game_value == pytest.approx(brute.game_value, abs=1e-5)


def rename_suits(cards, perm):
    return tuple(c - c % NUM_SUITS + perm[c % NUM_SUITS] for c in cards)


def test_canonical_cards_are_the_same_for_every_suit_renaming():
    hands = np.array([[51, 46], [12, 8]])
    flops = np.array([[47, 43, 2], [13, 9, 5]])
    reference = canonical_cards(FHP, hands, flops)
    for perm in itertools.permutations(range(4)):
        renamed_hands = np.array([rename_suits(h, perm) for h in hands])
        renamed_flops = np.array([rename_suits(f, perm) for f in flops])
        for a, b in zip(canonical_cards(FHP, renamed_hands, renamed_flops), reference, strict=True):
            assert np.array_equal(a, b)


def views(betting, hole, board):
    return MatchState(0, 0, betting, (hole, ()), (board,) if board else ())


def check_agent(agent, game):
    """Probabilities are legal, sum to 1, and do not change under any suit renaming."""
    suits = list(range(NUM_SUITS - game.num_suits, NUM_SUITS))
    deck = list(game.deck)
    rng = np.random.default_rng(5)
    for betting in ("", "cr", "rc/", "crc/r", "rrc/crr"):
        cards = [int(c) for c in rng.choice(deck, 5, replace=False)]
        hole, board = tuple(cards[:2]), tuple(cards[2:]) if "/" in betting else ()
        view = views(betting, hole, board)
        base = agent.action_probabilities(view)
        legal = set(view.to_state(game).legal_actions())
        assert set(base) == legal and sum(base.values()) == pytest.approx(1.0)
        assert all(p >= 0 for p in base.values())
        for perm_suits in itertools.permutations(suits):
            perm = dict(zip(suits, perm_suits, strict=True))
            renamed = views(betting, rename_suits(hole, perm), rename_suits(board, perm))
            assert agent.action_probabilities(renamed) == pytest.approx(base, abs=1e-6)


def test_network_agent_is_legal_and_suit_invariant(tiny_policy):
    check_agent(FlopNetAgent(TINY_FHP, tiny_policy), TINY_FHP)


@pytest.mark.skipif(shipped_manifest(FHP) is None, reason="no FHP bot ships in this checkout")
def test_shipped_fhp_bot_loads_and_is_suit_invariant():
    agent = resolve_agent("default", FHP)
    check_agent(agent, FHP)
    fg, policy = resolve_flop_policy(FHP, "default")
    assert fg.canonical and policy.suit_invariant
    assert shipped_manifest(FHP)["strength"]["exploitability"].endswith("mbb/g (exact, NashConv/2)")
