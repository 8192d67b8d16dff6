"""Distilling an SD-CFR stack (``--algo distil``): the teacher's targets are the stack's exact
average, the student is a playable deep-cfr bundle close to it, resume is exact, bad teachers
and damaged samples are one-line errors."""

from __future__ import annotations

import dataclasses
import json
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from bot.agents.deep_cfr import DeepCFRBundle, InfosetBatch, StackAverage
from bot.agents.encoding import InfosetEncoder
from bot.cli import main
from bot.evaluation.best_response import exploitability
from bot.registry import load_strategy, resolve_agent
from protocol.gamedef import load_game
from tests.conftest import signal_during
from training.contract.entry import resolve_new
from training.deep_cfr.distil import Distillation
from training.deep_cfr.stack_teacher import StackTeacher
from training.deep_cfr.trainer import TRAINERS, DeepCFRTrainer


@pytest.fixture(scope="module")
def leduc_stack(tmp_path_factory) -> Path:
    """A 4-iteration SD-CFR stack on Leduc (small fits: the networks need only be distinct)."""
    out = tmp_path_factory.mktemp("distil") / "leduc-sd"
    options = {"game": "leduc", "iterations": 4, "traversals": 100, "seed": 2, "threads": 1}
    config = resolve_new(TRAINERS["sd-cfr"], options).config
    DeepCFRTrainer.new(dataclasses.replace(config, sgd_steps=40, width=16), out, progress=False).train()
    return out / "policy"


def test_teacher_targets_are_the_exact_stack_average(leduc_stack) -> None:
    bundle = DeepCFRBundle.load(leduc_stack)
    batch = InfosetBatch(bundle.game)
    average = StackAverage(bundle.game)  # what bundle_strategy computes, its denominators kept
    for entry in bundle.stack:
        nets = None if entry.get("uniform") else tuple(bundle.network(f) for f in entry["files"])
        average.add(batch.strategy(nets, argmax_fallback=bundle.argmax_fallback), float(entry["weight"]))
    exact = average.strategy()
    reached = batch.space.from_dense(average.denominator[:, None])[:, 0] > 0  # some entry plays to it
    row_of = {(int(n), tuple(c)): i for i, (n, c) in enumerate(zip(batch.space.node, batch.cards.numpy(), strict=True))}
    teacher = StackTeacher(bundle, InfosetEncoder(bundle.game))
    samples = teacher.play(3000, exploration=0.3, rng=np.random.default_rng(0))
    rows = np.array([row_of[(int(n), tuple(c.astype(np.int64)))] for n, c in zip(samples.node, samples.cards, strict=True)])
    assert len(samples) > 6000 and len(np.unique(rows)) > 300
    assert set(teacher.encoder.tree.round[samples.node]) == {0, 1}
    assert set(teacher.encoder.tree.actor[samples.node]) == {0, 1}
    keep = reached[rows]
    assert keep.mean() > 0.9
    np.testing.assert_allclose(samples.target[keep], exact[rows[keep]], atol=2e-6)
    np.testing.assert_allclose(samples.target.sum(axis=1), 1.0, atol=1e-6)


def test_distilled_student_plays_close_to_its_teacher_and_resumes_exactly(kuhn_run, tmp_path, monkeypatch) -> None:
    runner = CliRunner()
    teacher = exploitability(load_game("kuhn"), load_strategy(kuhn_run / "policy")[1])
    toml = tmp_path / "d.toml"
    toml.write_text("hands = 20000\nhands_per_chunk = 5000\nheld_out_every = 4\nwidth = 16\nbatch_size = 512\n"
                    "learning_rate = 0.005\neval_every = 100\ncheckpoint_every = 100\n")
    base = ["train", "--algo", "distil", "--game", "kuhn", "--teacher", str(kuhn_run), "--config", str(toml),
            "--threads", "1", "--seed", "1"]
    result = runner.invoke(main, [*base, "--iterations", "600", "--out", str(tmp_path / "whole")])
    assert result.exit_code == 0, result.output
    student = exploitability(load_game("kuhn"), load_strategy(tmp_path / "whole" / "policy")[1])
    assert abs(student.mbb(student.exploitability) - teacher.mbb(teacher.exploitability)) < 15.0
    metrics = [line for line in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines() if line]
    assert len(metrics) == 6 and '"held_out_kl"' in metrics[-1]
    agent = resolve_agent(str(tmp_path / "whole" / "policy"), load_game("kuhn"))
    assert agent.name == "deep-cfr"
    # the same run interrupted by Ctrl-C during step 301 and resumed ends with the same network
    with monkeypatch.context() as patch:
        signal_during(patch, Distillation, "train_step", 300, signal.SIGINT)
        result = runner.invoke(main, [*base, "--iterations", "600", "--out", str(tmp_path / "split")])
    assert result.exit_code == 0 and "stopped on request" in result.output, result.output
    result = runner.invoke(main, ["train", "--algo", "distil", "--resume", str(tmp_path / "split"), "--iterations", "600"])
    assert result.exit_code == 0, result.output
    whole = torch.load(tmp_path / "whole" / "policy" / "average.pt", weights_only=True)
    split = torch.load(tmp_path / "split" / "policy" / "average.pt", weights_only=True)
    assert all(torch.equal(whole[k], split[k]) for k in whole)
    last = [json.loads((tmp_path / name / "metrics.jsonl").read_text().splitlines()[-1]) for name in ("whole", "split")]
    assert last[0]["iteration"] == last[1]["iteration"] == 600 and last[0]["held_out_kl"] == last[1]["held_out_kl"]


def test_bad_teachers_and_damaged_samples_are_one_line_errors(kuhn_run, tmp_path) -> None:
    runner = CliRunner()
    base = ["train", "--algo", "distil", "--threads", "1"]
    result = runner.invoke(main, [*base, "--game", "kuhn", "--out", str(tmp_path / "a")])
    assert result.exit_code == 2 and "needs --teacher" in result.output
    result = runner.invoke(main, [*base, "--game", "leduc", "--teacher", str(kuhn_run), "--out", str(tmp_path / "b")])
    assert result.exit_code == 2 and "trained on kuhn" in result.output and not (tmp_path / "b").exists()
    result = runner.invoke(main, [*base, "--game", "kuhn", "--teacher", str(tmp_path), "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    toml = tmp_path / "d.toml"
    toml.write_text("hands = 2000\nhands_per_chunk = 1000\neval_every = 10\n")
    run = tmp_path / "d"
    result = runner.invoke(main, [*base, "--game", "kuhn", "--teacher", str(kuhn_run), "--config", str(toml),
                                  "--iterations", "10", "--out", str(run)])
    assert result.exit_code == 0, result.output
    (run / "teacher.sha256").write_text("0" * 64)
    result = runner.invoke(main, ["train", "--algo", "distil", "--resume", str(run), "--iterations", "20"])
    assert result.exit_code == 2 and "has changed since this run drew its samples" in result.output
    (run / "teacher.sha256").unlink()  # read as a first sitting: the digest is recorded again
    (run / "samples" / "chunk_00001.npz").write_bytes(b"not a zip")
    result = runner.invoke(main, ["train", "--algo", "distil", "--resume", str(run), "--iterations", "20"])
    assert result.exit_code == 2 and "chunk_00001.npz: damaged samples file" in result.output
