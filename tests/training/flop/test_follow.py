"""``pokerbot exploit RUN --follow``: an FHP SD-CFR run's exact curve measured beside it equals the
brute-force exploitability of each stack prefix, goes on after a restart, and drops what a
resume trained again."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import threading
import time

import numba
import pytest
import torch
from click.testing import CliRunner

from bot.agents.deep_cfr import DeepCFRBundle, InfosetBatch, StackAverage
from bot.cli import main
from bot.evaluation.best_response import exploitability
from bot.flop.network_policies import stack_nets
from bot.run_files import LOCK_FILE
from bot.threads import thread_counts_kept
from tests.training.flop.test_flop_solver import TINY_FHP
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.trainer import DeepCFRTrainer
from training.flop.follow import RunFollower, stack_bundle


def trained_run(tmp_path, iterations: int = 3):
    """A finished 3-iteration SD-CFR run on the tiny FHP that never measured itself."""
    gamedef = tmp_path / "tiny.game"
    gamedef.write_text(TINY_FHP.to_text())
    config = DeepCFRConfig(game=str(gamedef), algo="sd-cfr", iterations=iterations, traversals=100, width=8,
                           sgd_steps=20, batch_size=128, advantage_memory=5_000, strategy_memory=5_000,
                           traversal_batch=100, threads=1, canonical_suits=True, evaluate_every=0,
                           checkpoint_every=10)
    trainer = DeepCFRTrainer.new(config, tmp_path / "run", progress=False)
    trainer.train()
    path = trainer.run.path
    del trainer
    gc.collect()  # the run's lock goes with its last RunDir: the run is no longer being trained
    return path


def brute_force(run, iterations: int, exponent: float = 1.0) -> float:
    """Exploitability of the SD-CFR average of the stack's first ``iterations`` networks, every
    infoset, iteration t weighted ``t^exponent``."""
    bundle = DeepCFRBundle.load(run / "policy")
    batch, average = InfosetBatch(TINY_FHP), StackAverage(TINY_FHP)
    for entry in bundle.stack[: iterations + 1]:
        nets = stack_nets(bundle, entry)
        average.add(batch.strategy(None if nets[0] is None else nets), float(entry["weight"]) ** exponent)
    report = exploitability(TINY_FHP, average.strategy())
    return report.mbb(report.exploitability)


def test_follow_measures_every_kth_prefix_then_the_last_and_resumes(tmp_path):
    run = trained_run(tmp_path)
    follower = RunFollower(run, 2, TINY_FHP, log=lambda line: None)
    assert follower.step(running=True)  # iteration 2 is due and on disk
    assert not follower.step(running=True)  # 4 is not: a live run is waited for
    assert follower.follow(0.1, running=lambda: False) == 1  # stopped: its last iteration, 3
    curve = [json.loads(line) for line in follower.curve_path.read_text().splitlines()]
    assert [r["iteration"] for r in curve] == [2, 3]
    clock = {r["iteration"]: r["elapsed_s"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
             if "iteration" in r}
    assert [r["elapsed_s"] for r in curve] == [clock[2], clock[3]]  # the run's training clock at each point
    for record in curve:
        assert record["sdcfr_exploitability_mbb"] == pytest.approx(brute_force(run, record["iteration"]), abs=1e-3)
    assert RunFollower(run, 2, TINY_FHP).follow(0.1, running=lambda: False) == 0  # restarted: nothing new


def test_follow_drops_records_of_iterations_trained_again(tmp_path):
    run = trained_run(tmp_path)
    RunFollower(run, 1, TINY_FHP, log=lambda line: None).follow(0.1, running=lambda: False)
    retrained = run / "policy" / "stack" if (run / "policy" / "stack").exists() else run / "policy"
    network = retrained / "p1_t000002.pt"
    stat = network.stat()
    os.utime(network, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    lines: list[str] = []
    follower = RunFollower(run, 1, TINY_FHP, log=lines.append)
    assert follower.follow(0.1, running=lambda: False) == 2  # iterations 2 and 3 measured again
    assert "from iteration 2 on" in lines[0] and "dropping 2 record(s)" in lines[0]
    assert [r["iteration"] for r in follower.curve] == [1, 2, 3]
    assert follower.curve[-1]["sdcfr_exploitability_mbb"] == pytest.approx(brute_force(run, 3), abs=1e-3)


def test_exploit_follow_from_the_cli(tmp_path):
    """It measures, and by default leaves one core to the run it follows (``--threads`` overrides)."""
    run = trained_run(tmp_path, iterations=2)
    with thread_counts_kept():
        result = CliRunner().invoke(main, ["exploit", str(run), "--follow", "--every", "2", "--poll", "0.1"])
        pools = numba.get_num_threads(), torch.get_num_threads()
    assert result.exit_code == 0, result.output
    assert "iteration 2: " in result.output and "1 new measurement(s)" in result.output
    assert stack_bundle(run).kind == "sd-cfr"
    spare = max(1, (os.cpu_count() or 1) - 1)
    assert pools == (min(spare, numba.config.NUMBA_NUM_THREADS), spare)
    with thread_counts_kept():
        result = CliRunner().invoke(main, ["exploit", str(run), "--follow", "--threads", "1"])
        assert result.exit_code == 0 and "0 new measurement(s)" in result.output  # resumed: nothing left to do
        assert (numba.get_num_threads(), torch.get_num_threads()) == (1, 1)
    result = CliRunner().invoke(main, ["exploit", str(run), "--follow", "--threads", "-1"])
    assert result.exit_code == 2 and result.output.strip().splitlines()[-1].startswith("error: --threads -1")


def test_follow_other_weightings_of_a_finished_run(tmp_path):
    """A finished run followed again with ``--average-exponent`` measures its whole curve again
    under each weighting, each equal to the brute force with weights t^e."""
    run = trained_run(tmp_path)
    RunFollower(run, 2, TINY_FHP, log=lambda line: None).follow(0.1, running=lambda: False)
    result = CliRunner().invoke(main, ["exploit", str(run), "--follow", "--every", "2", "--threads", "1",
                                       "--average-exponent", "2", "--average-exponent", "0.5"])
    assert result.exit_code == 0, result.output
    assert "2 record(s) from iteration 2 on lack a weighting asked for" in result.output
    assert "(weights t), " in result.output and "(weights t^2), " in result.output
    curve = [json.loads(line) for line in (run / "evaluation-follow" / "curve.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in curve] == [2, 3]
    for record in curve:
        for key, exponent in (("sdcfr", 1.0), ("sdcfr_t2", 2.0), ("sdcfr_t0.5", 0.5)):
            assert record[f"{key}_exploitability_mbb"] == pytest.approx(
                brute_force(run, record["iteration"], exponent), abs=1e-3)
    result = CliRunner().invoke(main, ["exploit", str(run), "--average-exponent", "2"])
    assert result.exit_code == 2 and "--average-exponent measures a followed run" in result.output
    result = CliRunner().invoke(main, ["exploit", str(run), "--follow", "--average-exponent", "5"])
    assert result.exit_code == 2 and "--average-exponent" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("make, message", [
    (lambda path: path.mkdir(), "not a training run directory (no config.toml)"),
    (lambda path: (path.mkdir(), (path / "config.toml").write_text('algo = "sd-cfr"\n')), "no policy/bundle.json yet"),
])
def test_exploit_follow_refuses_what_it_cannot_follow(tmp_path, make, message):
    make(tmp_path / "r")
    result = CliRunner().invoke(main, ["exploit", str(tmp_path / "r"), "--follow"])
    assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output


def test_exploit_follow_waits_for_a_run_started_a_moment_ago(tmp_path):
    """A run that holds its lock but has not written its first iteration yet is waited for (not
    refused); once its stack is on disk and training stops, the follower measures it."""
    run = trained_run(tmp_path, iterations=2)
    (run / "policy").rename(tmp_path / "policy-later")
    lock = open(run / LOCK_FILE, "a")
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # as the trainer holds it

    def first_iteration_lands() -> None:
        time.sleep(0.5)
        (tmp_path / "policy-later").rename(run / "policy")
        time.sleep(0.3)
        lock.close()  # training stops

    writer = threading.Thread(target=first_iteration_lands)
    writer.start()
    result = CliRunner().invoke(main, ["exploit", str(run), "--follow", "--every", "2", "--poll", "0.1",
                                       "--threads", "1"])
    writer.join()
    assert result.exit_code == 0, result.output
    assert "iteration 2: " in result.output and "1 new measurement(s)" in result.output
