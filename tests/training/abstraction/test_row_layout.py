"""The solvers' traversal row layout (:mod:`training.abstraction.row_layout`): a permutation of the
canonical rows that changes where rows sit, never what ES or PCS computes."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.cli import main as pokerbot
from training.abstraction import pcs
from training.abstraction.build import build_abstraction
from training.abstraction.row_layout import RowLayout
from training.abstraction.solver import Pruning, run_batch

BATCH = 2_000


def abstract_game(name: str) -> AbstractGame:
    build_abstraction(SPECS[name])
    return AbstractGame.build(Abstraction.load(SPECS[name]))


@pytest.mark.parametrize("name", ["leduc_lossless", "leduc_merged"])
def test_the_traversal_layout_puts_each_infoset_on_its_own_row_and_round_trips(name):
    ag = abstract_game(name)
    layout = RowLayout.traversal_of(ag)
    rows = [layout.row_offset[n] + b * layout.stride[n]
            for n in ag.tree.decision_ids for b in range(ag.abstraction.num_buckets[ag.tree.round[n]])]  # fmt: skip
    assert sorted(rows) == list(range(ag.num_rows))
    # the same bucket's nodes of a round are neighbours (what makes a traversal cache-friendly)
    river = np.sort(ag.tree.decision_ids[ag.tree.round[ag.tree.decision_ids] == ag.abstraction.game.num_rounds - 1])
    assert np.array_equal(np.diff(layout.row_offset[river]), np.ones(len(river) - 1))
    table = np.random.default_rng(0).random((ag.num_rows, 3)).astype(np.float32)
    moved = table.copy()
    layout.adopt(moved)
    assert not np.array_equal(moved, table)
    assert np.array_equal(layout.canonical(moved), table)
    canonical = RowLayout.canonical_of(ag)
    assert canonical.canonical(table) is table


@pytest.mark.parametrize("pruning", [None, Pruning(100.0, 3, 0.05)])
def test_a_solve_in_the_traversal_layout_is_the_canonical_solve_bit_for_bit(pruning):
    ag = abstract_game("leduc_merged")
    layout = RowLayout.traversal_of(ag)
    plain = [np.zeros((ag.num_rows, 3), np.float32) for _ in range(2)]
    moved = [np.zeros((ag.num_rows, 3), np.float32) for _ in range(2)]
    for k in range(1, 7):
        run_batch(ag, *plain, 3, (k - 1) * BATCH + 1, BATCH, k, 1, pruning)
        run_batch(ag, *moved, 3, (k - 1) * BATCH + 1, BATCH, k, 1, pruning, layout)
    for a, b in zip(plain, moved, strict=True):
        assert np.array_equal(layout.canonical(b), a)
        assert not np.array_equal(b, a)  # the rows really were elsewhere


@pytest.mark.parametrize("scheme", ["dcfr", "cfr+"])
def test_a_pcs_solve_in_the_traversal_layout_is_the_canonical_solve_bit_for_bit(scheme):
    ag = abstract_game("leduc_merged")
    layout = RowLayout.traversal_of(ag)
    plain_game, moved_game = pcs.PCSGame.build(ag), pcs.PCSGame.build(ag, layout)
    plain = [np.zeros((ag.num_rows, 3), np.float32) for _ in range(2)]
    moved = [np.zeros((ag.num_rows, 3), np.float32) for _ in range(2)]
    for k in range(1, 5):
        weights = pcs.batch_weights(scheme, k)
        for game, tables in ((plain_game, plain), (moved_game, moved)):
            pcs.discount(*tables, weights)
            pcs.run_iterations(game, *tables, 3, (k - 1) * 50 + 1, 50, weights, 1)
    for a, b in zip(plain, moved, strict=True):
        assert np.array_equal(layout.canonical(b), a)
        assert not np.array_equal(b, a)


@pytest.mark.parametrize("solver, batch", [("es-mccfr", 2000), ("pcs", 100)])
def test_runs_write_canonical_files_and_resume_into_the_same_solve(tmp_path, solver, batch):
    """``--algo abstraction``: a run in the traversal layout writes the same policy and
    checkpoint as one kept canonical (memory-mapped tables), and a resumed run equals an
    uninterrupted one (one thread)."""
    runner = CliRunner()
    base = ["train", "--algo", "abstraction", "--game", "leduc", "--size", "merged", "--threads", "1"]
    (tmp_path / "es.toml").write_text(f'solver = "{solver}"\nbatch = {batch}\n')
    (tmp_path / "mm.toml").write_text(f'solver = "{solver}"\nbatch = {batch}\nmmap_tables = true\n')
    for name, config, iterations in (("half", "es", 2 * batch), ("once", "es", 4 * batch), ("mapped", "mm", 4 * batch)):
        result = runner.invoke(pokerbot, base + ["--iterations", str(iterations), "--config", str(tmp_path / f"{config}.toml"),
                                                 "--out", str(tmp_path / name)])  # fmt: skip
        assert result.exit_code == 0, result.output
    resumed = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--resume", str(tmp_path / "half"),
                                       "--iterations", str(4 * batch)])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    for path in ("policy/average.npy", "checkpoint/regrets.npy", "checkpoint/average.npy"):
        once = np.load(tmp_path / "once" / path)
        assert np.array_equal(once, np.load(tmp_path / "mapped" / path)), path
        assert np.array_equal(once, np.load(tmp_path / "half" / path)), path


def test_a_run_without_ram_for_the_conversions_solves_canonical_and_says_so(tmp_path, monkeypatch):
    import training.abstraction.run as run_module

    monkeypatch.setattr(run_module, "available_memory", lambda: 1000)  # less than one leduc_merged table
    monkeypatch.setattr(run_module, "check_tables_fit", lambda *args: None)
    (tmp_path / "es.toml").write_text('solver = "es-mccfr"\nbatch = 2000\n')
    result = CliRunner().invoke(pokerbot, ["train", "--algo", "abstraction", "--game", "leduc", "--size", "merged", "--threads", "1",
                                           "--iterations", "4000", "--config", str(tmp_path / "es.toml"), "--out", str(tmp_path / "r")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "solving in the canonical row layout" in " ".join(result.output.split())
