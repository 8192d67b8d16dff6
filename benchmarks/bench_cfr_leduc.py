"""Benchmark of tabular CFR on Leduc: time and iterations to 1, 0.1 and 0.01 mbb/g; MCCFR speed.

Run from the repository root::

    python benchmarks/bench_cfr_leduc.py                  # CFR+ curve, ES-MCCFR rate
    python benchmarks/bench_cfr_leduc.py --variants       # + cfr, linear-cfr, dcfr
    python benchmarks/bench_cfr_leduc.py --fhp            # only: exact BR of uniform FHP (minutes)

Exploitability is exact (``bot.evaluation.best_response``), measured after *every* iteration so the
crossing points are exact; "solver s" excludes those measurements (as a solver run without
them would take), "wall s" includes them. CPU seconds of this process are printed too, because
the machine is shared and wall time includes other people's load (the load average is shown).
Reference on a 2-core machine (OpenSpiel, Lanctot et al. 2019, measured with its C++ solvers): OpenSpiel 2.0.2 C++ CFR+ reaches 1 mbb/g
after 323 iterations (8.2 s) and 0.1 mbb/g after 1,115 (25.9 s); its external-sampling MCCFR
runs 16.6k iterations/s.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runnable as a plain script without `pip install -e .`

from bench_evaluator import cpu_model  # noqa: E402  (same folder: the CPU model line)

from bot.agents.infosets import space_for  # noqa: E402
from bot.evaluation.best_response import (  # noqa: E402
    exploitability,
    exploitability_of_blocks,
    public_tree_for,
    uniform_blocks,
)
from protocol.gamedef import load_game  # noqa: E402
from training.tabular.cfr import CFRConfig, TabularCFR  # noqa: E402
from training.tabular.mccfr import ExternalSamplingMCCFR, MCCFRConfig  # noqa: E402

TARGETS = (1.0, 0.1, 0.01)
CURVE_AT = (10, 30, 100, 300, 323, 500, 1000, 1115, 2000, 3000, 4000, 5000)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{cpu_model()}; {os.cpu_count()} logical cores; load average {load}; "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def to_targets(game, algo: str, max_iterations: int, curve: bool) -> dict[float, tuple[int, float, float]]:
    """Iterations, solver seconds and CPU seconds at which ``algo`` first reaches each target."""
    solver = TabularCFR(game, CFRConfig(algo))
    reached: dict[float, tuple[int, float, float]] = {}
    solver_seconds = cpu_seconds = 0.0
    wall_start = time.perf_counter()
    while solver.iteration < max_iterations and len(reached) < len(TARGETS):
        start, cpu = time.perf_counter(), time.process_time()
        solver.iterate()
        solver_seconds += time.perf_counter() - start
        cpu_seconds += time.process_time() - cpu
        report = exploitability(game, solver.average_strategy())
        mbb = report.mbb(report.exploitability)
        if curve and solver.iteration in CURVE_AT:
            print(f"  iteration {solver.iteration:>6}  {mbb:12.5f} mbb/g  solver {solver_seconds:7.2f} s"
                  f"  value {report.game_value:+.6f}")
        for target in TARGETS:
            if target not in reached and mbb < target:
                reached[target] = (solver.iteration, solver_seconds, cpu_seconds)
    for target in TARGETS:
        if target in reached:
            i, s, c = reached[target]
            print(f"  {algo}: < {target} mbb/g after {i} iterations: solver {s:.2f} s (CPU {c:.2f} s)")
        else:
            print(f"  {algo}: not below {target} mbb/g within {max_iterations} iterations")
    print(f"  (wall time including an exact exploitability after every iteration: "
          f"{time.perf_counter() - wall_start:.2f} s)")
    return reached


def mccfr_rate(game, seconds: float) -> None:
    solver = ExternalSamplingMCCFR(game, MCCFRConfig(seed=0))
    solver.run(1000)  # compile (or load the numba cache)
    done, start = 0, time.perf_counter()
    chunk = 100_000
    while time.perf_counter() - start < seconds:
        solver.run(chunk)
        done += chunk
    elapsed = time.perf_counter() - start
    report = exploitability(game, solver.average_strategy())
    print(f"  es-mccfr (linear): {done / elapsed:,.0f} iterations/s ({done:,} in {elapsed:.1f} s); "
          f"exploitability after them {report.mbb(report.exploitability):.3f} mbb/g")


def best_response_time(game) -> None:
    strategy = space_for(game).uniform_strategy()
    exploitability(game, strategy)
    runs, start = 50, time.perf_counter()
    for _ in range(runs):
        exploitability(game, strategy)
    print(f"  exact exploitability (both best responses + profile value): "
          f"{1000 * (time.perf_counter() - start) / runs:.2f} ms")


def fhp_uniform() -> None:
    """Exact exploitability of uniform random FHP, the strategy computed per block on request
    (FHP's dense table would be 1.64e9 slots); prints time and peak memory."""
    game = load_game("fhp")
    start = time.perf_counter()
    blocks = uniform_blocks(space_for(game))
    public_tree_for(game)
    setup = time.perf_counter() - start
    report = exploitability_of_blocks(game, blocks)
    total = time.perf_counter() - start
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"  FHP uniform random: {report.mbb(report.exploitability):.1f} mbb/g (NashConv/2), "
          f"NashConv {report.nash_conv:.4f} chips; setup {setup:.1f} s, total {total:.1f} s wall "
          f"(3 passes: 2 best responses + profile value); peak RSS {peak_gb:.2f} GB")
    print(f"  {report}".replace("\n", "\n  "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", action="store_true", help="also cfr, linear-cfr and dcfr")
    parser.add_argument("--max-iterations", type=int, default=10000)
    parser.add_argument("--mccfr-seconds", type=float, default=10.0)
    parser.add_argument("--fhp", action="store_true", help="only: exact exploitability of uniform FHP (minutes)")
    args = parser.parse_args()
    if args.fhp:
        print(f"machine: {machine()}")
        fhp_uniform()
        print(f"machine after: {machine()}")
        return
    game = load_game("leduc")
    print(f"machine: {machine()}")
    best_response_time(game)
    print("CFR+ on Leduc (alternating updates, linear averaging), exploitability = NashConv/2:")
    to_targets(game, "cfr+", args.max_iterations, curve=True)
    if args.variants:
        for algo in ("cfr", "linear-cfr", "dcfr"):
            to_targets(game, algo, args.max_iterations, curve=False)
    mccfr_rate(game, args.mccfr_seconds)
    print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
