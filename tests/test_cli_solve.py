"""CLI smoke tests: `pokerbot solve` writes a policy that `pokerbot exploit` evaluates."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from bot.cli import main
from training.solve import SolveConfig, run_solve


def invoke(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(("game", "algo", "iterations"), [("kuhn", "cfr", 300), ("leduc", "cfr+", 60), ("leduc", "es-mccfr", 40_000)])
def test_solve_then_exploit(tmp_path, game, algo, iterations):
    out = tmp_path / "policy.json"
    result = invoke("solve", "--game", game, "--algo", algo, "--iterations", str(iterations), "--out", str(out), "--seed", "4")
    assert result.exit_code == 0, result.output
    assert f"{iterations:,} iterations of {algo}" in result.output and "exploitability" in result.output
    meta = json.loads(out.read_text())["meta"]
    assert meta["config"]["algo"] == algo and meta["config"]["seed"] == 4
    assert meta["iterations_done"] == iterations and len(meta["exploitability_curve_mbb"]) == 20
    final_mbb = meta["exploitability_curve_mbb"][-1][1]
    report = invoke("exploit", str(out))
    assert report.exit_code == 0, report.output
    assert "NashConv/2" in report.output and f"{final_mbb:.4f} mbb/g" in report.output


def test_solve_records_the_curve_every_n(tmp_path):
    out = tmp_path / "k.json"
    result = invoke("solve", "--game", "kuhn", "--algo", "dcfr", "--iterations", "50", "--eval-every", "10", "--out", str(out))
    assert result.exit_code == 0, result.output
    curve = json.loads(out.read_text())["meta"]["exploitability_curve_mbb"]
    assert [i for i, _ in curve] == [10, 20, 30, 40, 50]
    assert curve[-1][1] < curve[0][1]


def test_run_solve_is_the_same_loop():
    result = run_solve(SolveConfig(game="kuhn", algo="linear-cfr", iterations=30, eval_every=15))
    assert result.iterations == 30 and [i for i, _ in result.curve] == [15, 30]
    assert not result.interrupted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["solve", "--algo", "magic", "--out", "x.json"], "unknown --algo 'magic'"),
        (["solve", "--iterations", "0", "--out", "x.json"], "--iterations must be at least 1"),
        (["solve", "--game", "nope", "--out", "x.json"], "unknown game 'nope'"),
        (["solve", "--game", "fhp", "--out", "x.json"], "1,641,068,208 infoset slots: too large for tabular"),
        (["exploit", "missing.json"], "missing.json: no such file"),
        (["exploit", "."], "not a policy file or a run directory"),
    ],
)
def test_bad_input_is_one_line_error(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2
    assert "error: " in result.output and message in result.output
    assert "Traceback" not in result.output


def test_exploit_bad_json_and_wrong_game(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    result = invoke("exploit", str(bad))
    assert result.exit_code == 2 and "not valid JSON" in result.output
    out = tmp_path / "k.json"
    assert invoke("solve", "--game", "kuhn", "--iterations", "5", "--out", str(out)).exit_code == 0
    result = invoke("exploit", str(out), "--game", "leduc")
    assert result.exit_code == 2 and "policy is for game 'kuhn.limit.2p', not 'leduc.limit.2p'" in result.output


def test_interrupted_run_resumes_to_the_uninterrupted_result(tmp_path):
    config = SolveConfig(game="leduc", algo="es-mccfr", iterations=60_000, eval_every=20_000, seed=9)
    straight = run_solve(config)

    def stop_at_40k(iteration, mbb):
        if iteration == 40_000:
            raise KeyboardInterrupt

    checkpoint = tmp_path / "p.json.ckpt.npz"
    stopped = run_solve(config, on_eval=stop_at_40k, checkpoint=checkpoint)
    assert stopped.interrupted and stopped.iterations == 40_000 and checkpoint.is_file()
    resumed = run_solve(config, checkpoint=checkpoint, resume=True)
    assert resumed.iterations == 60_000 and not resumed.interrupted
    assert np.array_equal(resumed.strategy, straight.strategy)
    assert resumed.curve == straight.curve


def test_cli_resume_extends_a_cfr_run_and_checks_the_config(tmp_path):
    out = tmp_path / "l.json"
    args = ["solve", "--game", "leduc", "--algo", "cfr+", "--out", str(out), "--eval-every", "20"]
    assert invoke(*args, "--iterations", "40").exit_code == 0
    result = invoke(*args, "--iterations", "60", "--resume")
    assert result.exit_code == 0, result.output
    curve = json.loads(out.read_text())["meta"]["exploitability_curve_mbb"]
    assert [i for i, _ in curve] == [20, 40, 60]
    assert curve == [list(p) for p in run_solve(SolveConfig("leduc", "cfr+", 60, eval_every=20)).curve]
    wrong = invoke("solve", "--game", "leduc", "--algo", "dcfr", "--out", str(out), "--resume")
    assert wrong.exit_code == 2 and "checkpoint was made with algo 'cfr+', not 'dcfr'" in wrong.output
    missing = invoke("solve", "--out", str(tmp_path / "none.json"), "--resume")
    assert missing.exit_code == 2 and "no checkpoint to resume" in missing.output


def test_algorithm_names_match_and_a_damaged_checkpoint_is_one_line(tmp_path):
    from bot.commands.solve import ALGORITHM_NAMES
    from training.solve import SOLVE_ALGORITHMS

    assert ALGORITHM_NAMES == SOLVE_ALGORITHMS
    out = tmp_path / "k.json"
    checkpoint = tmp_path / "k.json.ckpt.npz"
    for content in (b"", b"PK\x03\x04garbage"):
        checkpoint.write_bytes(content)
        result = invoke("solve", "--game", "kuhn", "--out", str(out), "--resume")
        assert result.exit_code == 2 and f"error: {checkpoint}: not a solve checkpoint" in result.output
        assert "Aborted" not in result.output
    assert invoke("solve", "--game", "kuhn", "--iterations", "4", "--out", str(out)).exit_code == 0
    data = bytearray(checkpoint.read_bytes())
    data[len(data) // 2] ^= 0x20  # a bit flip inside a table: the zip member's CRC-32 fails
    checkpoint.write_bytes(bytes(data))
    result = invoke("solve", "--game", "kuhn", "--iterations", "8", "--out", str(out), "--resume")
    assert result.exit_code == 2 and "not a solve checkpoint" in result.output
