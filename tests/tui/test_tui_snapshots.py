"""Snapshots of the table at 80x24 (the smallest supported terminal), seed 7, against the
calling station: pre-flop, after the flop, the showdown screen, the help screen, and the
opponent's one-line notice with its details behind ``?``.
Update after an intended change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs in ``tests/tui/__snapshots__/``."""

from __future__ import annotations

from bot.agents.base import CallAgent
from protocol.gamedef import load_game
from tui.app import PokerApp
from tui.session import TableSession

HOLDEM = load_game("holdem")


def table_app(**notice: str) -> PokerApp:
    return PokerApp(TableSession(HOLDEM, CallAgent(HOLDEM), seed=7), bot_delay=0, **notice)


#: A notice shaped like the shipped hold'em bot's (the real one changes with each new bot).
NOTICE = {
    "notice": "Opponent: pokerbot-test (shipped), vs abstraction_3e6 +31.1 ± 18.6 mbb/g",
    "details": "Playing pokerbot-test, the bot shipped for holdem: a solved card abstraction. "
               "Measured: vs abstraction_3e6 +31.1 ± 18.6 mbb/g (duplicate, 2 × 20,000 hands); "
               "vs call +491.2 ± 66.4 mbb/g (duplicate, 2 × 2,000 hands).",
}


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


def test_notice_is_one_line(snap_compare) -> None:
    assert snap_compare(table_app(**NOTICE), terminal_size=(140, 36), run_before=keys())


def test_notice_details_on_help(snap_compare) -> None:
    assert snap_compare(table_app(**NOTICE), terminal_size=(80, 24), run_before=keys("question_mark"))
