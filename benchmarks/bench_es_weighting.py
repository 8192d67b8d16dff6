"""Which iteration weighting makes ES MCCFR converge soonest? Exact answer on FHP.

ES weights batch k by k (Linear CFR) in both tables. DCFR (Brown & Sandholm 2019) discounts
positive regrets, negative regrets and the average each on its own schedule; PCS offers it
(:func:`training.abstraction.pcs.batch_weights`). This solves ``--abstraction``
(fhp_abstraction_3.6e6 by default, where exploitability is exact) on one thread with each
weighting of ``--schemes``, same seed and same batches (the run loop's size rule), and prints the
exact exploitability of the average at each of ``--checkpoints`` iterations:

- ``linear``: today's ES (regrets and average weighted k);
- ``linear-avg2``: regrets weighted k, the average k² (DCFR's gamma = 2 on Linear CFR's regrets);
- ``dcfr``: DCFR(1.5, 0, 2) as PCS uses it, one rescale per batch;
- ``dcfr-beta1``: DCFR(1.5, 1, 2) (negative regrets kept linearly, not halved every batch).

    PYTHONPATH=. python benchmarks/bench_es_weighting.py --checkpoints 5e6,10e6,20e6,40e6
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from benchmarks.bench_warm_start import abstract_game, mbb
from training.abstraction import pcs
from training.abstraction.batches import ESSolver
from training.abstraction.solver import run_iterations


def _linear(average_power: int) -> Callable[[int], tuple[pcs.BatchWeights, float]]:
    """Regrets weighted k; the average weighted k**average_power (increments 2/(k+1) in both)."""

    def weights(k: int) -> tuple[pcs.BatchWeights, float]:
        linear = (k - 1) / (k + 1)
        average = linear if average_power == 1 else (k - 1) ** 2 / (k * (k + 1))
        return pcs.BatchWeights(linear, linear, average, 0.0, 0.0, False), 2 / (k + 1)

    return weights


def _dcfr(beta1: bool) -> Callable[[int], tuple[pcs.BatchWeights, float]]:
    """PCS's DCFR(1.5, 0, 2) weights; with ``beta1`` negative regrets kept as DCFR's beta = 1
    keeps them ((k-1)/k before batch k) instead of halved."""

    def weights(k: int) -> tuple[pcs.BatchWeights, float]:
        dcfr = pcs.batch_weights("dcfr", k)
        return (replace(dcfr, negative=(k - 1) / k) if beta1 else dcfr), 1.0

    return weights


SCHEMES = {"linear": _linear(1), "linear-avg2": _linear(2), "dcfr": _dcfr(False), "dcfr-beta1": _dcfr(True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstraction", default="fhp_abstraction_3.6e6")
    parser.add_argument("--checkpoints", default="5e6,10e6,20e6,40e6", help="iterations at which to measure")
    parser.add_argument("--schemes", default=",".join(SCHEMES), help=f"comma-separated: {', '.join(SCHEMES)}")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ag = abstract_game(args.abstraction)
    checkpoints = [int(float(c)) for c in args.checkpoints.split(",")]
    batch = ESSolver(ag, args.seed, 1).default_batch()
    print(f"| {args.abstraction}, batches of {batch:,} | " + " | ".join(f"{c:,} it." for c in checkpoints)
          + " | CPU-s (solve) |\n|---|" + "---|" * (len(checkpoints) + 1), flush=True)  # fmt: skip
    for name in args.schemes.split(","):
        regrets, average = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
        done, k, seconds, cells = 0, 1, 0.0, []
        for checkpoint in checkpoints:
            while done < checkpoint:
                count = min(batch, checkpoint - done)
                started = time.process_time()
                table_weights, increment = SCHEMES[name](k)
                pcs.discount(regrets, average, table_weights)
                run_iterations(ag, regrets, average, args.seed, done + 1, count, increment, 1)
                seconds += time.process_time() - started
                done, k = done + count, k + 1
            cells.append(f"{mbb(ag, average):.2f}")
        print(f"| {name} | " + " | ".join(cells) + f" | {seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
