"""A stop request or the end of the time budget inside a long step: an SGD fit of a million
steps is abandoned at the first check past the grace period (counted in checks, not seconds),
the run says so and exits 0, and the last checkpoint stands. NFSP logs its last partial period
once."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

import training.contract.entry
from bot.cli import main
from training.contract.entry import StepAbandoned, StopRequest, resolve_new
from training.contract.rundir import RunDir
from training.deep_cfr.trainer import TRAINERS, DeepCFRTrainer

#: A fit far longer than any test may wait: it must be cut short.
LONG_FIT = {"sgd_steps": 1_000_000, "fit_backend": "torch", "traversals": 20, "iterations": 3}


class CountingStop(StopRequest):
    """A stop request made at the ``request_at``-th check, with no grace; a fake clock that
    moves one second per check (for the time budget)."""

    def __init__(self, request_at: int | None = None, grace: float = 0.0) -> None:
        super().__init__(grace=grace)
        self.request_at = request_at
        self.checks = 0
        self.clock = lambda: float(self.checks)

    def check(self) -> None:
        self.checks += 1
        if self.checks == self.request_at:
            self.request()
        super().check()


def _trainer(tmp_path, **overrides) -> DeepCFRTrainer:
    config = resolve_new(TRAINERS["sd-cfr"], {"game": "kuhn"}).config
    return DeepCFRTrainer.new(dataclasses.replace(config, **(LONG_FIT | overrides)), tmp_path / "r", progress=False)


def test_a_stop_request_abandons_a_long_fit_at_the_next_check(tmp_path) -> None:
    trainer = _trainer(tmp_path)
    stop = CountingStop(request_at=50)
    with pytest.raises(StepAbandoned, match="stop requested"):
        trainer.train(stop)
    # check 1 is p0's traversal batch, checks 2.. the fit's steps: stopped at step 49 of 1,000,000
    assert stop.checks == 50 and trainer.iteration == 1
    assert trainer.run.checkpoint_path is None and trainer.run.read_metrics() == []


def test_the_time_budget_abandons_a_long_fit(tmp_path) -> None:
    trainer = _trainer(tmp_path, time_budget=30.0)
    stop = CountingStop(grace=10.0)  # the budget ends 30 "seconds" (checks) in, the grace 10 later
    with pytest.raises(StepAbandoned, match="time budget reached"):
        trainer.train(stop)
    assert stop.checks == 40


def test_a_step_that_ends_within_the_grace_is_finished_and_checkpointed(tmp_path) -> None:
    trainer = _trainer(tmp_path, sgd_steps=5)
    stop = CountingStop(request_at=3, grace=1_000.0)
    records = trainer.train(stop)
    assert [r["iteration"] for r in records] == [1] and trainer.run.checkpoint_path is not None


def test_the_cli_says_the_step_was_abandoned_and_exits_0(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(training.contract.entry, "StopRequest", lambda: CountingStop(request_at=30))
    config = tmp_path / "long.toml"
    config.write_text("sgd_steps = 1000000\nfit_backend = \"torch\"\ntraversals = 20\n")
    result = CliRunner().invoke(main, ["train", "--algo", "sd-cfr", "--game", "kuhn", "--config", str(config),
                                       "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert ("stop requested: the step in progress would have run on for more than 0 s, so it was abandoned; no "
            "checkpoint was written yet, so a resume starts the run over; continue with: pokerbot train --algo "
            f"sd-cfr --resume {tmp_path / 'r'}") in result.output
    assert (tmp_path / "r" / "config.toml").is_file()  # kept: a resume continues it


def test_nfsp_logs_its_last_partial_period_once(tmp_path) -> None:
    result = CliRunner().invoke(main, ["train", "--algo", "nfsp", "--game", "kuhn", "--iterations", "30",
                                       "--out", str(tmp_path / "n")])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (tmp_path / "n" / "metrics.jsonl").read_text().splitlines()]
    assert RunDir.open(tmp_path / "n").config()["eval_every"] > 30  # the one period is a partial one
    assert [r["iteration"] for r in records] == [30]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fused_fit_runs_in_calls_that_add_up_to_one_and_can_be_abandoned_between_them(monkeypatch, threads) -> None:
    """The compiled fit runs in calls of STEPS_PER_CALL steps (Adam's count carried over): the
    same weights and losses as one call; a check between calls stops it at a call boundary."""
    import numpy as np
    import torch

    import training.common.fused_network as fused
    from bot.agents.network import DeepCFRNetwork

    rng = np.random.default_rng(0)
    cards = rng.integers(-1, 6, (60, 2)).astype(np.int64)
    bets = np.where(rng.random((60, 8)) < 0.3, -1.0, rng.random((60, 8)) * 4).astype(np.float32)
    legal = (rng.random((60, 3)) > 0.25).astype(np.float32)
    target, weight = rng.standard_normal((60, 3)).astype(np.float32), rng.random(60).astype(np.float32)
    picks = rng.integers(0, 60, (70, 16))

    def fit(per_call: int, check=None):
        monkeypatch.setattr(fused, "STEPS_PER_CALL", per_call)
        torch.manual_seed(3)
        net = DeepCFRNetwork((1, 1), 8, 16)
        losses = fused.fit_weighted_mse(net, fused.Features.build(cards, bets, (1, 1)), target, legal, weight, 50.0,
                                        70, 1e-3, 1.0, picks=picks, threads=threads, check=check)
        return losses, torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()

    whole, weights = fit(10_000)
    parts, part_weights = fit(16)  # 5 calls: 16, 16, 16, 16, 6 steps
    np.testing.assert_array_equal(parts, whole)
    np.testing.assert_array_equal(part_weights, weights)

    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise StepAbandoned("stop requested")

    with pytest.raises(StepAbandoned):
        fit(16, check)
    assert len(calls) == 2  # after 32 of the 70 steps


class BudgetEndsAt(CountingStop):
    """The time budget runs out at the ``at``-th check (with no grace), inside a step."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def check(self) -> None:
        if self.checks + 1 == self.at:
            self.budget_ends(0.0)
        super().check()


@pytest.mark.parametrize(("checkpoint_every", "abandoned"), [(1, 2), (2, 4)])
def test_deep_cfr_fits_its_average_network_when_the_budget_ends_inside_an_iteration(tmp_path, capsys,
                                                                                    checkpoint_every, abandoned) -> None:
    """The budget runs out inside iteration ``abandoned``, which is abandoned; the closing
    average fit still runs, on the last checkpoint's state, and writes the policy, as a
    ``--resume`` would; iterations finished after that checkpoint are dropped from the
    metrics and from the records returned alike."""
    config = resolve_new(TRAINERS["deep-cfr"], {"game": "kuhn"}).config
    settings = {"sgd_steps": 5, "fit_backend": "torch", "traversals": 20, "iterations": abandoned + 1,
                "checkpoint_every": checkpoint_every, "checkpoint_seconds": 0.0, "time_budget": 1e6,
                "average_sgd_steps": 50}
    trainer = DeepCFRTrainer.new(dataclasses.replace(config, **settings), tmp_path / "r", progress=False)
    checks_per_iteration = 2 * (1 + 5)  # per player: one traversal batch, then five fit steps
    records = trainer.train(BudgetEndsAt((abandoned - 1) * checks_per_iteration + 4))
    checkpointed = (abandoned - 1) // checkpoint_every * checkpoint_every
    kept = list(range(1, checkpointed + 1))
    assert [r.get("iteration") for r in records[:-1]] == kept and "average_exploitability_mbb" in records[-1]
    assert (trainer.run.policy_path / "average.pt").is_file()
    metrics = trainer.run.read_metrics()
    assert [(m["iteration"], bool(m.get("final"))) for m in metrics] == [(i, False) for i in kept] + [(checkpointed, True)]
    assert json.loads((tmp_path / "r" / "status.json").read_text())["phase"] == "finished"
    assert f"time budget reached inside iteration {abandoned}: it is abandoned; the closing fit uses the last checkpoint" in (
        capsys.readouterr().err)
