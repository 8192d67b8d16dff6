"""Warm starts: a solved run's tables carried into another abstraction of the same game (ES and PCS)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.cli import main as pokerbot
from bot.errors import ConfigError
from training.abstraction import pcs
from training.abstraction.build import build_abstraction, round_features
from training.abstraction.solver import run_batch
from training.abstraction.warm_start import WarmSource, class_shares, warm_start
from training.contract.rundir import RunDirError
from training.tabular.mccfr import regret_matching_row

BASE = ["train", "--algo", "abstraction", "--game", "leduc", "--threads", "1", "--seed", "3"]


def solved_run(tmp_path, name: str, size: str, iterations: int, extra: str = "", solver: str = "es-mccfr",
           batch: int = 2000) -> str:  # fmt: skip
    config = tmp_path / f"{name}.toml"
    config.write_text(f'solver = "{solver}"\nbatch = {batch}\n{extra}')
    out = str(tmp_path / name)
    result = CliRunner().invoke(pokerbot, BASE + ["--size", size, "--iterations", str(iterations), "--config", str(config),
                                                  "--out", out])  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def game_of(name: str) -> AbstractGame:
    build_abstraction(SPECS[name])
    return AbstractGame.build(Abstraction.load(SPECS[name]))


def current(table: np.ndarray, row: int, legal: np.ndarray) -> np.ndarray:
    sigma = np.zeros(3)
    regret_matching_row(table, row, legal, sigma)
    return sigma


def test_finer_rows_start_with_their_coarse_rows_strategy_and_totals_are_kept(tmp_path):
    """merged -> lossless: every lossless row lies inside one merged bucket, so it starts with
    exactly that bucket's current and average strategy; per node, the tables' sums are kept."""
    source = solved_run(tmp_path, "merged", "merged", 20_000)
    coarse, fine = game_of("leduc_merged"), game_of("leduc_lossless")
    regrets, average = np.zeros((fine.num_rows, 3), np.float32), np.zeros((fine.num_rows, 3), np.float32)
    found = warm_start(source, fine, regrets, average)
    assert (found.abstraction, found.iterations, found.batches) == ("leduc_merged", 20_000, 10)
    stored = np.load(f"{source}/checkpoint/regrets.npy"), np.load(f"{source}/checkpoint/average.npy")
    tree, checked = fine.tree, 0
    for node in tree.decision_ids:
        r, legal = int(tree.round[node]), tree.legal[node].astype(np.int8)
        for c in range(fine.abstraction.num_buckets[r]):
            row, parent = fine.rows_of(node, c), coarse.rows_of(node, int(coarse.abstraction.tables[r][c]))
            assert current(regrets, row, legal) == pytest.approx(current(stored[0], parent, legal), abs=1e-6)
            if average[row].sum() > 0:
                assert average[row] / average[row].sum() == pytest.approx(stored[1][parent] / stored[1][parent].sum(), abs=1e-6)
            checked += 1
        rows_f = slice(fine.rows_of(node, 0), fine.rows_of(node, 0) + fine.abstraction.num_buckets[r])
        rows_c = slice(coarse.rows_of(node, 0), coarse.rows_of(node, 0) + coarse.abstraction.num_buckets[r])
        assert regrets[rows_f].sum(axis=0) == pytest.approx(stored[0][rows_c].sum(axis=0), rel=1e-5, abs=1e-3)
        assert average[rows_f].sum(axis=0) == pytest.approx(stored[1][rows_c].sum(axis=0), rel=1e-5, abs=1e-3)
    assert checked > 300


def test_shares_weight_classes_by_their_deals():
    """lossless -> merged: a merged bucket's row is its classes' rows, each whole (every source
    bucket is one class, so each class hands over its full row): shares are all one."""
    coarse, fine = game_of("leduc_merged"), game_of("leduc_lossless")
    for r in range(2):
        t, s, share = class_shares(coarse.abstraction, fine.abstraction, r)
        order = np.argsort(s)  # the triples come sorted by target bucket
        assert np.array_equal(s[order], np.arange(fine.abstraction.num_buckets[r]))
        assert np.array_equal(t[order], np.asarray(coarse.abstraction.tables[r], dtype=np.int64))
        assert np.allclose(share, 1.0)
        # the other way a merged bucket splits by deal counts: its shares sum to one
        t, s, share = class_shares(fine.abstraction, coarse.abstraction, r)
        weight = np.asarray(round_features(fine.abstraction.game, r).weight, np.float64)
        assert np.allclose(np.bincount(s, weights=share), 1.0)
        assert np.allclose(share, weight / np.bincount(s, weights=weight)[s])


def test_warm_run_continues_the_source_batches_exactly(tmp_path):
    """From the CLI, a warm start from a run of the same abstraction is its tables unchanged
    (every share is one) followed by batches numbered from the source's last + 1: bit for bit
    the run done by hand, and the metrics open with the source."""
    source = solved_run(tmp_path, "first", "lossless", 16_000)
    warm = solved_run(tmp_path, "warm", "lossless", 6_000, f'warm_start = "{source}"\n')
    lines = [json.loads(line) for line in open(f"{warm}/metrics.jsonl")]
    opening = {k: v for k, v in lines[0].items() if k != "warm_start_s"}
    assert opening == {"iteration": 0, "warm_start": source, "warm_start_abstraction": "leduc_lossless",
                       "warm_start_iterations": 16_000, "warm_start_batches": 8}  # fmt: skip
    assert [(r["iteration"], r["batch"]) for r in lines[1:4]] == [(2000, 9), (4000, 10), (6000, 11)]
    fine = game_of("leduc_lossless")
    regrets, average = (np.load(f"{source}/checkpoint/{name}.npy") for name in ("regrets", "average"))
    for k, first in enumerate(range(1, 6_001, 2000), start=9):
        run_batch(fine, regrets, average, 3, first, 2000, k, 1)
    assert np.array_equal(np.load(f"{warm}/checkpoint/regrets.npy"), regrets)
    assert np.array_equal(np.load(f"{warm}/policy/average.npy"), average)
    quarter = solved_run(tmp_path, "quarter", "lossless", 2_000, f'warm_start = "{source}"\nwarm_start_weight = 0.25\n')
    assert [json.loads(line).get("batch") for line in open(f"{quarter}/metrics.jsonl")][1] == 3


def test_pcs_warm_run_continues_the_source_batches_exactly(tmp_path):
    """PCS carries over as ES does: a warm start from a PCS run of the same abstraction is its
    tables unchanged, then DCFR batches numbered from the source's last + 1 (their discounts
    are the ones batch k applies), bit for bit the PCS batches done by hand."""
    source = solved_run(tmp_path, "first", "lossless", 300, solver="pcs", batch=100)
    warm = solved_run(tmp_path, "warm", "lossless", 200, f'warm_start = "{source}"\n', solver="pcs", batch=100)
    lines = [json.loads(line) for line in open(f"{warm}/metrics.jsonl")]
    assert (lines[0]["warm_start_iterations"], lines[0]["warm_start_batches"]) == (300, 3)
    assert [(r["iteration"], r["batch"]) for r in lines[1:3]] == [(100, 4), (200, 5)]
    pg = pcs.PCSGame.build(game_of("leduc_lossless"))
    regrets, average = (np.load(f"{source}/checkpoint/{name}.npy") for name in ("regrets", "average"))
    for k, first in ((4, 1), (5, 101)):
        weights = pcs.batch_weights("dcfr", k)
        pcs.discount(regrets, average, weights)
        pcs.run_iterations(pg, regrets, average, 3, first, 100, weights, 1)
    assert np.array_equal(np.load(f"{warm}/checkpoint/regrets.npy"), regrets)
    assert np.array_equal(np.load(f"{warm}/policy/average.npy"), average)


def test_a_published_abstraction_names_its_run(tmp_path, monkeypatch):
    """``warm_start = "leduc_merged"`` (no such folder) is the run that published that
    abstraction's policy; a folder of that name, where one exists, is taken as it is."""
    source = solved_run(tmp_path, "merged", "merged", 200, solver="pcs", batch=100)
    monkeypatch.chdir(tmp_path)
    run, name = WarmSource.check("leduc_merged", "leduc", "pcs")
    assert (run.path, name) == (Path(source).resolve(), "leduc_merged")
    warm = solved_run(tmp_path, "warm", "lossless", 100, 'warm_start = "leduc_merged"\n', solver="pcs", batch=100)
    assert json.loads(open(f"{warm}/metrics.jsonl").readline())["warm_start"] == str(Path(source).resolve())
    flag = str(tmp_path / "flag")  # the same from the command line
    result = CliRunner().invoke(pokerbot, BASE + ["--size", "lossless", "--iterations", "100", "--warm-start", "leduc_merged",
                                                  "--out", flag])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(open(f"{flag}/metrics.jsonl").readline())["warm_start"] == str(Path(source).resolve())
    (tmp_path / "leduc_merged").mkdir()
    with pytest.raises(RunDirError, match="is not a run directory"):
        WarmSource.check("leduc_merged", "leduc", "pcs")


def test_bad_sources_are_one_line_errors(tmp_path):
    pcs_run = str(tmp_path / "pcs")
    assert CliRunner().invoke(pokerbot, BASE + ["--size", "merged", "--iterations", "50", "--out", pcs_run]).exit_code == 0
    fine = game_of("leduc_lossless")
    tables = np.zeros((fine.num_rows, 3), np.float32), np.zeros((fine.num_rows, 3), np.float32)
    with pytest.raises(ConfigError, match="solved by 'pcs', this run by 'es-mccfr'; tables carry over between runs of one"):
        warm_start(pcs_run, fine, *tables)
    with pytest.raises(ConfigError, match="weighted by 'dcfr', this run by 'cfr\\+'"):
        warm_start(pcs_run, fine, *tables, solver="pcs", scheme="cfr+")
    with pytest.raises(ConfigError, match="solves leduc_merged of 'leduc', not of 'kuhn'"):
        WarmSource.open(pcs_run, "kuhn", "pcs")
    with pytest.raises(RunDirError, match="is not a run directory"):
        warm_start(tmp_path, fine, *tables)
    with pytest.raises(ConfigError, match="'leduc_lossless': no solve of it is published here; `pokerbot train --algo "
                                          "abstraction --game leduc --size lossless --out runs/leduc_lossless` solves it"):  # fmt: skip
        WarmSource.check("leduc_lossless", "leduc", "pcs")
    config = tmp_path / "bad.toml"
    config.write_text(f'solver = "es-mccfr"\nwarm_start = "{pcs_run}"\n')
    result = CliRunner().invoke(pokerbot, BASE + ["--size", "lossless", "--config", str(config), "--out", str(tmp_path / "w")])
    assert result.exit_code != 0 and len(result.output.strip().splitlines()) == 1
    assert "solved by 'pcs', this run by 'es-mccfr'" in result.output
    config.write_text(f'solver = "es-mccfr"\nwarm_start = "{pcs_run}"\nwarm_start_weight = 2\n')
    result = CliRunner().invoke(pokerbot, BASE + ["--size", "lossless", "--config", str(config), "--out", str(tmp_path / "w")])
    assert result.exit_code != 0 and "warm_start_weight 2: a fraction between 0 and 1" in result.output
