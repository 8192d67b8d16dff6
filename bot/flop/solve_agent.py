"""The full-width flop solve's policy as an agent: the bundle kind ``flop_solve``.

``pokerbot train --algo abstraction --game fhp --size lossless --out RUN`` publishes its average
strategy in ``RUN/policy/`` as the solver keeps it (:mod:`training.flop.trainer`): the strategy
sums ``pre_average.npy`` ``[preflop decision nodes, hands, 3]`` and ``average.npy`` ``[canonical
flops, flop decision nodes, hands, 3]``, hands in :class:`bot.flop.game.FlopGame` order, with a
``bundle.json`` like every other policy. So ``--agent RUN`` plays the run itself (for FHP the
same strategy is also published as the agent ``fhp_lossless``, rows of the lossless abstraction).

The strategy is suit-invariant, so only canonical flops are stored: on a raw flop the agent
plays the canonical flop it is a suit renaming of, with its hole cards renamed the same way
(:func:`bot.flop.policies.suit_maps`). :mod:`bot.registry` registers the kind.
"""

from __future__ import annotations

import numpy as np

from bot.agents.base import Agent
from bot.agents.bundle import Bundle, BundleError
from bot.flop.best_response import flop_game_for
from bot.flop.policies import hand_lookup, suit_maps
from protocol.gamedef import Game
from protocol.matchstate import MatchState
from protocol.state import ACTIONS

KIND = "flop_solve"
PREFLOP_FILE, FLOP_FILE = "pre_average.npy", "average.npy"


class FlopSolveAgent(Agent):
    """Plays a flop solve's average strategy (canonical flops, suits renamed per decision)."""

    name = KIND

    def __init__(self, game: Game, bundle: Bundle) -> None:
        super().__init__(game)
        self.fg = fg = flop_game_for(game, True)
        self.preflop = np.load(bundle.path(PREFLOP_FILE))
        self.flop = np.load(bundle.path(FLOP_FILE), mmap_mode="r")
        expected = ((fg.preflop.num_decisions, fg.num_hands, 3), (fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3))
        if (self.preflop.shape, self.flop.shape) != expected:
            raise BundleError(f"{bundle.root}: tables of shapes {self.preflop.shape} and {self.flop.shape}, "
                              f"expected {expected[0]} and {expected[1]} for {game.name}")  # fmt: skip
        self.hand_row = hand_lookup(fg)
        self.decision_row = {int(n): d for d, n in enumerate(fg.preflop.decision_nodes)}
        self.decision_row |= {int(n): d for d, n in enumerate(fg.flop.decision_nodes)}

    def strategy_sums(self, node: int, hole: tuple[int, int], flop: tuple[int, ...]) -> np.ndarray:
        """The stored strategy sums ``[3]`` of hole cards ``hole`` at decision ``node`` (``flop``:
        the raw flop cards, empty before the flop)."""
        row, hand = self.decision_row[node], int(self.hand_row[hole[0], hole[1]])
        if not flop:
            return np.asarray(self.preflop[row, hand], dtype=np.float64)
        canonical, hand_map = suit_maps(self.fg, np.array([flop], dtype=np.int64))
        return np.asarray(self.flop[canonical[0], row, hand_map[0, hand]], dtype=np.float64)

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        tree = self.fg.tree
        node = tree.node_of.get(view.betting)
        if node is None or node not in self.decision_row:
            raise ValueError(f"{self.name}: no decision at betting {view.betting!r}")
        hole = view.own_hole_cards
        flop = tuple(view.board_flat[: self.game.board_cards_through(1)]) if tree.round[node] else ()
        legal = tree.legal[node]
        weights = np.where(legal, np.maximum(self.strategy_sums(node, (hole[0], hole[1]), flop), 0.0), 0.0)
        weights = weights / weights.sum() if weights.sum() > 0 else legal / legal.sum()
        return {kind: float(w) for kind, w, ok in zip(ACTIONS, weights, legal, strict=True) if ok}
