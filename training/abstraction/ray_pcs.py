"""Public Chance Sampling over a card abstraction on Ray actors: the same batches, merged by sums.

The single-process PCS solver (:class:`training.abstraction.batches.PCSSolver`) rescales both
tables once per batch (the scheme's discount, :func:`training.abstraction.pcs.batch_weights`)
and then runs the batch's iterations, one sampled board each, with immediate updates.
:class:`RayPCSSolver` keeps that schedule and cuts each batch into merge rounds; per round:

1. the driver puts its tables in Ray's object store once;
2. every :class:`PCSWorker` copies them and runs its contiguous share of the round's
   iterations on its copy with :func:`training.abstraction.pcs.run_iterations`, the unit of
   work the solver's docstring names (the boards are keyed by (seed, iteration), not by
   worker, so the merged run samples exactly the single-process boards), and returns the rows
   it changed with their deltas;
3. the driver adds every worker's deltas to its tables (the merge); under CFR+ the merged
   regrets are floored at 0 again, since a sum of floored deltas can dip below it.

Within a round a worker's iterations do not see the other workers' increments: the same
delayed-update MCCFR as the ES workers (:mod:`training.abstraction.ray_mccfr`, which gives the
convergence argument and the Leduc measurements of the delay's cost). A PCS iteration updates
every hand of its board, so the preflop and flop rows change in every iteration: keep rounds
short (``merge_every``) relative to the batch on small abstractions; on hold'em a round of a
few iterations per worker already lasts seconds, so the transfers (tables in, changed rows
out) stay small against the walks.
"""

from __future__ import annotations

import numpy as np

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from training.abstraction import pcs
from training.abstraction.batches import KeepGoing, PCSSolver
from training.abstraction.build import build_abstraction
from training.abstraction.ray_mccfr import merge_round
from training.contract.cluster import DEFAULT_TIMEOUT_S, ActorPool, Cluster, Worker, start


class PCSWorker(Worker):
    """One Ray actor: the abstraction compiled for PCS (bucket tables from the shared cache)."""

    def __init__(self, abstraction: str, threads: int) -> None:
        spec = SPECS[abstraction]
        build_abstraction(spec, lambda *_progress: None)  # built and cached by the driver: loads it
        self.pg = pcs.PCSGame.build(AbstractGame.build(Abstraction.load(spec)))
        self.threads = threads

    def run(self, regrets: np.ndarray, average: np.ndarray, seed: int, first_iteration: int, count: int,
            weights: pcs.BatchWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:  # fmt: skip
        """Run the share on private copies; ``(changed rows, regret deltas, average deltas,
        (node, hand) pairs evaluated)``."""
        own_regrets, own_average = np.array(regrets), np.array(average)
        touched = pcs.run_iterations(self.pg, own_regrets, own_average, seed, first_iteration, count, weights, self.threads)
        changed = np.flatnonzero((own_regrets != regrets).any(axis=1) | (own_average != average).any(axis=1))
        return changed, own_regrets[changed] - regrets[changed], own_average[changed] - average[changed], touched


class RayPCSSolver(PCSSolver):
    """:class:`PCSSolver`'s batches (same sizes, weights and boards) run on a pool of workers."""

    def __init__(self, ag: AbstractGame, seed: int, scheme: str, cluster: Cluster, merge_every: int = 0,
                 threads_per_worker: int = 1, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:  # fmt: skip
        # The batch size follows the threads of the whole pool (PCSSolver.default_batch).
        super().__init__(ag, seed, cluster.workers * threads_per_worker, scheme)
        self.label = f"PCS {scheme} on {cluster.workers} Ray workers"
        self.ray = start(cluster)
        #: Iterations (all workers together) between merges; 0 = once per batch.
        self.merge_every = merge_every
        self.pool = ActorPool(PCSWorker, cluster.workers, (ag.abstraction.spec.name, threads_per_worker), timeout_s)

    def __len__(self) -> int:
        return len(self.pool)

    def compile(self, regrets: np.ndarray, average: np.ndarray) -> None:
        """The workers compile (or load numba's cache) in their first round."""

    def run_batch(self, regrets: np.ndarray, average: np.ndarray, first: int, count: int, batch_index: int,
                  keep_going: KeepGoing) -> tuple[int, int]:  # fmt: skip
        weights = pcs.batch_weights(self.scheme, batch_index)
        pcs.discount(regrets, average, weights)
        step = self.merge_every or count
        touched = done = 0
        while done < count:
            size = min(step, count - done)
            pairs, rows = merge_round(self.ray, self.pool, regrets, average, self.seed, first + done, size, weights,
                                      f"PCS batch {batch_index}")  # fmt: skip
            touched += pairs
            if weights.floor:
                changed = np.unique(np.concatenate(rows))
                regrets[changed] = np.maximum(regrets[changed], 0.0)
            done += size
            if not keep_going(done):
                break
        return touched, done

    def metrics(self) -> dict:
        return {"workers": len(self.pool), "worker_restarts": self.pool.restarts}

    def close(self) -> None:
        self.pool.close()
