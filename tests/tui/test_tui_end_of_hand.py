"""The end of a hand at 80x24: the history's grammar, and nothing of the table showing, cut
off, beside or under the showdown panel (the side history used to leak past its right edge)."""

from __future__ import annotations

import re
from html import unescape

from textual.widgets import RichLog

from bot.agents.base import CallAgent
from protocol.gamedef import load_game
from tui.app import PokerApp
from tui.screens import ShowdownScreen, subject_verb
from tui.session import BOT, HUMAN, TableSession

HOLDEM = load_game("holdem")


def screen_text(app: PokerApp) -> str:
    """Every piece of text the terminal shows (from the app's SVG screenshot)."""
    svg = app.export_screenshot()
    return "".join(unescape(piece) for piece in re.findall(r"<text [^>]*>([^<]*)</text>", svg)).replace("\xa0", " ")


def history(app: PokerApp) -> str:
    """The side history's text, its wrapped lines joined (whitespace runs as one space)."""
    log = app.screen_stack[0].query_one(RichLog)
    return re.sub(r"\s+", " ", " ".join("".join(segment.text for segment in strip) for strip in log.lines))


async def showdown(pilot) -> None:
    """Seed 7 against the calling station: raise, then check to a showdown the bot wins."""
    app = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause()
    for key in ("r", "c", "c", "c"):
        await pilot.press(key)
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert isinstance(app.screen, ShowdownScreen)


def test_subject_verb_agrees_with_you() -> None:
    names = {HUMAN: "You", BOT: "Bot"}
    assert subject_verb(HUMAN, names, "show") == "You show"
    assert subject_verb(BOT, names, "show") == "Bot shows"
    assert subject_verb(BOT, {HUMAN: "You", BOT: "Opponent"}, "win") == "Opponent wins"


async def test_history_says_you_show() -> None:
    app = PokerApp(TableSession(HOLDEM, CallAgent(HOLDEM), seed=7), bot_delay=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await showdown(pilot)
        text = history(app)
        assert "You show 4♥ K♥" in text and "Bot shows 8♥ J♣" in text
        assert "You shows" not in text


async def test_showdown_panel_hides_the_table() -> None:
    """Under the panel nothing of the table shows: before the backdrop was opaque, the history's
    last line ("Bot wins 20  (session -20)") and cut-off words showed around the panel."""
    app = PokerApp(TableSession(HOLDEM, CallAgent(HOLDEM), seed=7), bot_delay=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await showdown(pilot)
        assert "(session -20)" in history(app)  # the history has it...
        text = screen_text(app)
        assert "Bot wins 20" in text  # ...the panel says who won...
        assert "session" not in text and "Hands 1" not in text  # ...and the table stays hidden
        await pilot.press("escape")  # esc shows the table again
        await pilot.pause()
        assert "Hands 1" in screen_text(app)
