"""Does weighting ES Linear MCCFR by batches instead of iterations cost anything? Exact answer on FHP.

The run loop sizes an ES batch at one iteration per 200 table rows (at least 20,000;
:data:`training.abstraction.batches.ES_ROWS_PER_ITERATION`), so that the per-batch discount
pass over the tables stays a few percent of the work; Linear CFR's weight then changes once per
batch. This solves ``--abstraction`` (fhp_abstraction_3.6e6, where exploitability is exact) for
``--iterations`` with each batch size of ``--batches`` on one thread, same seed, and prints the
exact exploitability of each average strategy and the CPU seconds the solve took.

    PYTHONPATH=. python benchmarks/bench_es_batch.py --iterations 20000000 --batches 18000,100000,400000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.bench_warm_start import abstract_game, mbb
from training.abstraction.solver import run_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstraction", default="fhp_abstraction_3.6e6")
    parser.add_argument("--iterations", type=int, default=20_000_000)
    parser.add_argument("--batches", default="18000,100000,400000", help="iterations per batch, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ag = abstract_game(args.abstraction)
    tables = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
    run_batch(ag, *tables, args.seed, 1, 10, 1, 1)  # compile (numba caches it) off the clock
    print(f"| {args.abstraction}, {args.iterations:,} iterations | table rows ÷ batch | batches | CPU-s | "
          "exploitability (mbb/g) |\n|---|---|---|---|---|")  # fmt: skip
    for size in (int(b) for b in args.batches.split(",")):
        regrets, average = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
        started, done, batch = time.process_time(), 0, 1
        while done < args.iterations:
            count = min(size, args.iterations - done)
            run_batch(ag, regrets, average, args.seed, done + 1, count, batch, 1)
            done, batch = done + count, batch + 1
        seconds = time.process_time() - started
        print(f"| batches of {size:,} | {ag.num_rows / size:.0f} | {batch - 1:,} | {seconds:.0f} | {mbb(ag, average):.2f} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
