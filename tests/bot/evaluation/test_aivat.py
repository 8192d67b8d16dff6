"""AIVAT: exactly unbiased (checked by enumerating every deal and action sequence) and lower
variance on Leduc against a known policy."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from bot.agents.base import Agent, CallAgent, RaiseAgent, RandomAgent
from bot.evaluation.aivat import EquityValue, ExactValue, aivat_value, aivat_values
from bot.evaluation.match import run_in_process
from protocol.cards import cards_from_str
from protocol.gamedef import load_game
from protocol.match_log import record_of
from protocol.matchstate import view_of
from protocol.state import State


class Cautious(Agent):
    """A stochastic, card-dependent policy: raises more with higher cards."""

    name = "cautious"

    def action_probabilities(self, view):
        legal = self.legal_actions(view)
        rank = max(c // 4 for c in view.own_hole_cards + view.board_flat)
        aggression = (rank - 9) / 4  # Q..A -> 0.25..0.75
        weights = {"f": 0.5 - aggression / 2, "c": 1.0, "r": aggression}
        total = sum(weights[k] for k in legal)
        return {k: weights[k] / total for k in legal}


def expectations(
    game_name: str, agents: tuple[Agent, Agent], position: int, equity: bool = False
) -> tuple[float, float, float]:
    """E[u] and E[AIVAT] for agents[0] in ``position``, summed over every deal and action path,
    and the value function's root value (from A's side)."""
    game = load_game(game_name)
    seating = (agents[0], agents[1]) if position == 0 else (agents[1], agents[0])
    value = EquityValue(game) if equity else ExactValue(game, seating)
    deals = list(permutations(game.deck, 2 + game.total_board_cards))
    expected_u = expected_y = 0.0

    def walk(state: State, probability: float) -> None:
        nonlocal expected_u, expected_y
        if state.is_finished:
            record = record_of(state, 0, ("x", "y"))
            expected_u += probability * record.values[position]
            expected_y += probability * aivat_value(record, position, agents[0], value)
            return
        actor = state.actor
        probabilities = seating[actor].action_probabilities(view_of(state, actor, 0))
        for kind, p in probabilities.items():
            if p > 0:
                child = state.copy()
                child.apply(kind)
                walk(child, probability * p)

    for cards in deals:
        walk(State(game, ((cards[0],), (cards[1],)), cards[2:]), 1.0 / len(deals))
    sign = 1 if position == 0 else -1
    return expected_u, expected_y, sign * value.root_value


@pytest.mark.parametrize(
    ("game_name", "position"), [("kuhn", 0), ("kuhn", 1), ("leduc", 0), ("leduc", 1)]
)
def test_aivat_is_exactly_unbiased(game_name: str, position: int) -> None:
    game = load_game(game_name)
    agents = (Cautious(game), RandomAgent(game))
    expected_u, expected_y, exact = expectations(game_name, agents, position)
    assert expected_y == pytest.approx(expected_u, abs=1e-9)
    assert expected_u == pytest.approx(exact, abs=1e-9)


@pytest.mark.parametrize("position", [0, 1])
def test_equity_value_aivat_is_exactly_unbiased(position: int) -> None:
    """Pot × equity is a different v: the estimator is still exactly unbiased (the root value
    differs from E[u] now, since equity ignores the betting to come)."""
    game = load_game("leduc")
    expected_u, expected_y, _ = expectations(
        "leduc", (Cautious(game), RandomAgent(game)), position, equity=True
    )
    assert expected_y == pytest.approx(expected_u, abs=1e-9)


def test_equity_values() -> None:
    leduc = load_game("leduc")
    # Kh vs Qs, board to come from Qh Ks Ah As: Qh pairs the queen, the other three win for Kh
    assert EquityValue(leduc).equity((cards_from_str("Kh"), cards_from_str("Qs")), ()) == 0.75
    value = EquityValue(leduc)
    holes = (cards_from_str("Kh"), cards_from_str("Qs"))
    assert value.value(holes, (), "r") == pytest.approx(0.75 * 4 - 3)  # pot 3+1, spent 3
    assert value.value(holes, (), "rf") == 1.0  # position 1 folded its ante
    assert value.root_value == 0.0
    holdem = load_game("holdem")
    aces_kings = EquityValue(holdem).equity((cards_from_str("AhAs"), cards_from_str("KhKs")), ())
    assert aces_kings == pytest.approx(0.82, abs=0.02)  # Monte Carlo pre-flop (1.7M boards)
    assert EquityValue(holdem).root_value == 0.5 * 15 - 10


def test_equity_aivat_lowers_variance_on_fhp_and_keeps_the_mean() -> None:
    game = load_game("fhp")
    agents = (RandomAgent(game), CallAgent(game))
    result = run_in_process(game, agents, ("a", "b"), 1500, 5)
    raw = result.chips
    corrected = aivat_values([(h.record, h.position) for h in result.hands], agents, game)
    stderr = np.sqrt(raw.var(ddof=1) / len(raw) + corrected.var(ddof=1) / len(raw))
    assert abs(raw.mean() - corrected.mean()) < 3 * stderr
    assert raw.var() / corrected.var() > 2.0


def test_value_function_knows_simple_game_values() -> None:
    kuhn = load_game("kuhn")
    assert ExactValue(kuhn, (CallAgent(kuhn), CallAgent(kuhn))).root_value == pytest.approx(0.0)
    # always raise vs always call in Kuhn: every hand is a 2-chip showdown, symmetric cards
    assert ExactValue(kuhn, (RaiseAgent(kuhn), CallAgent(kuhn))).root_value == pytest.approx(0.0)
    # random vs always-raise in Leduc: value of position 0 from the enumeration above agrees
    leduc = load_game("leduc")
    _, _, exact = expectations("leduc", (RandomAgent(leduc), RaiseAgent(leduc)), 0)
    assert ExactValue(leduc, (RandomAgent(leduc), RaiseAgent(leduc))).root_value == pytest.approx(
        exact
    )


def test_aivat_lowers_variance_on_leduc_and_keeps_the_mean() -> None:
    game = load_game("leduc")
    agents = (Cautious(game), RandomAgent(game))  # A known; B's decisions get no correction
    result = run_in_process(game, agents, ("a", "b"), 4000, 21)
    raw = result.chips
    corrected = aivat_values([(h.record, h.position) for h in result.hands], agents, game)
    stderr = np.sqrt(raw.var(ddof=1) / len(raw) + corrected.var(ddof=1) / len(raw))
    assert abs(raw.mean() - corrected.mean()) < 3 * stderr
    assert raw.var() / corrected.var() > 2.0


def test_exact_value_refuses_big_games() -> None:
    game = load_game("holdem")
    with pytest.raises(ValueError, match="Kuhn, Leduc"):  # pot × equity serves big games
        ExactValue(game, (CallAgent(game), CallAgent(game)))
