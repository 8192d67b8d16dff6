"""A long FHP run of the 2-core preset, read back: its exact curve (iteration, training seconds,
nodes touched, exploitability) beside the Deep CFR paper's Figure 2 reference and our own
abstraction curves ([FHP Figure 2](docs/benchmarks/fhp-figure2.md)).

    nice -n 19 pokerbot train --algo sd-cfr --game fhp --time-budget 2h --seed 0 --out runs/sdcfr_fhp
    python benchmarks/bench_fhp_sdcfr_long.py --run runs/sdcfr_fhp          # while it runs, or after
    # or measured beside the run on the other core (config.toml: evaluate_every = 0):
    pokerbot exploit runs/sdcfr_fhp --follow --every 5
    python benchmarks/bench_fhp_sdcfr_long.py --run runs/sdcfr_fhp --run runs/deepcfr_fhp

Each ``--run`` is a ``pokerbot train`` run directory of the SD-CFR family (``sd-cfr``,
``deep-cfr``, ``dream``, ``os-sd-cfr``) on FHP: its ``metrics.jsonl`` holds the exact
exploitability (NashConv/2 over the canonical flops, measured off the training clock) of the
SD-CFR average (``sdcfr_exploitability_mbb``, every ``evaluate_every`` iterations) and, for a
Deep CFR run, of its average network (``average_exploitability_mbb``, every ``average_every``);
a run followed with ``--average-exponent E`` adds the SD-CFR average under weights ``t^E``.
Training seconds are the run's ``elapsed_s`` (wall clock of traversals and fits: it depends on
the load); nodes touched are the infosets its traversals evaluated (``infosets_per_s x
traversal_s``, as bench_fhp_figure2.py counts them). For each curve it prints every point, the
decay exponent ``a`` of ``exploitability ~ t^-a`` over the later half of the points (a plateau
shows as ``a`` near 0) and the exact-evaluation cost, and draws ``--plot``: the curves against
nodes touched and training seconds, with the reference curves below (recorded, not re-run).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from bot.run_files import ELAPSED_METRIC, canonical_metrics, parse_metrics, read_toml  # noqa: E402
from training.contract import plots  # noqa: E402
from training.flop.follow import CURVE as FOLLOW_CURVE  # noqa: E402
from training.flop.follow import FOLDER as FOLLOW_FOLDER  # noqa: E402

#: (label, nodes touched, training seconds, exploitability mbb/g NashConv/2) recorded by
#: ``nice python benchmarks/bench_fhp_figure2.py`` on 2026-11-25 (commit a8ab5dc, 2-core AMD
#: EPYC, load 2-4; docs/benchmarks/fhp-figure2.md), and the width-32 preset's SD-CFR curve
#: before the width-64 one (docs/benchmarks/fhp-sd-cfr.md, same machine).
RECORDED = (
    ("MCCFR, abstraction 4e4", (1.11e6, 4.21e6, 16.5e6, 65.0e6, 257e6, 1.03e9),
     (0.1, 0.8, 2.2, 7.0, 25.3, 93.5), (464.6, 136.5, 69.8, 54.3, 60.9, 66.9)),
    ("MCCFR, abstraction 3.6e6", (11.4e6, 45.4e6, 175e6, 673e6, 2.62e9),
     (1.5, 6.0, 23.0, 85.3, 344.3), (1030.0, 560.6, 197.4, 67.1, 27.1)),
    ("DCFR, lossless", tuple(9.25e9 * i / 40 for i in range(5, 41, 5)),
     (39.0, 68.1, 98.3, 129.2, 157.9, 186.9, 215.4, 244.3), (419.5, 209.5, 86.9, 53.5, 34.4, 23.2, 21.3, 16.1)),
    ("SD-CFR, width 32", (113_271, 235_698, 357_551, 478_192, 595_100, 718_760),
     (20.2, 43.4, 63.5, 93.5, 123.7, 158.1), (503.86, 395.12, 346.36, 316.85, 303.10, 304.13)),
)
#: The Deep CFR paper's FHP result (Brown et al. 2019, sec. 6, Figure 2): 37 mbb/g, which the
#: project reads as NashConv (both players' best-response gains): 18.5 in NashConv/2.
PAPER_MBB = 18.5
#: metrics key -> what it measures.
METRICS = {"sdcfr_exploitability_mbb": "SD-CFR average", "average_exploitability_mbb": "Deep CFR average network"}
#: A weighting's key in a followed curve (``pokerbot exploit RUN --follow --average-exponent E``).
WEIGHTED = re.compile(r"sdcfr_t([0-9.]+)_exploitability_mbb")


def metrics_of(run: Path) -> dict[str, str]:
    """:data:`METRICS` plus every other weighting of the SD-CFR average the run's follower measured."""
    followed_path = run / FOLLOW_FOLDER / FOLLOW_CURVE
    keys = {key for record in parse_metrics(followed_path) for key in record} if followed_path.exists() else set()
    weighted = sorted((float(m.group(1)), key) for key in keys if (m := WEIGHTED.fullmatch(key)))
    return METRICS | {key: f"SD-CFR average, weights t^{exponent:g}" for exponent, key in weighted}


def curve(run: Path, metric: str) -> list[dict]:
    """One measured point per metrics line that has ``metric``, or whose iteration ``pokerbot
    exploit RUN --follow`` measured (``evaluation-follow/curve.jsonl``): iteration, training
    seconds, cumulative nodes touched, exploitability and the evaluation's wall seconds."""
    followed_path = run / FOLLOW_FOLDER / FOLLOW_CURVE
    followed = {r["iteration"]: r for r in parse_metrics(followed_path)} if followed_path.exists() else {}
    rows, touched, elapsed = [], 0.0, 0.0
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = canonical_metrics(json.loads(line))
        record = followed.get(record.get("iteration"), {}) | record
        touched += record.get("infosets_per_s", 0.0) * record.get("traversal_s", 0.0)
        elapsed = record.get(ELAPSED_METRIC, elapsed)
        if metric in record:
            rows.append({"iteration": record["iteration"], "seconds": elapsed, "nodes": touched, "mbb": record[metric],
                         "evaluation_s": record.get("flop_evaluation_s", 0.0)})
    return rows


def decay_exponent(rows: list[dict]) -> float | None:
    """``a`` of the least-squares fit ``log mbb = c - a log t`` over the later half of the points."""
    later = rows[len(rows) // 2:]
    if len(later) < 2:
        return None
    slope = np.polyfit(np.log([r["iteration"] for r in later]), np.log([r["mbb"] for r in later]), 1)[0]
    return float(-slope)


def report(run: Path) -> dict[str, list[dict]]:
    """Print one run's curves; returns them by label."""
    config = read_toml(run / "config.toml")
    name = f"{config.get('targets', 'sampled')} targets, width {config.get('width')}, {config.get('sgd_steps')} steps"
    found = {}
    for metric, label in metrics_of(run).items():
        rows = curve(run, metric)
        if not rows:
            continue
        found[f"{label} ({run.name})"] = rows  # the run's name keeps two runs' curves apart
        exponent = decay_exponent(rows)
        print(f"\n{run}: {label} (exact; {config.get('algo')}, {name}, seed {config.get('seed')})")
        print(f"{'iteration':>9s} {'training s':>11s} {'nodes touched':>14s} {'mbb/g':>9s} {'evaluation s':>13s}")
        for r in rows:
            print(f"{r['iteration']:9d} {r['seconds']:11.1f} {r['nodes']:14,.0f} {r['mbb']:9.2f} {r['evaluation_s']:13.1f}")
        evaluation = sum(r["evaluation_s"] for r in rows)
        print(f"decay over the later half: t^-{exponent:.2f}" if exponent is not None else "decay: too few points",
              f"| exact evaluation {evaluation:,.0f} s wall in all, training {rows[-1]['seconds']:,.0f} s"
              f" | {rows[-1]['mbb'] / PAPER_MBB:.1f}x the paper's {PAPER_MBB}")
    return found


def weightings_side_by_side(run: Path) -> None:
    """The SD-CFR average under each weighting the follower measured, a column each (the same
    networks, so the columns differ only by how the iterations are weighted)."""
    labels = {key: label for key, label in metrics_of(run).items() if key.startswith("sdcfr")}
    if len(labels) < 2:
        return
    columns = {key: {r["iteration"]: r["mbb"] for r in curve(run, key)} for key in labels}
    names = ["t" if key == "sdcfr_exploitability_mbb" else label.rsplit(" ", 1)[-1] for key, label in labels.items()]
    print(f"\n{run}: the SD-CFR average by weighting (mbb/g, exact)")
    print(f"{'iteration':>9s} " + " ".join(f"{name:>9s}" for name in names))
    for iteration in sorted(columns["sdcfr_exploitability_mbb"]):
        print(f"{iteration:9d} " + " ".join(f"{columns[key].get(iteration, float('nan')):9.2f}" for key in labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", default=[], help="a run directory (repeatable; default runs/sdcfr_fhp)")
    parser.add_argument("--plot", default="docs/img/fhp_sdcfr_long.png")
    args = parser.parse_args()
    runs = [Path(r) for r in args.run or ["runs/sdcfr_fhp"]]
    for run in runs:
        if not (run / "metrics.jsonl").is_file() or not (run / "config.toml").is_file():
            parser.error(f"{run} is not a training run directory (no metrics.jsonl and config.toml)")
    print(f"machine: {machine()}")
    measured = {label: rows for run in runs for label, rows in report(run).items()}
    for run in runs:
        weightings_side_by_side(run)
    if not measured:
        parser.error("no exact exploitability in these runs yet (the first comes at iteration evaluate_every)")
    panels = []
    for axis, key, index in (("nodes touched", "nodes", 1), ("training seconds (wall clock)", "seconds", 2)):
        curves = {label: ([r[key] for r in rows], [r["mbb"] for r in rows]) for label, rows in measured.items()}
        curves |= {label: (recorded[index], recorded[3]) for recorded in RECORDED for label in recorded[:1]}
        low = min(min(xs) for xs, _ in curves.values())
        high = max(max(xs) for xs, _ in curves.values())
        curves[f"paper, Deep CFR ({PAPER_MBB})"] = ([low, high], [PAPER_MBB, PAPER_MBB])
        panels.append((axis, curves))
    path = plots.plot_exploitability(ROOT / args.plot, panels, xlog=True, title="FHP, exact (NashConv/2)")
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
