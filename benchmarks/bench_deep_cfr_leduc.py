"""Exploitability vs wall clock of SD-CFR (and Deep CFR's SD-CFR average) on Leduc, 2 CPU cores.

Trains with ``pokerbot train``'s own code (a real run directory under ``runs/bench-...``),
then prints exploitability (exact, NashConv/2, mbb/g with Leduc's big blind of 2 chips) at fixed
wall-clock marks and writes the curve to ``docs/img/leduc_sdcfr_exploitability.png``.
Reference points: uniform play 1186.8 mbb/g (``pokerbot exploit`` of the uniform policy);
OpenSpiel's (Lanctot et al. 2019) PyTorch Deep CFR (64x64 networks, 1,500 traversals and 750
advantage steps per iteration) 108 mbb/g after 10 minutes on a 2-core machine.

    python benchmarks/bench_deep_cfr_leduc.py [--minutes 10] [--out runs/bench-leduc-sdcfr] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402  (one machine line for every benchmark)
from benchmarks.bench_nfsp_leduc import parse_value  # noqa: E402
from training.deep_cfr.config import PRESETS, DeepCFRConfig  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer, plot_exploitability  # noqa: E402

#: The Leduc preset as `pokerbot train` runs it (a checkpoint after every iteration, counted in
#: the wall clock).
SETTINGS = dict(PRESETS["leduc"])
MARKS_S = (60, 120, 300, 600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--algo", default="sd-cfr", choices=["sd-cfr", "deep-cfr"])
    parser.add_argument("--out", default="runs/bench-leduc-sdcfr")
    parser.add_argument("--png", default="docs/img/leduc_sdcfr_exploitability.png")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a preset field")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    shutil.rmtree(args.out, ignore_errors=True)
    settings = dict(SETTINGS)
    for item in args.set:
        key, _, text = item.partition("=")
        settings[key] = parse_value(text)
    config = DeepCFRConfig(**{**settings, "game": "leduc", "algo": args.algo, "iterations": 100_000,
                              "time_budget": f"{args.minutes * 60:.0f}s", "seed": 0}).validate()
    print(f"settings: {settings}")
    trainer = DeepCFRTrainer.new(config, args.out, progress=False)
    records = [r for r in trainer.train() if "sdcfr_exploitability_mbb" in r]
    print("wall s | iteration | SD-CFR average exploitability (mbb/g, NashConv/2)")
    for mark in MARKS_S:
        before = [r for r in records if r["elapsed_s"] <= mark]
        if before:
            r = before[-1]
            print(f"{mark:6d} | {r['iteration']:9d} | {r['sdcfr_exploitability_mbb']:.1f}")
    steps = 2 * config.sgd_steps * len(records)
    training = sum(r["training_s"] for r in records)
    print(f"per iteration: traversals {sum(r['traversal_s'] for r in records) / len(records):.2f} s, "
          f"training {training / len(records):.2f} s ({steps / training:.0f} Adam steps/s, "
          f"batch form {records[-1]['batch_form_p0']})")
    best = min(records, key=lambda r: r["sdcfr_exploitability_mbb"])
    last = records[-1]
    print(f"final: {last['sdcfr_exploitability_mbb']:.1f} mbb/g after {last['elapsed_s']:.0f} s "
          f"({last['iteration']} iterations); best {best['sdcfr_exploitability_mbb']:.1f} at {best['elapsed_s']:.0f} s")
    png = plot_exploitability(trainer.run)
    if png is not None:
        Path(args.png).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(png, args.png)
        print(f"curve: {args.png}")
    print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
