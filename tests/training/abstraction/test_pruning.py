"""Negative-regret pruning of the ES abstraction solver (:class:`training.abstraction.solver.Pruning`)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.cli import main as pokerbot
from training.abstraction.build import build_abstraction
from training.abstraction.exploitability import exact_exploitability_report
from training.abstraction.solver import Pruning, run_batch

BATCH = 2_000


@pytest.fixture(scope="module")
def leduc() -> AbstractGame:
    build_abstraction(SPECS["leduc_lossless"])
    return AbstractGame.build(Abstraction.load(SPECS["leduc_lossless"]))


def solved(ag: AbstractGame, batches: int, pruning: Pruning | None = None) -> tuple[np.ndarray, np.ndarray]:
    regrets, average = np.zeros((ag.num_rows, 3), np.float32), np.zeros((ag.num_rows, 3), np.float32)
    for k in range(1, batches + 1):
        run_batch(ag, regrets, average, 1, (k - 1) * BATCH + 1, BATCH, k, 1, pruning)
    return regrets, average


def test_a_pruned_traversal_skips_only_actions_far_below_the_rows_positive_regret(leduc):
    """One iteration after 10 batches, every traversal pruned: fewer nodes; the first traversal's
    rows (seat 0's) differ from the unpruned iteration only in entries left untouched, each below
    -ratio x its row's positive regret; every explored action got the unpruned increment."""
    regrets, average = solved(leduc, 10)
    ratio = 2.0
    pruned, plain = (regrets.copy(), average.copy()), (regrets.copy(), average.copy())
    touched_pruned = run_batch(leduc, *pruned, 1, 10 * BATCH + 1, 1, 11, 1, Pruning(ratio, 1, 1e-12))
    touched_plain = run_batch(leduc, *plain, 1, 10 * BATCH + 1, 1, 11, 1)
    assert touched_pruned < touched_plain
    seat0 = np.zeros(leduc.num_rows, dtype=bool)
    for node in leduc.tree.decision_ids:
        if leduc.tree.actor[node] == 0:
            seat0[leduc.rows_of(node, 0) : leduc.rows_of(node, 0) + leduc.abstraction.num_buckets[leduc.tree.round[node]]] = True
    start = regrets * np.float32(10 / 12)  # batch 11's discount
    rows, actions = np.nonzero((pruned[0] != plain[0]) & seat0[:, None])
    assert len(rows) > 0
    assert np.array_equal(pruned[0][rows, actions], start[rows, actions])
    positive = np.maximum(start[rows], 0).sum(axis=1)
    assert (start[rows, actions] < -ratio * positive).all() and (positive > 0).all()


def test_full_traversals_only_when_every_share_is_full(leduc):
    """``full_share = 1``: no traversal prunes and the boost is 1, so the solve is the unpruned one."""
    assert all(np.array_equal(a, b) for a, b in zip(solved(leduc, 4, Pruning(2.0, 1, 1.0)), solved(leduc, 4), strict=True))


def test_pruning_from_a_later_batch_keeps_leduc_converging(leduc):
    """Pruned from batch 10 of 40 (ratio 100, 5% full traversals): exploitability within a
    quarter of the unpruned solve's, and far below the uniform strategy's."""
    plain = exact_exploitability_report(leduc, solved(leduc, 40)[1])["exploitability_mbb"]
    pruned = exact_exploitability_report(leduc, solved(leduc, 40, Pruning(100.0, 10, 0.05))[1])["exploitability_mbb"]
    assert pruned < 1.25 * plain < 400


@pytest.mark.parametrize("config, message", [
    ('solver = "pcs"\nprune_ratio = 10.0', 'prune_ratio needs solver = "es-mccfr"'),
    ('solver = "es-mccfr"\nprune_ratio = -1.0', "prune_ratio must be 0 (off) or more"),
    ('solver = "es-mccfr"\nprune_ratio = 10.0\nprune_full_share = 0.0', "prune_full_share in (0, 1]"),
])  # fmt: skip
def test_bad_pruning_settings_are_one_line_errors(tmp_path, config, message):
    path = tmp_path / "c.toml"
    path.write_text(config)
    result = CliRunner().invoke(pokerbot, ["train", "--algo", "abstraction", "--game", "leduc", "--size", "lossless",
                                           "--iterations", "10", "--config", str(path), "--out", str(tmp_path / "r")])  # fmt: skip
    assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output
