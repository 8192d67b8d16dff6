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
reservoir's random choice inside :meth:`training.common.reservoir.Reservoir.add`): every M_SL row
stores its ``count_key`` (input key x 3 + action) and the table is the memory's
:attr:`~training.common.reservoir.Reservoir.listener`, told which rows leave and enter on every add,
so it subtracts and adds exactly those instead of recounting millions of rows every learning
round once the reservoir is full.

The same keys give NFSP's DQN step an exact objective (``NFSPConfig.rl_full_batch``). With the
target network Q' fixed, the DQN loss over the whole replay memory M_RL is

    L = (1/N) sum_i (Q(s_i, a_i) - y_i)^2,   y_i = r_i + (1 - done_i) Q'(s'_i, argmax_a Q(s'_i, a))

(double DQN, van Hasselt et al. 2016, eq. 4). y_i depends on row i only through r_i, done_i and
s'_i, so Q and Q' are needed once per *distinct* next state (:class:`ReplayGroups`'
``next_keys``). Grouping the rows by (s, a) with n(s, a) rows and mean target ybar(s, a),
``sum_i (Q - y_i)^2 = sum_(s,a) [n (Q(s,a) - ybar)^2 + sum_(i in (s,a)) (y_i - ybar)^2]``, and the
second term does not depend on Q's weights (the targets are held fixed, as DQN does: no gradient
flows through y). So

    L = (1/N) sum_(s,a) n(s, a) (Q(s, a) - ybar(s, a))^2 + const

has exactly the full-memory gradient, from one network call over M_RL's distinct states (Leduc:
about 470 per seat however many of the window's 200k-1M rows repeat them) and one per network over its
distinct next states (:func:`training.nfsp.learner.exact_q_loss`). The mean targets themselves are
``ybar(s, a) = rbar(s, a) + sum_s' w(s, a, s') bootstrap(s')`` with ``w`` the share of the
pair's rows that continue to s' (zero for ended hands), so a step costs one pass over the few
hundred distinct (s, a, s') links rather than over every row, and the totals behind them are
kept as rows enter and leave the window (:class:`ReplayCounts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.agents.encoding import InfosetEncoder
from bot.agents.input_keys import InputKeys
from bot.errors import ConfigError
from training.common.reservoir import Reservoir, SignedTotals

#: Largest dense key table (inputs x 3 int64 counts: 24 MiB; keys x 3 fit the int32 count_key).
MAX_KEYS = 1 << 20


def check_countable(encoder: InfosetEncoder, option: str = "sl_full_batch") -> InputKeys:
    """The input keys of ``encoder``'s game, or a one-line error naming the config ``option``
    that needs them if the game has too many possible inputs to count densely."""
    keys = InputKeys.for_encoder(encoder)
    if keys.size > MAX_KEYS:
        step = "SL" if option == "sl_full_batch" else "Q"
        raise ConfigError(
            f"nfsp config: {option} needs at most {MAX_KEYS:,} distinct (node, cards) inputs; "
            f"{encoder.game.name} has {keys.size:,} — set {option} = false (minibatch {step} steps)"
        )
    return keys


class InputCounts(InputKeys, SignedTotals):
    """``count[key, action]`` over the rows of one supervised memory, kept as its listener (see
    the module docstring)."""

    def __init__(self, encoder: InfosetEncoder) -> None:
        check_countable(encoder, "sl_full_batch")
        super().__init__(encoder.tree.num_nodes, encoder.game.deck, encoder.num_card_slots)
        self.counts = np.zeros((self.size, 3), dtype=np.int64)

    def recount(self, memory: Reservoir) -> None:
        """Count ``memory`` from scratch (after its rows were loaded from a checkpoint)."""
        self.counts[:] = 0
        self.insert(memory.stored())

    def _count(self, rows: dict[str, np.ndarray], sign: int) -> None:
        flat = self.counts.reshape(-1)
        flat += sign * np.bincount(rows["count_key"], minlength=flat.size)

    def batch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct inputs of the memory and their action counts: ``(nodes, cards, counts)``."""
        keys = np.flatnonzero(self.counts.any(axis=1))
        nodes, cards = self.inputs(keys)
        return nodes, cards, self.counts[keys]

    def frequencies(self, nodes: np.ndarray, cards: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Empirical action frequencies ``[n, 3]`` of the memory at the given inputs (uniform
        over ``legal`` where it has no row): the policy a perfect fit of Pi would play."""
        counts = self.counts[self.keys(nodes, cards)].astype(np.float64)
        counts = np.where(counts.sum(axis=1, keepdims=True) > 0, counts, legal.astype(np.float64))
        return counts / counts.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class ReplayGroups:
    """The rows of a replay memory grouped for the exact DQN step (module docstring)."""

    rows: int
    """N, the rows of the memory."""
    state_keys: np.ndarray
    """Distinct states s of the memory (input keys)."""
    pair_state: np.ndarray
    """Per distinct (s, a): its state's index in ``state_keys``."""
    pair_action: np.ndarray
    """Per distinct (s, a): a."""
    pair_count: np.ndarray
    """Per distinct (s, a): n(s, a), its rows in the memory."""
    pair_reward: np.ndarray
    """Per distinct (s, a): the mean r of its rows (float64)."""
    next_keys: np.ndarray
    """Distinct next states s' of the rows that are not done (input keys)."""
    link_pair: np.ndarray
    """Per s' in ``next_keys``: the index of the one (s, a) its rows come from (perfect recall:
    s' determines it, so the (s, a, s') links of the rows that are not done are the s')."""
    link_weight: np.ndarray
    """Per s' in ``next_keys``: the share of its pair's rows that go on to it (float64)."""


class ReplayCounts(InputKeys, SignedTotals):
    """Per-key totals of a circular M_RL's rows, kept up to date as rows enter and leave the
    window (the memory's listener), from which each learning round's :class:`ReplayGroups` is read off small dense
    tables instead of a pass over every row (whose cost would grow with the memory). Perfect recall keeps the tables small: a seat's next state s' determines the (s, a)
    before it (its own history is part of s'), so the (s, a, s') links are the distinct s'.
    Rewards are multiples of half a big blind, so the float64 sums are exact under removal."""

    def __init__(self, encoder: InfosetEncoder) -> None:
        check_countable(encoder, "rl_full_batch")
        super().__init__(encoder.tree.num_nodes, encoder.game.deck, encoder.num_card_slots)
        self.pair_count = np.zeros(self.size * 3, dtype=np.int64)
        self.pair_reward = np.zeros(self.size * 3, dtype=np.float64)
        self.next_count = np.zeros(self.size, dtype=np.int64)
        #: The (s, a) row key before each s' key (-1: never seen).
        self.pair_of_next = np.full(self.size, -1, dtype=np.int64)

    def recount(self, memory: Reservoir) -> None:
        """Count ``memory``'s stored rows from scratch (after a checkpoint load)."""
        self.pair_count[:] = 0
        self.pair_reward[:] = 0.0
        self.next_count[:] = 0
        self._count(memory.stored(), 1)

    def _count(self, rows: dict[str, np.ndarray], sign: int) -> None:
        pairs = rows["count_key"].astype(np.int64)
        np.add.at(self.pair_count, pairs, sign)
        np.add.at(self.pair_reward, pairs, sign * rows["reward"].astype(np.float64))
        live = ~rows["done"]
        nexts = rows["next_key"][live].astype(np.int64)
        np.add.at(self.next_count, nexts, sign)
        self.pair_of_next[nexts] = pairs[live]

    def groups(self, rows: int) -> ReplayGroups:
        """The memory's :class:`ReplayGroups` (``rows``: how many rows it holds)."""
        pairs = np.flatnonzero(self.pair_count)
        count = self.pair_count[pairs]
        state_keys, pair_state = np.unique(pairs // 3, return_inverse=True)
        next_keys = np.flatnonzero(self.next_count)
        link_pair = np.searchsorted(pairs, self.pair_of_next[next_keys])
        return ReplayGroups(rows, state_keys, pair_state.reshape(-1), pairs % 3, count, self.pair_reward[pairs] / count,
                            next_keys, link_pair, self.next_count[next_keys] / count[link_pair])
