"""Card-abstraction figures: indexer speed, feature/bucket build times, MCCFR speed, table sizes.

    python benchmarks/bench_abstraction.py                 # quick figures (about 2 minutes)
    python benchmarks/bench_abstraction.py --hulh-build    # also time the full abstraction_3e6 build

The MCCFR figures need the abstractions built (``pokerbot train --algo abstraction --game
holdem --size 3e6 ...`` builds them first; missing ones are skipped with a message). Builds use
the normal cache (``$POKERBOT_CACHE``). Every figure is printed with the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from protocol.gamedef import load_game
from training.abstraction.build import Abstraction, build_abstraction, round_features
from training.abstraction.estimate import estimate
from training.abstraction.isomorphism import HandIndexer, all_combinations
from training.abstraction.solver import AbstractGame, run_batch
from training.abstraction.spec import SPECS, spec_dir


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()} {model}, {os.cpu_count()} logical cores, Python {platform.python_version()}"


def bench_indexer() -> None:
    indexer = HandIndexer((2, 5))
    rng = np.random.default_rng(0)
    cards = np.array([rng.choice(52, 7, replace=False) for _ in range(200_000)])
    indexer.index_batch(cards)  # compile
    t = time.perf_counter()
    indexer.index_batch(cards)
    rate = len(cards) / (time.perf_counter() - t)
    print(f"river (2,5) indexer: {rate / 1e6:.2f} M hands/s (all cores)")


def verify_turn_indexer() -> None:
    """Index all 305,377,800 raw (hole, turn board) deals: every class is hit, none beyond."""
    indexer = HandIndexer((2, 4))
    seen = np.zeros(indexer.size, dtype=bool)
    cards = np.arange(52)
    t = time.perf_counter()
    raw = 0
    for hole in all_combinations(cards, 2):
        rest = np.setdiff1d(cards, hole)
        boards = all_combinations(rest, 4)
        rows = np.concatenate([np.broadcast_to(hole, (len(boards), 2)), boards], axis=1)
        seen[indexer.index_batch(rows)] = True
        raw += len(rows)
    print(f"turn indexer: {raw:,} raw deals -> {int(seen.sum()):,} of {indexer.size:,} classes hit "
          f"({'dense' if seen.all() else 'NOT DENSE'}), {time.perf_counter() - t:.0f} s")  # fmt: skip


def bench_features() -> None:
    t = time.perf_counter()
    build_abstraction(SPECS["fhp_abstraction_4e4"], force=True)
    print(f"fhp_abstraction_4e4 build (flop E[HS^2] for 1,286,792 classes + 690 buckets): {time.perf_counter() - t:.1f} s")


def bench_mccfr(name: str, iterations: int) -> None:
    spec = SPECS[name]
    if not (spec_dir(spec) / "meta.json").exists():
        print(f"{name}: not built, MCCFR figures skipped")
        return
    ag = AbstractGame.build(Abstraction.load(spec))
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    run_batch(ag, regrets, average, 0, 1, 1000, 1, 1)  # compile
    run_batch(ag, regrets, average, 0, 1, 1000, 1, 2)
    for threads in (1, os.cpu_count() or 1):
        t = time.perf_counter()
        touched = run_batch(ag, regrets, average, 0, 10_000, iterations, 2, threads)
        seconds = time.perf_counter() - t
        print(f"{name} ES Linear MCCFR, {threads} thread(s): {iterations / seconds:,.0f} iterations/s, "
              f"{touched / seconds / 1e6:.2f} M nodes/s ({touched / iterations:.0f} nodes per iteration)")  # fmt: skip


def table_sizes() -> None:
    print(f"{'abstraction':<24}{'buckets':<28}{'infosets':>14}{'tables (RAM)':>14}  estimate")
    for spec in SPECS.values():
        e = estimate(spec)
        print(f"{spec.name:<24}{str(spec.buckets):<28}{e.infosets:>14,}{e.table_bytes / 1e6:>11.1f} MB  {e.summary()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hulh-build", action="store_true", help="time the full abstraction_3e6 build")
    parser.add_argument("--verify-turn", action="store_true", help="index every raw turn deal (minutes)")
    parser.add_argument("--iterations", type=int, default=100_000, help="MCCFR iterations per timing")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    bench_indexer()
    if args.verify_turn:
        verify_turn_indexer()
    if args.hulh_build:
        holdem = load_game("holdem")
        for r in (1, 2, 3):
            t = time.perf_counter()
            round_features(holdem, r)
            print(f"HULH round {r} features: {time.perf_counter() - t:.0f} s (0 s when already cached)")
        t = time.perf_counter()
        build_abstraction(SPECS["abstraction_3e6"])
        print(f"abstraction_3e6 buckets: {time.perf_counter() - t:.0f} s")
    else:
        bench_features()
    bench_mccfr("fhp_abstraction_4e4", args.iterations)
    bench_mccfr("abstraction_3e6", args.iterations)
    table_sizes()


if __name__ == "__main__":
    main()
