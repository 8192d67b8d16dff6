"""The tabular card-abstraction agents (``abstraction_3e6``, ``fhp_abstraction_4e4``, ...).

The agent maps what a player sees (own hole cards, the board, the betting) to an abstract
infoset: the betting node is exact (betting is not abstracted), the cards become the bucket of
the current round (:mod:`bot.abstraction.tables`). It plays the solver's average strategy,
normalised over the legal actions. The bucket tables and the policy are memory-mapped on first
use, so loading is instant and only the touched pages are read. A name whose tables or policy
are not built raises an error carrying the exact build command and its estimated cost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from bot.abstraction.spec import SPECS, policy_path
from bot.abstraction.tables import AbstractGame, Abstraction, build_hint, missing_message
from bot.agents.base import Agent
from bot.agents.encoding import EncodingError
from bot.errors import AgentNotFound
from protocol.betting_tree import BettingTree
from protocol.gamedef import Game
from protocol.matchstate import MatchState
from protocol.state import ACTIONS


class RowPolicyAgent(Agent):
    """Plays a table with one row of action weights per abstract infoset (betting node, bucket
    of the current round's cards), normalised over the legal actions; a row that training never
    reached (all weights 0) plays uniformly. Subclasses say how cards become a bucket and where
    the rows come from."""

    tree: BettingTree
    row_offset: np.ndarray  # first row of every decision node (:func:`bot.abstraction.tables.row_layout`)

    def bucket(self, round_index: int, hole: tuple[int, ...], board: tuple[int, ...]) -> int:
        raise NotImplementedError

    def row_weights(self, row: int) -> np.ndarray:
        raise NotImplementedError

    def buckets(self, round_index: int, hands: np.ndarray, board: tuple[int, ...]) -> np.ndarray:
        """:meth:`bucket` of every row of ``hands`` ``[n, hole]`` (int64), one batch."""
        raise NotImplementedError

    def rows_weights(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`row_weights` of many rows ``[n, 3]``."""
        raise NotImplementedError

    def decision(self, view: MatchState) -> tuple[int, int, tuple[int, ...]]:
        """(betting node, round, board cards of that round) of the view's decision."""
        node = self.tree.node_of.get(view.betting)
        if node is None or self.row_offset[node] < 0:
            raise EncodingError(f"{self.name}: no decision at betting {view.betting!r}")
        round_index = int(self.tree.round[node])
        return node, round_index, view.board_flat[: self.game.board_cards_through(round_index)]

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        node, round_index, board = self.decision(view)
        row = int(self.row_offset[node]) + self.bucket(round_index, view.own_hole_cards, board)
        legal = self.tree.legal[node]
        weights = np.where(legal, np.asarray(self.row_weights(row), dtype=np.float64), 0.0)
        if weights.sum() <= 0:  # never reached in training: uniform over legal actions
            weights = legal.astype(np.float64)
        weights /= weights.sum()
        return {kind: float(w) for kind, w, ok in zip(ACTIONS, weights, legal, strict=True) if ok}

    def range_probabilities(self, view: MatchState, hands: np.ndarray) -> np.ndarray:
        """Every hand's bucket in one batch (:meth:`buckets`), then its row, normalised as
        :meth:`action_probabilities` does (a row training never reached: uniform)."""
        node, round_index, board = self.decision(view)
        buckets = self.buckets(round_index, np.asarray(hands, dtype=np.int64), board)
        legal = self.tree.legal[node]
        weights = np.where(legal, np.asarray(self.rows_weights(self.row_offset[node] + buckets), dtype=np.float64), 0.0)
        weights[weights.sum(axis=1) <= 0] = legal
        return weights / weights.sum(axis=1, keepdims=True)


class AbstractionAgent(RowPolicyAgent):
    """Plays a solved abstraction's average strategy."""

    def __init__(self, game: Game, name: str, policy: Path | None = None) -> None:
        """``policy``: a solve's average table (default: the one published for ``name``)."""
        super().__init__(game)
        spec = SPECS[name]
        if spec.load_game().name != game.name:
            raise AgentNotFound(f"{name} plays {spec.load_game().name}, not {game.name}")
        self.name = name
        path = policy if policy is not None else policy_path(spec)
        if not path.exists():
            raise AgentNotFound(missing_message(spec))
        self.abstract_game = AbstractGame.build(Abstraction.load(spec))
        self.tree, self.row_offset = self.abstract_game.tree, self.abstract_game.row_offset
        self.policy = np.load(path, mmap_mode="r")
        if self.policy.shape != (self.abstract_game.num_rows, 3):
            raise AgentNotFound(f"{path}: policy of shape {self.policy.shape} does not fit {name}; rebuild: {build_hint(spec)}")

    def bucket(self, round_index: int, hole: tuple[int, ...], board: tuple[int, ...]) -> int:
        return self.abstract_game.abstraction.bucket(round_index, hole, board)

    def row_weights(self, row: int) -> np.ndarray:
        return self.policy[row]

    def buckets(self, round_index: int, hands: np.ndarray, board: tuple[int, ...]) -> np.ndarray:
        """Every hand's bucket in one batched index lookup."""
        abstraction = self.abstract_game.abstraction
        cards = np.concatenate([hands, np.broadcast_to(np.array(board, dtype=np.int64), (len(hands), len(board)))], axis=1)
        index = abstraction.indexers[round_index].index_batch(cards)
        table = abstraction.tables[round_index]
        return index if table is None else np.asarray(table[index], dtype=np.int64)

    def rows_weights(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.policy[rows])


def named_agent(name: str) -> Callable[[Game], AbstractionAgent]:
    """The agent factory of the abstraction ``name`` (every spec is an agent name)."""
    return lambda game: AbstractionAgent(game, name)
