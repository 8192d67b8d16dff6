"""The two abstraction solvers behind one batch interface, for the run loop of
:mod:`training.abstraction.run`.

A *batch* is the unit of iteration weighting (both solvers rescale the tables once per batch,
see :mod:`training.abstraction.solver` and :mod:`training.abstraction.pcs`). A PCS batch can
last minutes on hold'em, so it runs as calls of about :data:`CALL_SECONDS` each and reports
after every call (the progress bar moves, and a stop request or the time budget ends the batch
early: the iterations done so far count, the rest of the batch is dropped). An ES batch is one
call (its iterations are cheap and a batch takes seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from math import ceil, comb
from typing import Protocol

import numpy as np

from bot.abstraction.tables import AbstractGame
from training.abstraction import pcs, solver
from training.abstraction.row_layout import RowLayout

SOLVERS = ("pcs", "es-mccfr")
#: Target wall time of one PCS kernel call inside a batch (progress and stop granularity).
CALL_SECONDS = 0.5
#: A PCS batch is at least this many iterations per thread...
MIN_PCS_BATCH_PER_THREAD = 8
#: ...and long enough that the per-batch sweep over the tables (O(rows)) costs a few percent of
#: the batch's walks (O(iterations x nodes x hands)): iterations >= this x rows / (node, hand)
#: pairs per iteration.
PCS_SWEEP_RATIO = 20
#: An ES batch is at least this many iterations...
ES_BATCH = 20_000
#: ...and at least the tables' rows over this: each batch starts with a pass over both tables
#: (the Linear-CFR discount, O(rows)), ~56 ms on abstraction_3e7's 33M rows (2026-11-28, one
#: Xeon core), against ~25 us per iteration of one thread, so a batch of rows / 200 iterations
#: (164,989 for 3e7, 1.5M for 3e8) spends a few percent on it instead of 11% (3e7) or over half
#: (3e8) at 20,000. Weighting 4,000 batches of a 600M-iteration solve linearly is as good as
#: weighting its iterations (Brown & Sandholm 2019 weight Linear CFR's iterations in blocks too).
ES_ROWS_PER_ITERATION = 200

KeepGoing = Callable[[int], bool]
"""``keep_going(iterations done in this batch)``: False ends the batch early."""


class BatchSolver(Protocol):
    label: str
    layout: RowLayout
    """Where the tables' rows sit while this solver runs them (the run loop adopts it and
    converts back to the canonical layout for every file it writes)."""

    def default_batch(self) -> int:
        """Iterations per batch when the config leaves it at 0."""
        ...

    def compile(self, regrets: np.ndarray, average: np.ndarray) -> None:
        """Compile (or load from numba's cache) the kernels for these tables, off the clock."""
        ...

    def run_batch(self, regrets: np.ndarray, average: np.ndarray, first: int, count: int, batch_index: int,
                  keep_going: KeepGoing) -> tuple[int, int]:  # fmt: skip
        """Batch ``batch_index`` (1-based) of ``count`` iterations from ``first``: returns
        (work done: nodes touched or (node, hand) pairs, iterations done)."""
        ...


class ESSolver:
    """External-sampling Linear MCCFR (:mod:`training.abstraction.solver`), on this machine's
    threads or on Ray workers (``run_batch`` of :class:`training.abstraction.ray_mccfr.RayMCCFR`)."""

    def __init__(self, ag: AbstractGame, seed: int, threads: int, batch=solver.run_batch, label: str = "ES Linear MCCFR",
                 pruning: solver.Pruning | None = None, layout: RowLayout | None = None) -> None:  # fmt: skip
        """``batch`` is :func:`training.abstraction.solver.run_batch` or a Ray pool's, which
        takes neither ``pruning`` nor a ``layout`` other than the canonical one."""
        self.ag, self.seed, self.threads, self.batch, self.label = ag, seed, threads, batch, label
        self.pruning = pruning
        self.layout = layout or RowLayout.canonical_of(ag)
        if pruning is not None:
            self.label = f"{label}, pruned"

    def default_batch(self) -> int:
        """Iterations per batch (see :data:`ES_ROWS_PER_ITERATION`)."""
        return max(ES_BATCH, self.ag.num_rows // ES_ROWS_PER_ITERATION)

    def compile(self, regrets: np.ndarray, average: np.ndarray) -> None:
        """ES compiles in its first batch (seconds; its kernels are small)."""

    def run_batch(self, regrets: np.ndarray, average: np.ndarray, first: int, count: int, batch_index: int,
                  keep_going: KeepGoing) -> tuple[int, int]:  # fmt: skip
        options = {} if self.pruning is None else {"pruning": self.pruning}
        if not self.layout.is_canonical:
            options["layout"] = self.layout
        touched = self.batch(self.ag, regrets, average, self.seed, first, count, batch_index, self.threads, **options)
        keep_going(count)
        return touched, count


class PCSSolver:
    """Public Chance Sampling with one of :data:`training.abstraction.pcs.SCHEMES`."""

    def __init__(self, ag: AbstractGame, seed: int, threads: int, scheme: str, layout: RowLayout | None = None) -> None:
        """``layout``: where the tables' rows sit (None: canonical). The traversal layout puts a
        bucket's rows of one round's nodes side by side, so the walk, which visits the nodes of
        a subtree one after another for the same ~60-600 buckets of its board, reads one cache
        line for several nodes instead of one per (node, bucket)."""
        self.layout = layout or RowLayout.canonical_of(ag)
        self.pg = pcs.PCSGame.build(ag, self.layout)
        self.seed, self.threads, self.scheme = seed, threads, scheme
        self.label = f"PCS {scheme}"
        self.call = threads  # iterations per kernel call, adapted to CALL_SECONDS

    def default_batch(self) -> int:
        """Iterations per batch (see :data:`PCS_SWEEP_RATIO`)."""
        per_iteration = pairs_per_iteration(self.pg.ag)
        return max(MIN_PCS_BATCH_PER_THREAD * self.threads, ceil(PCS_SWEEP_RATIO * self.pg.ag.num_rows / per_iteration))

    def compile(self, regrets: np.ndarray, average: np.ndarray) -> None:
        """The walk kernel inlines the board preparation, the pass and the last-round sweep, so
        compiling it takes ~a minute the first time (cached on disk after that): done here on
        no boards, so the solve clock and the progress bar's rate start after it."""
        no_boards = np.zeros((0, self.pg.board_cards), dtype=np.int8)
        pcs.walk_boards(self.pg, regrets, regrets, average, no_boards, (0, 1), 1.0, 1.0, False, self.threads)

    def run_batch(self, regrets: np.ndarray, average: np.ndarray, first: int, count: int, batch_index: int,
                  keep_going: KeepGoing) -> tuple[int, int]:  # fmt: skip
        weights = pcs.batch_weights(self.scheme, batch_index)
        pcs.discount(regrets, average, weights)
        touched = done = 0
        while done < count:
            n = min(self.call, count - done)
            started = time.monotonic()
            touched += pcs.run_iterations(self.pg, regrets, average, self.seed, first + done, n, weights, self.threads)
            seconds = time.monotonic() - started
            done += n
            self.call = max(self.threads, min(4 * self.call, int(n * CALL_SECONDS / max(seconds, 1e-6))))
            if not keep_going(done):
                break
        return touched, done


def pairs_per_iteration(ag: AbstractGame) -> int:
    """(Decision node, live hand) pairs one PCS iteration evaluates: two passes (one per
    player) over every decision node, for the hands that a full board leaves live."""
    game = ag.abstraction.game
    live = comb(len(game.deck) - game.total_board_cards, game.num_hole_cards)
    return 2 * len(ag.tree.decision_ids) * live
