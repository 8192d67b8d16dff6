"""Compiled public betting trees: the counts the reference lists, and agreement with the engine."""

import numpy as np
import pytest

from protocol.betting_tree import DECISION, FOLD_END, SHOWDOWN, BettingTree
from protocol.gamedef import load_game
from protocol.state import ACTIONS, State


@pytest.mark.parametrize(
    "name, per_round, terminal",
    [
        ("kuhn", (4,), 5),
        ("leduc", (6, 30), 49),
        ("fhp", (8, 56), 98),
        ("holdem", (8, 70, 630, 5670), 10206),
    ],
)
def test_counts(name, per_round, terminal):
    tree = BettingTree.build(load_game(name))
    assert tree.decision_nodes_per_round == per_round
    assert tree.num_terminal == terminal


@pytest.mark.parametrize("name", ["kuhn", "leduc", "fhp"])
def test_every_node_agrees_with_the_engine(name):
    game = load_game(name)
    tree = BettingTree.build(game)
    for node in range(tree.num_nodes):
        state = State(game)
        for letter in tree.history[node].replace("/", ""):
            state.apply(letter)
        assert tree.spent[node].tolist() == state.spent
        if state.is_finished:
            assert tree.kind[node] == (SHOWDOWN if state.is_showdown else FOLD_END)
        else:
            assert tree.kind[node] == DECISION and tree.actor[node] == state.actor
            assert tuple(a for a, ok in zip(ACTIONS, tree.legal[node], strict=True) if ok) == state.legal_actions()
        for index, child in enumerate(tree.child[node]):
            assert (child >= 0) == bool(tree.legal[node, index])
            if child >= 0:
                assert tree.parent[child] == node and tree.parent_action[child] == index


def test_preorder_parents_before_children():
    tree = BettingTree.build(load_game("holdem"))
    assert np.all(tree.parent[1:] < np.arange(1, tree.num_nodes))
    assert tree.node_of["cc/"] == tree.child[tree.child[0, 1], 1]
