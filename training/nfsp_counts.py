"""Action counts per distinct network input of NFSP's supervised memory, for an exact SL step.

NFSP's average-policy network Pi minimises the mean cross-entropy over its reservoir M_SL of
(input, best-response action) rows (Heinrich & Silver 2016, algorithm 1: "update pi with
stochastic gradient descent on loss E_{(s,a) ~ M_SL}[-log pi(s, a)]"). Rows with the same input
x (betting node and visible cards) share pi(.|x), so

    (1/|M|) sum_i -log pi(a_i | x_i) = (1/|M|) sum_x sum_a count(x, a) * -log pi(a | x)

and one gradient step on the right-hand side over the *distinct* inputs, with the action counts
as targets, is the exact gradient of the paper's objective: no minibatch noise, and in Leduc a
few hundred rows per player however many millions the reservoir holds. The counts are a dense
``[num_keys, 3]`` table over every possible (node, card slots) key, so this needs a small game
(Kuhn 9 x 4^1 keys, Leduc 85 x 7^2); FHP and HULH use minibatches (``NFSPConfig.sl_full_batch``).

The counts follow the memory exactly, including reservoir replacements (whose slots are the
reservoir's random choice inside :meth:`training.reservoir.Reservoir.add`, not visible here):
every M_SL row stores its ``count_key`` (input key x 3 + action), the table keeps a shadow copy
of the keys it has counted per slot, and before each use the slots where the two differ are
subtracted (old key) and added (new key): one vectorised comparison of the filled slots per SL
step, several times cheaper than recounting millions of rows every learning round once the
reservoir is full. (A hook in ``Reservoir.add`` returning the slots it wrote would make this
O(rows added).)
"""

from __future__ import annotations

import numpy as np

from bot.encoding import InfosetEncoder
from training.reservoir import Reservoir

#: Largest dense key table (inputs x 3 int64 counts: 24 MiB; keys x 3 fit the int32 count_key).
MAX_KEYS = 1 << 20


def key_space(encoder: InfosetEncoder) -> int:
    """Number of possible (node, card slots) keys: nodes x (deck size + 1 for "no card") ^ slots."""
    return encoder.tree.num_nodes * (len(encoder.game.deck) + 1) ** encoder.num_card_slots


def check_countable(encoder: InfosetEncoder) -> int:
    """The key space of ``encoder``'s game, or a one-line error if it is too large to count."""
    size = key_space(encoder)
    if size > MAX_KEYS:
        raise ValueError(
            f"nfsp config: sl_full_batch needs at most {MAX_KEYS:,} distinct (node, cards) inputs; "
            f"{encoder.game.name} has {size:,} — set sl_full_batch = false (minibatch SL steps)"
        )
    return size


class InputCounts:
    """``count[key, action]`` over the rows of one supervised memory (see the module docstring)."""

    def __init__(self, encoder: InfosetEncoder, capacity: int) -> None:
        size = check_countable(encoder)
        deck = np.array(encoder.game.deck, dtype=np.int64)
        self.encoder = encoder
        self.base = len(deck) + 1
        #: digit[card + 1]: 0 for "no card" (-1), else 1 + the card's position in the deck.
        self.digit = np.zeros(53, dtype=np.int64)
        self.digit[deck + 1] = np.arange(1, len(deck) + 1)
        #: card_of[digit]: the inverse (-1 for digit 0).
        self.card_of = np.concatenate([[-1], deck]).astype(np.int8)
        self.powers = self.base ** np.arange(encoder.num_card_slots, dtype=np.int64)
        self.combos = int(self.base**encoder.num_card_slots)
        self.counts = np.zeros((size, 3), dtype=np.int64)
        #: The ``count_key`` of each memory slot as last counted (-1: slot not counted yet).
        self.counted = np.full(capacity, -1, dtype=np.int32)

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
        """``key * 3 + action`` per row: the flat index of its cell in the count table (int32;
        stored in M_SL as ``count_key``)."""
        return (self.keys(nodes, cards) * 3 + np.asarray(actions, dtype=np.int64)).astype(np.int32)

    def recount(self, memory: Reservoir) -> None:
        """Count ``memory`` from scratch (after its rows were loaded from a checkpoint)."""
        self.counts[:] = 0
        self.counted[:] = -1
        self.sync(memory)

    def sync(self, memory: Reservoir) -> None:
        """Bring the table up to the rows ``memory`` holds now (see the module docstring)."""
        current = memory.data["count_key"][: len(memory)]
        counted = self.counted[: len(memory)]
        changed = np.flatnonzero(current != counted)
        if len(changed) == 0:
            return
        old, new = counted[changed], current[changed]
        flat = self.counts.reshape(-1)
        flat -= np.bincount(old[old >= 0], minlength=flat.size)
        flat += np.bincount(new, minlength=flat.size)
        counted[changed] = new

    def batch(self, memory: Reservoir) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct inputs of ``memory`` and their action counts: ``(nodes, cards, counts)``."""
        self.sync(memory)
        keys = np.flatnonzero(self.counts.any(axis=1))
        nodes, cards = self.inputs(keys)
        return nodes, cards, self.counts[keys]

    def frequencies(self, memory: Reservoir, nodes: np.ndarray, cards: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Empirical action frequencies ``[n, 3]`` of ``memory`` at the given inputs (uniform
        over ``legal`` where it has no row): the policy a perfect fit of Pi would play."""
        self.sync(memory)
        counts = self.counts[self.keys(nodes, cards)].astype(np.float64)
        counts = np.where(counts.sum(axis=1, keepdims=True) > 0, counts, legal.astype(np.float64))
        return counts / counts.sum(axis=1, keepdims=True)
