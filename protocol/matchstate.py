"""``MATCHSTATE`` text: what one player sees of a hand, parsed and formatted exactly.

``MATCHSTATE:<position>:<handNumber>:<betting>:<cards>`` (the ACPC server's ``protocol.pdf``,
protocol version 2.0.0).
The parsed :class:`MatchState` is also the *player view* every :class:`bot.agent.Agent` gets,
whether the hand runs in-process, over TCP, or in the TUI.

>>> text = "MATCHSTATE:0:1:cc/cc/rrrrc/rc:9h6s|3d3h/5s3s8h/9d/5c"
>>> view = parse_matchstate(text)
>>> view.position, view.hand_number, view.betting, cards_to_str(view.own_hole_cards)
(0, 1, 'cc/cc/rrrrc/rc', '9h6s')
>>> cards_to_str(view.board_flat)
'5s3s8h9d5c'
>>> format_matchstate(view) == text
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from protocol.cards import CardError, cards_from_str, cards_to_str
from protocol.errors import PokerbotError
from protocol.gamedef import Game
from protocol.state import State

PREFIX = "MATCHSTATE"
_LIMIT_BETTING = re.compile(r"^[fcr/]*$")
_NOLIMIT_BETTING = re.compile(r"^(?:[fc/]|r\d+)*$")


class MatchStateError(PokerbotError, ValueError):
    """Text that is not a well-formed MATCHSTATE line."""


@dataclass(frozen=True)
class MatchState:
    """One player's view: position, hand number, betting text, hole cards per position (empty
    where unknown), and the board cards of rounds 1.. current (one tuple per round)."""

    position: int
    hand_number: int
    betting: str
    hole_cards: tuple[tuple[int, ...], ...]
    board: tuple[tuple[int, ...], ...] = ()

    @property
    def own_hole_cards(self) -> tuple[int, ...]:
        return self.hole_cards[self.position]

    @property
    def board_flat(self) -> tuple[int, ...]:
        return tuple(c for r in self.board for c in r)

    @property
    def round(self) -> int:
        return self.betting.count("/")

    def betting_rounds(self) -> list[str]:
        return self.betting.split("/")

    def to_state(self, game: Game) -> State:
        """Replay the betting on a fresh rules engine (cards the viewer does not know are left
        out). Raises :class:`MatchStateError` if the betting is illegal in ``game``."""
        return self._replay(State(game), game)

    def _replay(self, state: State, game: Game) -> State:
        try:
            for rnd, actions in enumerate(self.betting_rounds()):
                if rnd != state.round:
                    raise MatchStateError(f"betting {self.betting!r}: round {rnd} is out of order")
                for kind in actions:
                    state.apply(kind)
        except (ValueError, NotImplementedError) as error:
            if isinstance(error, MatchStateError):
                raise
            raise MatchStateError(f"betting {self.betting!r} is illegal in {game.name}: {error}") from None
        if state.round != self.round:
            raise MatchStateError(f"betting {self.betting!r} does not match the round structure")
        return state

    def hand_values(self, game: Game) -> tuple[int, ...] | None:
        """Net chips per position once the hand is over (None while it runs), computed from the
        betting and the gamedef as a client must (§2.4): a fold needs no cards, a showdown uses
        the revealed hands and the board."""
        state = self.to_state(game)
        if not state.is_finished:
            return None
        if not state.is_showdown:
            return state.payoffs()
        if any(len(h) != game.num_hole_cards for h in self.hole_cards):
            raise MatchStateError(f"showdown without every hand revealed: {format_matchstate(self)}")
        board = self.board_flat
        if len(board) != game.total_board_cards:
            raise MatchStateError(f"showdown without the whole board: {format_matchstate(self)}")
        try:
            return self._replay(State(game, self.hole_cards, board), game).payoffs()
        except ValueError as error:
            raise MatchStateError(f"impossible showdown {format_matchstate(self)}: {error}") from None


def parse_matchstate(line: str) -> MatchState:
    """Parse a MATCHSTATE line (``\\r\\n`` already stripped). Limit and no-limit betting."""
    parts = line.split(":")
    if len(parts) != 5 or parts[0] != PREFIX:
        raise MatchStateError(f"not a MATCHSTATE line: {line[:120]!r}")
    _, position_text, hand_text, betting, cards_text = parts
    if not position_text.isdigit() or not hand_text.isdigit():
        raise MatchStateError(f"bad position or hand number in {line[:120]!r}")
    if not (_LIMIT_BETTING.match(betting) or _NOLIMIT_BETTING.match(betting)):
        raise MatchStateError(f"bad betting {betting!r} in {line[:120]!r}")
    groups = cards_text.split("/")
    try:
        holes = tuple(cards_from_str(h) for h in groups[0].split("|"))
        board = tuple(cards_from_str(b) for b in groups[1:])
    except CardError as error:
        raise MatchStateError(f"bad cards {cards_text!r}: {error}") from None
    position = int(position_text)
    if position >= len(holes):
        raise MatchStateError(f"position {position} has no hole-card group in {cards_text!r}")
    return MatchState(position, int(hand_text), betting, holes, board)


def format_matchstate(view: MatchState) -> str:
    """The MATCHSTATE text (without line ending) of a view."""
    cards = "|".join(cards_to_str(h) for h in view.hole_cards)
    cards += "".join("/" + cards_to_str(b) for b in view.board)
    return f"{PREFIX}:{view.position}:{view.hand_number}:{view.betting}:{cards}"


def view_of(state: State, position: int, hand_number: int, reveal: bool = False) -> MatchState:
    """The view ``position`` has of ``state``; ``reveal`` shows the hole cards of every player
    who did not fold (the dealer does so in the final state of a showdown)."""
    game = state.game
    assert state.hole_cards is not None
    holes = tuple(
        h if p == position or (reveal and not state.folded[p]) else ()
        for p, h in enumerate(state.hole_cards)
    )
    board_rounds = []
    visible = state.visible_board()
    for rnd in range(1, state.round + 1):
        start, stop = game.board_cards_through(rnd - 1), game.board_cards_through(rnd)
        board_rounds.append(tuple(visible[start:stop]))
    return MatchState(position, hand_number, state.betting_string(), holes, tuple(board_rounds))
