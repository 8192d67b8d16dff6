"""A Deep CFR run on a flop hold'em game measures both of the SD-CFR paper's policies from the
same value networks: the SD-CFR average of its stack and its average-strategy network."""

from __future__ import annotations

import json

import pytest

from bot.agents.deep_cfr import DeepCFRBundle, InfosetBatch, StackAverage
from bot.evaluation.best_response import exploitability
from tests.training.flop.test_flop_solver import TINY_FHP
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.trainer import DeepCFRTrainer


def test_deep_cfr_run_logs_its_sd_cfr_average_and_its_average_network(tmp_path):
    gamedef = tmp_path / "tiny.game"
    gamedef.write_text(TINY_FHP.to_text())
    config = DeepCFRConfig(game=str(gamedef), algo="deep-cfr", iterations=2, traversals=100, width=8, sgd_steps=20,
                           batch_size=128, average_sgd_steps=30, average_batch_size=128, advantage_memory=5_000,
                           strategy_memory=5_000, traversal_batch=100, threads=1, canonical_suits=True,
                           evaluate_every=1, average_every=2, checkpoint_every=10)
    trainer = DeepCFRTrainer.new(config, tmp_path / "run", progress=False)
    records = [r for r in trainer.train() if "iteration" in r]
    assert [r["iteration"] for r in records if "sdcfr_exploitability_mbb" in r] == [1, 2]
    assert [r["iteration"] for r in records if "average_exploitability_mbb" in r] == [2]
    # the stack's exact average, brute force over every infoset, is what the run logged
    batch, exact = InfosetBatch(TINY_FHP), StackAverage(TINY_FHP)
    for entry in trainer.stack:
        nets = trainer.stack_nets(entry)
        exact.add(batch.strategy(None if nets[0] is None else nets), float(entry["weight"]))
    brute = exploitability(TINY_FHP, exact.strategy())
    assert records[-1]["sdcfr_exploitability_mbb"] == pytest.approx(brute.mbb(brute.exploitability), abs=1e-3)
    # the policy stays the average network; the value networks sit beside it, unlisted, as the
    # run's SD-CFR bundle (policy/stack)
    manifest = json.loads((trainer.run.policy_path / "bundle.json").read_text())
    assert manifest["kind"] == "deep-cfr" and not manifest.get("stack")
    assert DeepCFRBundle.load(trainer.run.policy_path).network("average.pt") is not None
    assert sorted(p.name for p in (trainer.run.policy_path / "stack").iterdir()) == [
        "bundle.json", "p0_t000001.pt", "p0_t000002.pt", "p1_t000001.pt", "p1_t000002.pt"]
    assert DeepCFRBundle.load(trainer.run.policy_path / "stack").kind == "sd-cfr"
