"""Which FHP preset learns fastest per CPU second now that fits run in the compiled kernels:
SD-CFR on the 24-card FHP (FHP's betting, 4 suits x 6 ranks) with each candidate's settings over
the ``fhp`` preset, exact exploitability (NashConv/2, mbb/g) of the stack average at every
``--every`` iterations against the CPU seconds of training (traversals and fits; the exact
evaluation runs afterwards on the saved stack, off the clock).

    nice python benchmarks/bench_fhp24_presets.py [--iterations 20] [--every 5]
    python benchmarks/bench_fhp24_presets.py --candidates preset,w64-s600
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from benchmarks.bench_fit_speed import fhp24  # noqa: E402
from training.deep_cfr.config import PRESETS, SAMPLED, DeepCFRConfig  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer  # noqa: E402
from training.flop.evaluation import FlopRunEvaluation  # noqa: E402

#: name -> settings over the fhp preset (width 64, 300 steps, 4,000 traversals since this
#: benchmark and bench_fhp_fit_error.py chose them; the others keep the 1,000 traversals they
#: were measured with, ``w32-s200`` being the preset they replaced:
#: docs/benchmarks/fhp-sd-cfr.md#choosing-the-preset)
CANDIDATES = {
    "preset": {},
    "w32-s200": {"width": 32, "sgd_steps": 200, "traversals": 1000},
    "w64-s600": {"width": 64, "sgd_steps": 600, "traversals": 1000},
    "w64-s300": {"width": 64, "sgd_steps": 300, "traversals": 1000},
    "w32-s600": {"width": 32, "sgd_steps": 600, "traversals": 1000},
    "w96-s600": {"width": 96, "sgd_steps": 600, "traversals": 1000},
}


def run(name: str, game_path: Path, folder: Path, iterations: int, every: int) -> None:
    config = DeepCFRConfig(**(PRESETS["fhp"] | SAMPLED | CANDIDATES[name] | dict(game=str(game_path), iterations=iterations,
                                                                        evaluate_every=0, checkpoint_every=10_000)))
    trainer = DeepCFRTrainer.new(config, folder / name, progress=False)
    started = time.process_time()
    records = trainer.train()
    cpu = time.process_time() - started
    fit_s = sum(r["training_s"] for r in records)
    traversal_s = sum(r["traversal_s"] for r in records)
    evaluation = FlopRunEvaluation(trainer.game, folder / name, True, config.argmax_fallback)
    points = []
    for t in range(every, iterations + 1, every):
        metrics = evaluation.evaluate(trainer.stack[: t + 1], trainer.stack_nets)
        points.append(f"{t}: {metrics['sdcfr_exploitability_mbb']:.2f}")
    print(f"| {name} | {config.width} | {config.sgd_steps} | {cpu:.0f} | {cpu / iterations:.1f} | "
          f"{fit_s:.0f} / {traversal_s:.0f} | {'; '.join(points)} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--candidates", default="preset,w32-s200,w64-s600")
    args = parser.parse_args()
    print(machine())
    print(f"SD-CFR on the 24-card FHP, {args.iterations} iterations, seed 0, fits on the auto path")
    print("| candidate | width | Adam steps | training CPU s | CPU s / iteration | fits / traversals (wall s) "
          "| exact mbb/g (NashConv/2) at iteration |\n|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        game_path = fhp24(Path(tmp))
        for name in args.candidates.split(","):
            run(name, game_path, Path(tmp), args.iterations, args.every)
    print(machine())


if __name__ == "__main__":
    main()
