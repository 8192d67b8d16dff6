"""One integer key per network input (betting node, card slots), and back.

Every exact-objective step merges memory rows that share a network input: Deep CFR's value and
average fits (:mod:`training.deep_cfr.merged_memory`) and NFSP's supervised and DQN steps
(:mod:`training.nfsp.counts`). They all key an input the same way: the node times the number of
card combinations, plus the card slots as digits in base ``deck size + 1`` (digit 0 = "no
card"), so keys are dense for small decks (Leduc: 4,165 possible inputs) and invertible.
It lives in ``bot`` beside the encoding it keys, below the trainers, because ``pokerbot
watch`` (``tui``) reads a running checkpoint's merged tables with it too.

>>> keys = InputKeys(num_nodes=4, deck=[8, 9, 10], num_card_slots=2)
>>> k = keys.keys(np.array([3]), np.array([[10, -1]]))
>>> keys.size, [n.tolist() for n in keys.inputs(k)]
(64, [[3], [[10, -1]]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bot.agents.encoding import InfosetEncoder


class InputKeys:
    """Dense int64 keys of (node, card slots) rows for one game's encoding."""

    def __init__(self, num_nodes: int, deck: Sequence[int], num_card_slots: int) -> None:
        deck = np.asarray(deck, dtype=np.int64)
        self.base = len(deck) + 1
        self.combos = int(self.base**num_card_slots)
        self.size = num_nodes * self.combos
        """Number of possible keys (keys are ``0 .. size - 1``)."""
        if self.size >= 2**63:
            raise ValueError(f"{num_card_slots} card slots x {num_nodes} nodes do not fit a 64-bit input key")
        #: digit[card + 1]: 0 for "no card" (-1), else 1 + the card's position in the deck.
        self.digit = np.zeros(53, dtype=np.int64)
        self.digit[deck + 1] = np.arange(1, len(deck) + 1)
        #: card_of[digit]: the inverse (-1 for digit 0).
        self.card_of = np.concatenate([[-1], deck]).astype(np.int8)
        self.powers = self.base ** np.arange(num_card_slots, dtype=np.int64)

    @classmethod
    def for_encoder(cls, encoder: InfosetEncoder) -> InputKeys:
        return cls(encoder.tree.num_nodes, encoder.game.deck, encoder.num_card_slots)

    def keys(self, nodes: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """One int64 key per (node, card slots) row."""
        digits = self.digit[np.asarray(cards, dtype=np.int64) + 1]
        return np.asarray(nodes, dtype=np.int64) * self.combos + digits @ self.powers

    def inputs(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (nodes, card slots) rows of ``keys`` (the inverse of :meth:`keys`)."""
        nodes, rest = np.divmod(keys, self.combos)
        digits = (rest[:, None] // self.powers) % self.base
        return nodes, self.card_of[digits]

    def row_keys(self, nodes: np.ndarray, cards: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``key * 3 + action`` per row: the flat index of its (input, action) cell (int32)."""
        return (self.keys(nodes, cards) * 3 + np.asarray(actions, dtype=np.int64)).astype(np.int32)


def dense_unique(values: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(distinct values, index of each value among them, count of each)`` for ints in
    ``[0, space)``: one ``bincount`` instead of the sort of ``np.unique`` (for small key spaces)."""
    present = np.bincount(values, minlength=space)
    distinct = np.flatnonzero(present)
    position = np.zeros(space, dtype=np.int64)
    position[distinct] = np.arange(len(distinct))
    return distinct, position[values], present[distinct]
