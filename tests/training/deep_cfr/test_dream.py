"""DREAM and OS-SD-CFR end to end on Kuhn: convergence, resuming from a checkpoint exactly, the
SD-CFR policy bundle the agents load, and the CLI's config resolution."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner

from bot.agents.deep_cfr import DeepCFRBundle, bundle_strategy
from bot.cli import main
from bot.evaluation.best_response import exploitability
from bot.registry import resolve_agent
from protocol.gamedef import load_game
from training.contract.entry import load_trainer, resolve_new
from training.contract.rundir import RunDir
from training.deep_cfr.dream import PRESETS, DreamConfig, DreamTrainer

KUHN_UNIFORM_MBB = 458.333
TIMING_KEYS = {"traversal_s", "training_s", "evaluation_s", "elapsed_s", "infosets_per_s",
               "q_training_s_p0", "q_training_s_p1"}


def kuhn(**overrides) -> DreamConfig:
    fast = dict(PRESETS["kuhn"], game="kuhn", sgd_steps=100, batch_size=256, q_sgd_steps=30, q_batch_size=128)
    return DreamConfig(**{**fast, **overrides})


@pytest.mark.parametrize("algo", ["dream", "os-sd-cfr"])
def test_converges_on_kuhn(algo: str, tmp_path) -> None:
    trainer = DreamTrainer.new(kuhn(algo=algo, iterations=15, seed=1), tmp_path / algo, progress=False)
    records = trainer.train()
    curve = [r["sdcfr_exploitability_mbb"] for r in records]
    assert curve[-1] < 80.0, curve  # uniform play: 458.3 mbb/g
    assert curve[-1] < curve[0] / 3
    assert np.all(np.diff([r["nodes_touched"] for r in records]) > 0)
    assert ("q_loss_p0" in records[-1]) == (algo == "dream")
    # the policy is an SD-CFR bundle whose exact strategy is the logged average
    bundle = DeepCFRBundle.load(tmp_path / algo)
    assert bundle.kind == "sd-cfr" and len(bundle.stack) == 16
    assert bundle.bundle.provenance["algorithm"] == algo and bundle.bundle.provenance["config"]["algo"] == algo
    report = exploitability(load_game("kuhn"), bundle_strategy(bundle))
    assert report.mbb(report.exploitability) == pytest.approx(curve[-1], rel=1e-4)
    agent = resolve_agent(str(tmp_path / algo), load_game("kuhn"))
    assert agent is not None


def test_resume_continues_exactly(tmp_path) -> None:
    """Stop after 3 iterations, resume to 6: the same metrics, memories, Q baselines and stack
    as a run of 6 without a stop (memories small enough that reservoir replacement is active)."""
    config = kuhn(iterations=6, seed=3, traversals=300, traversal_batch=300, advantage_memory=1500, q_memory=500)
    reference = DreamTrainer.new(config, tmp_path / "reference", progress=False)
    reference.train()
    stopped = DreamTrainer.new(dataclasses.replace(config, iterations=3), tmp_path / "stopped", progress=False)
    stopped.train()
    resumed = DreamTrainer.continue_run(config, RunDir.open(tmp_path / "stopped"), progress=False)
    assert resumed.iteration == 3
    resumed.train()

    def comparable(run):
        return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in run.read_metrics()]

    assert comparable(resumed.run) == comparable(reference.run)
    for a, b in zip(resumed.advantage, reference.advantage, strict=True):
        assert a.seen == b.seen and a.seen > a.capacity
        for name in a.data:
            assert np.array_equal(a.stored()[name], b.stored()[name]), name
    for a, b in zip(resumed.baselines, reference.baselines, strict=True):
        assert a.buffer.seen == b.buffer.seen > a.buffer.capacity
        for name in a.buffer.data:
            assert np.array_equal(a.buffer.data[name], b.buffer.data[name]), name
        for (name, x), y in zip(a.net.state_dict().items(), b.net.state_dict().values(), strict=True):
            assert np.array_equal(x.numpy(), y.numpy()), name
    assert np.array_equal(bundle_strategy(DeepCFRBundle.load(tmp_path / "stopped")),
                          bundle_strategy(DeepCFRBundle.load(tmp_path / "reference")))


def resolve(**options) -> DreamConfig:
    return resolve_new(load_trainer(options.get("algo", "dream")), options).config


def test_config_resolution_and_cli_errors(tmp_path) -> None:
    paper = resolve(game="leduc", preset="paper")
    assert (paper.traversals, paper.advantage_memory, paper.sgd_steps, paper.batch_size) == (900, 2_000_000, 3000, 2048)
    assert (paper.q_memory, paper.q_sgd_steps, paper.q_batch_size, paper.preset) == (200_000, 1000, 512, "paper")
    assert not paper.merge_duplicates  # the tuned table's fit settings are not mixed in
    fhp = resolve(game="fhp", algo="os-sd-cfr", preset="paper", seed=5)
    assert (fhp.traversals, fhp.advantage_memory, fhp.sgd_steps, fhp.seed, fhp.algo) == (50_000, 40_000_000, 10_000, 5, "os-sd-cfr")
    (tmp_path / "c.toml").write_text("epsilon = 0.3\ntraversals = 77\n")
    both = resolve(game="leduc", preset="paper", config_path=str(tmp_path / "c.toml"), iterations=9)
    assert (both.epsilon, both.traversals, both.iterations, both.sgd_steps) == (0.3, 77, 9, 3000)
    assert resolve(game="kuhn", config_path=str(tmp_path / "c.toml")).epsilon == 0.3
    runner = CliRunner()
    result = runner.invoke(main, ["train", "--algo", "dream", "--game", "kuhn", "--preset", "paper", "--out", str(tmp_path / "p")])
    assert result.exit_code != 0 and "gives settings for leduc and fhp only" in result.output
    (tmp_path / "bad.toml").write_text("epsilon = 0.0\n")
    result = runner.invoke(main, ["train", "--algo", "dream", "--game", "kuhn", "--config", str(tmp_path / "bad.toml"),
                                  "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "epsilon must be in (0, 1]" in result.output
    result = runner.invoke(main, ["train", "--algo", "sd-cfr", "--game", "kuhn", "--preset", "paper", "--out", str(tmp_path / "y")])
    assert result.exit_code != 0 and "--preset does not apply to --algo sd-cfr" in result.output
    DreamTrainer.new(kuhn(iterations=1), tmp_path / "done", progress=False).train()
    result = runner.invoke(main, ["train", "--algo", "sd-cfr", "--resume", str(tmp_path / "done")])
    assert result.exit_code != 0 and "is a dream run; resume it with --algo dream" in result.output
    result = runner.invoke(main, ["train", "--algo", "dream", "--resume", str(tmp_path / "done"), "--iterations", "2"])
    assert result.exit_code == 0, result.output
    assert len(RunDir(tmp_path / "done").read_metrics()) == 2
