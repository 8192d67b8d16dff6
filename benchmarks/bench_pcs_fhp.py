"""PCS vs ES MCCFR on FHP card abstractions: exact exploitability against solve time and work.

For each abstraction (default fhp_abstraction_4e4 and fhp_abstraction_3.6e6, plus whatever
``--abstractions`` names: fhp_lossless as the no-abstraction reference, or the Leduc ones to
see the tiny-game end, measured by the dense best response) and each solver
(PCS with each weighting scheme, ES Linear MCCFR), solve on ``--threads`` threads and measure
the average strategy's exact exploitability in the full game (the per-flop best response over
the canonical flops, :func:`bot.flop.best_response.flop_exploitability`, off the clock) at
doubling solve CPU-seconds up to ``--budget`` (process CPU time: on a shared machine the wall
clock measures the other jobs; with two threads under load, the numba pool's waits count as
CPU too, so ``--threads 1`` gives the cleanest per-CPU-second comparison). Work is counted as
(decision node, hand) updates: PCS's live-hand pairs per pass, ES's nodes touched (one hand per
node visit). Prints a table and the CPU time each PCS scheme needs to reach ES's best figure;
writes the raw points (``--out``, JSON lines) and the plot (``docs/img/pcs_fhp.png``).
``--iid-boards`` adds PCS with independently drawn flops (no stratification).

    PYTHONPATH=. nice python benchmarks/bench_pcs_fhp.py --threads 1 --budget 80 --first-check 10
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bot.abstraction.policy import full_game_strategy
from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.agents.infosets import is_small
from bot.evaluation.best_response import exploitability
from bot.flop.best_response import flop_exploitability, flop_game_for
from bot.flop.policies import abstract_game_policy
from training.abstraction.batches import BatchSolver, ESSolver, PCSSolver
from training.abstraction.build import build_abstraction


def exploitability_mbb(ag: AbstractGame, average: np.ndarray) -> float:
    """Exact, in the full game: the dense best response on small games (Leduc), the per-flop
    passes on FHP."""
    game = ag.abstraction.game
    if is_small(game):
        report = exploitability(game, full_game_strategy(ag, average))
    else:
        fg = flop_game_for(game, True)
        report = flop_exploitability(fg, abstract_game_policy(fg, ag, average))
    return report.mbb(report.exploitability)


def run(ag: AbstractGame, solver: BatchSolver, budget: float, first_check: float, batch: int = 0) -> list[dict]:
    """Solve until ``budget`` solve CPU-seconds (process-wide, both threads: on a shared machine
    the wall clock says more about the other jobs than about the solver), measuring at
    first_check, 2x, 4x, ... and the end."""
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    solver.run_batch(regrets, average, 1, 4, 1, lambda _done: True)  # compile (or load) the kernels off the clock
    regrets[:] = 0.0
    average[:] = 0.0
    batch = batch or solver.default_batch()
    points, iterations, batches, work, wall, cpu = [], 0, 0, 0, 0.0, 0.0
    check = first_check
    while True:
        wall0, cpu0 = time.monotonic(), time.process_time()
        deadline = cpu0 + (min(check, budget) - cpu)

        def keep_going(_done: int, deadline: float = deadline) -> bool:
            return time.process_time() < deadline

        touched, done = solver.run_batch(regrets, average, iterations + 1, batch, batches + 1, keep_going)
        iterations, batches, work = iterations + done, batches + 1, work + touched
        wall += time.monotonic() - wall0
        cpu += time.process_time() - cpu0
        if cpu >= min(check, budget):
            mbb = exploitability_mbb(ag, average)
            points.append({"seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "iterations": iterations,
                           "updates": work, "exploitability_mbb": round(mbb, 3), "load": os.getloadavg()[0]})  # fmt: skip
            print(f"  {solver.label:<18} {wall:8.1f} s  cpu {cpu:8.1f} s  {iterations:>11,} it  {work:10.3g} updates"
                  f"  {mbb:9.2f} mbb/g  (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
            if cpu >= budget:
                return points
            check *= 2


def first_time_below(points: list[dict], target: float) -> float | None:
    """CPU seconds of the first measurement at or below ``target`` mbb/g."""
    return next((p["cpu_seconds"] for p in points if p["exploitability_mbb"] <= target), None)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(18, 5))
    for (name, label), points in results.items():
        style = "--" if label.startswith("ES") else "-"
        for ax, key in zip(axes, ("seconds", "cpu_seconds", "updates"), strict=True):
            ax.plot([p[key] for p in points], [p["exploitability_mbb"] for p in points], style, marker="o", ms=3,
                    label=f"{name} {label}")  # fmt: skip
    labels = ("solve wall seconds (shared machine)", "solve CPU seconds (all threads)",
              "(decision node, hand) updates")
    for ax, xlabel in zip(axes, labels, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("exploitability (mbb/g, exact)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("FHP card abstractions: PCS vs ES MCCFR")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abstractions", nargs="+", default=["fhp_abstraction_4e4", "fhp_abstraction_3.6e6"])
    parser.add_argument("--schemes", nargs="+", default=["dcfr"], help="PCS weightings (dcfr, linear, cfr+)")
    parser.add_argument("--no-es", action="store_true", help="PCS only")
    parser.add_argument("--budget", type=float, default=340.0, help="solve CPU seconds per solver")
    parser.add_argument("--first-check", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=0, help="PCS iterations per batch (0: the solver's default)")
    parser.add_argument("--iid-boards", action="store_true", help="PCS also with independent flops (no stratification)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_pcs_fhp.jsonl"))
    parser.add_argument("--plot", type=Path, default=Path("docs/img/pcs_fhp.png"))
    parser.add_argument("--replot", type=Path, nargs="+", help="only plot the points of earlier --out files")
    args = parser.parse_args()
    results: dict = {}
    if args.replot:
        for path in args.replot:
            for line in path.read_text().splitlines():
                row = json.loads(line)
                results[(row["abstraction"], row["solver"])] = row["points"]
        plot(results, args.plot)
        print(f"plot: {args.plot}")
        return
    for name in args.abstractions:
        build_abstraction(SPECS[name])
        ag = AbstractGame.build(Abstraction.load(SPECS[name]))
        solvers: list[BatchSolver] = [PCSSolver(ag, args.seed, args.threads, s) for s in args.schemes]
        if args.iid_boards:
            for scheme in args.schemes:
                iid = PCSSolver(ag, args.seed, args.threads, scheme)
                iid.pg, iid.label = replace(iid.pg, strata=np.zeros((0, 0), np.int8)), f"PCS {scheme} iid boards"
                solvers.append(iid)
        if not args.no_es:
            solvers.append(ESSolver(ag, args.seed, args.threads))
        print(f"{name}: {ag.num_rows:,} rows", flush=True)
        for solver in solvers:
            points = run(ag, solver, args.budget, args.first_check, args.batch if isinstance(solver, PCSSolver) else 0)
            results[(name, solver.label)] = points
            with args.out.open("a") as handle:
                handle.write(json.dumps({"abstraction": name, "solver": solver.label, "threads": args.threads,
                                         "points": points}) + "\n")  # fmt: skip
        es = results.get((name, "ES Linear MCCFR"))
        for (n, label), pts in results.items():
            if n == name:
                best = min(pts, key=lambda p: p["exploitability_mbb"])
                print(f"{name} {label}: best {best['exploitability_mbb']:.2f} mbb/g at {best['cpu_seconds']:.1f} CPU s "
                      f"({best['iterations']:,} it); {pts[-1]['updates'] / pts[-1]['cpu_seconds']:.3g} updates per CPU s")
        if es:
            best = min(p["exploitability_mbb"] for p in es)
            t_es = first_time_below(es, best)
            for scheme in args.schemes:
                t = first_time_below(results[(name, f"PCS {scheme}")], best)
                speed = "not reached" if t is None else f"{t:.1f} CPU s ({t_es / t:.1f}x sooner)"
                print(f"{name}: ES best {best:.2f} mbb/g at {t_es:.1f} CPU s; PCS {scheme} reaches it at {speed}")
    plot(results, args.plot)
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
