"""The vectorised environment agrees with the rules engine on every hand it plays."""

from __future__ import annotations

import numpy as np
import pytest

from protocol.betting_tree import ACTION_INDEX
from protocol.gamedef import load_game
from protocol.state import ACTIONS, State
from training.nfsp.vector_env import VectorEnv


@pytest.mark.parametrize("name", ["kuhn", "leduc", "fhp"])
def test_random_hands_match_the_rules_engine(name: str) -> None:
    """Random deals and random legal actions: betting, legality, views and payoffs equal
    what :class:`State` says for the same cards and actions."""
    game = load_game(name)
    env = VectorEnv(game, num_envs=64)
    rng = np.random.default_rng(1)
    env.deal(np.arange(64), rng)
    hole = game.num_hole_cards
    states = [
        State(
            game,
            hole_cards=[tuple(int(c) for c in env.holes[i, p]) for p in range(2)],
            board_cards=tuple(int(c) for c in env.board[i]),
        )
        for i in range(64)
    ]
    while not env.done.all():
        live = np.flatnonzero(~env.done)
        actors = env.actor[live]
        views = env.observation(live, actors)
        actions = np.empty(len(live), dtype=np.int64)
        for row, i in enumerate(live):
            state = states[i]
            assert actors[row] == state.actor
            legal = state.legal_actions()
            assert env.legal[i].tolist() == [a in legal for a in ACTIONS]
            seen = len(state.visible_board())
            assert views[row, :hole].tolist() == list(state.hole_cards[state.actor])
            assert views[row, hole : hole + seen].tolist() == list(state.visible_board())
            assert (views[row, hole + seen :] == -1).all()
            kind = legal[int(rng.integers(len(legal)))]
            actions[row] = ACTION_INDEX[kind]
            state.apply(kind)
        env.step(actions, live)
    payoffs = env.payoffs(np.arange(64))
    for i, state in enumerate(states):
        assert state.is_finished
        assert env.tree.history[int(env.node[i])] == state.betting_string()
        assert payoffs[i].tolist() == list(state.payoffs())


def test_deals_are_uniform_and_distinct() -> None:
    """Each hand's cards are distinct, and over many deals every card is equally likely in
    every slot (chi-square-free check: within 5% of the mean for Leduc's six cards)."""
    game = load_game("leduc")
    env = VectorEnv(game, num_envs=60_000)
    env.deal(np.arange(60_000), np.random.default_rng(3))
    cards = np.concatenate([env.holes.reshape(60_000, -1), env.board], axis=1).astype(np.int64)
    assert all(len(set(row)) == cards.shape[1] for row in cards[:2000].tolist())
    for slot in range(cards.shape[1]):
        counts = np.unique(cards[:, slot], return_counts=True)[1]
        assert len(counts) == 6
        assert np.abs(counts / 10_000 - 1).max() < 0.05


def test_illegal_action_is_a_clear_error() -> None:
    env = VectorEnv(load_game("kuhn"), num_envs=1)
    env.deal(np.arange(1), np.random.default_rng(0))
    with pytest.raises(ValueError, match="illegal action 0 at betting ''"):
        env.step(np.array([0]))  # no fold facing no bet


def test_payoffs_refuse_unfinished_hands() -> None:
    env = VectorEnv(load_game("kuhn"), num_envs=1)
    env.deal(np.arange(1), np.random.default_rng(0))
    with pytest.raises(ValueError, match="not over"):
        env.payoffs(np.arange(1))
