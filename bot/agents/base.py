"""The one Agent interface used by the match runner, the ACPC client and the TUI.

An agent is built for one game and answers one question: given a player's view of the hand
(a :class:`~protocol.matchstate.MatchState`, exactly what a MATCHSTATE line says), what are its
action probabilities and which action does it take? Agents may keep state across a hand between
:meth:`Agent.begin_hand` and :meth:`Agent.end_hand`. Randomness comes from the ``rng`` the caller
passes, so matches are reproducible from one seed.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import replace

import numpy as np

from protocol.gamedef import Game
from protocol.matchstate import MatchState
from protocol.state import ACTIONS, CALL, RAISE, State


class Agent(ABC):
    """Base class: subclasses implement :meth:`action_probabilities`."""

    #: Short name shown in tables, logs and the TUI.
    name: str = "agent"

    def __init__(self, game: Game) -> None:
        self.game = game

    def begin_hand(self, view: MatchState) -> None:
        """Called with the first view of each hand (hook for per-hand state)."""

    def end_hand(self, view: MatchState) -> None:
        """Called with the final view of each hand (cards revealed at a showdown)."""

    @abstractmethod
    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        """Probabilities over the *legal* ACPC letters at the viewer's decision (sum 1)."""

    def range_probabilities(self, view: MatchState, hands: np.ndarray) -> np.ndarray:
        """Action probabilities ``[len(hands), 3]`` (columns f, c, r; 0 where illegal) at the
        viewer's decision in ``view`` if the viewer held each row of ``hands`` (``[n, hole]``
        card codes) instead of its own cards.

        Local best response (:mod:`bot.evaluation.lbr`) asks this for every hand of the agent's range at
        each decision. It must be the agent's *behaviour* strategy: per-hand private
        randomness (an SD-CFR stack entry drawn at :meth:`begin_hand`) is marginalised out,
        or the responder would see it. This default asks :meth:`action_probabilities` once
        per hand; subclasses override it where one batched computation is faster.
        """
        out = np.zeros((len(hands), len(ACTIONS)))
        holes = list(view.hole_cards)
        for row, hand in enumerate(np.asarray(hands)):
            holes[view.position] = tuple(int(c) for c in hand)
            probabilities = self.action_probabilities(replace(view, hole_cards=tuple(holes)))
            for kind, p in probabilities.items():
                out[row, ACTIONS.index(kind)] = p
        return out

    def act(self, view: MatchState, rng: np.random.Generator) -> str:
        """Sample an action from :meth:`action_probabilities`."""
        probabilities = self.action_probabilities(view)
        kinds = [k for k in ACTIONS if probabilities.get(k, 0.0) > 0.0]
        return kinds[sample_index([probabilities[k] for k in kinds], rng)]

    def legal_actions(self, view: MatchState) -> tuple[str, ...]:
        """The legal letters at the view's decision, from the rules engine (its answer for this
        betting, kept in the game's shared :mod:`protocol.betting_nodes` graph)."""
        return view.betting_node(self.game).legal


def sample_index(weights: list[float], rng: np.random.Generator) -> int:
    """``int(rng.choice(len(weights), p=w / w.sum()))`` for a few positive weights, without
    numpy's per-call cost (~20 µs, more than the rest of a client's work on a decision): the
    same single uniform draw and the same float operations in the same order (numpy sums fewer
    than eight numbers left to right; ``choice`` normalises, takes the cumulative sum, divides it
    by its last entry and searches to the right), so the same index and the same generator
    state after it, which keeps seeded matches as they were.

    >>> rng = np.random.default_rng(5)
    >>> sample_index([0.2, 0.5, 0.3], rng) == int(np.random.default_rng(5).choice(3, p=[0.2, 0.5, 0.3]))
    True
    """
    total = 0.0
    for weight in weights:
        total += weight
    if not 0.0 < total < math.inf:
        raise ValueError(f"action weights must be positive and finite: {weights}")
    cumulative, running = [], 0.0
    for weight in weights:
        running += weight / total
        cumulative.append(running)
    last = cumulative[-1]
    uniform = rng.random()
    return sum(1 for value in cumulative if value / last <= uniform)


def one_hot(kind: str) -> dict[str, float]:
    return {kind: 1.0}


class CardBlindAgent(Agent):
    """An agent whose play ignores its cards: one query serves every hand of a range."""

    def range_probabilities(self, view: MatchState, hands: np.ndarray) -> np.ndarray:
        row = np.zeros(len(ACTIONS))
        for kind, p in self.action_probabilities(view).items():
            row[ACTIONS.index(kind)] = p
        return np.tile(row, (len(hands), 1))


class RandomAgent(CardBlindAgent):
    """Uniform over the legal actions."""

    name = "random"

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        legal = self.legal_actions(view)
        return {k: 1.0 / len(legal) for k in legal}


class CallAgent(CardBlindAgent):
    """Always checks or calls (a "calling station")."""

    name = "call"

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        return one_hot(CALL)


class RaiseAgent(CardBlindAgent):
    """Bets or raises whenever legal, otherwise calls."""

    name = "raise"

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        state: State = view.to_state(self.game)
        return one_hot(RAISE if state.can_bet_or_raise() else CALL)
