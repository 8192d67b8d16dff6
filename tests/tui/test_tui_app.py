"""Whole hands driven by key presses through Textual's Pilot against deterministic agents.

After every key the bot may think in a worker: tests wait for the workers, then let the screen
settle, and assert the engine state, the enabled actions, the pot and the session totals.
"""

from __future__ import annotations

from textual.widgets import Button, Static

from bot.agents.base import CallAgent, RaiseAgent
from protocol.gamedef import load_game
from protocol.match_log import read_match_log
from tui.app import PokerApp
from tui.screens import ConfirmQuitScreen, HelpScreen, ShowdownScreen
from tui.session import TableSession
from tui.session_log import SessionLog

HOLDEM = load_game("holdem")
LEDUC = load_game("leduc")
SIZE = (80, 24)


def make_app(game, agent_class, seed, tmp_path=None, **kwargs) -> PokerApp:
    session = TableSession(game, agent_class(game), seed=seed, hands=kwargs.pop("hands", None))
    log = SessionLog(tmp_path / "session.log", session) if tmp_path else None
    return PokerApp(session, bot_delay=0, session_log=log, **kwargs)


async def settle(app, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def press(app, pilot, key: str) -> None:
    await pilot.press(key)
    await settle(app, pilot)


def enabled(app) -> set[str]:
    """Letters of the enabled action buttons."""
    buttons = app.screen_stack[0].query(Button)
    return {b.id.removeprefix("action-") for b in buttons if b.id and not b.disabled}


def labels(app) -> dict[str, str]:
    return {b.id.removeprefix("action-"): str(b.label) for b in app.screen_stack[0].query(Button) if b.id}


def status(app) -> str:
    return str(app.screen_stack[0].query_one("#status", Static).content)


async def test_showdown_then_fold_then_quit(tmp_path) -> None:
    app = make_app(HOLDEM, CallAgent, seed=7, tmp_path=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        session = app.session
        # Hand 0: you are the big blind; the bot (small blind) limped.
        assert session.state.betting_string() == "c" and session.state.pot == 20
        assert enabled(app) == {"c", "r"}
        assert labels(app)["c"] == "c check" and labels(app)["r"] == "r raise to 20"
        await press(app, pilot, "f")  # illegal: a hint, nothing else
        assert session.state.betting_string() == "c"
        assert "Cannot fold: checking is free" in status(app)
        await press(app, pilot, "r")
        assert session.state.betting_string() == "crc/" and session.state.pot == 40
        assert enabled(app) == {"c", "r"} and labels(app)["r"] == "r bet 10"
        for expected in ("crc/cc/", "crc/cc/cc/"):
            await press(app, pilot, "c")
            assert session.state.betting_string() == expected and session.state.pot == 40
        await press(app, pilot, "c")
        assert session.state.is_finished and isinstance(app.screen, ShowdownScreen)
        outcome = str(app.screen.query_one("#showdown-outcome").content)
        assert "Bot wins 20" in outcome
        assert "Flush, Jack high" in str(app.screen.query(".showdown-hand").first().content)
        assert session.human_total == -20 and session.stats().hands == 1
        assert enabled(app) == set()
        # Hand 1: you are the small blind, first to act; fold.
        await press(app, pilot, "n")
        assert session.hand_number == 1 and session.human_position == 1
        assert enabled(app) == {"f", "c", "r"} and labels(app)["c"] == "c call 5"
        await press(app, pilot, "f")
        assert isinstance(app.screen, ShowdownScreen)
        assert "You folded. Bot wins 5" in str(app.screen.query_one("#showdown-outcome").content)
        assert session.human_total == -25
        await press(app, pilot, "escape")
        await press(app, pilot, "q")
    path = app.return_value
    assert path == tmp_path / "session.log"
    log = read_match_log(path)
    assert [h.value_of("human") for h in log.hands] == [-20, -5]
    assert log.score == ((-25, 25), ("human", "call"))


async def test_split_pot(tmp_path) -> None:
    app = make_app(HOLDEM, CallAgent, seed=5)  # 6d Jh vs 6h Js on Ac 3h 9s Tc 9c
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for _ in range(4):
            await press(app, pilot, "c")
        assert isinstance(app.screen, ShowdownScreen)
        assert "Split pot" in str(app.screen.query_one("#showdown-outcome").content)
        assert app.session.human_total == 0 and app.session.results[0].record.values == (0, 0)


async def test_raise_cap_and_probabilities() -> None:
    app = make_app(LEDUC, RaiseAgent, seed=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        session = app.session
        assert enabled(app) == {"c", "r"} and labels(app)["r"] == "r bet 2"
        await press(app, pilot, "h")  # not during the hand
        assert "after the hand" in status(app)
        await press(app, pilot, "r")
        assert session.state.betting_string() == "rr" and session.state.pot == 8
        assert enabled(app) == {"f", "c"}
        await press(app, pilot, "r")  # the cap is reached: only a hint
        assert session.state.betting_string() == "rr"
        assert "allows 2 raises" in status(app)
        await press(app, pilot, "c")
        await press(app, pilot, "c")  # round 2: you check, the bot bets
        assert session.state.betting_string() == "rrc/cr"
        await press(app, pilot, "c")  # call; hand over
        assert isinstance(app.screen, ShowdownScreen)
        await press(app, pilot, "h")
        text = str(app.screen.query_one("#showdown-probabilities").content)
        assert "r 1.00  -> r" in text and text.count("-> r") == 2
        await press(app, pilot, "escape")  # back at the table, h reopens the same answer
        assert not isinstance(app.screen, ShowdownScreen)
        await press(app, pilot, "h")
        assert isinstance(app.screen, ShowdownScreen)
        assert str(app.screen.query_one("#showdown-probabilities").content) == text


async def test_quit_mid_hand_asks_and_help_screen(tmp_path) -> None:
    app = make_app(LEDUC, CallAgent, seed=1, tmp_path=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "leduc.limit.2p" in str(app.screen.query_one("#help Static").content)
        await press(app, pilot, "escape")
        await press(app, pilot, "q")
        assert isinstance(app.screen, ConfirmQuitScreen)
        await press(app, pilot, "n")
        assert app.is_running and app.session.in_hand
        await press(app, pilot, "q")
        await press(app, pilot, "y")
    assert app.return_value is None  # no finished hand: nothing logged
    assert not (tmp_path / "session.log").exists()


async def test_hand_limit_ends_session() -> None:
    app = make_app(LEDUC, CallAgent, seed=1, hands=1, auto_next=0.01)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        while app.session.in_hand:
            await press(app, pilot, "c")
        assert app.session.is_over and isinstance(app.screen, ShowdownScreen)
        await press(app, pilot, "escape")
        await press(app, pilot, "n")
        assert app.session.hand_number == 0 and "Session over" in status(app)


async def test_auto_next_hand() -> None:
    app = make_app(LEDUC, CallAgent, seed=1, hands=2, auto_next=0.01)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        while app.session.in_hand and app.session.hand_number == 0:
            await press(app, pilot, "c")
        for _ in range(50):  # the timer fires on the event loop: poll, no wall-clock limit
            if app.session.hand_number == 1:
                break
            await pilot.pause()
            await settle(app, pilot)
        assert app.session.hand_number == 1 and app.session.in_hand
        assert not isinstance(app.screen, ShowdownScreen)


class BrokenAgent(CallAgent):
    name = "broken"

    def action_probabilities(self, view):
        raise ValueError("no policy for this betting")


async def test_broken_agent_is_a_message_not_a_crash() -> None:
    app = make_app(HOLDEM, BrokenAgent, seed=7)  # hand 0: the bot (small blind) acts first
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "The bot failed: no policy for this betting" in status(app)
        assert app.is_running and enabled(app) == set()
        await press(app, pilot, "q")
        await press(app, pilot, "y")
    assert app.return_value is None


async def test_one_line_notice_and_details_on_question_mark() -> None:
    """The opponent's notice is one line of the hand log; ``?`` shows its details (the whole
    provenance) under the rules and keys, and closes again."""
    details = "Playing leduc-bot, the bot shipped for leduc: made by a test. Measured: vs call +300 mbb/g."
    app = make_app(LEDUC, CallAgent, seed=1, notice="Opponent: leduc-bot (shipped), vs call +300 mbb/g",
                   details=details)
    async with app.run_test(size=(140, 36)) as pilot:
        await settle(app, pilot)
        rows = [line.text.rstrip() for line in app.query_one("#log").lines]
        notice_rows = rows[: next(i for i, row in enumerate(rows) if row.startswith("Hand 1"))]
        assert " ".join(notice_rows) == "Opponent: leduc-bot (shipped), vs call +300 mbb/g (? details)"
        assert len(notice_rows) <= 2  # one line of text: at most one wrap in a 140-column side panel
        assert "made by a test" not in "".join(rows)
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help Static").content)
        assert text.endswith(f"[b]Opponent[/b]\n{details}") and "leduc.limit.2p" in text
        await press(app, pilot, "question_mark")
        assert not isinstance(app.screen, HelpScreen)
