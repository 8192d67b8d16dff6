"""Why an FHP SD-CFR curve flattens, asked of its memory: refit a run's value network at the
plateau with more width or more Adam steps and compare the held-out loss.

The preset's curve is flat at ~53-55 mbb/g from iteration ~70 on, and four times the boards per
memory row budget or a four times larger memory moved neither the curve nor its plateau
(docs/benchmarks/fhp-sd-cfr.md). What is left is the fit itself: too few Adam steps for the
memory (each fit draws 1,200 x 2,048 rows, less than one pass over a 4M-row memory) or too
narrow a network to represent the regrets. This script takes a stopped run's checkpoint, holds
out 10% of one player's advantage memory (at random), fits a fresh network per candidate on the
rest with the run's own schedule and weighting (linear CFR at the checkpoint's iteration) and
prints the held-out loss (weighted MSE of the normalised targets over legal actions; 1.0 =
predicting 0) over all held-out rows and over the newest iteration's, with the fit's CPU
seconds. The held-out loss includes the targets' own spread, so only differences between
candidates mean anything: a candidate well below the preset says the preset's fit is the limit.

    python benchmarks/bench_fhp_plateau_fits.py --run RUN [--player 0] [--candidates w64-s1200,w128-s1200,...]

The run must not be training (its checkpoint is read through ``--resume``'s loader; nothing in it
is written).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from benchmarks.bench_fit_speed import held_out_loss, split_memory  # noqa: E402
from bot.agents.network import DeepCFRNetwork  # noqa: E402
from training.deep_cfr.fit import NetworkFit  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer  # noqa: E402

#: name -> (width, Adam steps, batch).
CANDIDATES = {"w64-s1200": (64, 1200, 2048), "w64-s4800": (64, 4800, 2048), "w64-s1200-b8192": (64, 1200, 8192),
              "w128-s1200": (128, 1200, 2048), "w128-s4800": (128, 4800, 2048), "w256-s1200": (256, 1200, 2048),
              "w64-s9600": (64, 9600, 2048), "w64-s19200": (64, 19200, 2048)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a stopped FHP SD-CFR run with its memories (keep_memories)")
    parser.add_argument("--player", type=int, choices=(0, 1), default=0)
    parser.add_argument("--candidates", default="w64-s1200,w64-s4800,w128-s1200,w256-s1200")
    args = parser.parse_args()
    unknown = [n for n in args.candidates.split(",") if n not in CANDIDATES]
    if unknown:
        parser.error(f"unknown candidate(s) {', '.join(unknown)}; known: {', '.join(CANDIDATES)}")
    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    trainer = DeepCFRTrainer.resume(args.run, progress=False)
    fitted, held = split_memory(trainer.advantage[args.player])
    t = trainer.iteration
    newest = held["iteration"] == held["iteration"].max()
    print(f"{args.run}: iteration {t}, player {args.player}: {len(fitted):,} fitted rows, {len(held['node']):,} held "
          f"out ({int(newest.sum()):,} of the newest iteration)")
    print("| candidate | width | Adam steps | batch | rows drawn / fitted rows | fit CPU s | held-out loss | newest iteration's |\n"
          "|---|---|---|---|---|---|---|---|")
    for name in args.candidates.split(","):
        width, steps, batch = CANDIDATES[name]
        config = dataclasses.replace(trainer.config, width=width)
        fit = NetworkFit(config, trainer.encoder, torch.device("cpu"), trainer.input_keys)
        torch.manual_seed(0)
        net = DeepCFRNetwork(trainer.encoder.group_sizes, trainer.encoder.num_bet_slots, width, config.canonical_suits)
        started = time.process_time()
        fit.fit(net, torch.optim.Adam(net.parameters(), lr=config.learning_rate, fused=True), fitted, steps, batch,
                np.random.default_rng(1), average=False, iteration=t)
        seconds = time.process_time() - started
        losses = [held_out_loss(net, {k: v[rows] for k, v in held.items()}, trainer.encoder, fit.target_scale)
                  for rows in (slice(None), newest)]
        print(f"| {name} | {width} | {steps:,} | {batch:,} | {steps * batch / len(fitted):.2f} | {seconds:.0f} | "
              f"{losses[0]:.4f} | {losses[1]:.4f} |", flush=True)
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
