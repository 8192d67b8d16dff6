"""The betting sequences of a limit game as a graph of immutable nodes, built as hands reach them.

Betting in a limit game does not depend on the cards, so what the rules engine says about a
betting sequence (whose turn it is, which letters are legal, whether the hand is over, who
folded, what everyone has put in) is the same in every hand. The dealer asks this for every
state it sends and a client for every line it reads; stepping a :class:`~protocol.state.State`
for each costs more than the rest of their work. Here each sequence is worked out once per game
by stepping the rules engine itself (so it cannot disagree with it) and found again with one
dictionary look-up per action. :class:`~protocol.betting_tree.BettingTree` compiles a whole
tree into arrays for the solvers; these nodes exist only once a hand has reached them, so a
game with a large tree costs only what is played.

>>> from protocol.gamedef import load_game
>>> node = betting_root(load_game("leduc")).child("r").child("c")
>>> node.betting, node.round, node.actor, node.legal
('rc/', 1, 0, ('c', 'r'))
>>> node = node.child("c").child("r").child("f")
>>> node.betting, node.is_finished, node.is_showdown, node.payoffs()
('rc/crf', True, False, (-3, 3))
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.gamedef import Game
from protocol.state import State, showdown_payoffs


class BettingNode:
    """One betting sequence and the rules engine's answers for it. Children are made on first
    use; ``legal_actions()``, ``betting_string()``, ``payoffs()`` and ``with_cards()`` answer as
    :class:`~protocol.state.State` does, so code written for a state reads a node too."""

    __slots__ = (
        "actor",
        "betting",
        "folded",
        "game",
        "is_finished",
        "is_showdown",
        "legal",
        "round",
        "spent",
        "_children",
        "_fold_payoffs",
        "_state",
    )

    def __init__(self, state: State) -> None:
        self._state = state  # betting only, no cards; never changed after this
        self.game = state.game
        self.betting = state.betting_string()
        self.round = state.round
        self.actor = state.actor
        self.is_finished = state.is_finished
        self.is_showdown = state.is_showdown
        self.folded = tuple(state.folded)
        self.spent = tuple(state.spent)
        self.legal = state.legal_actions()
        self._fold_payoffs = (
            state.payoffs() if state.is_finished and not state.is_showdown else None
        )
        self._children: dict[str, BettingNode] = {}

    def child(self, letter: str) -> BettingNode:
        """The node after ``letter``; raises :class:`~protocol.state.IllegalActionError` if the
        rules forbid it here (the same message the rules engine gives)."""
        node = self._children.get(letter)
        if node is None:
            successor = self._state.copy()
            successor.apply(letter)
            node = self._children[letter] = BettingNode(successor)
        return node

    def betting_string(self) -> str:
        return self.betting

    def legal_actions(self) -> tuple[str, ...]:
        return self.legal

    def to_state(self) -> State:
        """A fresh rules-engine state of this betting (no cards), free to change."""
        return self._state.copy()

    def payoffs(self) -> tuple[int, ...]:
        """Net chips per position of a hand that ended by folds (the showdown needs cards:
        :meth:`showdown_payoffs`, or :meth:`with_cards` for cards still to be checked)."""
        if self._fold_payoffs is None:
            return self._state.payoffs()  # raises as the rules engine does
        return self._fold_payoffs

    def showdown_payoffs(
        self, hole_cards: Sequence[Sequence[int]], visible_board: Sequence[int]
    ) -> tuple[int, ...]:
        """Net chips per position at a showdown with cards already known to be valid (the
        dealer's own deal)."""
        return showdown_payoffs(self.spent, self.folded, hole_cards, visible_board)

    def with_cards(self, hole_cards: Sequence[Sequence[int]], board_cards: Sequence[int]) -> State:
        """The rules-engine state of this betting holding every card (checked: ``ValueError``
        for impossible cards), as :meth:`State.with_cards <protocol.state.State.with_cards>`."""
        return self._state.with_cards(hole_cards, board_cards)


_ROOTS: dict[Game, BettingNode] = {}


def betting_root(game: Game) -> BettingNode:
    """The node before any action of ``game`` (one graph per game, shared by every hand and
    every thread: nodes never change, and two threads adding the same child build equal ones).
    Raises ``NotImplementedError`` for a no-limit game, as the rules engine does."""
    root = _ROOTS.get(game)
    if root is None:
        root = _ROOTS[game] = BettingNode(State(game))
    return root
