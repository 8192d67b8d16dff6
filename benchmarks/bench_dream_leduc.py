"""DREAM against OS-SD-CFR, ES SD-CFR and NFSP on Leduc: exact exploitability against nodes
touched and wall clock (the DREAM paper's fig. 4, top, with exact exploitability).

    nice -n 10 python benchmarks/bench_dream_leduc.py --minutes 5          # train all four, plot
    python benchmarks/bench_dream_leduc.py --minutes 5 --plot-only         # re-read the runs

Each algorithm trains with its Leduc preset through the CLI (``pokerbot train --algo X --game
leduc --time-budget M``), one after another, into ``--out/ALGO``. Nodes touched = decision nodes
whose strategy a traversal or self-play step evaluated (both players): for SD-CFR the infosets its
external-sampling traversals evaluated, for DREAM/OS-SD-CFR the nodes of the outcome-sampling
trajectories, for NFSP its transitions (one per decision). Prints the machine, per algorithm the
final point, and each one's exploitability at equal nodes touched and at equal wall clock.
Writes docs/img/leduc_dream_comparison.png.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from bot.run_files import ELAPSED_METRIC, canonical_metrics  # noqa: E402
from training.contract import plots  # noqa: E402
from training.contract.entry import parse_duration  # noqa: E402
from training.contract.rundir import RunDir  # noqa: E402

ALGOS = ("dream", "os-sd-cfr", "sd-cfr", "nfsp")
LABELS = {"dream": "DREAM", "os-sd-cfr": "OS-SD-CFR", "sd-cfr": "SD-CFR (external sampling)", "nfsp": "NFSP"}


def curve(algo: str, run: Path) -> tuple[list[float], list[float], list[float]]:
    """(cumulative nodes touched, wall seconds, exact exploitability mbb/g) per evaluation."""
    nodes, seconds, mbb = [], [], []
    total = 0.0
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = canonical_metrics(json.loads(line))
        if algo == "nfsp":
            if "exploitability_mbb" in record:
                nodes.append(record["transitions"])
                seconds.append(record[ELAPSED_METRIC])
                mbb.append(record["exploitability_mbb"])
            continue
        if "sdcfr_exploitability_mbb" not in record:
            continue
        if algo == "sd-cfr":  # the trainer logs the rate; rate x time recovers the count
            total += record["infosets_per_s"] * record["traversal_s"]
        else:
            total = record["nodes_touched"]
        nodes.append(total)
        seconds.append(record[ELAPSED_METRIC])
        mbb.append(record["sdcfr_exploitability_mbb"])
    return nodes, seconds, mbb


def budget_minutes(run: Path) -> float:
    """The run's ``time_budget`` in minutes (its config.toml)."""
    return parse_duration(RunDir(run).config()["time_budget"]) / 60


def value_at(xs: list[float], ys: list[float], x: float) -> float | None:
    """The last evaluation at or before ``x`` (None before the first)."""
    best = None
    for xi, yi in zip(xs, ys, strict=True):
        if xi <= x:
            best = yi
    return best


def train(algo: str, minutes: float, seed: int, run: Path) -> None:
    """One ``pokerbot train`` run of ``algo`` with its Leduc preset (NFSP evaluated every 250
    steps instead of its preset's 1,000, for a curve with more than a handful of points)."""
    command = [sys.executable, "-m", "bot", "train", "--algo", algo, "--game", "leduc", "--seed", str(seed),
               "--time-budget", f"{minutes * 60:.0f}s", "--out", str(run)]
    if algo == "nfsp":
        run.parent.mkdir(parents=True, exist_ok=True)
        settings = run.parent / "nfsp-eval.toml"
        settings.write_text("eval_every = 250\n")
        command += ["--config", str(settings)]
    print("$", " ".join(command[1:]), flush=True)
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    print(f"  done; load average now: {machine().split('load average ')[1].split(';')[0]}", flush=True)


def print_at(curves: dict, index: int, points: list[float], axis: str, unit: str) -> None:
    """Each algorithm's exploitability at each of ``points`` on one axis ('-': not reached)."""
    print(f"\nexploitability (mbb/g, NashConv/2) at equal {axis} (the last evaluation at or before it):")
    print(f"{'':28s}" + "".join(f"{unit.format(x):>12s}" for x in points))
    for algo, c in curves.items():
        cells = [value_at(c[index], c[2], x) if c[index][-1] >= x else None for x in points]
        print(f"{LABELS[algo]:28s}" + "".join(f"{'-' if v is None else f'{v:.1f}':>12s}" for v in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="training budget per algorithm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/bench-dream-leduc")
    parser.add_argument("--algos", default=",".join(ALGOS), help="the algorithms to compare")
    parser.add_argument("--train", help="train only these (default: every one of --algos); the others are read from --out")
    parser.add_argument("--plot", default="docs/img/leduc_dream_comparison.png")
    parser.add_argument("--plot-only", action="store_true", help="do not train; read the runs in --out")
    args = parser.parse_args()
    algos = args.algos.split(",")
    out = Path(args.out)
    print(f"machine: {machine()}")
    for algo in [] if args.plot_only else (args.train or args.algos).split(","):
        shutil.rmtree(out / algo, ignore_errors=True)
        train(algo, args.minutes, args.seed, out / algo)
    curves = {algo: curve(algo, out / algo) for algo in algos}
    print(f"\n{'algorithm':28s} {'evaluations':>11s} {'nodes touched':>14s} {'seconds':>8s} {'mbb/g':>8s}")
    for algo, (nodes, seconds, mbb) in curves.items():
        print(f"{LABELS[algo]:28s} {len(nodes):11d} {nodes[-1]:14,.0f} {seconds[-1]:8.0f} {mbb[-1]:8.1f}")
    most_nodes = max(c[0][-1] for c in curves.values())
    node_points = [x for x in (2.5e5, 5e5, 1e6, 2e6, 4e6, 8e6, 1.6e7, 3.2e7) if x <= most_nodes]
    print_at(curves, 0, node_points, "nodes touched", "{:,.0f}")
    print_at(curves, 1, [30, 60, 120, 240, 480], "wall clock", "{:.0f} s")
    labels = {a: f"{LABELS[a]}, {budget_minutes(out / a):g} min" for a in algos}
    panels = [(label, {labels[a]: (c[i], c[2]) for a, c in curves.items()})
              for label, i in (("nodes touched (decision nodes evaluated)", 0), ("wall-clock seconds (training)", 1))]
    path = plots.plot_exploitability(ROOT / args.plot, panels, xlog=True, title=f"Leduc, seed {args.seed}")
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
