"""``pokerbot watch`` driven through Textual's Pilot on Kuhn runs trained here, its CLI, and
the web mode fetched over HTTP on loopback."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from click.testing import CliRunner
from textual.widgets import Static, TabbedContent

from bot.cli import main
from protocol.betting_tree import BettingTree
from protocol.gamedef import load_game
from tui.watch.app import HelpScreen, WatchApp
from tui.watch.panels.advantages import AdvantageTable, chips, triple
from tui.watch.panels.traversal import TraversalPanel, traversal_lines
from tui.watch.panels.walkthrough import Walkthrough

ROOT = Path(__file__).resolve().parents[3]
SIZE = (80, 24)


async def settle(app, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


def text(widget: Static) -> str:
    return str(widget.render())


def files_and_times(run: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``run`` with its size and modification time (ns)."""
    return {str(p.relative_to(run)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(run.rglob("*"))}


async def test_every_tab_and_key_without_writing_into_the_run(kuhn_run) -> None:
    before = files_and_times(kuhn_run)
    app = WatchApp(kuhn_run, poll_seconds=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "iteration 6 of 6" in text(app.query_one("#title", Static))
        assert "finished" in text(app.query_one("#run", Static))
        await pilot.press("2")
        await settle(app, pilot)
        table = app.query_one(AdvantageTable)
        assert table.row_count == 12
        await pilot.press("down", "down")
        await settle(app, pilot)
        assert text(app.query_one(Walkthrough)).startswith("Qs||")
        for key in ("3", "down", "4", "t", "1", "x", "left", "home", "end"):
            await pilot.press(key)
            await settle(app, pilot)
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
    assert files_and_times(kuhn_run) == before


async def test_the_table_shows_the_checkpoint_networks(kuhn_run) -> None:
    """Each row's network cell is the model's advantages of the checkpoint's iteration in chips
    (checked against the networks themselves in test_watch.py)."""
    app = WatchApp(kuhn_run)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        table = app.query_one(AdvantageTable)
        for index in range(12):
            infoset = app.model.infoset(index, 6)
            row = table.get_row_at(index)
            assert row[0] == infoset.key
            assert row[1] == triple(chips(infoset), infoset.legal)
            assert row[2] == triple(infoset.exact, infoset.legal)
            assert row[4] == ("argmax" if infoset.advantages.fallback[index] else "")


async def test_following_a_run_that_grows(kuhn_run, tmp_path) -> None:
    """New iterations appear while watching; stepping back holds the view until ``end``."""
    from training.contract.rundir import RunDir
    from training.deep_cfr.trainer import DeepCFRTrainer

    run = tmp_path / "growing"
    shutil.copytree(kuhn_run, run)
    app = WatchApp(run, poll_seconds=3600)  # polled by hand below
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("left")
        assert app.iteration == 5
        opened = RunDir.open(run)
        config = dataclasses.replace(DeepCFRTrainer.config_class(**opened.config()), iterations=8)
        DeepCFRTrainer.continue_run(config, opened, progress=False).train()
        app.poll()
        await settle(app, pilot)
        assert app.model.iterations[-1] == 8 and app.iteration == 5
        assert app.model.history.entries == 9  # sigma^1..sigma^9 loaded by the worker
        await pilot.press("end")
        assert app.iteration == 8
        assert "iteration 8 of 8" in text(app.query_one("#title", Static))
        await pilot.press("4")
        await settle(app, pilot)
        assert "iteration 8" in text(app.query_one(TraversalPanel))


async def test_panels_that_do_not_apply_are_left_out(tmp_path) -> None:
    nfsp = tmp_path / "nfsp"
    nfsp.mkdir()
    (nfsp / "config.toml").write_text('game = "leduc"\neta = 0.1\nrl_capacity = 100\nsteps = 1000\n')
    (nfsp / "metrics.jsonl").write_text(
        '{"iteration": 250, "hands": 32000, "epsilon": 0.05, "eta": 0.1, "rl_fill_0": 0.5, "q_loss_0": 0.1, '
        '"exploitability_mbb": 800.0, "train_seconds": 3.0}\n{"iteration": 500, "hands": 64000, "epsilon": 0.04, '
        '"eta": 0.1, "rl_fill_0": 1.0, "q_loss_0": 0.08, "exploitability_mbb": 500.0, "train_seconds": 6.0}\n')
    app = WatchApp(nfsp)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        panes = {pane.id for pane in app.query_one(TabbedContent).query("TabPane")}
        assert panes == {"overview"}
        assert "step 500" in text(app.query_one("#run", Static))
        assert text(app.query_one("#memory", Static)).startswith("M_RL        p0 ")


async def test_a_large_game_shows_overview_and_traversal(tmp_path) -> None:
    fhp = tmp_path / "fhp"
    fhp.mkdir()
    (fhp / "config.toml").write_text('algo = "sd-cfr"\ngame = "fhp"\n')
    example = {"nodes": [0, 1], "parent": [-1, 0], "value": [50.0, 50.0], "sigma": [None, None],
               "traverser": 0, "holes": [[20, 44], [24, 36]], "board": [15, 26, 0]}
    (fhp / "metrics.jsonl").write_text(json.dumps({"iteration": 1, "loss_p0": 1.4, "advantage_fill_p0": 0.01,
                                                   "traversal_p0": example}) + "\n")
    app = WatchApp(fhp)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        panes = {pane.id for pane in app.query_one(TabbedContent).query("TabPane")}
        assert panes == {"overview", "traversal"}
        assert app.query_one("#no-plot", Static).display and not app.query_one("#plot").display
        await pilot.press("4")
        await settle(app, pilot)
        lines = text(app.query_one(TraversalPanel)).splitlines()
        assert lines[2:] == ["root  p1 samples f", "└─ f  p1 folds → +50.00"]


def test_traversal_regrets_are_child_minus_node_values(kuhn_run) -> None:
    """The tree's regrets are exactly v(h a) - v(h) of the recorded traversal."""
    record = [json.loads(line) for line in (kuhn_run / "metrics.jsonl").read_text().splitlines()][-1]
    example = record["traversal_p0"]
    lines = traversal_lines(example, BettingTree.build(load_game("kuhn")))
    kids = [row for row, up in enumerate(example["parent"]) if up == 0]
    expected = "  ".join(f"{BettingTree.build(load_game('kuhn')).history[example['nodes'][k]][-1]} "
                         f"{example['value'][k] - example['value'][0]:+.2f}" for k in kids)
    assert lines[1].startswith("root  p0: σ ") and lines[1].endswith(f"regret {expected}")


def test_cli_errors_are_one_line(tmp_path) -> None:
    result = CliRunner().invoke(main, ["watch", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {tmp_path} is not a run directory (no config.toml)"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_web_mode_serves_the_app_on_loopback(kuhn_run) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bot", "watch", "--web", str(port), str(kuhn_run)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        page = None
        for _ in range(600):  # the server starts in about a second; this only bounds a failure
            if server.poll() is not None:
                raise AssertionError(f"server exited: {server.stdout.read().decode()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    page = response.read().decode()
                    break
            except OSError:
                time.sleep(0.1)
        assert page is not None
        assert "textual" in page.lower() and f"pokerbot watch {kuhn_run}" in page
        assert f"127.0.0.1:{port}" in page  # the app's websocket is on the same loopback address
    finally:
        server.terminate()
        server.wait()

