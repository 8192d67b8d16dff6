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
is printed with the machine and the load it ran at.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import torch

from bot.abstraction_spec import SPECS, spec_dir
from bot.abstraction_tables import AbstractGame, Abstraction
from training import distributed
from training.abstraction.build import build_abstraction
from training.abstraction.solver import run_batch
from training.deep_cfr import PRESETS, DeepCFRConfig, DeepCFRTrainer
from training.distributed.ray_mccfr import RayMCCFR
from training.distributed.ray_traversal import RayTraversals


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


def time_traversals(trainer: DeepCFRTrainer, iteration: int) -> float:
    trainer.iteration = iteration
    started = time.perf_counter()
    for _result, _done in trainer.traversal_results(0):
        pass
    return trainer.config.traversals / (time.perf_counter() - started)


def time_iteration(trainer: DeepCFRTrainer) -> float:
    from training.deep_cfr import _Silent

    started = time.perf_counter()
    trainer.run_iteration(_Silent())
    return time.perf_counter() - started


def bench_deep_cfr(game: str, traversals: int, sgd_steps: int, counts: list[int], cluster_address: str | None,
                   folder: str) -> list[tuple]:
    rows = []
    trainer = deep_cfr_trainer(game, traversals, sgd_steps, folder)
    time_traversals(trainer, 1)  # warm-up (numba/torch first calls)
    rows.append((game, "1, no Ray", time_traversals(trainer, 2), time_iteration(trainer)))
    for n in counts:
        trainer.traversal_pool = RayTraversals(trainer, distributed.Cluster(n, cluster_address))
        time_traversals(trainer, 1)  # actors' first traversals (imports, first calls)
        rows.append((game, f"{n}, Ray", time_traversals(trainer, 2), time_iteration(trainer)))
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
    started = time.perf_counter()
    run_batch(ag, *tables, 0, 1001, batch, 2, 1)
    rows = [(name, "1, no Ray", batch / (time.perf_counter() - started))]
    for n in counts:
        pool = RayMCCFR(name, distributed.Cluster(n, cluster_address))
        pool.run_batch(ag, *tables, 0, 1, min(batch, 1000 * n), 3, 1)  # actors' start and compile
        started = time.perf_counter()
        pool.run_batch(ag, *tables, 0, 1001, batch, 4, 1)
        rows.append((name, f"{n}, Ray", batch / (time.perf_counter() - started)))
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
    print(f"{'game':8} {'workers':>10} {'traversals/s':>13} {'iteration s':>12}")
    for game, workers, rate, seconds in deep:
        print(f"{game:8} {workers:>10} {rate:13,.0f} {seconds:12.2f}")
    mccfr = bench_mccfr("leduc_lossless", args.mccfr_batch, counts, args.ray_address)
    mccfr += bench_mccfr("abstraction_3e6", args.mccfr_batch // 4, counts, args.ray_address)
    print(f"\nES Linear MCCFR, one numba thread per worker, load {load()}")
    print(f"{'abstraction':16} {'workers':>10} {'iterations/s':>13}")
    for name, workers, rate in mccfr:
        print(f"{name:16} {workers:>10} {rate:13,.0f}")
    distributed.stop()


if __name__ == "__main__":
    main()
