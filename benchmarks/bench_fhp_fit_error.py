"""Why an FHP SD-CFR curve flattens: each iteration's value networks against their exact targets.

For an SD-CFR run on a flop hold'em game, replays its trajectory: at every iteration ``t`` the
exact linear-CFR cumulative regrets ``R_p^t`` of the profiles the trainer traversed
(:mod:`training.deep_cfr.exact_targets`, full-width passes), and at every ``--every``-th the fit
error of each player's network of ``t``: the sampling-density-weighted L1 distance between its
regret matching and regret matching on ``R_p^t`` (0: a perfect fit; 2: disjoint), preflop and
flop, and the share of infosets whose most likely actions differ. Beside it, the run's exact
exploitability. A fit error that grows while the curve flattens says the fits are the limit
(more Adam steps, width, or variance-reduced targets); one that stays small says the sampled
trajectory itself is (more traversals).

    nice python benchmarks/bench_fhp_fit_error.py                         # 24-card FHP, three candidates
    nice python benchmarks/bench_fhp_fit_error.py --candidates w64-s300,w64-s1200 --iterations 20 --every 5
    nice python benchmarks/bench_fhp_fit_error.py --run RUN --every 10    # an existing run (FHP: ~4 network
                                                                          # evaluations an iteration)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from benchmarks.bench_fhp24_presets import CANDIDATES  # noqa: E402
from benchmarks.bench_fit_speed import fhp24  # noqa: E402
from bot.agents.deep_cfr import DeepCFRBundle  # noqa: E402
from bot.flop.best_response import flop_game_for  # noqa: E402
from bot.flop.network_policies import network_policy, stack_nets  # noqa: E402
from bot.run_files import read_toml  # noqa: E402
from training.deep_cfr.config import PRESETS, SAMPLED, DeepCFRConfig  # noqa: E402
from training.deep_cfr.exact_targets import ExactRegrets  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer  # noqa: E402
from training.flop.evaluation import FlopRunEvaluation  # noqa: E402

#: bench_fhp24_presets.py's candidates and, over ``w64-s300`` (the preset with 1,000
#: traversals), four times its Adam steps (is the fit the limit?) or four times its traversals
#: (is the sampling? ``w64-k4000``, the preset since).
FIT_CANDIDATES = CANDIDATES | {"w64-s1200": {"width": 64, "sgd_steps": 1200, "traversals": 1000},
                               "w64-k4000": {"traversals": 4000}}


def replay(game, config: dict, stack: list[dict], nets_of, every: int, evaluation: FlopRunEvaluation | None) -> None:
    """Print the fit error of ``stack``'s networks (``nets_of(entry)`` loads an entry's pair) every
    ``every`` iterations, and the exact exploitability of its average when ``evaluation`` is given."""
    fallback = bool(config.get("argmax_fallback", True))
    fg = flop_game_for(game, bool(config.get("canonical_suits", False)))
    targets = ExactRegrets(fg)
    nets = [nets_of(entry) for entry in stack]  # nets[t] = (p0, p1) trained at iteration t; nets[0] uniform

    def profile(p0, p1):
        return network_policy(fg, (p0, p1), "value", fallback)

    print("| iteration | p0 preflop / flop L1 | p1 preflop / flop L1 | argmax differs (p0 / p1) | exact mbb/g | replay CPU-s |\n"
          "|---|---|---|---|---|---|")
    started = time.process_time()
    for t in range(1, len(nets)):
        weight = float(t if config.get("linear_weighting", True) else 1)
        targets.add(weight, 0, profile(nets[t - 1][0], nets[t - 1][1]))  # the trainer's alternation
        targets.add(weight, 1, profile(nets[t][0], nets[t - 1][1]))
        if t % every:
            continue
        errors = [targets.fit_error(p, profile(*nets[t])) for p in (0, 1)]
        mbb = "-" if evaluation is None else f"{evaluation.evaluate(stack[: t + 1], nets_of)['sdcfr_exploitability_mbb']:.2f}"
        print(f"| {t} | {errors[0]['preflop_l1']:.3f} / {errors[0]['flop_l1']:.3f} | "
              f"{errors[1]['preflop_l1']:.3f} / {errors[1]['flop_l1']:.3f} | "
              f"{errors[0]['all_argmax_differs']:.3f} / {errors[1]['all_argmax_differs']:.3f} | {mbb} | "
              f"{time.process_time() - started:.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="an existing SD-CFR run on a flop game (its memories are not needed)")
    parser.add_argument("--candidates", default="w64-s300,w64-s1200,w64-k4000", help=f"new 24-card FHP runs ({', '.join(FIT_CANDIDATES)})")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.run:  # read-only: the bundle and config.toml (a live run keeps training)
        bundle = DeepCFRBundle.load(Path(args.run) / "policy")
        config = read_toml(Path(args.run) / "config.toml")
        print(f"{args.run}: {bundle.kind}, width {config.get('width')}, {config.get('sgd_steps')} steps, "
              f"{len(bundle.stack) - 1} iterations; its exploitability is in its metrics.jsonl")
        replay(bundle.game, config, bundle.stack, lambda entry: stack_nets(bundle, entry), args.every, None)
        return
    unknown = [n for n in args.candidates.split(",") if n not in FIT_CANDIDATES]
    if unknown:
        parser.error(f"unknown candidate(s) {', '.join(unknown)}; known: {', '.join(FIT_CANDIDATES)}")
    with tempfile.TemporaryDirectory() as tmp:
        game_path = fhp24(Path(tmp))
        for name in args.candidates.split(","):
            config = DeepCFRConfig(**(PRESETS["fhp"] | SAMPLED | FIT_CANDIDATES[name] | dict(
                game=str(game_path), iterations=args.iterations, evaluate_every=0, checkpoint_every=10_000)))
            trainer = DeepCFRTrainer.new(config, Path(tmp) / name, progress=False)
            started = time.process_time()
            trainer.train()
            print(f"\n24-card FHP, {name} (width {config.width}, {config.sgd_steps} Adam steps), seed 0: "
                  f"{args.iterations} iterations in {time.process_time() - started:.0f} training CPU-s")
            evaluation = FlopRunEvaluation(trainer.game, trainer.run.path, config.canonical_suits, config.argmax_fallback)
            replay(trainer.game, vars(config), trainer.stack, trainer.stack_nets, args.every, evaluation)
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
