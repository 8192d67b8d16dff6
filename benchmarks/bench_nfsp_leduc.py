"""NFSP on Leduc: exact average exploitability against training time and hands played, and the
speed of self-play.

    python benchmarks/bench_nfsp_leduc.py --minutes 10                 # the tuned Leduc preset
    python benchmarks/bench_nfsp_leduc.py --minutes 10 --paper         # the NFSP paper's settings
    python benchmarks/bench_nfsp_leduc.py --minutes 10 --set eta=0.5   # any config field changed
    python benchmarks/bench_nfsp_leduc.py --minutes 3 --continue-from runs/bench-nfsp-leduc-tuned2 --set eta=0.1

Prints the machine, the resolved config, one row per evaluation (steps, hands, training
seconds, exploitability = NashConv/2 in mbb/g of the average-policy network and, with
``sl_full_batch``, of the M_SL action frequencies it fits; and per seat how far the greedy Q
policy falls short of an exact best response against the current average, in mbb/g and as a
share of the best response's gain), when (if ever) 37 mbb/g (the Deep CFR paper's
NFSP figure for Leduc) was reached, the hands per second of the whole NFSP loop, and the hands
per second of self-play alone (acting with the networks, no learning), and for the final
networks how far an exact best response to the other seat's eta-mixture (what Q is trained
against) falls short of one to its average policy Pi (what fictitious play needs). The run directory
(metrics.jsonl, exploitability.png, policy) is kept in ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402  (one machine line for every benchmark)
from bot.evaluation.best_response import exploitability  # noqa: E402
from bot.run_files import ELAPSED_METRIC  # noqa: E402
from training.contract.entry import config_of, preset  # noqa: E402
from training.contract.rundir import CHECKPOINT_DIR, RunDir, load_torch  # noqa: E402
from training.nfsp.config import LEDUC_PAPER  # noqa: E402
from training.nfsp.diagnostics import best_response_quality, mixture_bias, window_q_strategy  # noqa: E402
from training.nfsp.learner import NFSP  # noqa: E402
from training.nfsp.steps import anticipatory  # noqa: E402
from training.nfsp.trainer import train  # noqa: E402

TARGET_MBB = 37.0


def self_play_rate(config, seconds: float = 10.0) -> float:
    """Hands per second of the vectorised self-play alone (NFSP's acting step, no learning)."""
    learner = NFSP(dataclasses.replace(config, learn_every=10**12))
    started, hands = time.perf_counter(), learner.hands
    while time.perf_counter() - started < seconds:
        learner.step()
    return (learner.hands - hands) / (time.perf_counter() - started)


def parse_value(text: str) -> bool | int | float | str:
    """``true``/``false``, an int, a float, else the text itself (``optimizer=adam``)."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="training time (evaluation excluded)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    parser.add_argument("--paper", action="store_true", help="the NFSP paper's Leduc settings, not the tuned preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=f"runs/bench-nfsp-leduc-{int(time.time())}")
    parser.add_argument("--continue-from", metavar="RUN", help="start from RUN's checkpoint (its config, "
                        "networks, memories and counters; --set may change anything but the memory sizes) "
                        "and train --minutes more: compares settings from a plateau without redoing the way there")
    args = parser.parse_args()

    if args.continue_from:
        source = RunDir.open(args.continue_from)
        if source.checkpoint_path is None:
            raise SystemExit(f"error: {args.continue_from} has no checkpoint to continue from")
        values = source.config()
        state = load_torch(source.checkpoint_path / "state.pt")
        start_hands, start_seconds = state["hands"], state["train_seconds"]
        values |= {"time_budget": start_seconds + args.minutes * 60, "steps": 10**9}
    else:
        start_hands, start_seconds = 0, 0.0
        values = (preset("nfsp", "leduc") if not args.paper else LEDUC_PAPER | {"game": "leduc"}) | {"seed": args.seed, "time_budget": args.minutes * 60, "steps": 10**9}
    for item in args.set:
        key, _, text = item.partition("=")
        values[key] = parse_value(text)
    config = config_of("nfsp", values)
    print(f"machine: {machine()}; torch {torch.__version__}, {config.threads} thread(s)")
    print(f"config: {dataclasses.asdict(config)}")
    rate = self_play_rate(config)
    print(f"self-play alone (no learning): {rate:,.0f} hands/s with {config.num_envs} hands in parallel")

    run = RunDir.create(args.out, config)
    if args.continue_from:
        shutil.copytree(source.checkpoint_path, run.path / CHECKPOINT_DIR)
    learner = train(config, run, resume=bool(args.continue_from), stream=io.StringIO())
    records = [r for r in run.read_metrics() if "exploitability_mbb" in r]
    print(f"{'steps':>9} {'hands':>11} {'train s':>9} {'exploitability mbb/g':>21} {'M_SL table mbb/g':>17} "
          f"{'greedy Q short of BR, mbb/g (share of BR gain), seat 0 / seat 1':>64}")
    for record in records:
        table = f"{record['sl_table_mbb']:.1f}" if "sl_table_mbb" in record else "-"
        gaps = " / ".join(f"{record[f'q_gap_mbb_{s}']:.0f} ({record[f'q_share_{s}']:.2f})" for s in range(2))
        print(f"{record['step']:>9,} {record['hands']:>11,} {record[ELAPSED_METRIC]:>9.1f} "
              f"{record['exploitability_mbb']:>21.1f} {table:>17} {gaps:>64}")
    reached = next((r for r in records if r["exploitability_mbb"] <= TARGET_MBB), None)
    last = records[-1]
    best = min(records, key=lambda r: r["exploitability_mbb"])
    hands, seconds = last["hands"] - start_hands, last[ELAPSED_METRIC] - start_seconds
    print(f"NFSP loop: {hands / seconds:,.0f} hands/s ({hands:,} hands in {seconds:.0f} s of training)")
    print(f"final exploitability (NashConv/2): {last['exploitability_mbb']:.1f} mbb/g; "
          f"best {best['exploitability_mbb']:.1f} at {best[ELAPSED_METRIC]:.0f} s / {best['hands']:,} hands")
    if reached:
        print(f"reached {TARGET_MBB} mbb/g after {reached[ELAPSED_METRIC]:.0f} s and {reached['hands']:,} hands")
    else:
        print(f"did not reach {TARGET_MBB} mbb/g within {args.minutes:g} minutes")
    for eta in sorted({config.eta, anticipatory(config, learner.step_count), 0.25, 0.1}, reverse=True):
        seats = mixture_bias(learner, eta)
        print(f"exact best response to eta-mixture (eta {eta:g}) short of one to Pi, final networks: "
              f"{seats[0]:.1f} / {seats[1]:.1f} mbb/g (seat 0 / seat 1)")
    if config.rl_full_batch:
        report = exploitability(learner.game, learner.policy.strategy())
        network = best_response_quality(learner, report)
        tabular = best_response_quality(learner, report, window_q_strategy(learner))
        print(f"final best responses short of exact ones to Pi (seat 0 / seat 1): greedy Q network "
              f"{network['q_gap_mbb_0']:.1f} / {network['q_gap_mbb_1']:.1f} mbb/g; tabular fitted Q on M_RL's "
              f"own sample means {tabular['q_gap_mbb_0']:.1f} / {tabular['q_gap_mbb_1']:.1f} mbb/g (the window's noise)")
    print(f"run directory: {run.path} (exploitability.png, metrics.jsonl)")


if __name__ == "__main__":
    main()
