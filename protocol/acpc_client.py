"""The client side of the ACPC protocol: connect, handshake, read views, answer on our turn.

Follows the ACPC protocol, version 2.0.0, as the University of Alberta ACPC server's ``protocol.pdf`` and ``dealer.c`` define it (connection, handshake,
which messages need a reply). The connection knows nothing about
agents or people: whoever decides (``pokerbot connect`` with an Agent, the TUI's
``play --connect`` with a human) drives it.

API::

    conn = ACPCConnection.connect(host, port, game, timeout=10.0)   # sends VERSION:2.0.0
    for turn in conn.turns():           # one Turn per MATCHSTATE line, comments skipped
        turn.view                       # protocol.matchstate.MatchState (the player view)
        turn.is_our_turn, turn.is_final # derived from the betting and the gamedef (§2.5)
        if turn.is_our_turn:
            conn.send_action(turn, "c") # echo + ":c\\r\\n" in one write; illegal letters refused
    conn.summary                        # hands finished, chips won, mbb/g
    conn.close()

:meth:`ACPCConnection.play` wraps that loop for a ``decide(view) -> letter`` callable.
``turns()`` ends cleanly on EOF (how a match ends); a dealer that closes mid-hand ends it with
:class:`ACPCProtocolError`, whose message says so. Every error is one of the two classes below
(an ``OSError`` subclass for the network, a ``ValueError`` subclass for bad lines).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from protocol.betting_nodes import BettingNode, betting_root
from protocol.errors import ProtocolError
from protocol.gamedef import Game
from protocol.matchstate import (
    MatchState,
    MatchStateError,
    advance_node,
    check_cards,
    format_matchstate,
    parse_matchstate,
    quoted,
)
from protocol.socket_timeouts import EXPIRED, use_kernel_timeouts

VERSION_LINE = "VERSION:2.0.0\r\n"
#: Seconds the client waits for the dealer's next line before giving up. The dealer is silent
#: while the other seat thinks, which it allows for 600 s per reply by default, so the client
#: waits longer than that.
DEFAULT_READ_TIMEOUT = 900.0
#: A line longer than this without a newline is cut off and treated as one (garbage) line.
MAX_LINE = 1 << 20


class ACPCConnectionError(ProtocolError, OSError):
    """The network failed: refused, reset, timed out."""


class ACPCProtocolError(ProtocolError, ValueError):
    """The dealer sent something that breaks the protocol (a malformed line, EOF mid-hand)."""


class LineBuffer:
    """Bytes in, complete lines out: TCP gives no message boundaries (§1.3), so buffer and split
    on ``\\n``. Lines come back without the ``\\n`` but with any ``\\r`` (the dealer needs to
    see it; clients strip it)."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[str]:
        if data and not self._pending and data.find(b"\n") == len(data) - 1:  # one line: usual
            return [data[:-1].decode("utf-8", errors="replace")]
        self._pending += data
        lines: list[str] = []
        while True:
            end = self._pending.find(b"\n")
            if end >= 0:
                line, consumed = self._pending[:end], end + 1
            elif len(self._pending) > MAX_LINE:
                line, consumed = self._pending[:MAX_LINE], MAX_LINE
            else:
                return lines
            lines.append(line.decode("utf-8", errors="replace"))
            del self._pending[:consumed]

    @property
    def pending(self) -> bytes:
        """Bytes after the last newline (a partial line)."""
        return bytes(self._pending)


def is_comment(line: str) -> bool:
    return line.startswith("#") or line.startswith(";")


@dataclass(frozen=True)
class Turn:
    """One MATCHSTATE line as received and what it means for us."""

    text: str
    view: MatchState
    is_our_turn: bool
    is_final: bool
    legal: tuple[str, ...]
    values: tuple[int, ...] | None  # per position, on the final state only


@dataclass
class ClientSummary:
    """What a client knows at the end: hands finished and chips won (from the betting, §2.4)."""

    hands: int = 0
    chips: float = 0.0
    big_blind: int = 1
    interrupted_hand: int | None = None

    @property
    def mbb_per_hand(self) -> float:
        return 1000.0 * self.chips / (self.hands * self.big_blind) if self.hands else 0.0

    def line(self) -> str:
        text = f"hands played {self.hands}, chips won {self.chips:g}, {self.mbb_per_hand:.1f} mbb/g"
        if self.interrupted_hand is not None:
            text += f" (hand {self.interrupted_hand} was cut off)"
        return text


def interpret(text: str, game: Game, tracker: HandTracker | None = None) -> Turn:
    """Parse a dealer line, check its cards against the gamedef, and derive whose turn it is
    and whether the hand is over. ``tracker`` (one per connection) replays only the letters
    that are new since the previous line of the same hand."""
    view = parse_matchstate(text)
    state = (tracker or HandTracker(game)).advance(view)
    values = view.hand_values(game, state) if state.is_finished else None
    ours = not state.is_finished and state.actor == view.position
    return Turn(text, view, ours, state.is_finished, state.legal_actions() if ours else (), values)


class HandTracker:
    """The rules-engine state of the hand in progress, as the client last saw it. A dealer sends
    every state of a hand in order, so each line's betting extends the previous one and only
    the new letters need applying; a new hand number starts a fresh replay, and a line of the
    same hand that does not continue it is a protocol error (:func:`check_continues`).
    Cards are checked against the gamedef (:func:`check_cards`) whenever they or the round
    change."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self._view: MatchState | None = None
        self._state: BettingNode | None = None

    def advance(self, view: MatchState) -> BettingNode:
        previous, state = self._view, self._state
        self._view = self._state = None  # until this line is fully applied
        same_hand = previous is not None and state is not None and previous.hand_number == view.hand_number
        if same_hand:
            assert previous is not None and state is not None  # (narrows the types)
            check_continues(previous, view)
            start = len(previous.betting)
        else:
            state, start = betting_root(self.game), 0
        if (
            previous is None
            or not same_hand
            or view.hole_cards != previous.hole_cards  # identical objects while unchanged
            or view.board != previous.board
            or view.round != previous.round
        ):
            check_cards(view, self.game)
        state = advance_node(state, view.betting, start)
        self._view, self._state = view, state
        return state


def check_continues(previous: MatchState, view: MatchState) -> None:
    """A one-line :class:`MatchStateError` unless ``view`` continues ``previous``, a line of the
    same hand: within a hand the seat stays, the betting only grows (each line's extends the
    last), the own hole cards and the board dealt so far stay, and another seat's hole cards
    may appear (a showdown) but not change. A dealer that rewrites a hand under the same hand
    number is refused rather than answered."""
    hand = previous.hand_number
    if view.position != previous.position:
        problem = f"the seat changed within hand {hand} (position {previous.position} then {view.position})"
    elif not view.betting.startswith(previous.betting):
        problem = f"the betting was rewritten within hand {hand} ({quoted(previous.betting)} then {quoted(view.betting)})"
    elif view.own_hole_cards != previous.own_hole_cards or view.board[: len(previous.board)] != previous.board or any(
        before and before != after for before, after in zip(previous.hole_cards, view.hole_cards, strict=False)
    ) or len(view.hole_cards) != len(previous.hole_cards):
        problem = f"cards changed within hand {hand}"
    else:
        return
    raise MatchStateError(f"{problem}: {quoted(format_matchstate(previous))} then {quoted(format_matchstate(view))}")


class ACPCConnection:
    """One TCP connection to an ACPC dealer, blocking (one client, one thread)."""

    def __init__(self, sock: socket.socket, game: Game) -> None:
        self.sock = sock
        self.game = game
        self._buffer = LineBuffer()
        self._tracker = HandTracker(game)
        self.summary = ClientSummary(big_blind=game.big_blind)
        self._open_hand: int | None = None
        self.read_timeout = sock.gettimeout()  # seconds; :meth:`connect` sets kernel timeouts

    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        game: Game,
        timeout: float | None = 10.0,
        read_timeout: float | None = DEFAULT_READ_TIMEOUT,
    ) -> ACPCConnection:
        """Connect (within ``timeout`` seconds), set TCP_NODELAY and send the version line
        first (§1.4); reads then wait at most ``read_timeout`` seconds (None: forever)."""
        if not game.is_limit:
            raise ACPCProtocolError(f"{game.name}: only limit games are playable")
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except ConnectionRefusedError:
            raise ACPCConnectionError(
                f"connection to {host}:{port} refused (is the dealer running?)"
            ) from None
        except (TimeoutError, OSError) as error:
            raise ACPCConnectionError(f"cannot connect to {host}:{port}: {error}") from None
        # the kernel keeps both timeouts (protocol.socket_timeouts): a read or a write is one
        # system call; TCP_NODELAY, as every line is a whole message someone waits on
        use_kernel_timeouts(sock, read_timeout, read_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = cls(sock, game)
        connection.read_timeout = read_timeout
        connection._send(VERSION_LINE)
        return connection

    def _send(self, text: str) -> None:
        try:
            self.sock.sendall(text.encode("ascii"))
        except OSError as error:
            raise ACPCConnectionError(f"dealer connection lost while sending: {error}") from None

    def lines(self) -> Iterator[str]:
        """Non-comment, non-empty lines with ``\\r\\n`` stripped, until EOF. A silent dealer
        (past the socket's read timeout) or a partial last line before EOF is an error."""
        while True:
            try:
                data = self.sock.recv(65536)
            except EXPIRED:  # OSError subclasses: must come first
                raise ACPCConnectionError(
                    f"the dealer sent nothing for {self.read_timeout:g} s; giving up "
                    f"({self.summary.line()})"
                ) from None
            except OSError as error:
                raise ACPCConnectionError(f"dealer connection lost: {error}") from None
            if not data:
                break
            for line in self._buffer.feed(data):
                line = line.rstrip("\r\n")
                if line and not is_comment(line):
                    yield line
        partial = self._buffer.pending
        if partial.strip():
            raise ACPCProtocolError(
                f"dealer closed the connection in the middle of a line ({len(partial)} bytes "
                f"without a newline: {partial[:80]!r}); {self.summary.line()}"
            )

    def turns(self) -> Iterator[Turn]:
        """A :class:`Turn` per state; ends on EOF after a finished hand, raises if cut off."""
        for line in self.lines():
            try:
                turn = interpret(line, self.game, self._tracker)
            except MatchStateError as error:
                raise ACPCProtocolError(f"malformed line from dealer: {error}") from None
            self._open_hand = None if turn.is_final else turn.view.hand_number
            if turn.is_final:
                self.summary.hands += 1
                assert turn.values is not None
                self.summary.chips += turn.values[turn.view.position]
            yield turn
        if self._open_hand is not None:
            self.summary.interrupted_hand = self._open_hand
            raise ACPCProtocolError(
                f"dealer closed the connection in the middle of hand {self._open_hand}; "
                + self.summary.line()
            )

    def send_action(self, turn: Turn, action: str) -> None:
        """Reply to our turn: the state text as received, ``:``, the letter, ``\\r\\n``, in one write."""
        if not turn.is_our_turn:
            raise ACPCProtocolError(f"not our turn: {turn.text}")
        if action not in turn.legal:
            raise ACPCProtocolError(
                f"illegal action {action!r} at {turn.text} (legal: {''.join(turn.legal)})"
            )
        self._send(f"{turn.text}:{action}\r\n")

    def play(
        self,
        decide: Callable[[MatchState], str],
        on_turn: Callable[[Turn], None] | None = None,
    ) -> ClientSummary:
        """Play until the dealer closes the connection; ``on_turn`` sees every state."""
        for turn in self.turns():
            if on_turn is not None:
                on_turn(turn)
            if turn.is_our_turn:
                self.send_action(turn, decide(turn.view))
        return self.summary

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> ACPCConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
