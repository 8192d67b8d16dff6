"""DREAM against OS-SD-CFR, ES SD-CFR and NFSP on Leduc: exact exploitability against nodes
touched and wall clock (the DREAM paper's fig. 4, top, with exact exploitability).

    nice -n 10 python benchmarks/bench_dream_leduc.py --minutes 5          # train all four, plot
    python benchmarks/bench_dream_leduc.py --minutes 5 --plot-only         # re-read the runs

Each algorithm trains with its Leduc preset through the CLI (``pokerbot train --algo X --game
leduc --time-budget M``), one after another, into ``--out/ALGO``. Nodes touched = decision nodes
whose strategy a traversal or self-play step evaluated (both players): for SD-CFR the infosets its
external-sampling traversals evaluated, for DREAM/OS-SD-CFR the nodes of the outcome-sampling
trajectories, for NFSP its transitions (one per decision). Prints the machine, per algorithm the
final point, each one's exploitability at the largest node count all of them reached and at a
common wall time, and whether DREAM reaches SD-CFR's exploitability at equal nodes touched.
Writes docs/leduc_dream_comparison.png.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from training import plots  # noqa: E402

ALGOS = ("dream", "os-sd-cfr", "sd-cfr", "nfsp")
LABELS = {"dream": "DREAM", "os-sd-cfr": "OS-SD-CFR", "sd-cfr": "SD-CFR (external sampling)", "nfsp": "NFSP"}


def curve(algo: str, run: Path) -> tuple[list[float], list[float], list[float]]:
    """(cumulative nodes touched, wall seconds, exact exploitability mbb/g) per evaluation."""
    nodes, seconds, mbb = [], [], []
    total = 0.0
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if algo == "nfsp":
            if "exploitability_mbb" in record:
                nodes.append(record["transitions"])
                seconds.append(record["train_seconds"])
                mbb.append(record["exploitability_mbb"])
            continue
        if "sdcfr_exploitability_mbb" not in record:
            continue
        if algo == "sd-cfr":  # the trainer logs the rate; rate x time recovers the count
            total += record["infosets_per_s"] * record["traversal_s"]
        else:
            total = record["nodes_touched"]
        nodes.append(total)
        seconds.append(record["elapsed_s"])
        mbb.append(record["sdcfr_exploitability_mbb"])
    return nodes, seconds, mbb


def value_at(xs: list[float], ys: list[float], x: float) -> float | None:
    """The last evaluation at or before ``x`` (None before the first)."""
    best = None
    for xi, yi in zip(xs, ys, strict=True):
        if xi <= x:
            best = yi
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="training budget per algorithm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/bench-dream-leduc")
    parser.add_argument("--algos", default=",".join(ALGOS))
    parser.add_argument("--plot", default="docs/leduc_dream_comparison.png")
    parser.add_argument("--plot-only", action="store_true", help="do not train; read the runs in --out")
    args = parser.parse_args()
    algos = args.algos.split(",")
    out = Path(args.out)
    print(f"machine: {machine()}")
    for algo in algos:
        if args.plot_only:
            continue
        command = [sys.executable, "-m", "bot", "train", "--algo", algo, "--game", "leduc", "--seed", str(args.seed),
                   "--time-budget", f"{args.minutes * 60:.0f}s", "--out", str(out / algo)]
        print("$", " ".join(command[1:]), flush=True)
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        print(f"  done; load average now: {machine().split('load average ')[1].split(';')[0]}", flush=True)
    curves = {algo: curve(algo, out / algo) for algo in algos}
    print(f"\n{'algorithm':28s} {'evaluations':>11s} {'nodes touched':>14s} {'seconds':>8s} {'mbb/g':>8s}")
    for algo, (nodes, seconds, mbb) in curves.items():
        print(f"{LABELS[algo]:28s} {len(nodes):11d} {nodes[-1]:14,.0f} {seconds[-1]:8.0f} {mbb[-1]:8.1f}")
    for axis, index, unit in (("nodes touched", 0, "{:,.0f} nodes"), ("wall clock", 1, "{:.0f} s")):
        common = min(c[index][-1] for c in curves.values())
        print(f"\nat equal {axis} ({unit.format(common)}, the least any run reached), exploitability mbb/g (NashConv/2):")
        for algo, c in curves.items():
            value = value_at(c[index], c[2], common)
            print(f"  {LABELS[algo]:28s} {'-' if value is None else f'{value:.1f}'}")
    if "dream" in curves and "sd-cfr" in curves:
        nodes, _, mbb = curves["sd-cfr"]
        target, at = mbb[-1], nodes[-1]
        dream_nodes, _, dream_mbb = curves["dream"]
        reached = next((n for n, m in zip(dream_nodes, dream_mbb, strict=True) if m <= target), None)
        print(f"\nSD-CFR's final {target:.1f} mbb/g took it {at:,.0f} nodes; DREAM "
              + (f"reached it after {reached:,.0f} nodes" if reached else f"did not reach it (best {min(dream_mbb):.1f})"))
    panels = [(label, {LABELS[a]: (c[i], c[2]) for a, c in curves.items()})
              for label, i in (("nodes touched (decision nodes evaluated)", 0), ("wall-clock seconds (training)", 1))]
    path = plots.plot_exploitability(ROOT / args.plot, panels, xlog=True,
                                     title=f"Leduc, {args.minutes:g} minutes per algorithm, seed {args.seed}")
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
