"""Snapshots of the table at 80x24 (the smallest supported terminal), seed 7, against the
calling station: pre-flop, after the flop, the showdown screen and the help screen.
Update after an intended change with ``pytest tests/test_tui_snapshots.py --snapshot-update``
and look at the SVGs in ``tests/__snapshots__/``."""

from __future__ import annotations

from bot.agents.base import CallAgent
from protocol.gamedef import load_game
from tui.app import PokerApp
from tui.session import TableSession

HOLDEM = load_game("holdem")


def table_app() -> PokerApp:
    return PokerApp(TableSession(HOLDEM, CallAgent(HOLDEM), seed=7), bot_delay=0)


def keys(*pressed: str):
    """A ``run_before`` that presses keys one by one and lets the bot's worker finish."""

    async def run(pilot) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        for key in pressed:
            await pilot.press(key)
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    return run


def test_preflop(snap_compare) -> None:
    assert snap_compare(table_app(), terminal_size=(80, 24), run_before=keys())


def test_after_flop(snap_compare) -> None:
    assert snap_compare(table_app(), terminal_size=(80, 24), run_before=keys("r"))


def test_showdown_screen(snap_compare) -> None:
    assert snap_compare(table_app(), terminal_size=(80, 24), run_before=keys("r", "c", "c", "c"))


def test_help_screen(snap_compare) -> None:
    assert snap_compare(table_app(), terminal_size=(80, 24), run_before=keys("question_mark"))


def test_four_colour_wide(snap_compare) -> None:
    """The layout scales up, and the four-colour deck (clubs green, diamonds blue)."""
    assert snap_compare(table_app(), terminal_size=(120, 36), run_before=keys("4", "r", "c"))
