"""The Deep CFR paper's figure 4 ablations, on Leduc where exploitability is exact.

Brown et al. 2019 (fig. 4, FHP): without linear weighting Deep CFR converges more slowly;
fine-tuning one network instead of retraining from scratch, or playing uniform instead of the
highest-advantage action when no advantage is positive, ends ~50% higher; a sliding-window
memory stops converging once it is full while a reservoir keeps converging. Each variant here is
the ``leduc`` preset with one switch flipped (the window/reservoir pair shares a small memory so
that it fills early), trained with ``pokerbot train``'s code for the same number of iterations;
the exact exploitability of the SD-CFR average is printed at fixed iterations and plotted
against iterations (``docs/img/leduc_deep_cfr_ablations.png``).

    python benchmarks/bench_deep_cfr_ablations.py [--iterations 60] [--traversals 2000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from training.contract import plots  # noqa: E402
from training.deep_cfr.config import PRESETS, DeepCFRConfig  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer  # noqa: E402

#: Rows per player's advantage memory in the memory pair: a few iterations' worth, so it fills.
SMALL_MEMORY = 100_000

VARIANTS: dict[str, dict] = {
    "baseline (from scratch, argmax, reservoir, linear)": {},
    "no linear weighting": {"linear_weighting": False},
    "fine-tune instead of from scratch": {"from_scratch": False},
    "uniform when no advantage is positive": {"argmax_fallback": False},
    f"reservoir, {SMALL_MEMORY:,}-row memories": {"advantage_memory": SMALL_MEMORY},
    f"sliding window, {SMALL_MEMORY:,}-row memories": {"advantage_memory": SMALL_MEMORY, "memory_mode": "window"},
}


def run_variant(name: str, overrides: dict, iterations: int, traversals: int, out: Path) -> list[tuple[int, float]]:
    folder = out / name.split(" (")[0].replace(" ", "-").replace(",", "")
    shutil.rmtree(folder, ignore_errors=True)
    settings = {**PRESETS["leduc"], "game": "leduc", "algo": "sd-cfr", "iterations": iterations,
                "traversals": traversals, "checkpoint_every": iterations, "seed": 0, **overrides}
    records = DeepCFRTrainer.new(DeepCFRConfig(**settings), folder, progress=False).train()
    return [(r["iteration"], r["sdcfr_exploitability_mbb"]) for r in records if "sdcfr_exploitability_mbb" in r]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--traversals", type=int, default=2000)
    parser.add_argument("--out", default="runs/bench-leduc-ablations")
    parser.add_argument("--png", default="docs/img/leduc_deep_cfr_ablations.png")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"preset: {PRESETS['leduc']} with {args.traversals} traversals, {args.iterations} iterations, seed 0")
    marks = sorted({m for m in (10, 20, 40, 80, 160, 320) if m < args.iterations} | {args.iterations})
    print("variant | " + " | ".join(f"t={m}" for m in marks) + "  (SD-CFR average exploitability, mbb/g)")
    curves: dict[str, tuple[list[float], list[float]]] = {}
    for name, overrides in VARIANTS.items():
        curve = run_variant(name, overrides, args.iterations, args.traversals, Path(args.out))
        values = dict(curve)
        print(f"{name} | " + " | ".join(f"{values[m]:.1f}" for m in marks), flush=True)
        curves[name] = ([float(t) for t, _ in curve], [v for _, v in curve])
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    plots.plot_exploitability(Path(args.png), [("Deep CFR iteration", curves)])
    print(f"curves: {args.png}")


if __name__ == "__main__":
    main()
