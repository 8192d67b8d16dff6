"""``pokerbot train --algo abstraction`` with the PCS solver: the run contract, and the memory,
disk and cost checks around it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from bot.abstraction.cost import default_solver, estimate, size
from bot.abstraction.spec import SPECS
from bot.cli import main as pokerbot
from training.abstraction import resources

BASE = ["train", "--algo", "abstraction", "--threads", "1", "--game", "leduc"]


def metrics(run) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_pcs_is_the_default_and_resume_equals_the_uninterrupted_run(tmp_path):
    runner = CliRunner()
    (tmp_path / "c.toml").write_text("batch = 50\n")
    config = ["--config", str(tmp_path / "c.toml")]
    first = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "300", *config, "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    resumed = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--threads", "1", "--resume", str(tmp_path / "a"),
                                       "--iterations", "600"])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    once = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "600", *config, "--out", str(tmp_path / "b")])
    assert once.exit_code == 0, once.output
    policy = "policy/average.npy"
    assert np.array_equal(np.load(tmp_path / "a" / policy), np.load(tmp_path / "b" / policy))
    rows = metrics(tmp_path / "a")
    live = 5  # leduc: 6 cards, one on the board, one hole card
    assert rows[0]["nodes_touched"] == 50 * 2 * 36 * live  # (decision node, live hand) pairs, both passes
    assert max(r["iteration"] for r in rows) == 600 and rows[-1]["final"] and rows[-1]["exploitability_mbb"] > 0


def test_es_mccfr_is_available_by_name_and_unknown_solvers_are_one_line(tmp_path):
    runner = CliRunner()
    (tmp_path / "es.toml").write_text('solver = "es-mccfr"\nbatch = 1000\n')
    result = runner.invoke(pokerbot, BASE + ["--size", "lossless", "--iterations", "2000", "--config",
                                             str(tmp_path / "es.toml"), "--out", str(tmp_path / "es")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert metrics(tmp_path / "es")[0]["nodes_touched"] < 1000 * 2 * 85  # sampled: a path, not the tree
    (tmp_path / "bad.toml").write_text('solver = "cfr"\n')
    bad = runner.invoke(pokerbot, BASE + ["--size", "lossless", "--config", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "unknown solver 'cfr'; known: pcs, es-mccfr" in bad.output


def test_tables_that_do_not_fit_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "available_memory", lambda: 10_000)
    result = CliRunner().invoke(pokerbot, BASE + ["--size", "lossless", "--iterations", "10", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    need = size(estimate(SPECS["leduc_lossless"]).table_bytes)
    assert f"leduc_lossless: its regret and average tables need {need} of RAM; 10.0 KB available" in result.output
    assert "mmap_tables = true" in result.output and "Traceback" not in result.output


def test_a_build_that_does_not_fit_on_disk_is_refused_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "free_disk", lambda path: 1_000)
    result = CliRunner().invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "leduc_merged: building it needs" in result.output and "1.0 KB free" in result.output
    assert not (tmp_path / "cache" / "abstractions" / "leduc_merged" / "meta.json").exists()


def test_a_solve_whose_files_do_not_fit_on_disk_is_refused_before_it_starts(tmp_path, monkeypatch):
    runner = CliRunner()
    first = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output  # built, so only the solve's own files are checked below
    monkeypatch.setattr(resources, "free_disk", lambda path: 1_000)
    result = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "b")])
    table_bytes = estimate(SPECS["leduc_merged"]).table_bytes
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "leduc_merged: this solve's files" in result.output and "1.0 KB free" in result.output
    assert not (tmp_path / "b" / "checkpoint").exists()
    # One file system (tmp_path holds the run and the cache): the published policy is a hard link, no bytes.
    run_files = int(resources.RUN_DIR_FILES_PER_TABLE_BYTE * table_bytes)
    monkeypatch.setattr(resources, "free_disk", lambda path: run_files // 2)
    assert runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "c")]).exit_code == 2
    monkeypatch.setattr(resources, "free_disk", lambda path: run_files)  # enough (a copy would need a third more)
    assert runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "d")]).exit_code == 0


def test_a_published_copy_on_another_disk_is_checked_against_that_disk(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    runner = CliRunner()
    assert runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "a")]).exit_code == 0
    copy = int(resources.PUBLISHED_COPY_PER_TABLE_BYTE * estimate(SPECS["leduc_merged"]).table_bytes)
    monkeypatch.setattr(resources, "same_file_system", lambda a, b: False)
    monkeypatch.setattr(resources, "free_disk", lambda path: copy - 1 if cache in Path(path).absolute().parents else 10**12)
    result = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "10", "--out", str(tmp_path / "b")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "leduc_merged: its published policy needs" in result.output and str(cache) in result.output
    assert not (tmp_path / "b" / "checkpoint").exists()


def test_each_game_defaults_to_its_measured_solver():
    """Hold'em: ES MCCFR (ahead on 3e6, level on 3e7), except abstraction_3e8 (PCS far ahead);
    FHP and the small games: PCS."""
    from training.abstraction.run import _abstraction_name

    assert default_solver(SPECS["abstraction_3e6"]) == default_solver(SPECS["abstraction_3e7"]) == "es-mccfr"
    assert default_solver(SPECS["abstraction_3e8"]) == "pcs"
    assert _abstraction_name({}, {"game": "holdem", "size": "3e8"})["solver"] == "pcs"
    assert default_solver(SPECS["fhp_abstraction_4e4"]) == default_solver(SPECS["leduc_merged"]) == "pcs"
    assert _abstraction_name({}, {"game": "holdem", "size": "3e6"})["solver"] == "es-mccfr"
    assert _abstraction_name({}, {"game": "fhp", "size": "4e4"})["solver"] == "pcs"
    assert _abstraction_name({"solver": "pcs"}, {"game": "holdem", "size": "3e6"})["solver"] == "pcs"  # a config's choice stays
    spec = SPECS["abstraction_3e8"]
    assert estimate(spec, built=True).iterations == estimate(spec, built=True, solver="pcs").iterations


def test_cost_quotes_the_pcs_solve_when_it_is_named():
    spec = SPECS["abstraction_3e8"]
    pcs, es = estimate(spec, built=True, solver="pcs"), estimate(spec, built=True, solver="es-mccfr")
    assert pcs.iterations < es.iterations and pcs.solve_seconds < es.solve_seconds
    assert pcs.table_bytes == es.table_bytes == (8 * 169 + (70 + 630 + 5670) * 51800) * 3 * 4 * 2


def test_a_resumed_time_budget_counts_the_earlier_sittings(tmp_path):
    """``--time-budget`` on ``--resume`` is the run's total training clock (as for Deep CFR, NFSP
    and the FHP solve): a budget the first sitting already spent adds no iteration."""
    runner = CliRunner()
    first = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "300", "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    # the exact clock of the checkpoint (metrics.jsonl rounds elapsed_s to 0.01 s, which may round
    # up past what was spent and leave room for one more batch)
    spent = json.loads((tmp_path / "a" / "checkpoint" / "state.json").read_text())["seconds"]
    assert spent > 0 and abs(spent - max(r.get("elapsed_s", 0.0) for r in metrics(tmp_path / "a"))) <= 0.005
    resumed = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--threads", "1", "--resume", str(tmp_path / "a"),
                                       "--iterations", "100000", "--time-budget", f"{spent:.6f}s"])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert max(r["iteration"] for r in metrics(tmp_path / "a")) == 300


def test_a_corrupt_checkpoint_is_refused_before_the_solver_or_its_workers_start(tmp_path, monkeypatch):
    """``--resume`` verifies the checkpoint first: with ``--workers`` a solver starts a Ray pool,
    which should not be spent on a run that cannot continue."""
    from training.abstraction import run as abstraction_run

    runner = CliRunner()
    first = runner.invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "100", "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    for checkpoint in (tmp_path / "a").glob("checkpoint*"):
        (checkpoint / "regrets.npy").write_bytes(b"not a table")

    def no_solver(*args, **kwargs):
        raise AssertionError("the solver was made before the checkpoint was verified")

    monkeypatch.setattr(abstraction_run, "_solver", no_solver)
    resumed = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--threads", "1", "--resume", str(tmp_path / "a"),
                                       "--iterations", "200"])  # fmt: skip
    assert resumed.exit_code != 0 and "Traceback" not in resumed.output
    assert "regrets.npy" in resumed.output and "AssertionError" not in repr(resumed.exception)
