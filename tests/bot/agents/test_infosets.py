"""Infoset index: sizes, keys as the rules engine writes them, dense layout round trips."""

import numpy as np
import pytest

from bot.agents.infosets import InfosetSpace, space_for
from protocol.cards import cards_from_str
from protocol.dealing import deal_hand
from protocol.gamedef import load_game
from protocol.matchstate import view_of
from protocol.state import ACTIONS, State


@pytest.fixture(scope="module")
def leduc():
    return space_for(load_game("leduc"))


@pytest.fixture(scope="module")
def kuhn():
    return space_for(load_game("kuhn"))


def test_sizes(kuhn, leduc):
    assert (kuhn.num_infosets_of(0), kuhn.num_infosets_of(1)) == (6, 6)
    assert (leduc.num_infosets_of(0), leduc.num_infosets_of(1)) == (468, 468)
    assert leduc.num_hands == 6 and [len(b) for b in leduc.boards] == [1, 6]


def test_keys_are_unique_and_index_round_trips(leduc):
    assert len(set(leduc.keys)) == leduc.num_infosets
    for i in (0, 17, 400, 935):
        assert leduc.index(leduc.key(i)) == i
    with pytest.raises(KeyError, match="no infoset 'Ah|Ah|cc/'"):
        leduc.index("Ah|Ah|cc/")


def test_key_format_examples(kuhn, leduc):
    assert "Ks||r" in kuhn.keys and "Ah|Qs|rc/cr" in leduc.keys
    i = leduc.index("Ah|Qs|rc/cr")
    assert leduc.hole_cards(i) == cards_from_str("Ah")
    assert leduc.board_cards(i) == cards_from_str("Qs")
    assert leduc.tree.history[leduc.node[i]] == "rc/cr"
    assert leduc.player[i] == 0  # round 2: player 0 checked, player 1 bet, player 0 to act
    assert tuple(leduc.legal[i]) == (True, True, True)


def test_no_hand_collides_with_its_board(leduc):
    for i in range(leduc.num_infosets):
        assert not set(leduc.hole_cards(i)) & set(leduc.board_cards(i))


def test_every_view_of_a_dealt_hand_has_an_infoset_with_the_engine_legality(leduc):
    game = leduc.game
    rng = np.random.default_rng(0)
    for hand_number in range(200):
        holes, board = deal_hand(game, 7, hand_number)
        state = State(game, holes, board)
        while not state.is_finished:
            view = view_of(state, state.actor, hand_number)
            i = leduc.index(InfosetSpace.make_key(view.own_hole_cards, view.board, view.betting))
            assert leduc.player[i] == state.actor
            assert tuple(leduc.legal[i]) == tuple(a in state.legal_actions() for a in ACTIONS)
            state.apply(str(rng.choice(state.legal_actions())))


def test_dense_round_trip_and_uniform(leduc):
    uniform = leduc.uniform_strategy()
    assert np.allclose(uniform.sum(axis=1), 1) and not (uniform * ~leduc.legal).any()
    rng = np.random.default_rng(1)
    x = rng.random((leduc.num_infosets, 3))
    dense = leduc.to_dense(x)
    assert dense.shape == (leduc.num_slots, 3)
    assert np.array_equal(leduc.from_dense(dense), x)
    # a node's block holds its (board, hand) rows; colliding hands stay zero
    i = leduc.index("Ah|Qs|rc/cr")
    block = leduc.node_block(dense, leduc.node[i])
    assert np.array_equal(block[leduc.board[i], leduc.hand[i]], x[i])
    assert not block[~leduc.valid[1]].any()


def test_check_strategy_rejects_non_distributions(leduc):
    good = leduc.uniform_strategy()
    assert leduc.check_strategy(good) is not None
    with pytest.raises(ValueError, match="shape"):
        leduc.check_strategy(good[:-1])
    bad = good.copy()
    bad[0] = (0.5, 0.25, 0.25)  # fold is illegal at the root
    with pytest.raises(ValueError, match=r"row 0 \(As\|\|\)"):
        leduc.check_strategy(bad)


@pytest.mark.parametrize("module", ["bot.agents.infosets", "bot.evaluation.best_response"])
def test_docstring_examples_hold(module):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(module)).failed == 0
