"""CLI tests: `pokerbot solve` writes a run directory (config.toml, metrics.jsonl, verified
checkpoints, a tabular policy bundle) that `pokerbot exploit` evaluates and `--resume` continues."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from bot.agents.tabular import save_policy
from bot.cli import main
from bot.registry import load_strategy
from training.contract.rundir import RunDir
from training.tabular.solve import SolveConfig, run_solve


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def provenance(run) -> dict:
    return json.loads((run / "policy" / "bundle.json").read_text())["provenance"]


@pytest.mark.parametrize(("game", "algo", "iterations"), [("kuhn", "cfr", 300), ("leduc", "cfr+", 60), ("leduc", "es-mccfr", 40_000)])
def test_solve_then_exploit(tmp_path, game, algo, iterations):
    out = tmp_path / "run"
    result = invoke("solve", "--game", game, "--algo", algo, "--iterations", str(iterations), "--out", str(out), "--seed", "4")
    assert result.exit_code == 0, result.output
    assert f"{iterations:,} iterations of {algo}" in result.output and "exploitability" in result.output
    run = RunDir.open(out, algo="solve")
    assert run.config()["algo"] == algo and run.config()["seed"] == 4
    meta = provenance(out)
    assert meta["algorithm"] == algo and meta["seed"] == 4 and meta["config"]["iterations"] == iterations
    assert meta["iterations"] == iterations and len(meta["exploitability_curve_mbb"]) == 20
    metrics = run.read_metrics()
    assert [[r["iteration"], r["exploitability_mbb"]] for r in metrics] == meta["exploitability_curve_mbb"]
    assert all(r["elapsed_s"] >= 0 for r in metrics)
    final_mbb = meta["exploitability_curve_mbb"][-1][1]
    report = invoke("exploit", str(out))
    assert report.exit_code == 0, report.output
    assert "NashConv/2" in report.output and f"{final_mbb:.4f} mbb/g" in report.output


def test_solve_records_the_curve_every_n(tmp_path):
    out = tmp_path / "k"
    result = invoke("solve", "--game", "kuhn", "--algo", "dcfr", "--iterations", "50", "--eval-every", "10", "--out", str(out))
    assert result.exit_code == 0, result.output
    curve = provenance(out)["exploitability_curve_mbb"]
    assert [i for i, _ in curve] == [10, 20, 30, 40, 50]
    assert curve[-1][1] < curve[0][1]


def test_run_solve_is_the_same_loop():
    result = run_solve(SolveConfig(game="kuhn", algo="linear-cfr", iterations=30, eval_every=15))
    assert result.iterations == 30 and [i for i, _ in result.curve] == [15, 30]
    assert not result.interrupted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["solve", "--algo", "magic", "--out", "x"], "unknown --algo 'magic'"),
        (["solve", "--iterations", "0", "--out", "x"], "--iterations 0: must be at least 1"),
        (["solve", "--game", "nope", "--out", "x"], "unknown game 'nope'"),
        (["solve", "--game", "fhp", "--out", "x"], "1,641,068,208 infoset slots: too large for tabular"),
        (["exploit", "missing.json"], "missing.json: no such file"),
        (["exploit", "."], "not a policy file or a run directory"),
    ],
)
def test_bad_input_is_one_line_error_and_creates_nothing(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2
    assert "error: " in result.output and message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "x").exists()


def test_exploit_bad_json_and_wrong_game_and_old_policy_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    result = invoke("exploit", str(bad))
    assert result.exit_code == 2 and "not valid JSON" in result.output
    out = tmp_path / "k"
    assert invoke("solve", "--game", "kuhn", "--iterations", "5", "--out", str(out)).exit_code == 0
    result = invoke("exploit", str(out), "--game", "leduc")
    assert result.exit_code == 2 and "a tabular policy trained for kuhn.limit.2p, not leduc.limit.2p" in result.output
    old = tmp_path / "old.json"  # a policy file as the solve before run directories wrote it
    game, strategy = load_strategy(out)
    save_policy(old, game, strategy, {"config": {"algo": "cfr+"}})
    assert invoke("exploit", str(old)).output.splitlines()[1:] == invoke("exploit", str(out)).output.splitlines()[1:]
    match = invoke("match", "--game", "kuhn", "--agent", str(out), "--opponent", str(old), "--hands", "20")
    assert match.exit_code == 0, match.output


def test_interrupted_run_resumes_to_the_uninterrupted_result(tmp_path):
    config = SolveConfig(game="leduc", algo="es-mccfr", iterations=60_000, eval_every=20_000, seed=9)
    straight = run_solve(config)

    def stop_at_40k(iteration, mbb):
        if iteration == 40_000:
            raise KeyboardInterrupt

    run = RunDir.create(tmp_path / "run", config, algo="solve")
    stopped = run_solve(config, on_eval=stop_at_40k, run=run)
    assert stopped.interrupted and stopped.iterations == 40_000 and run.checkpoint_path is not None
    assert [r["iteration"] for r in run.read_metrics()] == [20_000, 40_000]
    resumed = run_solve(config, run=run, resume=True)
    assert resumed.iterations == 60_000 and not resumed.interrupted
    assert np.array_equal(resumed.strategy, straight.strategy)
    assert resumed.curve == straight.curve
    assert [r["iteration"] for r in run.read_metrics()] == [20_000, 40_000, 60_000]


def test_cli_resume_takes_the_run_directory_and_keeps_its_config(tmp_path):
    out = tmp_path / "l"
    assert invoke("solve", "--game", "leduc", "--algo", "cfr+", "--out", str(out), "--eval-every", "20", "--iterations", "40").exit_code == 0
    result = invoke("solve", "--resume", str(out), "--iterations", "60")
    assert result.exit_code == 0, result.output
    assert f"resuming {out} (cfr+ on leduc) from its last complete checkpoint" in result.output
    curve = provenance(out)["exploitability_curve_mbb"]
    assert [i for i, _ in curve] == [20, 40, 60]
    assert curve == [list(p) for p in run_solve(SolveConfig("leduc", "cfr+", 60, eval_every=20)).curve]
    assert RunDir.open(out).config()["iterations"] == 60
    wrong = invoke("solve", "--algo", "dcfr", "--resume", str(out))
    assert wrong.exit_code == 2 and "error: --algo cannot change a run on --resume" in wrong.output
    missing = invoke("solve", "--resume", str(tmp_path / "none"))
    assert missing.exit_code == 2 and "is not a run directory (no config.toml)" in missing.output


def test_ctrl_c_finishes_the_chunk_checkpoints_exits_0_and_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    """``pokerbot solve`` goes through the run contract's door: a real SIGINT during iteration 7
    lets it finish, checkpoints, publishes the 7 iterations and exits 0 naming ``pokerbot solve
    --resume``; the resume ends with the uninterrupted run's strategy. Options the run keeps are
    refused on resume in one line."""
    import signal

    from tests.conftest import signal_during
    from training.tabular.cfr import TabularCFR

    signal_during(monkeypatch, TabularCFR, "run", 6, signal.SIGINT)
    out = tmp_path / "k"
    result = invoke("solve", "--game", "kuhn", "--algo", "dcfr", "--iterations", "20", "--eval-every", "5", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"stopped on request; checkpoint saved; continue with: pokerbot solve --resume {out}" in result.output
    assert "interrupted: 7 iterations of dcfr" in result.output and provenance(out)["iterations"] == 7
    monkeypatch.undo()
    refused = invoke("solve", "--resume", str(out), "--seed", "3")
    assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1
    assert "error: --seed cannot change a run on --resume (its config.toml is kept; --resume takes --eval-every, " \
           "--iterations)" in refused.output
    assert invoke("solve", "--resume", str(out)).exit_code == 0
    straight = tmp_path / "straight"
    assert invoke("solve", "--game", "kuhn", "--algo", "dcfr", "--iterations", "20", "--eval-every", "5",
                  "--out", str(straight)).exit_code == 0
    assert np.array_equal(load_strategy(out)[1], load_strategy(straight)[1])
    assert provenance(out)["exploitability_curve_mbb"] == provenance(straight)["exploitability_curve_mbb"]


def test_train_and_solve_runs_name_their_own_resume_command(tmp_path):
    out = tmp_path / "k"
    assert invoke("solve", "--game", "kuhn", "--iterations", "4", "--out", str(out)).exit_code == 0
    result = invoke("train", "--algo", "nfsp", "--resume", str(out))
    assert result.exit_code == 2 and f"is a solve run; resume it with pokerbot solve --resume {out}" in result.output
    result = invoke("train", "--resume", str(out))
    assert result.exit_code == 2 and f"is a solve run; resume it with pokerbot solve --resume {out}" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--out", "p.json", "--resume"], "error: --resume needs the run directory: pokerbot solve --resume RUN_DIR (solve writes a run directory now"),
    (["--resume", "p.json"], "error: --resume p.json: a policy file of the older solve, whose .ckpt.npz cannot be continued"),
    (["--out", "p.json"], "error: --out p.json: solve writes a run directory now (config.toml, metrics.jsonl, checkpoint/, policy/), "
                          "not a .json policy file; name a directory, e.g. --out p"),
    (["--out", "a", "--resume", "b"], "error: give either --out (a new run) or --resume (an existing one), not both"),
    ([], "error: give --out RUN_DIR for a new solve or --resume RUN_DIR to continue one"),
])
def test_the_old_policy_file_usage_is_one_line_saying_what_changed(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = invoke("solve", "--game", "kuhn", *args)
    assert result.exit_code == 2 and result.output.strip().splitlines() == [result.output.strip()]
    assert message in result.output


def test_a_damaged_checkpoint_falls_back_then_is_one_line(tmp_path):
    out = tmp_path / "k"
    assert invoke("solve", "--game", "kuhn", "--iterations", "4", "--eval-every", "2", "--out", str(out)).exit_code == 0
    tables = out / "checkpoint" / "tables.npz"
    data = bytearray(tables.read_bytes())
    data[len(data) // 2] ^= 0x20
    tables.write_bytes(bytes(data))
    result = invoke("solve", "--resume", str(out), "--iterations", "8")
    assert result.exit_code == 0, result.output
    assert f"{tables}: checksum mismatch" in result.output and "resuming from the previous checkpoint" in result.output
    for folder in ("checkpoint", "checkpoint.old"):
        (out / folder / "tables.npz").write_bytes(b"")
    result = invoke("solve", "--resume", str(out), "--iterations", "12")
    assert result.exit_code == 2 and "nothing to resume from without discarding the run's progress" in result.output
    assert "Traceback" not in result.output
