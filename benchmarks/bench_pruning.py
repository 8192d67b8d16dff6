"""ES Linear MCCFR with and without negative-regret pruning
(:class:`training.abstraction.solver.Pruning`): exploitability at equal CPU time, and speed.

Exact (default): solves ``--abstraction`` (fhp_abstraction_3.6e6) by ES for each budget of
``--budgets`` (process CPU seconds, one thread, so a shared machine does not bend the clock):
unpruned, then once per ratio of ``--ratios`` (pruning from batch ``--from-batch`` with a
``--full-share`` of full traversals). Prints iterations, iterations per CPU-second and the exact
exploitability of each average strategy (measured off the clock: FHP over the canonical flops).

Speed in hold'em (where nothing is exact): ``benchmarks/bench_es_speed.py --ratios 0,100``.

    PYTHONPATH=. nice python benchmarks/bench_pruning.py --budgets 60 --ratios 3,30
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.bench_warm_start import abstract_game, mbb, solve
from training.abstraction.solver import Pruning, run_batch


def exact(args: argparse.Namespace, ratios: list[float]) -> None:
    ag = abstract_game(args.abstraction)
    tables = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
    run_batch(ag, *tables, args.seed, 1, 10, 1, 1, Pruning(1.0))  # compile (numba caches it) off the clock
    print(f"| {args.abstraction} | CPU-s | iterations | iterations/CPU-s | exploitability (mbb/g) |\n|---|---|---|---|---|")
    for budget in (float(b) for b in args.budgets.split(",")):
        for pruning in [None] + [Pruning(r, args.from_batch, args.full_share) for r in ratios]:
            started = time.process_time()
            _, average, iterations, _ = solve(ag, budget, args.seed, pruning=pruning)
            seconds = time.process_time() - started
            print(f"| {label(pruning)} | {seconds:.0f} | {iterations:,} | {iterations / seconds:,.0f} | "
                  f"{mbb(ag, average):.1f} |", flush=True)  # fmt: skip


def label(pruning: Pruning | None) -> str:
    return "unpruned" if pruning is None else f"pruned below -{pruning.ratio:g} x positive regret"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstraction", default="fhp_abstraction_3.6e6")
    parser.add_argument("--budgets", default="60,180", help="CPU seconds per solve, comma-separated")
    parser.add_argument("--ratios", default="3,30", help="pruning ratios, comma-separated")
    parser.add_argument("--from-batch", type=int, default=2)
    parser.add_argument("--full-share", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ratios = [float(r) for r in args.ratios.split(",")]
    exact(args, ratios)


if __name__ == "__main__":
    main()
