"""``MATCHSTATE`` text: what one player sees of a hand, parsed and formatted exactly.

``MATCHSTATE:<position>:<handNumber>:<betting>:<cards>`` (the ACPC server's ``protocol.pdf``,
protocol version 2.0.0).
The parsed :class:`MatchState` is also the *player view* every :class:`bot.agents.base.Agent` gets,
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
from functools import lru_cache

from protocol.betting_nodes import BettingNode, betting_root
from protocol.cards import CardError, cards_from_str, cards_to_str, deck_set
from protocol.errors import ProtocolError
from protocol.gamedef import Game
from protocol.state import IllegalActionError, State

PREFIX = "MATCHSTATE"
#: Longest hand number accepted (the reference dealer counts hands in 32 bits; 18 digits fit any
#: 64-bit count), so a 5,000-digit number is a one-line error, not Python's conversion limit.
MAX_HAND_DIGITS = 18
_LIMIT_BETTING = re.compile(r"^[fcr/]*$")
_NOLIMIT_BETTING = re.compile(r"^(?:[fc/]|r\d+)*$")


class MatchStateError(ProtocolError, ValueError):
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
        return self.betting_node(game).to_state()

    def betting_node(self, game: Game) -> BettingNode:
        """The betting node of this view (:mod:`protocol.betting_nodes`): the same answers as
        :meth:`to_state` without replaying. Raises :class:`MatchStateError` as it does."""
        return advance_node(betting_root(game), self.betting)

    def hand_values(
        self, game: Game, state: State | BettingNode | None = None
    ) -> tuple[int, ...] | None:
        """Net chips per position once the hand is over (None while it runs), computed from the
        betting and the gamedef as a client must (§2.4): a fold needs no cards, a showdown uses
        the revealed hands and the board. ``state``: this view's betting already replayed (or its
        node)."""
        state = self.betting_node(game) if state is None else state
        if not state.is_finished:
            return None
        if not state.is_showdown:
            return state.payoffs()
        if any(len(h) != game.num_hole_cards for h in self.hole_cards):
            raise MatchStateError(
                f"showdown without every hand revealed: {format_matchstate(self)}"
            )
        board = self.board_flat
        if len(board) != game.total_board_cards:
            raise MatchStateError(f"showdown without the whole board: {format_matchstate(self)}")
        try:
            return state.with_cards(self.hole_cards, board).payoffs()
        except ValueError as error:
            raise MatchStateError(
                f"impossible showdown {format_matchstate(self)}: {error}"
            ) from None


#: Characters of outside input quoted in an error message at most (a 1 MB dealer line must not
#: become a 1 MB message).
QUOTE_LIMIT = 80


def quoted(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``repr(text)``, cut to ``limit`` characters with the full length said when longer."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def advance_node(node: BettingNode, betting: str, start: int = 0) -> BettingNode:
    """The betting node after ``betting[start:]`` from ``node``, which must be the node of
    ``betting[:start]`` (a client applies only the new letters of each line). Every ``/`` must
    close a round the rules closed; raises :class:`MatchStateError` otherwise or for an
    illegal letter."""
    rnd = betting.count("/", 0, start)
    try:
        for letter in betting[start:]:
            if letter == "/":
                rnd += 1
                continue
            if node.round != rnd:
                raise MatchStateError(f"betting {quoted(betting)}: round {rnd} is out of order")
            node = node.child(letter)
    except IllegalActionError as error:
        raise MatchStateError(
            f"betting {quoted(betting)} is illegal in {node.game.name}: {error}"
        ) from None
    if node.round != rnd:
        raise MatchStateError(f"betting {quoted(betting)} does not match the round structure")
    return node


def check_cards(view: MatchState, game: Game) -> None:
    """Reject a view whose cards cannot happen in ``game``: a hand of the wrong size, a card
    not in the deck or seen twice, board cards of a round not reached or the wrong number of
    them (a dealer must never send these; an agent that ignores cards would play on)."""
    if len(view.hole_cards) != game.num_players:
        raise MatchStateError(
            f"{game.num_players} hole-card groups expected, got {len(view.hole_cards)}"
        )
    for position, hole in enumerate(view.hole_cards):
        if len(hole) != game.num_hole_cards and (hole or position == view.position):
            raise MatchStateError(
                f"position {position} has {len(hole)} hole cards; {game.name} deals "
                f"{game.num_hole_cards}"
            )
    rounds = view.round
    if rounds >= game.num_rounds:
        raise MatchStateError(f"betting {quoted(view.betting)} has more rounds than {game.name}")
    if len(view.board) > rounds:
        raise MatchStateError(f"board cards of round {len(view.board)} sent in round {rounds}")
    for rnd, cards in enumerate(view.board, start=1):
        if len(cards) != game.num_board_cards[rnd]:
            raise MatchStateError(
                f"{len(cards)} board cards in round {rnd}; {game.name} deals "
                f"{game.num_board_cards[rnd]}"
            )
    if len(view.board) < rounds and any(game.num_board_cards[1 : rounds + 1]):
        raise MatchStateError(f"board cards of round {rounds} missing")
    seen = [c for hole in view.hole_cards for c in hole]
    for cards in view.board:
        seen += cards
    in_deck = deck_set(game.num_ranks, game.num_suits)
    if not in_deck.issuperset(seen):
        card = next(c for c in seen if c not in in_deck)
        raise MatchStateError(f"card {cards_to_str((card,))} is not in the {game.name} deck")
    if len(set(seen)) != len(seen):
        repeated = sorted({c for c in seen if seen.count(c) > 1})
        raise MatchStateError(f"card {cards_to_str(repeated[:1])} appears twice")


def parse_matchstate(line: str) -> MatchState:
    """Parse a MATCHSTATE line (``\\r\\n`` already stripped). Limit and no-limit betting. Errors
    quote at most :data:`QUOTE_LIMIT` characters of the line."""
    parts = line.split(":")
    if len(parts) != 5 or parts[0] != PREFIX:
        raise MatchStateError(f"not a MATCHSTATE line: {quoted(line)}")
    _, position_text, hand_text, betting, cards_text = parts
    if not position_text.isdigit() or not hand_text.isdigit():
        raise MatchStateError(f"bad position or hand number in {quoted(line)}")
    if len(position_text) > 2 or len(hand_text) > MAX_HAND_DIGITS:
        raise MatchStateError(
            f"position or hand number too long (hand numbers have at most {MAX_HAND_DIGITS} "
            f"digits) in {quoted(line)}"
        )
    if not (_LIMIT_BETTING.match(betting) or _NOLIMIT_BETTING.match(betting)):
        raise MatchStateError(f"bad betting {quoted(betting)} in {quoted(line)}")
    try:
        holes, board = _parse_cards_field(cards_text)
    except CardError as error:
        raise MatchStateError(f"bad cards {quoted(cards_text)}: {str(error)[:QUOTE_LIMIT]}") from None
    position = int(position_text)
    if position >= len(holes):
        raise MatchStateError(f"position {position} has no hole-card group in {quoted(cards_text)}")
    return MatchState(position, int(hand_text), betting, holes, board)


@lru_cache(maxsize=4096)
def _parse_cards_field(
    cards_text: str,
) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """Hole cards per position and board cards per round of a cards field; cached, since a
    client sees the same field in most lines of a hand (it changes only with a new round)."""
    groups = cards_text.split("/")
    holes = tuple([cards_from_str(h) for h in groups[0].split("|")])
    return holes, tuple([cards_from_str(b) for b in groups[1:]])


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


@lru_cache(maxsize=64)
def _board_slices(game: Game) -> tuple[tuple[int, int], ...]:
    """Where each round's board cards lie in a hand's board, rounds 1 to the last."""
    through = [game.board_cards_through(r) for r in range(game.num_rounds)]
    return tuple(zip(through, through[1:], strict=False))


class HandViews:
    """The MATCHSTATE text of every view of one dealt hand, built from per-hand pieces: the
    dealer sends a line per player per state, and formatting cards anew for each costs more
    than the rest of the dealer's work. ``line(state, p, reveal)`` equals
    ``format_matchstate(view_of(state, p, hand, reveal))``.

    >>> from protocol.gamedef import load_game
    >>> from protocol.cards import cards_from_str
    >>> game = load_game("leduc")
    >>> holes, board = (cards_from_str("Kh"), cards_from_str("Qs")), cards_from_str("Ks")
    >>> state = State(game, holes, board)
    >>> _ = state.bet_or_raise(); _ = state.check_or_call()
    >>> HandViews(game, holes, board, 7).line(state, 1)
    'MATCHSTATE:1:7:rc/:|Qs/Ks'
    """

    def __init__(
        self,
        game: Game,
        holes: tuple[tuple[int, ...], ...],
        board: tuple[int, ...],
        hand_number: int,
    ) -> None:
        self._prefix = [f"{PREFIX}:{p}:{hand_number}:" for p in range(game.num_players)]
        self._holes = [cards_to_str(h) for h in holes]
        self._hidden = [
            ":" + "|".join(text if q == p else "" for q, text in enumerate(self._holes))
            for p in range(game.num_players)
        ]
        self._board = [""]  # the board text once round r has started, rounds 1..r
        for start, stop in _board_slices(game):
            self._board.append(self._board[-1] + "/" + cards_to_str(board[start:stop]))

    def log_cards(self, round_index: int) -> str:
        """The cards field of the hand's log line when it ended in ``round_index``: every
        position's hole cards and the board so far (:func:`protocol.match_log.state_line`)."""
        return "|".join(self._holes) + self._board[round_index]

    def line(self, state: State | BettingNode, position: int, reveal: bool = False) -> str:
        if reveal:
            folded = state.folded
            cards = ":" + "|".join(
                text if q == position or not folded[q] else "" for q, text in enumerate(self._holes)
            )
        else:
            cards = self._hidden[position]
        return self._prefix[position] + state.betting_string() + cards + self._board[state.round]
