"""The public betting tree of a limit game, compiled once into flat numpy arrays.

Betting in limit games does not depend on the cards, so every betting sequence of a game is a
node here. Traversals, best response, CFR, NFSP environments and Deep CFR all walk these arrays
instead of stepping :class:`~protocol.state.State` objects per hand. The tree is built by
stepping the rules engine itself, so it can never disagree with the dealer.

Nodes are numbered in depth-first preorder: a parent always has a smaller id than its children,
so a reverse loop over ids is a valid bottom-up pass.

>>> from protocol.gamedef import load_game
>>> tree = BettingTree.build(load_game("kuhn"))
>>> tree.num_nodes, tree.decision_nodes_per_round, tree.num_terminal
(9, (4,), 5)
>>> [tree.history[n] for n in tree.terminal_ids]
['cc', 'crf', 'crc', 'rf', 'rc']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from protocol.gamedef import Game
from protocol.state import ACTIONS, State

#: Values of :attr:`BettingTree.kind`.
DECISION, FOLD_END, SHOWDOWN = 0, 1, 2
#: Column of each ACPC letter in the ``legal`` and ``child`` arrays.
ACTION_INDEX = {kind: i for i, kind in enumerate(ACTIONS)}


@dataclass(frozen=True, eq=False)
class BettingTree:
    """Arrays over nodes: round, actor (-1 at terminals), pot contributions, legal-action mask,
    children (-1 where illegal), terminal kind and folder, parent links and the betting text."""

    game: Game
    round: np.ndarray  # int8 [n]
    actor: np.ndarray  # int8 [n], -1 at terminals
    spent: np.ndarray  # int64 [n, players]
    legal: np.ndarray  # bool [n, 3] in order f, c, r
    child: np.ndarray  # int32 [n, 3]
    parent: np.ndarray  # int32 [n], -1 at the root
    parent_action: np.ndarray  # int8 [n], -1 at the root
    kind: np.ndarray  # int8 [n]: DECISION, FOLD_END or SHOWDOWN
    folder: np.ndarray  # int8 [n], position that folded at a FOLD_END, else -1
    depth: np.ndarray  # int16 [n], number of actions from the root
    history: tuple[str, ...]  # ACPC betting text per node

    @classmethod
    def build(cls, game: Game) -> BettingTree:
        rows: list[dict[str, Any]] = []

        def visit(state: State, parent: int, parent_action: int, depth: int) -> int:
            node = len(rows)
            if state.is_finished:
                kind = SHOWDOWN if state.is_showdown else FOLD_END
                folder = next((p for p, f in enumerate(state.folded) if f), -1)
            else:
                kind, folder = DECISION, -1
            row: dict[str, Any] = {
                "round": state.round,
                "actor": -1 if state.actor is None else state.actor,
                "spent": tuple(state.spent),
                "legal": tuple(a in state.legal_actions() for a in ACTIONS),
                "child": [-1, -1, -1],
                "parent": parent,
                "parent_action": parent_action,
                "kind": kind,
                "folder": folder if kind == FOLD_END else -1,
                "depth": depth,
                "history": state.betting_string(),
            }
            rows.append(row)
            for index, action in enumerate(ACTIONS):
                if row["legal"][index]:
                    successor = state.copy()
                    successor.apply(action)
                    row["child"][index] = visit(successor, node, index, depth + 1)
            return node

        visit(State(game), -1, -1, 0)
        return cls(
            game=game,
            round=np.array([r["round"] for r in rows], dtype=np.int8),
            actor=np.array([r["actor"] for r in rows], dtype=np.int8),
            spent=np.array([r["spent"] for r in rows], dtype=np.int64),
            legal=np.array([r["legal"] for r in rows], dtype=bool),
            child=np.array([r["child"] for r in rows], dtype=np.int32),
            parent=np.array([r["parent"] for r in rows], dtype=np.int32),
            parent_action=np.array([r["parent_action"] for r in rows], dtype=np.int8),
            kind=np.array([r["kind"] for r in rows], dtype=np.int8),
            folder=np.array([r["folder"] for r in rows], dtype=np.int8),
            depth=np.array([r["depth"] for r in rows], dtype=np.int16),
            history=tuple(r["history"] for r in rows),
        )

    @property
    def num_nodes(self) -> int:
        return len(self.history)

    @cached_property
    def is_terminal(self) -> np.ndarray:
        terminal: np.ndarray = self.kind != DECISION
        return terminal

    @cached_property
    def terminal_ids(self) -> np.ndarray:
        return np.flatnonzero(self.is_terminal)

    @cached_property
    def decision_ids(self) -> np.ndarray:
        return np.flatnonzero(~self.is_terminal)

    @property
    def num_terminal(self) -> int:
        return int(self.is_terminal.sum())

    @cached_property
    def decision_nodes_per_round(self) -> tuple[int, ...]:
        """Decision betting sequences per round (HULH: 8, 70, 630, 5670)."""
        counts = np.bincount(self.round[self.decision_ids], minlength=self.game.num_rounds)
        return tuple(int(c) for c in counts)

    @cached_property
    def node_of(self) -> dict[str, int]:
        """Node id of each betting string."""
        return {h: i for i, h in enumerate(self.history)}

    @cached_property
    def max_depth(self) -> int:
        return int(self.depth.max())
