"""``PokerApp``: the table a person plays on. Game logic lives in :mod:`tui.session` (or
:mod:`tui.remote` for a dealer); this module wires keys and buttons to it, runs the other side
in a worker and refreshes the widgets.

Keys f/c/r are bindings whose availability follows the legal actions (``check_action``); a key
that is not available falls through to :meth:`PokerApp.on_key`, which only shows a short hint.
The bot decides in a thread so the screen never freezes; its action is shown after
``bot_delay`` seconds so a person can follow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import Button, Footer, Static

from bot.errors import ConfigError, PokerbotError
from protocol.evaluator import hand_name
from protocol.state import ACTIONS, IllegalActionError
from tui.screens import ConfirmQuitScreen, HelpScreen, ShowdownScreen, outcome_text, subject_verb
from tui.session import BOT, HUMAN, HandResult, Table, describe_action
from tui.session_log import SessionLog
from tui.widgets import (
    ActionBar,
    BettingView,
    Board,
    HandLog,
    Seat,
    StatsView,
    cards_plain,
    position_role,
    round_names,
)


class PokerApp(App[Path | None]):
    """Heads-up limit poker at a :class:`~tui.session.Table`. Exits with the session log's
    path (None when nothing was logged)."""

    CSS_PATH = "app.tcss"
    TITLE = "pokerbot"

    BINDINGS = [
        Binding("f", "act('f')", "fold"),
        Binding("c", "act('c')", "check/call"),
        Binding("r", "act('r')", "bet/raise"),
        Binding("n", "next_hand", "next hand"),
        Binding("h", "probabilities", "bot probs", show=False),
        Binding("4", "four_colour", "4-colour", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit_session", "quit"),
    ]

    def __init__(
        self,
        session: Table,
        *,
        bot_delay: float = 0.6,
        auto_next: float | None = None,
        four_colour: bool = False,
        session_log: SessionLog | None = None,
        notice: str | None = None,
        details: str | None = None,
    ) -> None:
        super().__init__()
        if auto_next is not None and auto_next <= 0:
            raise ConfigError(f"auto_next must be a positive number of seconds, not {auto_next}")
        self.session = session
        self.bot_delay = bot_delay
        self.auto_next = auto_next
        self.four_colour = four_colour
        self.session_log = session_log
        #: One line about the opponent for the hand log, and the whole story for the ``?`` screen.
        self.notice = notice
        self.details = details
        #: True while the other side is deciding (or the dealer has not answered yet).
        self.thinking = False
        self.last_result: HandResult | None = None
        self._auto_timer: Timer | None = None

    # -- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        game = self.session.game
        yield Static(id="title")
        with Horizontal(id="main"):
            with Vertical(id="table"):
                yield Seat(BOT, game, id="bot-seat", classes="seat")
                yield Board(game, id="board")
                yield Seat(HUMAN, game, id="human-seat", classes="seat")
                yield ActionBar(id="actions")
                yield Static(id="status")
            with Vertical(id="side"):
                yield StatsView(id="stats")
                yield BettingView(id="betting")
                yield HandLog(id="log", wrap=True, markup=True, min_width=20)
        yield Footer()

    def on_mount(self) -> None:
        self.set_class(self.four_colour, "-four-colour")
        if self.notice:  # a manifest's text is not markup
            more = " ([b]?[/b] details)" if self.details else ""
            self.log_line(f"[i]{escape(self.notice)}[/i]{more}")
        self.start_hand()

    # -- refreshing ----------------------------------------------------------------------
    def refresh_table(self) -> None:
        """Redraw every widget from the session."""
        session = self.session
        self.query_one("#title", Static).update(f"[b]pokerbot[/b]  {escape(session.title())}")
        if session.state is not None:
            self.query_one("#bot-seat", Seat).show(session)
            self.query_one("#human-seat", Seat).show(session)
            self.query_one(Board).show(session)
            self.query_one(ActionBar).show(session, self.thinking)
            self.query_one(BettingView).show(session)
        self.query_one(StatsView).show(session.stats())
        self.query_one("#status", Static).update(self.turn_text())
        self.refresh_bindings()

    def turn_text(self) -> str:
        opponent = self.session.seat_names[BOT]
        if self.thinking:
            return f"{opponent} is thinking…"
        turn = self.session.to_act()
        if turn == HUMAN:
            return "[b]Your turn[/b]: f fold, c check/call, r bet/raise"
        if self.session.is_over:
            reason = f" ({self.session.end_reason})" if self.session.end_reason else ""
            return f"Session over{reason}. q quits."
        return "Hand over: n next hand, h bot's choices"

    def hint(self, text: str) -> None:
        """A short hint in the status line (for a key that does nothing now)."""
        self.query_one("#status", Static).update(f"[i]{text}[/i]")

    def log_line(self, text: str) -> None:
        self.query_one(HandLog).write(text)

    # -- hand flow -----------------------------------------------------------------------
    def start_hand(self) -> None:
        """Deal (or, at a dealer, wait for) the next hand, then play it; keys are off from
        this moment until it is the person's turn."""
        if self._auto_timer is not None:
            self._auto_timer.stop()
            self._auto_timer = None
        self.thinking = True
        self.refresh_table()
        self._start_hand()

    @work(group="table")
    async def _start_hand(self) -> None:
        session = self.session
        await asyncio.to_thread(session.start_hand)
        self.thinking = False
        self.last_result = None
        if not session.in_hand:  # a dealer ended the match instead
            self.refresh_table()
            return
        position = session.human_position
        self.log_line(
            f"[b]Hand {session.hand_number + 1}[/b]: you are position {position} "
            f"({position_role(session.game, position)}), cards {cards_plain(session.hole_cards(position) or ())}"
        )
        self.refresh_table()
        await self.play_until_human()

    async def play_until_human(self) -> None:
        """Let the other side act until it is the person's turn or the hand is over (it may
        act twice in a row when a round closes on its call and it opens the next round)."""
        session = self.session
        while session.to_act() == BOT:
            self.thinking = True
            self.refresh_table()
            try:
                decision = await asyncio.to_thread(session.decide_bot)
            except (PokerbotError, ValueError, LookupError, OSError) as error:  # a broken agent: say so, keep the UI
                self.thinking = False
                self.refresh_table()
                self.hint(f"The bot failed: {error}. q quits.")
                return
            if self.bot_delay > 0 and decision.kind is not None:
                await asyncio.sleep(self.bot_delay)
            self.thinking = False
            if decision.kind is None:
                session.apply_bot(decision)
            else:
                self.record_action(BOT, lambda d=decision: session.apply_bot(d), decision.kind)
        self.refresh_table()
        state = session.state
        if state is not None and state.is_finished and self.last_result is None:
            self.settle_hand()

    def record_action(self, seat: str, apply: Callable[[], object], kind: str) -> None:
        """Apply an action, log it in words, and log a new round's cards."""
        session = self.session
        assert session.state is not None
        words = describe_action(session.state, kind)
        before_round = session.state.round
        apply()
        self.log_line(f"  {session.seat_names[seat]}: {words}")
        state = session.state
        if state.round != before_round and not state.is_finished:
            name = round_names(session.game)[state.round]
            self.log_line(f"  [b]{name}[/b] {cards_plain(session.visible_board())}")
        self.refresh_table()

    def settle_hand(self) -> None:
        session = self.session
        result = session.finish_hand()
        self.last_result = result
        if self.session_log is not None:
            self.session_log.write_hand(result)
        if result.is_showdown:
            for seat, position in ((BOT, result.bot_position), (HUMAN, result.human_position)):
                hole = result.hole_cards[position]
                self.log_line(
                    f"  {subject_verb(seat, session.seat_names, 'show')} {cards_plain(hole)}: {hand_name(hole + result.board)}"
                )
        self.log_line(f"  [b]{outcome_text(result, session.seat_names)}[/b]  (session {session.human_total:+d})")
        self.refresh_table()
        self.push_screen(ShowdownScreen(result, session.game, session.seat_names, session.is_over), self.after_showdown)
        if self.auto_next is not None and not session.is_over:
            self._auto_timer = self.set_timer(self.auto_next, self.auto_next_hand)

    def after_showdown(self, choice: str | None) -> None:
        if choice == "next":
            self.action_next_hand()
        elif choice == "quit":
            self.action_quit_session()

    def auto_next_hand(self) -> None:
        """Automatic next hand (``auto_next`` seconds after a hand ends)."""
        if isinstance(self.screen, ShowdownScreen):
            self.screen.dismiss("next")
        else:
            self.action_next_hand()

    # -- actions -------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """f/c/r are available only for the person's legal actions and never while the other
        side thinks; n only between hands. None shows them greyed in the footer."""
        if action == "act":
            return None if self.thinking or parameters[0] not in self.session.legal_actions() else True
        if action == "next_hand":
            return None if self.thinking or self.session.in_hand or self.session.is_over else True
        return True

    def action_act(self, kind: str) -> None:
        """The person's action, applied at once; then the other side plays in a worker."""
        session = self.session
        if self.thinking:
            return
        try:
            self.record_action(HUMAN, lambda: session.act(kind), kind)
        except (IllegalActionError, OSError) as error:  # OSError: a dealer connection that died
            self.hint(f"{str(error).capitalize()}.")
            return
        self.thinking = session.to_act() == BOT
        self._after_human()

    @work(group="table")
    async def _after_human(self) -> None:
        await self.play_until_human()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        kind = (event.button.id or "").removeprefix("action-")
        if kind in ACTIONS:
            self.run_action(f"act('{kind}')")

    def on_key(self, event: events.Key) -> None:
        """Keys f/c/r that reach here were not available: hint why, change nothing."""
        if event.key not in ("f", "c", "r"):
            return
        state = self.session.state
        if self.thinking:
            self.hint(f"Wait: {self.session.seat_names[BOT].lower()} is thinking.")
        elif self.session.to_act() != HUMAN or state is None:
            self.hint("No hand is running: press n for the next hand.")
        else:
            verify = {"f": state.verify_fold, "c": state.verify_check_or_call, "r": state.verify_bet_or_raise}
            try:
                verify[event.key]()
            except IllegalActionError as error:
                self.hint(f"{str(error).capitalize()}.")

    def action_next_hand(self) -> None:
        if self.thinking or self.session.in_hand or self.session.is_over:
            return
        self.start_hand()

    def action_probabilities(self) -> None:
        if self.last_result is None:
            self.hint("The bot's probabilities are shown after the hand.")
            return
        screen = ShowdownScreen(self.last_result, self.session.game, self.session.seat_names, self.session.is_over)
        self.push_screen(screen, self.after_showdown)
        screen.call_after_refresh(screen.action_probabilities)

    def action_four_colour(self) -> None:
        self.four_colour = not self.four_colour
        self.set_class(self.four_colour, "-four-colour")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.session.game, self.details))

    def action_quit_session(self) -> None:
        if self.session.in_hand:
            self.push_screen(ConfirmQuitScreen(), lambda yes: self.finish_session() if yes else None)
        else:
            self.finish_session()

    def finish_session(self) -> None:
        """Write the session log (finished hands only) and exit with its path."""
        self.exit(self.session_log.close() if self.session_log else None)
