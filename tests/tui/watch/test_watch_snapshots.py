"""Snapshots of ``pokerbot watch`` on a committed Kuhn SD-CFR run (``tests/data/watch-kuhn-sdcfr``:
wall-clock figures fixed, trained once, since training numerics differ between CPUs; see
``conftest.FROZEN_KUHN_RUN``): the overview at 80x24 and 120x36, and the networks, strategy and
traversal tabs, each at both sizes. Update after an intended change with
``pytest tests/tui/watch/test_watch_snapshots.py --snapshot-update`` and look at the SVGs in
``tests/tui/watch/__snapshots__/``."""

from __future__ import annotations

from tests.tui.test_tui_snapshots import keys  # press keys, letting workers finish after each
from tui.watch.app import WatchApp


def test_overview_80x24(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(80, 24), run_before=keys())


def test_overview_120x36(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(120, 36), run_before=keys())


def test_networks_80x24(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(80, 24), run_before=keys("2", "down", "down"))


def test_strategy_120x36(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(120, 36), run_before=keys("3", "down", "down"))


def test_traversal_stepped_back_120x36(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(120, 36), run_before=keys("4", "left", "t"))


def test_networks_120x36(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(120, 36), run_before=keys("2", "up"))


def test_strategy_80x24(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(80, 24), run_before=keys("3"))


def test_traversal_80x24(snap_compare, frozen_kuhn_run) -> None:
    assert snap_compare(WatchApp(frozen_kuhn_run), terminal_size=(80, 24), run_before=keys("4"))
