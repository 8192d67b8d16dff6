"""PCS speed on heads-up limit hold'em abstractions, and the projected solve times.

Runs ``--iterations`` PCS iterations (one sampled board, both players' passes) of
``abstraction_3e6`` (built by ``pokerbot train --algo abstraction --game holdem --size 3e6``)
on ``--threads`` threads after a warm-up, and prints iterations/s, (decision node, live hand)
updates/s and CPU milliseconds per pass per thread. ``--synthetic`` adds abstractions with the
bucket counts of abstraction_3e7/3e8 but random bucket tables (only the table size matters for
speed: bigger tables mean more cache misses per update), so their rate is measured without
building them. Then the projection: the default PCS iterations of each named size
(:func:`bot.abstraction.cost.estimate`) at the measured rate. ``bot/abstraction/cost.py``'s
``PCS_PAIRS_PER_SECOND["holdem"]`` quotes this script's figure.

``--abstractions`` measures built abstractions instead (e.g. abstraction_3e7 abstraction_3e8)
and ``--layouts canonical,traversal`` each in both row layouts
(:mod:`training.abstraction.row_layout`), alternating ``--repeats`` times from zero tables.

    PYTHONPATH=. nice python benchmarks/bench_pcs_holdem.py --iterations 40 --synthetic
    PYTHONPATH=. python benchmarks/bench_pcs_holdem.py --abstractions abstraction_3e8 --threads 1 \
        --iterations 20 --layouts canonical,traversal --repeats 2
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bot.abstraction.cost import duration, estimate
from bot.abstraction.spec import SPECS, AbstractionSpec
from bot.abstraction.tables import AbstractGame, Abstraction
from protocol.isomorphism import round_indexer
from training.abstraction.pcs import PCSGame, batch_weights, run_iterations
from training.abstraction.row_layout import RowLayout


def synthetic(buckets: int) -> AbstractGame:
    """A hold'em abstraction with ``buckets`` random buckets in every postflop round."""
    spec = AbstractionSpec(f"random_{buckets}", "holdem", (None, buckets, buckets, buckets))
    game = spec.load_game()
    indexers = tuple(round_indexer(game, r) for r in range(4))
    rng = np.random.default_rng(0)
    tables = (None, *(rng.integers(0, buckets, ix.size, dtype=np.uint16) for ix in indexers[1:]))
    return AbstractGame.build(Abstraction(spec, game, indexers, tables, (indexers[0].size, buckets, buckets, buckets)))


def measure(ag: AbstractGame, iterations: int, threads: int, layout: str = "canonical") -> float:
    """(node, hand) updates per CPU second of ``iterations`` PCS iterations (after a warm-up) on
    zero tables in ``layout``: on a shared machine the CPU seconds, not the wall clock, say what
    the kernel costs."""
    pg = PCSGame.build(ag, RowLayout.traversal_of(ag) if layout == "traversal" else None)
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    regrets.fill(0.0)  # every page resident, as in a running solve (a fresh page's first write faults)
    average.fill(0.0)
    weights = batch_weights("dcfr", 1)
    run_iterations(pg, regrets, average, 0, 1, threads, weights, threads)
    wall, cpu = time.monotonic(), time.process_time()
    pairs = run_iterations(pg, regrets, average, 0, 1000, iterations, weights, threads)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    print(f"{ag.abstraction.spec.name:<18} {layout:<9} {ag.num_rows:>12,} rows  {iterations / wall:6.2f} it/s  {pairs / wall:9.3g} "
          f"updates/s wall  {pairs / cpu:9.3g} updates per CPU s  {cpu * 1000 / (2 * iterations):6.1f} CPU ms per pass  "
          f"({threads} threads, {wall:.1f} s wall, {cpu:.1f} s CPU)", flush=True)  # fmt: skip
    return pairs / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--synthetic", action="store_true", help="also 3e7- and 3e8-sized random abstractions")
    parser.add_argument("--abstractions", nargs="+", default=["abstraction_3e6"], help="built abstractions to measure")
    parser.add_argument("--layouts", default="canonical", help="row layouts, comma-separated: canonical, traversal")
    parser.add_argument("--repeats", type=int, default=1, help="rounds over the layouts (alternating)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    rates = {}
    for name in args.abstractions:
        ag = AbstractGame.build(Abstraction.load(SPECS[name]))
        for _ in range(args.repeats):
            for layout in args.layouts.split(","):
                rates[name] = measure(ag, args.iterations, args.threads, layout)
    if args.synthetic:
        for name, buckets in (("abstraction_3e7", 5180), ("abstraction_3e8", 51800)):
            rates[name] = measure(synthetic(buckets), args.iterations, args.threads)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    for name, per_cpu_second in rates.items():  # the last layout measured
        rate = args.threads * per_cpu_second
        cost = estimate(SPECS[name], built=True, solver="pcs")
        pairs = cost.iterations * 2 * 6378 * 1081
        print(f"{name}: default PCS solve {cost.iterations:,} iterations = {pairs:.3g} updates -> {duration(pairs / rate)} "
              f"on {args.threads} free cores ({rate:.3g} updates/s); cost.py quotes {duration(cost.solve_seconds)}")


if __name__ == "__main__":
    main()
