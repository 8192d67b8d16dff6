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
reservoir is full. (``Reservoir.changed`` also marks written slots, but its one consumer is
:mod:`training.memory_log`'s incremental checkpoints; sharing it would need a second mark.)

The same keys give NFSP's DQN step an exact objective (``NFSPConfig.rl_full_batch``). With the
target network Q' fixed, the DQN loss over the whole replay memory M_RL is

    L = (1/N) sum_i (Q(s_i, a_i) - y_i)^2,   y_i = r_i + (1 - done_i) Q'(s'_i, argmax_a Q(s'_i, a))

(double DQN, van Hasselt et al. 2016, eq. 4). y_i depends on row i only through r_i, done_i and
s'_i, so Q and Q' are needed once per *distinct* next state (:func:`group_replay`'s
``next_keys``). Grouping the rows by (s, a) with n(s, a) rows and mean target ybar(s, a),
``sum_i (Q - y_i)^2 = sum_(s,a) [n (Q(s,a) - ybar)^2 + sum_(i in (s,a)) (y_i - ybar)^2]``, and the
second term does not depend on Q's weights (the targets are held fixed, as DQN does: no gradient
flows through y). So

    L = (1/N) sum_(s,a) n(s, a) (Q(s, a) - ybar(s, a))^2 + const

has exactly the full-memory gradient, from one network call over M_RL's distinct states (Leduc:
about 470 per seat however many of the 200k rows repeat them) and one per network over its
distinct next states (:func:`training.nfsp.exact_q_loss`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.encoding import InfosetEncoder
from training.input_keys import InputKeys, dense_unique
from training.reservoir import Reservoir

#: Largest dense key table (inputs x 3 int64 counts: 24 MiB; keys x 3 fit the int32 count_key).
MAX_KEYS = 1 << 20


def check_countable(encoder: InfosetEncoder, option: str = "sl_full_batch") -> InputKeys:
    """The input keys of ``encoder``'s game, or a one-line error naming the config ``option``
    that needs them if the game has too many possible inputs to count densely."""
    keys = InputKeys.for_encoder(encoder)
    if keys.size > MAX_KEYS:
        step = "SL" if option == "sl_full_batch" else "Q"
        raise ValueError(
            f"nfsp config: {option} needs at most {MAX_KEYS:,} distinct (node, cards) inputs; "
            f"{encoder.game.name} has {keys.size:,} — set {option} = false (minibatch {step} steps)"
        )
    return keys


class InputCounts(InputKeys):
    """``count[key, action]`` over the rows of one supervised memory (see the module docstring)."""

    def __init__(self, encoder: InfosetEncoder, capacity: int) -> None:
        check_countable(encoder, "sl_full_batch")
        super().__init__(encoder.tree.num_nodes, encoder.game.deck, encoder.num_card_slots)
        self.counts = np.zeros((self.size, 3), dtype=np.int64)
        #: The ``count_key`` of each memory slot as last counted (-1: slot not counted yet).
        self.counted = np.full(capacity, -1, dtype=np.int32)

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


@dataclass(frozen=True)
class ReplayGroups:
    """The rows of a replay memory grouped for the exact DQN step (module docstring)."""

    state_keys: np.ndarray
    """Distinct states s of the memory (input keys)."""
    pair_state: np.ndarray
    """Per distinct (s, a): its state's index in ``state_keys``."""
    pair_action: np.ndarray
    """Per distinct (s, a): a."""
    pair_count: np.ndarray
    """Per distinct (s, a): n(s, a), its rows in the memory."""
    pair_of_row: np.ndarray
    """Per row: its (s, a) index."""
    next_keys: np.ndarray
    """Distinct next states s' of the rows that are not done (input keys)."""
    next_of_row: np.ndarray
    """Per row: its s' index in ``next_keys``, -1 where the hand ended (done: no bootstrap)."""
    reward: np.ndarray
    """Per row: r."""

    @property
    def rows(self) -> int:
        return len(self.pair_of_row)


def group_replay(keys: InputKeys, memory: Reservoir) -> ReplayGroups:
    """Group the rows of ``memory`` (an M_RL with ``count_key`` = (s, a) row keys and ``next_key``
    = s' input keys, :meth:`InputKeys.row_keys` / :meth:`InputKeys.keys`) by (s, a) and by s'."""
    rows = memory.stored()
    pairs, pair_of_row, pair_count = dense_unique(rows["count_key"].astype(np.int64), keys.size * 3)
    state_keys, pair_state = np.unique(pairs // 3, return_inverse=True)
    live = ~rows["done"]
    next_keys, live_next, _ = dense_unique(rows["next_key"][live].astype(np.int64), keys.size)
    next_of_row = np.full(len(live), -1, dtype=np.int64)
    next_of_row[live] = live_next
    return ReplayGroups(state_keys, pair_state.reshape(-1), pairs % 3, pair_count, pair_of_row,
                        next_keys, next_of_row, rows["reward"])
