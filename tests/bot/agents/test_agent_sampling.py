"""Agents sample their action without numpy's ``choice`` (too slow per decision for a client),
yet draw exactly what it draws: the same index and the same generator state after, so seeded
matches are unchanged."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bot.agents.base import RandomAgent, sample_index
from protocol.gamedef import load_game
from protocol.matchstate import parse_matchstate


def choice_index(weights: list[float], rng: np.random.Generator) -> int:
    """What ``Agent.act`` drew before: numpy's ``choice`` over the normalised weights."""
    array = np.array(weights, dtype=float)
    return int(rng.choice(len(weights), p=array / array.sum()))


def test_same_index_and_same_generator_state_as_numpy_choice() -> None:
    sizes = random.Random(2)
    for trial in range(5000):
        weights = [
            sizes.choice([sizes.random(), 1 / 3, 0.5, 1e-9, 1e6 * sizes.random()])
            for _ in range(sizes.choice([1, 2, 3, 3]))
        ]
        ours, numpy_rng = np.random.default_rng(trial), np.random.default_rng(trial)
        assert sample_index(weights, ours) == choice_index(weights, numpy_rng), weights
        assert ours.bit_generator.state == numpy_rng.bit_generator.state


def test_random_agent_plays_the_draws_numpy_choice_would() -> None:
    game = load_game("holdem")
    view = parse_matchstate("MATCHSTATE:1:0::9h6s|")  # fold, call and raise are legal
    agent = RandomAgent(game)
    for seed in range(300):
        expected = ("f", "c", "r")[choice_index([1 / 3] * 3, np.random.default_rng(seed))]
        assert agent.act(view, np.random.default_rng(seed)) == expected


@pytest.mark.parametrize("weights", [[0.0], [float("inf"), 1.0], [float("nan")]])
def test_weights_that_are_not_a_distribution_are_refused(weights) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        sample_index(weights, np.random.default_rng(0))
