"""Where an abstract infoset's row sits in the tables while a solver (ES or PCS) runs.

Every abstraction table on disk (policies, checkpoints, snapshots) and every reader of one (the
agent, best response, warm start) uses the *canonical* layout of
:func:`bot.abstraction.tables.row_layout`: decision nodes in preorder, each owning a block of one
row per bucket of its round, so row(node, bucket) = ``row_offset[node] + bucket``. Both solvers
visit many nodes of one round with the same bucket: an external-sampling traversal holds one
bucket per seat and round and visits dozens of nodes with it; a PCS pass walks a subtree's
nodes one after another, each for the same ~60-600 buckets its board's hands fall into. In the
canonical layout each (node, bucket) is a row of a different block, megabytes apart in a 3e7
table (the river's 5,670 nodes x 5,180 buckets) and more in 3e8's, so nearly every row read is
a cache miss, and the solve is bound by memory latency.

The *traversal* layout turns each round's blocks around: bucket-major, then the round's decision
nodes in preorder, so row(node, bucket) = ``round_base + bucket * nodes_in_round + node's index in
its round``. A subtree's nodes in one round with one bucket are then neighbours (a river
subtree's nine or ten decision nodes share two cache lines). The kernels take the layout as
two arrays (``row_offset``, ``stride``: row = ``row_offset[node] + bucket * stride[node]``), so
the canonical layout is the special case stride 1 and one kernel serves both. The run loop
(:mod:`training.abstraction.run`) keeps the tables in the traversal layout while it solves and
converts at every file it writes (:meth:`RowLayout.canonical`); the conversion is a gather over
the tables (a second or two for 3e7), paid per checkpoint, not per iteration. Measured: ES
1.15x on abstraction_3e7; PCS 1.4x a CPU second on abstraction_3e8
(``benchmarks/bench_es_speed.py``, ``benchmarks/bench_pcs_holdem.py --layouts``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from bot.abstraction.tables import AbstractGame


@dataclass(frozen=True, eq=False)
class RowLayout:
    """The row of (node, bucket) is ``row_offset[node] + bucket * stride[node]``."""

    row_offset: np.ndarray  # int64 [nodes], -1 at terminals
    stride: np.ndarray  # int64 [nodes], 0 at terminals
    canonical_offset: np.ndarray  # int64 [nodes]: the canonical layout's row_offset
    buckets: np.ndarray  # int64 [nodes]: rows of a node (its round's buckets), 0 at terminals
    is_canonical: bool

    @classmethod
    def canonical_of(cls, ag: AbstractGame) -> RowLayout:
        """The files' layout (stride 1): for tables that are read or written outside the solver."""
        stride = (ag.row_offset >= 0).astype(np.int64)
        return cls(ag.row_offset, stride, ag.row_offset, _node_buckets(ag), True)

    @classmethod
    def traversal_of(cls, ag: AbstractGame) -> RowLayout:
        """Bucket-major within each round (module docstring)."""
        tree, buckets = ag.tree, ag.abstraction.num_buckets
        row_offset = np.full(tree.num_nodes, -1, dtype=np.int64)
        stride = np.zeros(tree.num_nodes, dtype=np.int64)
        base = 0
        decision = tree.decision_ids
        for r in range(len(buckets)):
            nodes = np.sort(decision[tree.round[decision] == r])
            row_offset[nodes] = base + np.arange(len(nodes))
            stride[nodes] = len(nodes)
            base += len(nodes) * buckets[r]
        if base != ag.num_rows:
            raise AssertionError(f"traversal layout has {base} rows, the canonical one {ag.num_rows}")
        return cls(row_offset, stride, ag.row_offset, _node_buckets(ag), False)

    def canonical(self, table: np.ndarray) -> np.ndarray:
        """``table`` (in this layout) in the canonical layout: the table itself when this layout
        is canonical, else a new array."""
        if self.is_canonical:
            return table
        out = np.empty_like(table)
        _gather(table, out, self.row_offset, self.stride, self.canonical_offset, self.buckets, True)
        return out

    def adopt(self, table: np.ndarray) -> None:
        """Rearrange a canonical ``table`` into this layout, in place (through one temporary copy)."""
        if not self.is_canonical:
            self.fill(table, np.array(table))

    def fill(self, table: np.ndarray, source: np.ndarray) -> None:
        """Write the canonical ``source`` (e.g. a memory-mapped checkpoint table) into ``table`` in
        this layout: a resume reads its checkpoint straight into the solve's layout, with no
        temporary table (3e8: 4 GB each)."""
        if self.is_canonical:
            table[:] = source
        else:
            _gather(source, table, self.row_offset, self.stride, self.canonical_offset, self.buckets, False)


def _node_buckets(ag: AbstractGame) -> np.ndarray:
    counts = np.zeros(ag.tree.num_nodes, dtype=np.int64)
    decision = ag.tree.decision_ids
    counts[decision] = np.asarray(ag.abstraction.num_buckets, dtype=np.int64)[ag.tree.round[decision]]
    return counts


@njit(cache=True, parallel=True)
def _gather(source, out, row_offset, stride, canonical_offset, buckets, to_canonical):  # pragma: no cover - numba
    """Copy every (node, bucket) row between the two layouts: layout -> canonical when
    ``to_canonical``, else canonical -> layout."""
    for n in prange(row_offset.shape[0]):
        for b in range(buckets[n]):
            here, there = row_offset[n] + b * stride[n], canonical_offset[n] + b
            for k in range(source.shape[1]):
                if to_canonical:
                    out[there, k] = source[here, k]
                else:
                    out[here, k] = source[there, k]
