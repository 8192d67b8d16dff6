"""The betting-node graph the dealer and the client walk agrees with the rules engine on every
betting sequence (Kuhn, Leduc, FHP: all of them, as many as the compiled tree has; hold'em:
random hands), including the payoffs at fold ends and showdowns and the messages for illegal
letters."""

from __future__ import annotations

import random

import pytest

from protocol.betting_nodes import BettingNode, betting_root
from protocol.dealing import deal_hand
from protocol.gamedef import load_game
from protocol.state import ACTIONS, IllegalActionError, State


def assert_same(node: BettingNode, state: State) -> None:
    assert node.betting == node.betting_string() == state.betting_string()
    assert node.round == state.round and node.actor == state.actor
    assert node.legal == node.legal_actions() == state.legal_actions()
    assert node.is_finished == state.is_finished and node.is_showdown == state.is_showdown
    assert node.folded == tuple(state.folded) and node.spent == tuple(state.spent)
    if state.is_finished and not state.is_showdown:
        assert node.payoffs() == state.payoffs()


def walk_all(node: BettingNode, state: State) -> int:
    """Compare every sequence below ``node``; illegal letters raise what the engine raises."""
    assert_same(node, state)
    visited = 1
    for letter in ACTIONS:
        if letter in state.legal_actions():
            successor = state.copy()
            successor.apply(letter)
            visited += walk_all(node.child(letter), successor)
        else:
            with pytest.raises(IllegalActionError) as from_node:
                node.child(letter)
            with pytest.raises(IllegalActionError) as from_state:
                state.copy().apply(letter)
            assert str(from_node.value) == str(from_state.value)
    return visited


@pytest.mark.parametrize(("game_name", "sequences"), [("kuhn", 9), ("leduc", 85), ("fhp", 162)])
def test_every_sequence_agrees_with_the_rules_engine(game_name: str, sequences: int) -> None:
    game = load_game(game_name)
    assert walk_all(betting_root(game), State(game)) == sequences


@pytest.mark.parametrize("game_name", ["leduc", "fhp", "holdem"])
def test_random_hands_agree_including_showdown_payoffs(game_name: str) -> None:
    game = load_game(game_name)
    rng = random.Random(4)
    for hand in range(300):
        holes, board = deal_hand(game, 9, hand)
        state, node = State(game, holes, board), betting_root(game)
        while not state.is_finished:
            letter = rng.choice(state.legal_actions())
            state.apply(letter)
            node = node.child(letter)
            assert_same(node, state)
        if state.is_showdown:
            assert node.showdown_payoffs(holes, state.visible_board()) == state.payoffs()
            assert node.with_cards(holes, board).payoffs() == state.payoffs()
        else:
            assert node.payoffs() == state.payoffs()


def test_nodes_are_shared_and_states_handed_out_are_fresh() -> None:
    game = load_game("leduc")
    assert betting_root(game).child("r") is betting_root(game).child("r")
    state = betting_root(game).child("r").to_state()
    state.apply("c")  # changing the copy leaves the node as it was
    assert betting_root(game).child("r").to_state().betting_string() == "r"
    with pytest.raises(IllegalActionError, match="showdown needs every player's cards"):
        betting_root(game).child("c").child("c").child("c").child("c").payoffs()
