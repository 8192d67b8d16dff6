"""Which run's policy the ``fhp_lossless`` agent plays: a finished full-width solve publishes
it, one stopped early leaves the published policy alone (as an abstraction run does,
:mod:`training.abstraction.publish`). Shown on the 10-card FHP of the solver's tests, named
``fhp_lossless`` here so that its solve publishes."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import training.flop.trainer as trainer
from bot.abstraction.spec import AbstractionSpec, policy_path
from tests.training.flop.test_flop_solver import TINY_FHP_TEXT
from training.contract.rundir import RunDir
from training.contract.stop import StopRequest
from training.flop.trainer import FlopSolveConfig, solve


@pytest.fixture()
def tiny_lossless(tmp_path, monkeypatch) -> tuple[str, AbstractionSpec]:
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path / "cache"))
    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    spec = AbstractionSpec(trainer.LOSSLESS_NAME, str(gamedef), (None, None))
    monkeypatch.setattr(trainer, "SPECS", {trainer.LOSSLESS_NAME: spec})
    return str(gamedef), spec


def test_a_finished_solve_publishes_and_one_stopped_early_keeps_it(tmp_path, tiny_lossless, capsys):
    gamedef, spec = tiny_lossless
    config = FlopSolveConfig(game=gamedef, iterations=4, eval_every=4, threads=1)
    first = RunDir.create(tmp_path / "first", config)
    solve(config, first)
    published = np.load(policy_path(spec))
    meta = json.loads(policy_path(spec).with_name("policy.json").read_text())
    assert meta["iterations"] == 4 and meta["run"] == str(first.path.resolve()) and published.shape[1] == 3
    stop = StopRequest(stream=io.StringIO())
    stop.request()
    stopped = RunDir.create(tmp_path / "stopped", FlopSolveConfig(game=gamedef, iterations=8, threads=1, seed=1))
    console = trainer.Console(file=io.StringIO(), width=400)
    solve(FlopSolveConfig(game=gamedef, iterations=8, threads=1, seed=1), stopped, stop=stop, console=console)
    assert np.array_equal(np.load(policy_path(spec)), published)
    assert json.loads(policy_path(spec).with_name("policy.json").read_text()) == meta
    said = console.file.getvalue()
    assert f"stopped early: the policy is in {stopped.policy_path}; 'fhp_lossless' is still {first.path.resolve()} (4" in said
    assert f"pokerbot train --algo flop-cfr --resume {stopped.path}" in said
