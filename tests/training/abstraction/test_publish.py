"""Which run's policy a named abstraction agent plays: a finished run publishes it (and says
whose it replaced); a run stopped early keeps the published one."""

from __future__ import annotations

import json
import os

import numpy as np
from click.testing import CliRunner

from bot.abstraction.spec import SPECS, policy_path
from bot.cli import main as pokerbot
from training.abstraction.run import AbstractionConfig, train
from training.contract.rundir import RunDir
from training.contract.stop import StopRequest

BASE = ["train", "--algo", "abstraction", "--game", "leduc", "--size", "lossless", "--threads", "1"]


def solve(tmp_path, name: str, iterations: int, seed: int) -> tuple[str, str]:
    out = str(tmp_path / name)
    (tmp_path / "small.toml").write_text('solver = "es-mccfr"\nbatch = 1000\n')
    result = CliRunner().invoke(pokerbot, BASE + ["--iterations", str(iterations), "--seed", str(seed),
                                                  "--config", str(tmp_path / "small.toml"), "--out", out])  # fmt: skip
    assert result.exit_code == 0, result.output
    return out, result.output


def published() -> tuple[np.ndarray, dict]:
    target = policy_path(SPECS["leduc_lossless"])
    return np.load(target), json.loads(target.with_name("policy.json").read_text())


def test_a_finished_run_replaces_the_named_policy_and_says_whose(tmp_path):
    first, _ = solve(tmp_path, "first", 3000, 1)
    second, output = solve(tmp_path, "second", 2000, 2)
    table, meta = published()
    assert meta["iterations"] == 2000 and np.array_equal(table, np.load(f"{second}/policy/average.npy"))
    assert meta["solver"] == "es-mccfr" and "scheme" not in meta  # what `pokerbot agents` names as its solver
    # one file system here: the published table is the run's own file, not a second copy of it
    assert os.stat(policy_path(SPECS["leduc_lossless"])).st_ino == os.stat(f"{second}/policy/average.npy").st_ino
    assert "replacing" in output and "first (3,000 iterations)" in " ".join(output.split())
    # resuming the first run (already at its target) publishes it again
    result = CliRunner().invoke(pokerbot, ["train", "--algo", "abstraction", "--resume", first])
    assert result.exit_code == 0, result.output
    table, meta = published()
    assert meta["iterations"] == 3000 and np.array_equal(table, np.load(f"{first}/policy/average.npy"))


def test_a_run_stopped_early_keeps_the_published_policy(tmp_path):
    first, _ = solve(tmp_path, "first", 3000, 1)
    before = published()
    stop = StopRequest()
    stop.request()
    config = AbstractionConfig("leduc_lossless", solver="es-mccfr", iterations=5000, seed=3, threads=1, batch=1000)
    train(config, RunDir.create(tmp_path / "stopped", config, "abstraction"), stop=stop)
    after = published()
    assert after[1] == before[1] and np.array_equal(after[0], before[0])
    assert (tmp_path / "stopped" / "policy" / "average.npy").exists()
