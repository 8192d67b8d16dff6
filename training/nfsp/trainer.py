"""The NFSP run loop: self-play steps until the budget, metrics, checkpoints, the policy bundle;
and ``pokerbot train --algo nfsp``'s entry in the run contract (:mod:`training.contract.entry`)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path

from bot.agents.bundle import write_bundle
from bot.agents.infosets import is_small
from bot.agents.nfsp import POLICY_FILE, NFSPAgent
from bot.run_files import ELAPSED_METRIC
from training.contract import plots
from training.contract.entry import CheckpointClock, StopRequest, Trainer
from training.contract.loop import StepLoop
from training.contract.rundir import Progress, RunDir, save_torch
from training.contract.strength import (
    StrengthSettings,
    measure_strength,
    strength_reference,
    strength_summary,
)
from training.nfsp.config import PRESETS, NFSPConfig
from training.nfsp.counts import check_countable
from training.nfsp.diagnostics import evaluate
from training.nfsp.learner import NFSP


def train(config: NFSPConfig, run: RunDir, resume: bool = False, stream=None, stop: StopRequest | None = None,
          force: bool = False) -> NFSP:
    """Run (or continue) NFSP in ``run`` until ``config.steps`` steps, the time budget or a stop
    request (:class:`~training.contract.entry.StopRequest`; without one, this installs its own).

    Every ``eval_every`` steps a metrics line is appended (counters, memory fill, losses, wall
    time, hands, and the exact exploitability of the average policy in small games); every
    ``checkpoint_every`` steps or ``checkpoint_seconds``, whichever comes first, on
    Ctrl-C/SIGTERM and at the end a checkpoint is written; at the end the policy bundle and, for
    small games, ``exploitability.png``.
    """
    learner = NFSP(config)
    resumed_from = None
    if resume:
        resumed_from = run.resume_checkpoint(force)
        if resumed_from is not None:
            learner.load_checkpoint(resumed_from)
        run.truncate_metrics(learner.step_count)
    small = is_small(learner.game)
    periods = -(-config.steps // config.eval_every)
    progress = Progress(periods, learner.step_count // config.eval_every + 1, config.time_budget, stream=stream,
                        trained_seconds=learner.train_seconds)
    logged_at = learner.step_count  # the step of the last metrics line (one line per step at most)
    strength = StrengthSettings.of(config)
    reference = strength_reference(strength, learner.game)
    try:
        with nullcontext(stop) if stop is not None else StopRequest(stream) as stop:
            loop = StepLoop(stop, config.steps, config.time_budget,
                            CheckpointClock(config.checkpoint_every, config.checkpoint_seconds),
                            learner.step_count if resumed_from is not None else None)
            while loop.running(learner.step_count, learner.train_seconds):
                period = learner.step_count // config.eval_every + 1
                progress.start_iteration(period, "self-play")
                started = time.perf_counter()
                learner.step()
                learner.train_seconds += time.perf_counter() - started
                progress.advance_iteration(learner.step_count - (period - 1) * config.eval_every, config.eval_every)
                if learner.step_count % config.eval_every == 0 or learner.step_count == config.steps:
                    record = {"iteration": learner.step_count, **learner.metrics(),
                              ELAPSED_METRIC: round(learner.train_seconds, 3)}
                    if small:
                        record.update(evaluate(learner))
                    if strength.due(learner.step_count):  # off the training clock
                        record.update(measure_strength(learner.game, NFSPAgent(learner.game, learner.policy), reference, strength))
                    run.append_metrics(record)
                    logged_at = learner.step_count
                    progress.end_iteration(period, _summary(record))
                loop.checkpoint_if_due(learner.step_count, lambda: checkpoint(learner, run))
    finally:
        progress.close()
    if loop.unsaved(learner.step_count):
        if learner.step_count != logged_at:  # a last partial period (budget, stop) still gets its line
            record = {"iteration": learner.step_count, **learner.metrics(),
                      ELAPSED_METRIC: round(learner.train_seconds, 3)}
            if small:
                record.update(evaluate(learner))
            run.append_metrics(record)
        loop.checkpoint(learner.step_count, lambda: learner.save_checkpoint(run))
    save_policy(learner, run)
    if small:
        plot_exploitability(run)
    plots.plot_strength(run.path / "strength.png", run.read_metrics(), ELAPSED_METRIC, "training seconds",
                        title=f"NFSP average policy, {config.game}")  # fmt: skip
    return learner


def _summary(record: dict) -> str:
    text = f"{record['hands']:,} hands, eps {record['epsilon']:.4f}, q loss {record['q_loss_0']:.3g}/{record['q_loss_1']:.3g}"
    text += f", pi loss {record['pi_loss_0']:.3g}/{record['pi_loss_1']:.3g}"
    if "exploitability_mbb" in record:
        text += f", exploitability {record['exploitability_mbb']:.1f} mbb/g (NashConv/2)"
    strength = strength_summary(record)
    return f"{text}, {strength}" if strength else text


def plot_exploitability(run: RunDir) -> Path:
    """``exploitability.png``: average exploitability against hands played and training time, of
    Pi and (with ``sl_full_batch``) of the M_SL frequencies it is trained to match."""
    records = [r for r in run.read_metrics() if "exploitability_mbb" in r]
    curves = {"NFSP average policy (network Pi)": "exploitability_mbb",
              "M_SL action frequencies (what Pi fits)": "sl_table_mbb"}
    panels = [(label, {name: ([r[key] for r in records if metric in r], [r[metric] for r in records if metric in r])
                       for name, metric in curves.items() if any(metric in r for r in records)})
              for key, label in (("hands", "hands of self-play"), (ELAPSED_METRIC, "training seconds"))]
    return plots.plot_exploitability(run.path / "exploitability.png", panels,
                                     title=f"NFSP average policy, {run.config().get('game', '')}")


def checkpoint(learner: NFSP, run: RunDir) -> None:
    """The checkpoint, and the policy bundle as of it: a run still training (or killed) plays
    and is matched as of its last checkpoint, as a Deep CFR run does."""
    learner.save_checkpoint(run)
    save_policy(learner, run)


def save_policy(learner: NFSP, run: RunDir) -> None:
    """The average policy as a bundle of kind ``nfsp`` (:mod:`bot.agents.bundle`)."""
    config = learner.config
    save_torch(run.policy_path / POLICY_FILE, learner.policy.bundle())
    provenance = {"algorithm": "nfsp", "config": {k: v for k, v in asdict(config).items() if v is not None},
                  "seed": config.seed, "iterations": learner.step_count}
    write_bundle(run.policy_path, "nfsp", learner.game, [POLICY_FILE], provenance)


def _check(values: dict, options: dict) -> dict:
    """Fail before the run directory exists when an exact step cannot count the game's inputs."""
    from bot.agents.encoding import InfosetEncoder
    from protocol.gamedef import load_game

    for option in ("sl_full_batch", "rl_full_batch"):
        if values.get(option):
            check_countable(InfosetEncoder(load_game(str(values.get("game", "leduc")))), option)
    return values


def _train(config: NFSPConfig, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> NFSP:
    return train(config, run, resume, stop=stop, force=force)


#: ``--algo nfsp`` for :mod:`training.contract.entry` (``--iterations`` counts self-play steps).
TRAINERS = {"nfsp": Trainer(
    algo="nfsp", config_class=NFSPConfig,
    flags={"game": "game", "iterations": "steps", "time_budget": "time_budget", "seed": "seed",
           "device": "device", "threads": "threads"},
    resumable=frozenset({"steps", "time_budget", "device", "threads"}),
    presets=PRESETS, train=_train, prepare=_check, cpu_only={"fused": (True, False)},
)}
