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

    PYTHONPATH=. nice python benchmarks/bench_pcs_holdem.py --iterations 40 --synthetic
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


def synthetic(buckets: int) -> AbstractGame:
    """A hold'em abstraction with ``buckets`` random buckets in every postflop round."""
    spec = AbstractionSpec(f"random_{buckets}", "holdem", (None, buckets, buckets, buckets))
    game = spec.load_game()
    indexers = tuple(round_indexer(game, r) for r in range(4))
    rng = np.random.default_rng(0)
    tables = (None, *(rng.integers(0, buckets, ix.size, dtype=np.uint16) for ix in indexers[1:]))
    return AbstractGame.build(Abstraction(spec, game, indexers, tables, (indexers[0].size, buckets, buckets, buckets)))


def measure(ag: AbstractGame, iterations: int, threads: int) -> float:
    """(node, hand) updates per CPU second of ``iterations`` PCS iterations (after a warm-up):
    on a shared machine the CPU seconds, not the wall clock, say what the kernel costs."""
    pg = PCSGame.build(ag)
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    weights = batch_weights("dcfr", 1)
    run_iterations(pg, regrets, average, 0, 1, threads, weights, threads)
    wall, cpu = time.monotonic(), time.process_time()
    pairs = run_iterations(pg, regrets, average, 0, 1000, iterations, weights, threads)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    print(f"{ag.abstraction.spec.name:<18} {ag.num_rows:>12,} rows  {iterations / wall:6.2f} it/s  {pairs / wall:9.3g} "
          f"updates/s wall  {pairs / cpu:9.3g} updates per CPU s  {cpu * 1000 / (2 * iterations):6.1f} CPU ms per pass  "
          f"({threads} threads, {wall:.1f} s wall, {cpu:.1f} s CPU)", flush=True)  # fmt: skip
    return pairs / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--synthetic", action="store_true", help="also 3e7- and 3e8-sized random abstractions")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    rates = {"abstraction_3e6": measure(AbstractGame.build(Abstraction.load(SPECS["abstraction_3e6"])), args.iterations, args.threads)}
    if args.synthetic:
        for name, buckets in (("abstraction_3e7", 5180), ("abstraction_3e8", 51800)):
            rates[name] = measure(synthetic(buckets), args.iterations, args.threads)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    for name in ("abstraction_3e6", "abstraction_3e7", "abstraction_3e8"):
        rate = args.threads * rates.get(name, rates["abstraction_3e6"])
        cost = estimate(SPECS[name], built=True)
        pairs = cost.iterations * 2 * 6378 * 1081
        print(f"{name}: default PCS solve {cost.iterations:,} iterations = {pairs:.3g} updates -> {duration(pairs / rate)} "
              f"on {args.threads} free cores ({rate:.3g} updates/s, {'measured' if name in rates else 'the 3e6 rate'}); "
              f"cost.py quotes {duration(cost.solve_seconds)}")


if __name__ == "__main__":
    main()
