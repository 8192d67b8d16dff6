"""Scaling with Ray workers: Deep CFR traversals and iterations, and abstraction MCCFR batches.

    python benchmarks/bench_ray_scaling.py                       # 1 and 2 workers (a few minutes)
    python benchmarks/bench_ray_scaling.py --workers 1,4,8,16    # a bigger machine
    python benchmarks/bench_ray_scaling.py --ray-address HOST:6379 --workers 16,32   # a cluster

For each worker count N the table gives, against the single-process path ("1, no Ray"):

* **traversals/s**: K external-sampling traversals of one player (``RayTraversals.results``:
  shares on N actors, rows back to the driver) with random-initialised value networks, so every
  visited infoset runs the network as in a real HULH iteration (Leduc uses the same network path
  on the workers; the driver's own Leduc traversals use its strategy table);
* **iteration s**: one whole Deep CFR iteration (both players' traversals, reservoir inserts,
  the two value-network fits at a reduced ``--sgd-steps``; on the driver whatever N is);
* **MCCFR it/s**: ES Linear MCCFR iterations per second over one batch on ``leduc_lossless``
  and ``abstraction_3e6`` (if built), one numba thread per worker, merge included.

Ray's start and the actors' start (imports) are excluded: they happen once per run. Every figure
is printed with the machine and the load it ran at. Wall-clock rates on a shared machine measure
the load as much as the code, so each row also gives the **CPU time** of the work: the driver's
process plus every actor's (:meth:`training.contract.cluster.ActorPool.cpu_seconds`; Ray's own
daemons, which move the objects, are not counted), per traversal and per iteration.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

from bot.abstraction.spec import SPECS, spec_dir
from bot.abstraction.tables import AbstractGame, Abstraction
from training.abstraction.build import build_abstraction
from training.abstraction.ray_mccfr import RayMCCFR
from training.abstraction.solver import run_batch
from training.contract import cluster as distributed
from training.contract.cluster import ActorPool
from training.deep_cfr.ray_traversal import RayTraversals
from training.deep_cfr.trainer import PRESETS, DeepCFRConfig, DeepCFRTrainer


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def deep_cfr_trainer(game: str, traversals: int, sgd_steps: int, folder: str) -> DeepCFRTrainer:
    """A trainer with small memories and random networks (no run of its own is needed). Without
    the argmax fallback: a random network's argmax folds the first decision every time, which
    would end every traversal at once (real networks mix)."""
    config = DeepCFRConfig(**{**PRESETS[game], "game": game, "traversals": traversals, "sgd_steps": sgd_steps,
                              "advantage_memory": 200_000, "strategy_memory": 200_000, "device": "cpu",
                              "evaluate_every": 0, "threads": 1, "argmax_fallback": False})
    trainer = DeepCFRTrainer.new(config, os.path.join(folder, game), progress=False)
    torch.manual_seed(0)
    trainer.nets = [trainer.make_net().eval(), trainer.make_net().eval()]
    if trainer.current_strategy is not None:  # the driver's table of sigma for these networks
        for p in (0, 1):
            trainer.refresh_strategy(p)
    return trainer


def cpu_seconds(pool: ActorPool | None) -> float:
    """CPU seconds used so far by this process and the pool's actors."""
    return time.process_time() + (pool.cpu_seconds() if pool is not None else 0.0)


def timed(work: Callable[[], object], pool: ActorPool | None) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of ``work()`` (CPU: this process and the actors)."""
    cpu, started = cpu_seconds(pool), time.perf_counter()
    work()
    wall = time.perf_counter() - started
    return wall, cpu_seconds(pool) - cpu


def time_traversals(trainer: DeepCFRTrainer, iteration: int) -> tuple[float, float]:
    """``(traversals per wall second, CPU seconds per traversal)`` of one player's K traversals."""
    def traverse() -> None:
        trainer.iteration = iteration
        for _result, _done in trainer.traversal_results(0):
            pass

    pool = trainer.traversal_pool.pool if trainer.traversal_pool is not None else None
    wall, cpu = timed(traverse, pool)
    return trainer.config.traversals / wall, cpu / trainer.config.traversals


def time_iteration(trainer: DeepCFRTrainer) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one whole iteration."""
    from training.deep_cfr.trainer import _Silent

    pool = trainer.traversal_pool.pool if trainer.traversal_pool is not None else None
    return timed(lambda: trainer.run_iteration(_Silent()), pool)


def bench_deep_cfr(game: str, traversals: int, sgd_steps: int, counts: list[int], cluster_address: str | None,
                   folder: str) -> list[tuple]:
    rows = []
    trainer = deep_cfr_trainer(game, traversals, sgd_steps, folder)
    time_traversals(trainer, 1)  # warm-up (numba/torch first calls)
    rows.append((game, "1, no Ray", *time_traversals(trainer, 2), *time_iteration(trainer)))
    for n in counts:
        trainer.traversal_pool = RayTraversals(trainer, distributed.Cluster(n, cluster_address))
        time_traversals(trainer, 1)  # actors' first traversals (imports, first calls)
        rows.append((game, f"{n}, Ray", *time_traversals(trainer, 2), *time_iteration(trainer)))
        trainer.traversal_pool.close()
        trainer.traversal_pool = None
    return rows


def bench_mccfr(name: str, batch: int, counts: list[int], cluster_address: str | None) -> list[tuple]:
    spec = SPECS[name]
    if name != "leduc_lossless" and not (spec_dir(spec) / "meta.json").exists():
        print(f"{name}: not built here, skipped (pokerbot train --algo abstraction ... builds it)")
        return []
    build_abstraction(spec)
    ag = AbstractGame.build(Abstraction.load(spec))
    tables = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
    run_batch(ag, *tables, 0, 1, min(batch, 1000), 1, 1)  # compile
    wall, cpu = timed(lambda: run_batch(ag, *tables, 0, 1001, batch, 2, 1), None)
    rows = [(name, "1, no Ray", batch / wall, cpu / batch)]
    for n in counts:
        pool = RayMCCFR(name, distributed.Cluster(n, cluster_address))
        pool.run_batch(ag, *tables, 0, 1, min(batch, 1000 * n), 3, 1)  # actors' start and compile
        wall, cpu = timed(lambda pool=pool: pool.run_batch(ag, *tables, 0, 1001, batch, 4, 1), pool.pool)
        rows.append((name, f"{n}, Ray", batch / wall, cpu / batch))
        pool.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--ray-address", help="an existing Ray cluster (default: a local one)")
    parser.add_argument("--holdem-traversals", type=int, default=200)
    parser.add_argument("--leduc-traversals", type=int, default=2000)
    parser.add_argument("--sgd-steps", type=int, default=10, help="Adam steps per fit in the timed iteration")
    parser.add_argument("--mccfr-batch", type=int, default=20_000)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    print(f"{os.cpu_count()} logical cores; load at start {load()}")
    distributed.start(distributed.Cluster(max(counts), args.ray_address))
    with tempfile.TemporaryDirectory() as folder:
        deep = (bench_deep_cfr("holdem", args.holdem_traversals, args.sgd_steps, counts, args.ray_address, folder)
                + bench_deep_cfr("leduc", args.leduc_traversals, args.sgd_steps, counts, args.ray_address, folder))
    print(f"\nDeep CFR (sgd_steps {args.sgd_steps} per fit in 'iteration s'), load {load()}")
    print(f"{'game':8} {'workers':>10} {'traversals/s':>13} {'CPU ms/trav':>12} {'iteration s':>12} {'iter CPU s':>11}")
    for game, workers, rate, cpu_per, seconds, cpu in deep:
        print(f"{game:8} {workers:>10} {rate:13,.0f} {1e3 * cpu_per:12.3f} {seconds:12.2f} {cpu:11.2f}")
    mccfr = bench_mccfr("leduc_lossless", args.mccfr_batch, counts, args.ray_address)
    mccfr += bench_mccfr("abstraction_3e6", args.mccfr_batch // 4, counts, args.ray_address)
    print(f"\nES Linear MCCFR, one numba thread per worker, load {load()}")
    print(f"{'abstraction':16} {'workers':>10} {'iterations/s':>13} {'CPU us/iter':>12}")
    for name, workers, rate, cpu_per in mccfr:
        print(f"{name:16} {workers:>10} {rate:13,.0f} {1e6 * cpu_per:12.1f}")
    distributed.stop()


if __name__ == "__main__":
    main()
