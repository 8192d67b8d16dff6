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

from training.input_keys import InputKeys, dense_unique

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


def merge_rows(rows: dict[str, np.ndarray], input_keys: InputKeys, linear_weighting: bool) -> MergedRows:
    """Merge rows with equal inputs (see the module docstring); weights are iterations or 1."""
    keys = input_keys.keys(rows["node"], rows["cards"])
    if input_keys.size <= _DENSE_KEYS:
        distinct, inverse, _ = dense_unique(keys, input_keys.size)
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
