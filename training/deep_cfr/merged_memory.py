"""Exact-objective training batches from a memory with repeated inputs.

Deep CFR fits each network by minimising a weighted squared error over *every* row of a memory
(Brown et al. 2019, algorithm 1: ``sum_i t_i * ||V(I_i) - r_i||^2`` over legal actions) and
approximates that objective with uniform minibatches. When many rows share one network input
(same betting node, same card slots; a Leduc memory of millions of rows holds a few thousand
distinct inputs), the objective collapses exactly::

    sum_i w_i ||V(x_i) - y_i||^2 = sum_x W_x ||V(x) - ybar_x||^2 + constant,
    W_x = sum_{i: x_i = x} w_i,   ybar_x = sum_{i: x_i = x} w_i y_i / W_x,

because the legal-action mask depends on the node alone. So one step over the distinct inputs
with targets ``ybar_x`` and weights ``W_x`` is the full-memory gradient of the paper's loss, not
a noisy estimate of it; the network, the memory (reservoir or window) and the weighting are
unchanged. When the distinct inputs outnumber a batch, drawing them with probability
``W_x / sum W`` gives an unbiased minibatch of the same objective with less variance than
drawing raw rows. :func:`merge_rows` builds the merged table; the trainer decides which of the
two forms a batch takes and logs it.

>>> import numpy as np
>>> rows = {"node": np.array([3, 3, 5], np.int32), "cards": np.array([[1, -1], [1, -1], [1, -1]], np.int8),
...         "target": np.array([[1., 0, 0], [3., 0, 0], [2., 2, 2]], np.float32),
...         "iteration": np.array([1, 3, 2], np.int32)}
>>> merged = merge_rows(rows, InputKeys(num_nodes=6, deck=range(52), num_card_slots=2), linear_weighting=True)
>>> merged.node.tolist(), merged.weight.tolist(), merged.target[:, 0].tolist()
([3, 5], [4.0, 2.0], [2.5, 2.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.agents.input_keys import InputKeys, dense_unique
from training.common.reservoir import SignedTotals

#: Key spaces up to this size are merged with one ``bincount`` pass instead of a sort.
_DENSE_KEYS = 1 << 24


@dataclass(frozen=True)
class MergedRows:
    """Distinct inputs of a memory: their node, cards, weighted mean target and total weight."""

    node: np.ndarray
    cards: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    rows: int
    """Rows of the memory that were merged (the loss's 1/N)."""

    def __len__(self) -> int:
        return len(self.node)


def row_weights(rows: dict[str, np.ndarray], linear_weighting: bool) -> np.ndarray:
    """Each row's loss weight (float64): its iteration under linear CFR, else 1, times the row's
    own ``weight`` field where the memory has one (outcome sampling's importance weight
    ``1 / x_i^xi(I)``, DREAM sec. 5.1; :mod:`training.deep_cfr.outcome_sampling`)."""
    weight = rows["iteration"].astype(np.float64) if linear_weighting else np.ones(len(rows["iteration"]))
    return weight * rows["weight"] if "weight" in rows else weight


class MergedTable(SignedTotals):
    """:func:`merge_rows` of a memory kept up to date as rows enter and leave it.

    Re-merging a 10M-row memory costs ~0.75 s; a Leduc fit costs less than that. Attached as a
    :class:`~training.common.reservoir.Reservoir` listener, the table adds and subtracts each row's
    weight and weighted target per input key (float64; weights are integers, so totals are
    exact and a key whose rows have all left has weight exactly 0; with importance weights
    only up to rounding, and the row count still says which keys are present), and :meth:`merged` reads the
    same :class:`MergedRows` in O(distinct inputs). For dense key spaces only (small games).
    """

    #: Key spaces up to this size get a table (three float64 numbers and a count per key).
    MAX_KEYS = 1 << 22

    def __init__(self, input_keys: InputKeys, linear_weighting: bool, actions: int = 3) -> None:
        if input_keys.size > self.MAX_KEYS:
            raise ValueError(f"MergedTable: {input_keys.size:,} input keys are too many for a dense table")
        self.input_keys = input_keys
        self.linear_weighting = linear_weighting
        self.count = np.zeros(input_keys.size, dtype=np.int64)
        self.weight = np.zeros(input_keys.size, dtype=np.float64)
        self.weighted_target = np.zeros((input_keys.size, actions), dtype=np.float64)

    def state(self) -> dict[str, np.ndarray]:
        """The sums, for a checkpoint (restored as saved, so a resumed run rounds identically)."""
        return {"count": self.count, "weight": self.weight, "weighted_target": self.weighted_target}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        for name, current in self.state().items():
            if state[name].shape != current.shape:
                raise ValueError(f"merged table: {name} has shape {state[name].shape}, expected {current.shape}")
            current[...] = state[name]

    def merged(self) -> MergedRows:
        """The same table as :func:`merge_rows` of the memory's rows (up to float rounding)."""
        distinct = np.flatnonzero(self.count)
        node, cards = self.input_keys.inputs(distinct)
        total = self.weight[distinct]
        target = self.weighted_target[distinct] / total[:, None]
        return MergedRows(node.astype(np.int32), cards, target.astype(np.float32), total.astype(np.float32),
                          int(self.count.sum()))

    def _count(self, rows: dict[str, np.ndarray], sign: int) -> None:
        keys = self.input_keys.keys(rows["node"], rows["cards"])
        weight = row_weights(rows, self.linear_weighting)
        size = self.input_keys.size
        self.count += sign * np.bincount(keys, minlength=size)
        self.weight += sign * np.bincount(keys, weights=weight, minlength=size)
        for a in range(self.weighted_target.shape[1]):
            self.weighted_target[:, a] += sign * np.bincount(keys, weights=weight * rows["target"][:, a], minlength=size)


def merge_rows(rows: dict[str, np.ndarray], input_keys: InputKeys, linear_weighting: bool) -> MergedRows:
    """Merge rows with equal inputs (see the module docstring); weights are iterations or 1."""
    keys = input_keys.keys(rows["node"], rows["cards"])
    if input_keys.size <= _DENSE_KEYS:
        distinct, inverse, _ = dense_unique(keys, input_keys.size)
    else:
        distinct, inverse = np.unique(keys, return_inverse=True)
    first = np.zeros(len(distinct), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(keys))[::-1]  # any row of each input will do
    weight = row_weights(rows, linear_weighting)
    total = np.bincount(inverse, weights=weight, minlength=len(distinct))
    target = np.stack([np.bincount(inverse, weights=weight * rows["target"][:, a], minlength=len(distinct))
                       for a in range(rows["target"].shape[1])], axis=1) / total[:, None]
    return MergedRows(rows["node"][first], rows["cards"][first], target.astype(np.float32),
                      total.astype(np.float32), len(keys))
