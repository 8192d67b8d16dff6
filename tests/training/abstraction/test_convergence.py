"""The convergence check of an abstraction solve (training.abstraction.convergence): the final
average against the one from half the run, head to head by sampled boards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bot.abstraction.agent import AbstractionAgent
from bot.abstraction.spec import SPECS
from bot.cli import main as pokerbot
from bot.errors import ConfigError
from bot.evaluation.statistics import estimate
from training.abstraction.board_match import BoardMatch, run
from training.abstraction.convergence import (
    HALF_SHARE_LIMIT,
    TOLERANCE_MBB,
    Convergence,
    _why_not_checked,
    half_mark,
    refused_ahead,
    snapshot_share,
)
from training.abstraction.run import AbstractionConfig, train
from training.contract.rundir import RunDir
from training.contract.stop import StopRequest

BASE = ["train", "--algo", "abstraction", "--threads", "1", "--game", "leduc", "--size", "merged"]


def metrics(path) -> list[dict]:
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


def solve(tmp_path, name: str, iterations: int, boards: int | None) -> list[dict]:
    settings = "batch = 20\n" + ("" if boards is None else f"convergence_boards = {boards}\n")
    (tmp_path / f"{name}.toml").write_text(settings)
    result = CliRunner().invoke(pokerbot, BASE + ["--iterations", str(iterations), "--config", str(tmp_path / f"{name}.toml"),
                                                  "--out", str(tmp_path / name)])  # fmt: skip
    assert result.exit_code == 0, result.output
    return metrics(tmp_path / name)


def test_the_final_average_is_played_against_the_snapshot_from_half_the_run(tmp_path):
    rows = solve(tmp_path, "r", 200, 40)
    check = next(r for r in rows if "vs_half_mbb" in r)
    assert check["half_iteration"] == 100 and check["iteration"] == 200  # the first batch end at half the target
    assert check["vs_half_boards"] == 40
    # the same boards, played here directly between the two tables, give the recorded figure
    game = SPECS["leduc_merged"].load_game()
    final = AbstractionAgent(game, "leduc_merged", tmp_path / "r" / "policy" / "average.npy")
    half = AbstractionAgent(game, "leduc_merged", tmp_path / "r" / "half" / "average.npy")
    values, _ = run(BoardMatch(game, final, half), 0, 40, 1, 4)
    expected = estimate(values.duplicate * 1000.0 / game.big_blind)
    assert check["vs_half_mbb"] == round(expected.mean, 3)
    assert check["vs_half_ci95"] == round((expected.high - expected.low) / 2, 3)
    assert check["converged"] == (abs(expected.mean) + (expected.high - expected.low) / 2 <= TOLERANCE_MBB)
    assert not np.array_equal(np.load(tmp_path / "r" / "half" / "average.npy"), np.load(tmp_path / "r" / "policy" / "average.npy"))


def test_a_resume_to_a_larger_target_snapshots_again_and_a_finished_one_does_not(tmp_path):
    solve(tmp_path, "r", 200, 40)
    runner = CliRunner()
    resumed = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--threads", "1", "--resume", str(tmp_path / "r"),
                                       "--iterations", "600"])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert "convergence: iteration 600 vs 300" in resumed.output
    assert json.loads((tmp_path / "r" / "half" / "half.json").read_text())["iteration"] == 300
    again = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--threads", "1", "--resume", str(tmp_path / "r"),
                                     "--iterations", "600"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "r" / "half" / "half.json").read_text())["iteration"] == 300  # kept


def test_a_run_stopped_before_half_its_target_says_when_it_will_be_checked(tmp_path, capsys):
    from training.abstraction.build import build_abstraction

    build_abstraction(SPECS["leduc_merged"])  # built before: a stop past its grace would abandon the build
    stop = StopRequest()
    stop.request()  # Ctrl-C during the first batch
    config = AbstractionConfig("leduc_merged", iterations=200, batch=20, convergence_boards=40, threads=1)
    train(config, RunDir.create(tmp_path / "r", config, "abstraction"), stop=stop)
    said = " ".join(capsys.readouterr().err.split())
    assert "convergence: checked once the run passes half its target (iteration 100)" in said
    assert "no snapshot" not in said


def test_a_run_stopped_short_of_its_target_is_not_checked_against_most_of_itself(tmp_path, capsys, monkeypatch):
    """Ctrl-C right after the half snapshot: the final average is the snapshot's own iteration
    (or a little past it), so T against "T/2" would call anything converged. The run says it was
    not checked and how to get the check; the resume to the target checks it against that snapshot."""
    import training.abstraction.convergence as convergence

    stop = StopRequest()
    take_snapshot = convergence.take_snapshot

    def snapshot_then_stop(*args):
        taken = take_snapshot(*args)
        stop.request()  # the Ctrl-C lands just after half the run
        return taken

    monkeypatch.setattr(convergence, "take_snapshot", snapshot_then_stop)
    config = AbstractionConfig("leduc_merged", iterations=200, batch=20, convergence_boards=40, threads=1)
    train(config, RunDir.create(tmp_path / "r", config, "abstraction"), stop=stop)
    said = " ".join(capsys.readouterr().err.split())
    assert "convergence: not checked: the snapshot (iteration 100) is from 100% of this run's iterations" in said
    assert f"pokerbot train --resume {tmp_path / 'r'}` to the target checks it" in said
    assert not any("vs_half_mbb" in r for r in metrics(tmp_path / "r"))
    monkeypatch.setattr(convergence, "take_snapshot", take_snapshot)
    resumed = CliRunner().invoke(pokerbot, ["train", "--resume", str(tmp_path / "r")])
    assert resumed.exit_code == 0, resumed.output
    assert "convergence: iteration 200 vs 100" in resumed.output
    assert [r["half_iteration"] for r in metrics(tmp_path / "r") if "vs_half_mbb" in r] == [100]


def test_the_snapshot_share_is_the_smaller_of_iterations_and_training_clock():
    assert snapshot_share((100, 50.0), 200, 100.0) == 0.5
    assert snapshot_share((191_755, 14_416.0), 229_787, 21_190.0) > HALF_SHARE_LIMIT  # the 3e8 run stopped at 0.74 of 8 h
    assert snapshot_share((191_755, 14_416.0), 316_000, 27_000.0) < HALF_SHARE_LIMIT  # the same run at 7.5 h
    assert snapshot_share((10, 0.0), 20, 0.0) == 0.5
    assert snapshot_share((20, 1.0), 20, 100.0) == 1.0  # the final iteration itself


def test_a_check_interrupted_before_two_boards_says_so_not_that_there_is_no_snapshot(tmp_path, capsys, monkeypatch):
    """A second Ctrl-C during the check (the run already stopped and saved) ends it; the run says
    the check was interrupted and how to get it, not that half the run left no snapshot."""
    import training.abstraction.convergence as convergence
    from training.abstraction.board_match import BoardValues

    config = AbstractionConfig("leduc_merged", iterations=200, batch=20, convergence_boards=40, threads=1)
    monkeypatch.setattr(convergence, "run", lambda *args: (BoardValues(np.zeros(0), np.zeros(0)), True))
    train(config, RunDir.create(tmp_path / "r", config, "abstraction"))
    said = " ".join(capsys.readouterr().err.split())
    assert "convergence: the check of iteration 200 against 100 was interrupted after 0 of 40 boards" in said
    assert f"--resume {tmp_path / 'r'}` checks it again" in said and "no snapshot" not in said
    assert (tmp_path / "r" / "half" / "average.npy").exists() and not any("vs_half_mbb" in r for r in metrics(tmp_path / "r"))


def test_games_with_exact_exploitability_skip_it_by_default(tmp_path):
    rows = solve(tmp_path, "r", 100, None)
    assert not any("vs_half_mbb" in r for r in rows) and rows[-1]["exploitability_mbb"] > 0
    assert not (tmp_path / "r" / "half").exists()


def test_converged_means_the_interval_lies_within_the_tolerance():
    assert Convergence(100, 200, 200, 3.0, 1.9).converged
    assert not Convergence(100, 200, 200, -3.0, 2.1).converged
    assert not Convergence(100, 200, 200, 0.5, 4.6).converged
    mark = half_mark(1000, 60.0)
    assert mark.passed(500, 1.0) and mark.passed(1, 30.0) and not mark.passed(499, 29.9)
    assert not half_mark(None, None).passed(10**9, 1e9)
    with pytest.raises(ConfigError, match="convergence_boards = 1 gives no interval: 0 \\(no check\\) or at least 2"):
        AbstractionConfig("leduc_merged", convergence_boards=1)


def test_a_resume_whose_check_is_bound_to_be_refused_says_so_at_its_start():
    """The slip of the 3e8 run: at 537,452 iterations, resumed to 875,000, the new half mark
    (437,500) is passed, so the snapshot is taken at the first batch end, 61 % of the target."""
    mark = half_mark(875_000, 86_400.0)
    said = refused_ahead((312_222, 24_000.0), mark, 537_452, 42_677.0, 875_000, 86_400.0)
    assert said is not None and "iteration 537,452 or later" in said and "61%" in said
    assert "--iterations 895,754 (about 19.8 h of training in all)" in said and "--time-budget" not in said
    assert refused_ahead((312_222, 24_000.0), half_mark(900_000, 86_400.0), 537_452, 42_677.0, 900_000, 86_400.0) is None
    # a snapshot past the new mark is kept, and 525,479 is 60.05 % of 875,000
    kept = refused_ahead((525_479, 41_900.0), mark, 537_452, 42_677.0, 875_000, None)
    assert kept is not None and "(iteration 525,479)" in kept
    assert refused_ahead(None, half_mark(200, None), 50, 1.0, 200, None) is None  # before the mark: snapshot at it
    # a time budget that the rate so far exhausts first ends the run early: 550 of a projected 800
    short = refused_ahead(None, half_mark(1_000, 80.0), 550, 55.0, 1_000, 80.0)
    assert short is not None and "69% of the run" in short and "--iterations 917 and a --time-budget" in short
    assert refused_ahead(None, half_mark(1_000, 100.0), 550, 55.0, 1_000, 100.0) is None  # 55 %: checked
    # the refusal at the end of such a run names the target that checks it, not a stop short
    refused = _why_not_checked((537_900, 42_700.0), 875_000, 69_500.0, mark, Path("RUN"), interrupted=False)
    assert "is from 61% of this run's iterations" in refused and "stopped short" not in refused
    assert "`pokerbot train --resume RUN --iterations 896,500` or more checks it" in refused


def test_a_resume_to_a_target_too_near_its_snapshot_is_warned_at_its_start_and_told_what_checks_it(tmp_path):
    solve(tmp_path, "r", 200, 40)
    runner = CliRunner()
    args = ["train", "--algo", "abstraction", "--threads", "1", "--resume", str(tmp_path / "r"), "--iterations"]
    short = runner.invoke(pokerbot, args + ["300"])  # half mark 150: snapshot at 200 or later, 67 %
    assert short.exit_code == 0, short.output
    said = " ".join(short.output.split())
    assert "the check at the end will be refused: the half snapshot (iteration 200 or later) will be 67% of the run" in said
    assert "--iterations 334" in said
    longer = runner.invoke(pokerbot, args + ["700"])  # half mark 350: no warning, a new snapshot at 360
    assert longer.exit_code == 0, longer.output
    assert "will be refused" not in longer.output, longer.output
    assert "convergence: iteration 700 vs 360" in " ".join(longer.output.split()), longer.output


def test_pokerbot_agents_reads_back_the_figures_the_console_printed(tmp_path):
    """The abstraction_1.4e7_ke check printed +4.9 ± 1.2 and `pokerbot agents` showed ± 1.1: the
    interval 1.1549 was stored as 1.15, whose float is just under it."""
    from bot.catalogue import _abstraction_strength

    checked = Convergence(180, 360, 200, 4.9149, 1.1549)
    assert "+4.9 ± 1.2 mbb/g" in checked.line()
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"iteration": 360, "final": True} | checked.metrics()) + "\n")
    assert "+4.9 ± 1.2 mbb/g against its average at 180 iterations (not converged)" in _abstraction_strength(
        {"iterations": 360, "run": str(tmp_path)})


def test_a_stop_request_past_its_grace_abandons_the_bucket_build(tmp_path):
    """A build has no checkpoint (hold'em's k-means run for up to ~50 minutes), so a stop
    request past its grace period ends it at its next progress report, as it ends a long step
    of every trainer; no tables, checkpoint or policy are left behind."""
    from bot.abstraction.spec import spec_dir
    from training.contract.stop import StepAbandoned

    stop = StopRequest(grace=0.0)
    stop.request()
    config = AbstractionConfig("leduc_merged", iterations=200, batch=20, threads=1)
    run_dir = RunDir.create(tmp_path / "r", config, "abstraction")
    with pytest.raises(StepAbandoned, match="stop requested"):
        train(config, run_dir, stop=stop)
    assert not (spec_dir(SPECS["leduc_merged"]) / "meta.json").exists()
    assert run_dir.checkpoint_path is None and not (tmp_path / "r" / "policy").exists()
