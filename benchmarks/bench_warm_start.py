"""Warm start vs cold start of an ES or PCS solve, by exact exploitability at equal CPU time.

Solves ``--source`` (default fhp_abstraction_4e4) by ``--solver`` (ES Linear MCCFR, or PCS
with DCFR) for ``--source-seconds``
of process CPU time, then solves ``--target`` (default fhp_abstraction_3.6e6) twice per budget
B of ``--budgets``: cold for source-seconds + B (the same total CPU), and warm-started from
the source's tables (:mod:`training.abstraction.warm_start`) for B, once per ``--weights``
(the fraction of the source's batches the carried tables count as, ``warm_start_weight``).
Every average strategy is measured exactly in the full game (FHP: the per-flop best response
over the canonical flops; Leduc: the dense one), off the clock. One thread, so process CPU time
is the solve's own time on a shared machine.

    PYTHONPATH=. nice python benchmarks/bench_warm_start.py --source-seconds 60 --budgets 120,240
    PYTHONPATH=. python benchmarks/bench_warm_start.py --solver pcs --source-seconds 10 --budgets 20,40
    PYTHONPATH=. python benchmarks/bench_warm_start.py --source leduc_merged --target leduc_lossless \
        --source-seconds 1 --budgets 1,4 --weights 1,0.0625
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from training.abstraction.batches import PCSSolver
from training.abstraction.build import build_abstraction
from training.abstraction.exploitability import exact_exploitability_report
from training.abstraction.solver import Pruning, run_batch
from training.abstraction.warm_start import transfer

BATCH = 20_000


def abstract_game(name: str) -> AbstractGame:
    build_abstraction(SPECS[name])
    return AbstractGame.build(Abstraction.load(SPECS[name]))


def solve(ag: AbstractGame, cpu_seconds: float, seed: int, tables: tuple[np.ndarray, np.ndarray] | None = None,
          first_batch: int = 1, pruning: Pruning | None = None, solver: str = "es-mccfr",
          ) -> tuple[np.ndarray, np.ndarray, int, int]:  # fmt: skip
    """Batches of ``solver`` (ES, or PCS with DCFR at its default batch) until ``cpu_seconds``
    of process time: (regrets, average, iterations, batches)."""
    regrets, average = tables or (np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32))
    pcs = PCSSolver(ag, seed, 1, "dcfr") if solver == "pcs" else None
    size = BATCH if pcs is None else pcs.default_batch()
    started, iterations, batch = time.process_time(), 0, first_batch
    while time.process_time() - started < cpu_seconds:
        if pcs is None:
            run_batch(ag, regrets, average, seed, iterations + 1, size, batch, 1, pruning)
        else:
            pcs.run_batch(regrets, average, iterations + 1, size, batch, lambda done: True)
        iterations, batch = iterations + size, batch + 1
    return regrets, average, iterations, batch - first_batch


def mbb(ag: AbstractGame, average: np.ndarray) -> float:
    return float(exact_exploitability_report(ag, average)["exploitability_mbb"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="fhp_abstraction_4e4")
    parser.add_argument("--target", default="fhp_abstraction_3.6e6")
    parser.add_argument("--source-seconds", type=float, default=60.0)
    parser.add_argument("--budgets", default="120,240", help="CPU seconds of the warm-started target solves")
    parser.add_argument("--weights", default="1", help="warm_start_weight values, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solver", choices=("es-mccfr", "pcs"), default="es-mccfr")
    args = parser.parse_args()
    source, target = abstract_game(args.source), abstract_game(args.target)
    for ag in (source, target):  # compile the kernels (numba caches them) before anything is timed
        if args.solver == "pcs":
            PCSSolver(ag, args.seed, 1, "dcfr").compile(*(np.zeros((ag.num_rows, 3), np.float32) for _ in range(2)))
        else:
            run_batch(ag, *(np.zeros((ag.num_rows, 3), np.float32) for _ in range(2)), args.seed, 1, 10, 1, 1)
    transfer(target, source, *(np.zeros((target.num_rows, 3), np.float32) for _ in range(2)),
             *(np.zeros((source.num_rows, 3), np.float32) for _ in range(2)))  # fmt: skip
    source_regrets, source_average, source_iterations, source_batches = solve(source, args.source_seconds, args.seed + 1,
                                                                             solver=args.solver)
    print(f"source {args.source} ({args.solver}): {source_iterations:,} iterations in {args.source_seconds:.0f} CPU-s, "
          f"{mbb(source, source_average):.1f} mbb/g", flush=True)  # fmt: skip
    print(f"\n| {args.target} | total CPU-s | iterations | exploitability (mbb/g) |\n|---|---|---|---|")
    for budget in (float(b) for b in args.budgets.split(",")):
        total = args.source_seconds + budget
        _, average, iterations, _ = solve(target, total, args.seed, solver=args.solver)
        print(f"| cold, {total:.0f} s | {total:.0f} | {iterations:,} | {mbb(target, average):.1f} |", flush=True)
        for weight in (float(w) for w in args.weights.split(",")):
            tables = np.zeros((target.num_rows, 3), np.float32), np.zeros((target.num_rows, 3), np.float32)
            carried = time.process_time()
            transfer(target, source, *tables, source_regrets, source_average)
            carried = time.process_time() - carried
            start = round(source_batches * weight) + 1
            _, average, iterations, _ = solve(target, budget, args.seed, tables, start, solver=args.solver)
            print(f"| warm (weight {weight:g}: from batch {start:,}), {args.source_seconds:.0f} s + {budget:.0f} s "
                  f"(+{carried:.1f} s carrying) | {total:.0f} | {iterations:,} | {mbb(target, average):.1f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
