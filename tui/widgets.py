"""The table's widgets: one class per thing on screen. They only *show* a
:class:`~tui.session.Table`; colours and sizes live in ``app.tcss``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, RichLog, Sparkline, Static

from protocol.cards import RANKS, SUIT_SYMBOLS, SUITS, card_rank, card_suit
from protocol.gamedef import Game
from protocol.state import ACTIONS, CALL, FOLD, RAISE
from tui.session import HUMAN, SessionStats, Table, describe_betting


def card_text(card: int) -> str:
    """``A♠``, ``10♥``: rank then suit symbol (``T`` shown as ``10`` as printed cards do)."""
    rank = RANKS[card_rank(card)]
    return ("10" if rank == "T" else rank) + SUIT_SYMBOLS[SUITS[card_suit(card)]]


def round_names(game: Game) -> list[str]:
    """Hold'em street names when the first round has no board cards (Leduc's second round is
    its flop), ``Betting`` for one-round games such as Kuhn, otherwise numbered."""
    if game.num_rounds == 1:
        return ["Betting"]
    if game.num_board_cards[0] == 0 and game.num_rounds <= 4:
        return ["Pre-flop", "Flop", "Turn", "River"][: game.num_rounds]
    return [f"Round {r + 1}" for r in range(game.num_rounds)]


def position_role(game: Game, position: int) -> str:
    """``button, small blind 5``/``big blind 10`` (hold'em) or ``button, ante 1``."""
    blind = game.blind[position]
    if len(set(game.blind)) == 1:
        role = f"ante {blind}"
    else:
        role = f"{'big' if blind == max(game.blind) else 'small'} blind {blind}"
    return f"button, {role}" if position == game.num_players - 1 else role


class Card(Static):
    """One card place: face up (rank and coloured suit), face down, or empty."""

    def show(self, card: int | None) -> None:
        """Face up when ``card`` is a card code, face down when None."""
        for suit in SUITS:
            self.set_class(card is not None and SUITS[card_suit(card)] == suit, f"-suit-{suit}")
        self.set_class(card is None, "-down")
        self.remove_class("-empty")
        self.update(" " if card is None else card_text(card))

    def clear(self) -> None:
        """An empty place (a board card not dealt yet)."""
        self.remove_class("-down", *(f"-suit-{suit}" for suit in SUITS))
        self.add_class("-empty")
        self.update(" ")


class CardRow(Horizontal):
    """A row of ``slots`` card places; :meth:`show` fills them (None = face down, missing =
    empty place)."""

    def __init__(self, slots: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.slots = slots

    def compose(self) -> ComposeResult:
        for _ in range(self.slots):
            yield Card(classes="-empty")

    def show(self, cards: Sequence[int | None]) -> None:
        for index, widget in enumerate(self.query(Card)):
            if index < len(cards):
                widget.show(cards[index])
            else:
                widget.clear()


class Seat(Vertical):
    """A player's seat: name, role this hand, chips in the pot, session total, cards."""

    def __init__(self, seat: str, game: Game, **kwargs) -> None:
        super().__init__(**kwargs)
        self.seat = seat
        self.game = game

    def compose(self) -> ComposeResult:
        with Horizontal(classes="seat-info"):
            yield CardRow(self.game.num_hole_cards)
            yield Static(classes="seat-text")

    def show(self, session: Table) -> None:
        """Refresh from the session (the other side's cards show only once revealed)."""
        state = session.state
        if state is None:
            return
        position = session.human_position if self.seat == HUMAN else session.bot_position
        name = escape(session.seat_names[self.seat])
        total = session.human_total if self.seat == HUMAN else -session.human_total
        lines = [
            f"[b]{name}[/b]  {position_role(self.game, position)}",
            f"in pot {state.spent[position]}   session {total:+d}",
        ]
        if state.folded[position]:
            lines.append("[i]folded[/i]")
        elif session.to_act() == self.seat:
            lines.append("[b]▶ to act[/b]")
        self.query_one(".seat-text", Static).update("\n".join(lines))
        self.set_class(session.to_act() == self.seat, "-to-act")
        hole = session.hole_cards(position)
        self.query_one(CardRow).show(list(hole) if hole else [None] * self.game.num_hole_cards)


class Board(Horizontal):
    """The board cards dealt so far and the pot."""

    def __init__(self, game: Game, **kwargs) -> None:
        super().__init__(**kwargs)
        self.game = game

    def compose(self) -> ComposeResult:
        yield CardRow(self.game.total_board_cards)
        yield Static(id="pot")

    def show(self, session: Table) -> None:
        state = session.state
        if state is None:
            return
        self.query_one(CardRow).show(list(session.visible_board()))
        street = round_names(self.game)[state.round]
        self.query_one("#pot", Static).update(f"[b]Pot {state.pot}[/b]\n{street}")


class ActionBar(Horizontal):
    """Fold / check-call / bet-raise buttons; only the person's legal actions are enabled."""

    KEYS = {FOLD: "f", CALL: "c", RAISE: "r"}
    IDLE = {FOLD: "fold", CALL: "check/call", RAISE: "bet/raise"}

    def compose(self) -> ComposeResult:
        for kind in ACTIONS:
            yield Button(kind, id=f"action-{kind}", disabled=True, compact=True)

    def show(self, session: Table, thinking: bool) -> None:
        legal = () if thinking else session.legal_actions()
        for kind in ACTIONS:
            button = self.query_one(f"#action-{kind}", Button)
            words = session.action_label(kind) if kind in legal else self.IDLE[kind]
            button.label = f"{self.KEYS[kind]} {words}"
            button.disabled = kind not in legal


class BettingView(Static):
    """The betting of this hand so far, one line per round."""

    def show(self, session: Table) -> None:
        state = session.state
        if state is None:
            return
        names = round_names(session.game)
        lines = []
        for rnd, actions in enumerate(describe_betting(session.game, state.betting_string())):
            if not actions:
                continue
            said = ", ".join(f"{session.seat_names[session.seat_of(p)]} {w}" for p, w in actions)
            lines.append(f"[b]{names[rnd]}[/b]: {said}")
        self.update("\n".join(lines) or "[dim]no betting yet[/dim]")


class HandLog(RichLog):
    """Scrollable history of every action and result of the session."""


class StatsView(Vertical):
    """Session statistics and a sparkline of the person's cumulative result."""

    def compose(self) -> ComposeResult:
        yield Label(id="stats-text")
        yield Sparkline([0.0], id="stats-spark")

    def show(self, stats: SessionStats) -> None:
        if stats.hands >= 2:
            ci = f"± {stats.ci95:.0f}"
        else:
            ci = "± ?"
        self.query_one("#stats-text", Label).update(
            f"Hands {stats.hands}  You {stats.total:+d}\n{stats.mbb_per_game:+.0f} {ci} mbb/g (95%)"
        )
        data = [0.0, *map(float, stats.cumulative)] if stats.cumulative else []
        self.query_one("#stats-spark", Sparkline).data = data


def cards_plain(cards: Sequence[int]) -> str:
    """Cards as text for the hand log (``A♠ K♦``)."""
    return " ".join(card_text(c) for c in cards) if cards else "-"

