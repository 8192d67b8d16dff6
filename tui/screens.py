"""Modal screens over the table: the end of a hand, help, and the quit confirmation."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from protocol.cards import RANKS, SUITS
from protocol.evaluator import hand_name
from protocol.gamedef import Game
from protocol.state import ACTIONS
from tui.session import BOT, HUMAN, HandResult
from tui.widgets import CardRow, position_role, round_names

#: Key help shared by the help screen and docs/commands/play.md.
KEYS_HELP = [
    ("f", "fold (only when facing a bet)"),
    ("c", "check, or call the bet you face"),
    ("r", "bet, or raise (limit: one fixed size per round)"),
    ("n", "next hand (after a hand ends)"),
    ("h", "the bot's probabilities at its decisions (after the hand)"),
    ("4", "switch between the two- and four-colour deck"),
    ("?", "this help: rules, keys and what is known about the opponent"),
    ("q", "quit and write the session log (asks first in the middle of a hand)"),
]


def subject_verb(seat: str, seat_names: dict[str, str], verb: str) -> str:
    """``You show`` / ``Bot shows``: the person is "You", so their verbs take no -s."""
    return f"{seat_names[seat]} {verb}" if seat == HUMAN else f"{seat_names[seat]} {verb}s"


def outcome_text(result: HandResult, seat_names: dict[str, str]) -> str:
    """``You win 40`` / ``Bot wins 40`` / ``Split pot``, with who folded if someone did."""
    net = result.human_net
    if net > 0:
        headline = f"{subject_verb(HUMAN, seat_names, 'win')} {net}"
    elif net < 0:
        headline = f"{subject_verb(BOT, seat_names, 'win')} {-net}"
    else:
        headline = "Split pot: nobody wins chips"
    if result.folder is not None:
        folder = seat_names[HUMAN if result.folder == result.human_position else BOT]
        headline = f"{folder} folded. {headline}"
    return headline


def probabilities_text(result: HandResult) -> str:
    """The bot's probabilities at each of its decisions in the hand (the learning aid)."""
    if not result.decisions or all(not d.probabilities for d in result.decisions):
        return "No bot probabilities for this hand (the bot made no decision, or plays remotely)."
    lines = ["[b]Bot's decisions[/b] (betting before it / probabilities / choice)"]
    for decision in result.decisions:
        probabilities = "  ".join(
            f"{k} {decision.probabilities.get(k, 0.0):.2f}" for k in ACTIONS if k in decision.probabilities
        )
        lines.append(f"{decision.view.betting or '(start)':<14} {probabilities}  -> {decision.kind}")
    return "\n".join(lines)


class ShowdownScreen(ModalScreen[str]):
    """End of a hand: both hands and their names at a showdown (only your own after a fold,
    as the ACPC dealer reveals nothing then), the winner and amount. Dismisses with
    ``"next"``, ``"table"`` or ``"quit"``."""

    BINDINGS = [
        Binding("n", "dismiss('next')", "next hand"),
        Binding("h", "probabilities", "bot's probabilities"),
        Binding("escape", "dismiss('table')", "see table"),
        Binding("q", "dismiss('quit')", "quit"),
    ]

    def __init__(
        self, result: HandResult, game: Game, seat_names: dict[str, str], session_over: bool = False
    ) -> None:
        super().__init__()
        self.result = result
        self.game = game
        self.seat_names = seat_names
        self.session_over = session_over

    def compose(self) -> ComposeResult:
        result = self.result
        title = "Showdown" if result.is_showdown else "Hand over"
        with Vertical(id="showdown"):
            yield Label(f"[b]Hand {result.hand_number + 1}: {title}[/b]", id="showdown-title")
            if result.board:
                with Horizontal(classes="showdown-row"):
                    yield Label("Board", classes="showdown-name")
                    row = CardRow(len(result.board))
                    yield row
            for seat, position in ((BOT, result.bot_position), (HUMAN, result.human_position)):
                hole = result.hole_cards[position]
                reveal = seat == HUMAN or result.is_showdown
                with Horizontal(classes="showdown-row"):
                    yield Label(escape(self.seat_names[seat]), classes="showdown-name")
                    yield CardRow(self.game.num_hole_cards, id=f"showdown-{seat}")
                    text = hand_name(hole + result.board) if reveal else "cards not shown"
                    yield Label(escape(text), classes="showdown-hand")
            yield Label(f"[b]{escape(outcome_text(result, self.seat_names))}[/b]", id="showdown-outcome")
            yield Static(id="showdown-probabilities")
            more = "session over" if self.session_over else "[b]n[/b] next hand"
            yield Label(f"{more}  [b]h[/b] bot's probabilities  [b]esc[/b] table  [b]q[/b] quit", id="showdown-keys")

    def on_mount(self) -> None:
        result = self.result
        if result.board:
            self.query(CardRow).first().show(list(result.board))
        self.query_one("#showdown-human", CardRow).show(list(result.hole_cards[result.human_position]))
        bot_hole = result.hole_cards[result.bot_position]
        self.query_one("#showdown-bot", CardRow).show(
            list(bot_hole) if result.is_showdown else [None] * self.game.num_hole_cards
        )

    def action_probabilities(self) -> None:
        box = self.query_one("#showdown-probabilities", Static)
        box.update(probabilities_text(self.result))
        box.add_class("-shown")


def rules_text(game: Game) -> str:
    """The rules of ``game`` in words, from its gamedef."""
    ranks = RANKS[13 - game.num_ranks :]
    suits = SUITS[4 - game.num_suits :]
    names = round_names(game)
    few = game.num_hole_cards + game.total_board_cards < 5
    lines = [
        f"[b]{escape(game.name)}[/b]: heads-up {'limit' if game.is_limit else 'no-limit'}.",
        f"Deck {ranks} x {suits}; {game.num_hole_cards} private card(s) each. Position 0: "
        f"{position_role(game, 0)}; position 1: {position_role(game, 1)}. Seats swap every hand.",
    ]
    for rnd in range(game.num_rounds):
        board = game.num_board_cards[rnd]
        dealt = f"+{board} board card{'s' * (board > 1)}, " if board else ""
        lines.append(
            f"  {names[rnd]}: {dealt}bets of {game.raise_size[rnd]}, at most "
            f"{game.max_raises[rnd]} bets/raises, position {game.first_player[rnd]} first."
        )
    lines.append(
        "Best hand from your cards plus the board wins"
        + (" (no straights or flushes with under 5 cards)." if few else ".")
    )
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Rules of the current game, the keys, and what is known about the opponent (the details
    behind the side panel's one-line notice: who made it and every measured figure)."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "close")]

    def __init__(self, game: Game, opponent: str | None = None) -> None:
        super().__init__()
        self.game = game
        self.opponent = opponent

    def compose(self) -> ComposeResult:
        keys = "\n".join(f"  [b]{key}[/b]  {escape(what)}" for key, what in KEYS_HELP)
        opponent = f"\n[b]Opponent[/b]\n{escape(self.opponent)}" if self.opponent else ""
        with VerticalScroll(id="help"):
            yield Static(f"{rules_text(self.game)}\n[b]Keys[/b] (esc closes)\n{keys}{opponent}")


class ConfirmQuitScreen(ModalScreen[bool]):
    """Quitting mid-hand abandons the hand (the session log keeps finished hands only)."""

    BINDINGS = [Binding("y", "dismiss(True)", "yes"), Binding("n,escape", "dismiss(False)", "no")]

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label("Quit in the middle of a hand?\nThis hand is not counted or logged.")
            yield Label("[b]y[/b] quit   [b]n[/b] keep playing")
