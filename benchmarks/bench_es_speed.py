"""Speed of ES Linear MCCFR (:mod:`training.abstraction.solver`) on a hold'em abstraction: the
tables' row layout (:mod:`training.abstraction.row_layout`: canonical, as on disk, or the
traversal layout the run loop solves in) and negative-regret pruning, at equal tables.

Starts from a solved ES run's checkpoint (``--from RUN``) or from zero tables of
``--abstraction`` advanced ``--warmup`` batches (unpruned, canonical), then runs ``--batches``
batches (of ``--batch`` iterations; by default the run loop's,
:meth:`training.abstraction.batches.ESSolver.default_batch`) in every (layout, pruning)
setting, twice in turn, each time from the same tables: iterations/s and decision nodes per
traversal. Nothing is exact in hold'em; the
speed is the point (the settings compute the same solve: the layouts bit for bit on one thread).

    PYTHONPATH=. python benchmarks/bench_es_speed.py --abstraction abstraction_3e7 --threads 1
    PYTHONPATH=. python benchmarks/bench_es_speed.py --from runs/es3e7 --ratios 0,100 --threads 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.run_files import read_toml
from training.abstraction.batches import ESSolver
from training.abstraction.build import build_abstraction
from training.abstraction.row_layout import RowLayout
from training.abstraction.solver import Pruning, run_batch

WARMUP_BATCH = 20_000


def starting_tables(args: argparse.Namespace) -> tuple[AbstractGame, np.ndarray, np.ndarray, int, int, str]:
    """(abstract game, regrets, average, first iteration, batch index, where they came from)."""
    if args.from_run:
        run = Path(args.from_run)
        name = read_toml(run / "config.toml")["abstraction"]
        ag = AbstractGame.build(Abstraction.load(SPECS[name]))
        state = json.loads((run / "checkpoint" / "state.json").read_text())
        tables = np.load(run / "checkpoint" / "regrets.npy"), np.load(run / "checkpoint" / "average.npy")
        return ag, *tables, state["iterations"] + 1, state["batches"] + 1, f"{name} from {run} ({state['iterations']:,} iterations)"
    build_abstraction(SPECS[args.abstraction], lambda *_progress: None)
    ag = AbstractGame.build(Abstraction.load(SPECS[args.abstraction]))
    regrets, average = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
    for k in range(1, args.warmup + 1):
        run_batch(ag, regrets, average, args.seed, (k - 1) * WARMUP_BATCH + 1, WARMUP_BATCH, k, args.threads)
    return ag, regrets, average, args.warmup * WARMUP_BATCH + 1, args.warmup + 1, f"{args.abstraction} after {args.warmup} batches"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstraction", default="abstraction_3e7")
    parser.add_argument("--from", dest="from_run", help="a solved ES run: start from its checkpoint")
    parser.add_argument("--warmup", type=int, default=20, help="batches from zero tables (without --from)")
    parser.add_argument("--layouts", default="canonical,traversal")
    parser.add_argument("--ratios", default="0", help="pruning ratios, comma-separated (0: unpruned)")
    parser.add_argument("--full-share", type=float, default=0.05)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--batch", type=int, default=0, help="iterations per batch (0: the run loop's default)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ag, regrets, average, first, batch, source = starting_tables(args)
    size = args.batch or ESSolver(ag, args.seed, args.threads).default_batch()
    layouts = {"canonical": RowLayout.canonical_of(ag), "traversal": RowLayout.traversal_of(ag)}
    settings = [(name, float(r)) for r in args.ratios.split(",") for name in args.layouts.split(",")]
    print(f"| {source}, {args.threads} thread(s), batches of {size:,} | iterations/s | decision nodes per traversal |\n|---|---|---|")
    for name, ratio in 2 * settings:
        layout, pruning = layouts[name], Pruning(ratio, 1, args.full_share) if ratio else None
        tables = regrets.copy(), average.copy()
        for table in tables:
            layout.adopt(table)
        run_batch(ag, *tables, args.seed, first, 1000, batch, args.threads, pruning, layout)  # compiled, tables paged in
        started, touched = time.perf_counter(), 0
        for b in range(args.batches):
            touched += run_batch(ag, *tables, args.seed, first + 1000 + b * size, size, batch + b, args.threads, pruning, layout)
        seconds = time.perf_counter() - started
        what = f"{name} layout, " + ("unpruned" if pruning is None else f"pruned below -{ratio:g} x positive regret")
        print(f"| {what} | {args.batches * size / seconds:,.0f} | {touched / (2 * args.batches * size):.0f} |", flush=True)


if __name__ == "__main__":
    main()
