"""The one Agent interface used by the match runner, the ACPC client and the TUI.

An agent is built for one game and answers one question: given a player's view of the hand
(a :class:`~protocol.matchstate.MatchState`, exactly what a MATCHSTATE line says), what are its
action probabilities and which action does it take? Agents may keep state across a hand between
:meth:`Agent.begin_hand` and :meth:`Agent.end_hand`. Randomness comes from the ``rng`` the caller
passes, so matches are reproducible from one seed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

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

    def act(self, view: MatchState, rng: np.random.Generator) -> str:
        """Sample an action from :meth:`action_probabilities`."""
        probabilities = self.action_probabilities(view)
        kinds = [k for k in ACTIONS if probabilities.get(k, 0.0) > 0.0]
        weights = np.array([probabilities[k] for k in kinds], dtype=float)
        return kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]

    def legal_actions(self, view: MatchState) -> tuple[str, ...]:
        """The legal letters at the view's decision, from the rules engine."""
        return view.to_state(self.game).legal_actions()


def one_hot(kind: str) -> dict[str, float]:
    return {kind: 1.0}


class RandomAgent(Agent):
    """Uniform over the legal actions."""

    name = "random"

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        legal = self.legal_actions(view)
        return {k: 1.0 / len(legal) for k in legal}


class CallAgent(Agent):
    """Always checks or calls (a "calling station")."""

    name = "call"

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        return one_hot(CALL)


class RaiseAgent(Agent):
    """Bets or raises whenever legal, otherwise calls."""

    name = "raise"

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        state: State = view.to_state(self.game)
        return one_hot(RAISE if state.can_bet_or_raise() else CALL)
