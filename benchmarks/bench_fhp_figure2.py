"""The Deep CFR paper's Figure 2 at our scale: exact FHP exploitability against nodes touched and
wall clock for SD-CFR, Deep CFR, ES Linear MCCFR on ``fhp_abstraction_4e4`` and
``fhp_abstraction_3.6e6``, and full-width DCFR on the real game (``fhp_lossless``).

    nice python benchmarks/bench_fhp_figure2.py                       # every curve, then the plot
    python benchmarks/bench_fhp_figure2.py --curves mccfr-4e4,lossless
    python benchmarks/bench_fhp_figure2.py --plot-only                 # re-read the runs in --out
    python benchmarks/bench_fhp_figure2.py --schedule sd-cfr=5,10,15,20 --schedule lossless=10,50

Every curve is ``pokerbot train`` on one run directory in ``--out``, with each algorithm's
2-core preset and its exact measurement (NashConv/2 over the 1,755 canonical flops, off the
training clock; every policy here is suit-invariant):

* ``mccfr-4e4``, ``mccfr-3.6e6``: ES Linear MCCFR on the abstraction, run in segments (a new run
  to the schedule's first iteration count, then ``--resume RUN --iterations N`` for each next
  one), so the points fall on a log scale; each segment ends with the exact measurement of the
  average. Nodes touched: the infosets the external-sampling traversals visited.
* ``lossless``: full-width DCFR on the real game (``--size lossless``), measured at each count
  of its schedule (``eval_every`` = the counts' common step). Nodes touched: the (decision
  node, live hand) pairs of both passes of every iteration.
* ``sd-cfr``: the FHP preset (width 32, suit-canonical inputs), its stack average measured
  every 5 iterations (every network of the stack is evaluated once, ~55 CPU s each: the cost of
  a curve grows with its length, not its points); ``deep-cfr``: the same preset, its average
  network fitted and measured at each count of its schedule (``average_every`` = the counts'
  common step; ~85 s a point). Nodes touched: the infosets their external-sampling traversals
  evaluated (``infosets_per_s x traversal_s``).

Wall clock is each run's ``elapsed_s``: training time only. Prints the machine, every point,
each curve's exploitability at equal nodes touched and at equal wall clock, and writes
``docs/img/fhp_figure2.png``. ``--curves dream,os-sd-cfr`` adds the DREAM paper's model-free
algorithms (its fig. 4, bottom, with exact values instead of its DDQN lower bound), measured the
same way as SD-CFR; their nodes touched are the decision nodes of their trajectories.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from benchmarks.bench_dream_leduc import value_at  # noqa: E402
from bot.run_files import ELAPSED_METRIC, canonical_metrics  # noqa: E402
from training.contract import plots  # noqa: E402


@dataclass(frozen=True)
class Curve:
    """One line of the figure: how to train it, where its exact points are in its metrics."""

    label: str
    train_flags: tuple[str, ...]
    """``pokerbot train`` flags of the new run (``--out`` and the count are added)."""
    schedule: tuple[int, ...]
    """Iteration counts at which the curve is measured."""
    metric: str
    """The metrics key of its exact exploitability (NashConv/2, mbb/g)."""
    segments: bool = False
    """Train to each count in turn (``--resume --iterations N``) instead of one run measured
    every ``eval_every`` / ``evaluate_every`` iterations."""
    settings: str = ""
    """TOML given as ``--config`` (the measurement schedule; ``{step}`` = the counts' step)."""
    cumulative_nodes: bool = False
    """Its ``nodes_touched`` metric is a running total (DREAM, OS-SD-CFR), not per record."""


CURVES = {
    "mccfr-4e4": Curve("ES Linear MCCFR, fhp_abstraction_4e4",
                       ("--algo", "abstraction", "--game", "fhp", "--size", "4e4", "--threads", "1"),
                       (25_000, 100_000, 400_000, 1_600_000, 6_400_000, 25_600_000), "exploitability_mbb", segments=True,
                       settings="batch = 25000\n"),
    "mccfr-3.6e6": Curve("ES Linear MCCFR, fhp_abstraction_3.6e6",
                         ("--algo", "abstraction", "--game", "fhp", "--size", "3.6e6", "--threads", "1"),
                         (250_000, 1_000_000, 4_000_000, 16_000_000, 64_000_000), "exploitability_mbb", segments=True),
    "lossless": Curve("full-width DCFR, fhp_lossless (the real game)",
                      ("--algo", "abstraction", "--game", "fhp", "--size", "lossless", "--threads", "1"),
                      (5, 10, 15, 20, 25, 30, 35, 40), "exploitability_mbb", settings="eval_every = {step}\n"),
    "sd-cfr": Curve("SD-CFR (2-core FHP preset)", ("--algo", "sd-cfr", "--game", "fhp"),
                    (5, 10, 15), "sdcfr_exploitability_mbb"),
    "deep-cfr": Curve("Deep CFR, average network (2-core FHP preset)", ("--algo", "deep-cfr", "--game", "fhp"),
                      (5, 10, 15), "average_exploitability_mbb", settings="average_every = {step}\n"),
    "dream": Curve("DREAM (2-core FHP preset)", ("--algo", "dream", "--game", "fhp"),
                   (5, 10, 15), "sdcfr_exploitability_mbb", cumulative_nodes=True),
    "os-sd-cfr": Curve("OS-SD-CFR (2-core FHP preset)", ("--algo", "os-sd-cfr", "--game", "fhp"),
                       (5, 10, 15), "sdcfr_exploitability_mbb", cumulative_nodes=True),
}
#: The Deep CFR paper's Figure 2; DREAM and OS-SD-CFR (the DREAM paper's fig. 4, bottom) on request.
FIGURE_2 = ("mccfr-4e4", "mccfr-3.6e6", "lossless", "sd-cfr", "deep-cfr")


def pokerbot(*flags: str) -> None:
    """One ``pokerbot`` command, echoed; its output is shown only if it fails."""
    print("$ pokerbot", " ".join(flags), flush=True)
    done = subprocess.run([sys.executable, "-m", "bot", *flags], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"pokerbot {flags[0]} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-4000:]}")


def train(name: str, curve: Curve, run: Path, seed: int) -> None:
    """Train ``curve`` afresh into ``run`` through its whole schedule."""
    shutil.rmtree(run, ignore_errors=True)
    run.parent.mkdir(parents=True, exist_ok=True)
    flags = [*curve.train_flags, "--seed", str(seed)]
    if curve.settings:
        step = math.gcd(*curve.schedule)
        settings = run.parent / f"{name}.toml"
        settings.write_text(curve.settings.format(step=step))
        flags += ["--config", str(settings)]
    if not curve.segments:
        pokerbot("train", *flags, "--iterations", str(curve.schedule[-1]), "--out", str(run))
        return
    pokerbot("train", *flags, "--iterations", str(curve.schedule[0]), "--out", str(run))
    for count in curve.schedule[1:]:
        pokerbot("train", "--algo", "abstraction", "--resume", str(run), "--iterations", str(count))


def points(curve: Curve, run: Path) -> tuple[list[float], list[float], list[float]]:
    """(cumulative nodes touched, training seconds, exact exploitability mbb/g) per measurement."""
    nodes, seconds, mbb = [], [], []
    touched, elapsed = 0.0, 0.0
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = canonical_metrics(json.loads(line))
        if "nodes_touched" in record:
            touched = record["nodes_touched"] + (0 if curve.cumulative_nodes else touched)
        elif "infosets_per_s" in record:  # the Deep CFR family logs the rate; rate x time is the count
            touched += record["infosets_per_s"] * record["traversal_s"]
        elapsed = record.get(ELAPSED_METRIC, elapsed)
        if curve.metric in record:
            nodes.append(touched)
            seconds.append(elapsed)
            mbb.append(record[curve.metric])
    return nodes, seconds, mbb


def print_at(curves: dict, index: int, grid: list[float], axis: str, unit: str) -> None:
    """Each curve's exploitability at each of ``grid`` on one axis ('-': not reached)."""
    print(f"\nexploitability (mbb/g, NashConv/2) at equal {axis} (the last measurement at or before it):")
    print(f"{'':48s}" + "".join(f"{unit.format(x):>10s}" for x in grid))
    for name, c in curves.items():
        cells = [value_at(c[index], c[2], x) if c[index] and c[index][-1] >= x else None for x in grid]
        print(f"{CURVES[name].label:48s}" + "".join(f"{'-' if v is None else f'{v:.1f}':>10s}" for v in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curves", default=",".join(FIGURE_2), help=f"which curves ({', '.join(CURVES)})")
    parser.add_argument("--schedule", action="append", default=[], metavar="CURVE=N,N,...",
                        help="iteration counts of one curve's measurements (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/bench-fhp-figure2")
    parser.add_argument("--plot", default="docs/img/fhp_figure2.png")
    parser.add_argument("--plot-only", action="store_true", help="do not train; read the runs in --out")
    args = parser.parse_args()
    names = args.curves.split(",")
    unknown = [n for n in names if n not in CURVES]
    if unknown:
        parser.error(f"unknown curve(s) {', '.join(unknown)}; known: {', '.join(CURVES)}")
    curves = dict(CURVES)
    for item in args.schedule:
        name, _, counts = item.partition("=")
        if name not in CURVES or not counts:
            parser.error(f"--schedule {item!r}: expected CURVE=N,N,... with CURVE one of {', '.join(CURVES)}")
        curves[name] = replace(CURVES[name], schedule=tuple(int(n) for n in counts.split(",")))
    out = Path(args.out)
    print(f"machine: {machine()}")
    for name in [] if args.plot_only else names:
        train(name, curves[name], out / name, args.seed)
    measured = {name: points(curves[name], out / name) for name in names if (out / name / "metrics.jsonl").is_file()}
    print(f"\n{'curve':48s} {'nodes touched':>16s} {'seconds':>9s} {'mbb/g':>9s}")
    for name, (nodes, seconds, mbb) in measured.items():
        for x, s, y in zip(nodes, seconds, mbb, strict=True):
            print(f"{CURVES[name].label:48s} {x:16,.0f} {s:9.1f} {y:9.2f}")
    most = max((c[0][-1] for c in measured.values() if c[0]), default=0.0)
    half_decades = [m * 10.0**e for e in range(4, 12) for m in (1, 3)]  # networks touch ~1e5, DCFR ~1e10
    print_at(measured, 0, [x for x in half_decades if x <= most], "nodes touched", "{:.0e}")
    print_at(measured, 1, [1, 3, 10, 30, 100, 300, 1000, 3000], "training seconds", "{:.0f} s")
    panels = [(label, {CURVES[n].label: (c[i], c[2]) for n, c in measured.items()})
              for label, i in (("nodes touched", 0), ("training seconds (wall clock)", 1))]
    path = plots.plot_exploitability(ROOT / args.plot, panels, xlog=True, title=f"FHP, exact, seed {args.seed}")
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
