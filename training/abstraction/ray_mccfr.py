"""ES Linear MCCFR over a card abstraction on Ray actors: delayed-update batches merged by sums.

The single-process solver (:mod:`training.abstraction.solver`) runs a Linear-CFR *batch* of
iterations at a time: it discounts both tables by (k-1)/(k+1), then adds batch k's sampled
regret and average-strategy increments with weight 2/(k+1). :class:`RayMCCFR` keeps exactly
that schedule and splits each batch's iterations into N contiguous shares:

0. the batch is cut into merge rounds of ``merge_every`` iterations (default: the whole batch);
   per round:
1. the driver puts its (discounted, at the batch's start) tables in Ray's object store once;
2. every :class:`MCCFRWorker` copies them and runs its share of the iterations on its copy (the
   same deals and opponent samples as the single-process run: the random streams are keyed by
   (seed, iteration, player), not by who runs them), then returns the rows it changed and their
   deltas (a batch touches a small part of a large abstraction's rows);
3. the driver adds every worker's deltas to its tables (the merge), logs and checkpoints.

Why it converges: the merged tables are the single-process batch's sums of increments, except
that an iteration in worker j's share computes its current strategy (regret matching) from
regrets that miss the other workers' increments of the same batch, i.e. regrets up to one
batch stale. The regret increments are still sampled counterfactual regrets of valid strategies
and every sample is still summed once, so this is MCCFR with delayed regret updates: Lanctot et
al. 2009 ("Monte Carlo Sampling for Regret Minimization in Extensive Games") bound the regret
of any sequence of sampled updates whose strategies come from regret matching on accumulated
regrets, and delayed/asynchronous variants keep an O(sqrt(T)) average-regret bound with a delay
term (the stale-gradient argument of Zinkevich et al. 2009, "Slow learners are fast", for
online learning; the same holds for regret matching, whose per-iteration change is bounded).
The single-process solver already accepts the same kind of staleness inside a batch: its threads
update shared tables Hogwild-style. With a fixed batch size the delay is bounded while T grows,
so its effect vanishes in the average as T grows.

The delay is not free on a small game where every iteration visits the same few infosets: on
Leduc (``leduc_lossless``, 40,000 iterations in batches of 4,000, 2 workers, seeds 0-2) one
process ends at 27-31 mbb/g, merged rounds of 4,000 iterations at 139-198, of 1,000 at 70-105,
of 500 at 55-67 and of 200 at 39-51. What matters is the delay per *infoset visit*: in a large
abstraction a round touches each postflop row a handful of times, but the 169 x 8 preflop rows
are visited on every iteration, so keep ``merge_every`` to a few seconds of the workers' work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from training.abstraction.build import build_abstraction
from training.abstraction.solver import batch_weight, discount_tables, run_iterations
from training.contract.cluster import DEFAULT_TIMEOUT_S, ActorPool, Cluster, Worker, shares, start


class MCCFRWorker(Worker):
    """One Ray actor: the abstract game (bucket tables loaded from the shared cache) and its share."""

    def __init__(self, abstraction: str, threads: int) -> None:
        spec = SPECS[abstraction]
        build_abstraction(spec, lambda *_progress: None)  # built and cached by the driver: loads it
        self.ag = AbstractGame.build(Abstraction.load(spec))
        self.threads = threads

    def run(self, regrets: np.ndarray, average: np.ndarray, seed: int, first_iteration: int, count: int,
            weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Run the share on private copies; ``(changed rows, regret deltas, average deltas, nodes touched)``."""
        own_regrets, own_average = np.array(regrets), np.array(average)
        touched = run_iterations(self.ag, own_regrets, own_average, seed, first_iteration, count, weight, self.threads)
        changed = np.flatnonzero((own_regrets != regrets).any(axis=1) | (own_average != average).any(axis=1))
        return (changed, own_regrets[changed] - regrets[changed], own_average[changed] - average[changed], touched)


class RayMCCFR:
    """The driver's side: :meth:`run_batch` has :func:`training.abstraction.solver.run_batch`'s
    signature and effect (tables updated in place), with the batch split over the workers."""

    def __init__(self, abstraction: str, cluster: Cluster, merge_every: int = 0, threads_per_worker: int = 1,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.ray = start(cluster)
        #: Iterations (all workers together) between merges; 0 = once per Linear-CFR batch.
        self.merge_every = merge_every
        self.pool = ActorPool(MCCFRWorker, cluster.workers, (abstraction, threads_per_worker), timeout_s)

    def __len__(self) -> int:
        return len(self.pool)

    def run_batch(self, ag: AbstractGame, regrets: np.ndarray, average: np.ndarray, seed: int,
                  first_iteration: int, count: int, batch_index: int, threads: int) -> int:
        """Batch ``batch_index``'s ``count`` iterations on the workers, merged into the tables.
        (``ag`` and ``threads`` belong to the single-process signature; workers hold their own
        abstract game and use ``threads_per_worker``.)"""
        discount_tables(regrets, average, batch_index)
        weight = batch_weight(batch_index)
        step = self.merge_every or count
        touched = 0
        for start_at in range(0, count, step):  # one round per merge
            nodes, _rows = merge_round(self.ray, self.pool, regrets, average, seed, first_iteration + start_at,
                                       min(step, count - start_at), weight, f"MCCFR batch {batch_index}")  # fmt: skip
            touched += nodes
        return touched

    def metrics(self) -> dict:
        return {"workers": len(self.pool), "worker_restarts": self.pool.restarts}

    def close(self) -> None:
        self.pool.close()


def merge_round(ray: Any, pool: ActorPool, regrets: np.ndarray, average: np.ndarray, seed: int, first: int,
                size: int, weight: Any, what: str) -> tuple[int, list[np.ndarray]]:  # fmt: skip
    """One merge round of ``size`` iterations from ``first`` (steps 1-3 of the module
    docstring), for any worker whose ``run(regrets, average, seed, first, count, weight)``
    returns ``(changed rows, regret deltas, average deltas, work)`` (this module's ES workers
    and :mod:`training.abstraction.ray_pcs`'s): the tables are updated in place; returns the
    work done and each worker's changed rows."""
    tables = (ray.put(regrets), ray.put(average))
    parts = shares(size, len(pool))
    outputs = pool.gather(lambda i, actor: actor.run.remote(*tables, seed, first + parts[i][0], parts[i][1], weight), what=what)
    work = 0
    for rows, regret_delta, average_delta, done in outputs:  # the merge: sums of increments
        regrets[rows] += regret_delta
        average[rows] += average_delta
        work += done
    return work, [rows for rows, *_ in outputs]
