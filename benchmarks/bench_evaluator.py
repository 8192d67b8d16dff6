"""Benchmark of protocol.evaluator: table build/load time, memory, batched speed vs treys.

Run from the repository root::

    python benchmarks/bench_evaluator.py                 # 10M random 7-card hands
    python benchmarks/bench_evaluator.py --exhaustive    # + all 2,598,960 5-card hands vs treys

Every figure is measured in this run on these inputs: the treys rate is taken on a prefix of
the very hands the batched evaluator timed, and the results are compared as well as timed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runnable as a plain script without `pip install -e .`

from protocol import evaluator  # noqa: E402
from protocol.cards import RANKS, SUITS  # noqa: E402
from protocol.files import cache_dir  # noqa: E402


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else whatever platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def random_hands(n: int, k: int, seed: int) -> np.ndarray:
    """``n`` uniformly random rows of ``k`` distinct cards as int8 (rejection sampling)."""
    rng = np.random.default_rng(seed)
    parts, have = [], 0
    while have < n:
        draw = rng.integers(0, 52, size=(min(n, 2_000_000), k), dtype=np.int8)
        draw = draw[(np.diff(np.sort(draw, axis=1), axis=1) != 0).all(axis=1)]
        parts.append(draw)
        have += len(draw)
    return np.concatenate(parts)[:n]


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Fastest of ``repeat`` timed calls (the least disturbed by other load on the machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def treys_strengths(cards: np.ndarray) -> tuple[np.ndarray, float]:
    """``7463 - treys rank`` of each row with the real ``Evaluator.evaluate``, and its seconds."""
    from treys import Card, Evaluator

    ev = Evaluator()
    lookup = [Card.new(RANKS[c // 4] + SUITS[c % 4]) for c in range(52)]
    rows = [[lookup[c] for c in row] for row in cards.tolist()]
    start = time.perf_counter()
    ranks = [ev.evaluate(r[:2], r[2:]) for r in rows]
    seconds = time.perf_counter() - start
    return 7463 - np.array(ranks, dtype=np.int32), seconds


def report_machine() -> None:
    print(f"machine     : {cpu_model()}, {os.cpu_count()} logical cores, {platform.platform()}")
    print(f"software    : Python {platform.python_version()}, numpy {np.__version__}, "
          f"numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} numba threads")  # fmt: skip


def report_tables() -> None:
    evaluator.build_tables(force=True)
    build = evaluator.last_build_seconds
    loads = []
    for _ in range(5):
        evaluator._tables = None
        evaluator.build_tables()
        loads.append(evaluator.last_load_seconds)
    print(f"tables      : build {build:.3f} s (from scratch, incl. writing), load "
          f"{min(loads) * 1e3:.2f} ms (from {cache_dir()}), "
          f"{evaluator.table_bytes():,} bytes in memory")  # fmt: skip


def report_speed(hands: int, treys_hands: int, repeat: int) -> None:
    cards = random_hands(hands, 7, seed=2024)
    start = time.perf_counter()
    evaluator.hand_strength_batch(cards[:10])
    evaluator.hand_strength_batch(cards[: 2 * evaluator._PARALLEL_MIN_ROWS])
    print(f"first calls : {time.perf_counter() - start:.2f} s (numba compile or cache load)")
    all_threads = numba.get_num_threads()
    rates = {}
    for threads in (1, all_threads):
        numba.set_num_threads(threads)
        seconds = best_seconds(lambda: evaluator.hand_strength_batch(cards), repeat)
        rates[threads] = hands / seconds
        print(f"batched 7c  : {threads} thread(s): {rates[threads] / 1e6:7.1f} M hands/s "
              f"({hands:,} int8 hands, best of {repeat})")  # fmt: skip
    numba.set_num_threads(all_threads)
    wide = cards.astype(np.int64)
    numba.set_num_threads(1)
    seconds = best_seconds(lambda: evaluator.hand_strength_batch(wide), repeat)
    numba.set_num_threads(all_threads)
    print(f"batched 7c  : 1 thread(s): {hands / seconds / 1e6:7.1f} M hands/s (same hands, int64)")

    subset = cards[:treys_hands]
    ours = evaluator.hand_strength_batch(subset)
    reference, treys_seconds = treys_strengths(subset)
    treys_rate = treys_hands / treys_seconds
    agree = "all equal" if np.array_equal(ours, reference) else "MISMATCH"
    print(f"treys 7c    : {treys_rate / 1e3:7.1f} k hands/s on the first {treys_hands:,} "
          f"of those hands ({agree})")  # fmt: skip
    print(f"speedup     : {rates[1] / treys_rate:,.0f}x on one thread, "
          f"{rates[all_threads] / treys_rate:,.0f}x on {all_threads} threads")  # fmt: skip


def report_other_sizes(hands: int, repeat: int) -> None:
    """One-thread rates for the other card counts the games use (Leduc 1-2, FHP 5, turn 6)."""
    numba.set_num_threads(1)
    parts = []
    for k in (1, 2, 5, 6):
        cards = random_hands(hands, k, seed=k)
        evaluator.hand_strength_batch(cards)
        seconds = best_seconds(lambda c=cards: evaluator.hand_strength_batch(c), repeat)
        parts.append(f"{k}c {hands / seconds / 1e6:.0f}")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    print(f"other sizes : 1 thread, M hands/s: {', '.join(parts)}")


def report_exhaustive() -> None:
    """All 2,598,960 five-card hands against the real treys, in chunks to bound memory."""
    flat = itertools.chain.from_iterable(itertools.combinations(range(52), 5))
    cards = np.fromiter(flat, dtype=np.int8, count=2_598_960 * 5).reshape(-1, 5)
    ours = evaluator.hand_strength_batch(cards)
    mismatches, treys_seconds = 0, 0.0
    for lo in range(0, len(cards), 250_000):
        reference, seconds = treys_strengths(cards[lo : lo + 250_000])
        mismatches += int((ours[lo : lo + 250_000] != reference).sum())
        treys_seconds += seconds
    verdict = "all equal" if mismatches == 0 else f"{mismatches:,} MISMATCHES"
    print(f"exhaustive  : {len(cards):,} five-card hands vs treys: {verdict} "
          f"({len(np.unique(ours))} distinct strengths; treys took {treys_seconds:.1f} s)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=10_000_000, help="7-card hands to time")
    parser.add_argument("--treys-hands", type=int, default=200_000,
                        help="prefix of those hands that treys evaluates (~70k/s)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (best kept)")
    parser.add_argument("--exhaustive", action="store_true",
                        help="check all 2,598,960 five-card hands against treys (~10 s)")  # fmt: skip
    args = parser.parse_args(argv)
    report_machine()
    report_tables()
    report_speed(args.hands, min(args.treys_hands, args.hands), args.repeat)
    report_other_sizes(min(args.hands, 2_000_000), args.repeat)
    if args.exhaustive:
        report_exhaustive()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
