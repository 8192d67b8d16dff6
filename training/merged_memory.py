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
>>> merged = merge_rows(rows, num_nodes=6, linear_weighting=True)
>>> merged.node.tolist(), merged.weight.tolist(), merged.target[:, 0].tolist()
([3, 5], [4.0, 2.0], [2.5, 2.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Card slot values are -1 (hidden) .. 51, so ``card + 1`` is a digit in base 53.
_CARD_BASE = 53
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


def input_keys(node: np.ndarray, cards: np.ndarray, num_nodes: int) -> tuple[np.ndarray, int]:
    """One int64 per row, equal exactly when (node, cards) are equal; and the key space size."""
    slots = cards.shape[1]
    space = num_nodes * _CARD_BASE**slots
    if space >= 2**63:
        raise ValueError(f"{slots} card slots x {num_nodes} nodes do not fit a 64-bit input key")
    keys = node.astype(np.int64)
    for slot in range(slots):
        keys = keys * _CARD_BASE + (cards[:, slot].astype(np.int64) + 1)
    return keys, space


def merge_rows(rows: dict[str, np.ndarray], num_nodes: int, linear_weighting: bool) -> MergedRows:
    """Merge rows with equal inputs (see the module docstring); weights are iterations or 1."""
    keys, space = input_keys(rows["node"], rows["cards"], num_nodes)
    if space <= _DENSE_KEYS:
        distinct = np.flatnonzero(np.bincount(keys, minlength=space))
        position = np.zeros(space, dtype=np.int64)
        position[distinct] = np.arange(len(distinct))
        inverse = position[keys]
    else:
        distinct, inverse = np.unique(keys, return_inverse=True)
    first = np.zeros(len(distinct), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(keys))[::-1]  # any row of each input will do
    weight = rows["iteration"].astype(np.float64) if linear_weighting else np.ones(len(keys))
    total = np.bincount(inverse, weights=weight, minlength=len(distinct))
    target = np.stack([np.bincount(inverse, weights=weight * rows["target"][:, a], minlength=len(distinct))
                       for a in range(rows["target"].shape[1])], axis=1) / total[:, None]
    return MergedRows(rows["node"][first], rows["cards"][first], target.astype(np.float32),
                      total.astype(np.float32), len(keys))
