"""An ACPC-compatible dealer (asyncio TCP), behaving as the reference ``dealer`` does.

Follows the ACPC protocol, version 2.0.0, as the University of Alberta ACPC server's ``protocol.pdf`` and ``dealer.c`` define it: life cycle, which reply counts, bad input,
timeouts and disconnects, seats and rotation, arguments, stdout, stderr and the ``.log``. Limit
games.

What it does differently from the reference, on purpose: it binds 127.0.0.1 unless told
otherwise, and the version handshake has a deadline (``t_response``), so a client that connects
and never says hello cannot hang it. Deals come from :func:`protocol.dealing.deal_hand`, so they
depend only on the seed and the hand number; with the names swapped, the same seed replays the
same cards by position (a duplicate match). Not implemented: ``-a`` with ``-T`` resuming from a
transaction log (the ``.tlog`` itself is written).

    dealer = Dealer(options)        # DealerOptions: the reference's arguments and options
    ports = dealer.listen()         # binds, prints the ports line on ``out``
    status = asyncio.run(dealer.serve())   # 0 on a complete match, 1 on any fatal error
"""

from __future__ import annotations

import asyncio
import random
import re
import socket
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from protocol.acpc_client import LineBuffer, is_comment
from protocol.dealing import deal_hand, seat_of_position
from protocol.errors import ConfigError, PokerbotError, UnsupportedGameError
from protocol.gamedef import Game
from protocol.match_log import MatchHeader, MatchLogWriter, format_score_line, record_of
from protocol.matchstate import (
    MatchState,
    MatchStateError,
    format_matchstate,
    parse_matchstate,
    view_of,
)
from protocol.state import State

#: Port draws per seat when no port is given (the reference retries 10 extra times).
PORT_ATTEMPTS = 11
_VERSION = re.compile(r"^VERSION:(\d+)\.(\d+)\.(\d+)")
_REPLY = re.compile(r"^(MATCHSTATE:\d+:\d+:[^:]*:(?:[2-9TJQKA][cdhs]|[|/])*)(.*)$", re.DOTALL)
_LETTERS = {
    "f": "f",
    "F": "f",
    "c": "c",
    "C": "c",
    "k": "c",
    "K": "c",
    "r": "r",
    "R": "r",
    "b": "r",
    "B": "r",
}


@dataclass(frozen=True)
class DealerOptions:
    """The reference dealer's positional arguments and the options that matter (times in ms)."""

    match_name: str
    gamedef_file: str
    game: Game
    hands: int
    seed: int
    names: tuple[str, ...]
    ports: tuple[int, ...] = ()  # per seat; missing or 0 = drawn from the seed
    host: str = "127.0.0.1"
    fixed_seats: bool = False  # -f
    write_log: bool = True  # -l / -L
    write_tlog: bool = False  # -t / -T
    append: bool = False  # -a
    quiet: bool = False  # -q
    t_response: int = 600000
    t_hand: int = 600000
    t_per_hand: int = 7000
    start_timeout: int = -1  # negative: wait forever for connections
    os_ports: bool = False  # let the kernel pick free ports (in-process --wire matches)

    def __post_init__(self) -> None:
        if self.hands <= 0:
            raise ConfigError(f"invalid number of hands {self.hands}")
        if len(self.names) != self.game.num_players:
            raise ConfigError(
                f"{self.game.name} needs {self.game.num_players} player names, got {len(self.names)}"
            )
        for name in self.names:
            if not name or any(c in name for c in ":| \t\r\n"):
                raise ConfigError(
                    f"player name {name!r} must be non-empty without ':', '|' or spaces"
                )
        if not self.game.is_limit:
            raise UnsupportedGameError(f"{self.game.name}: the dealer plays limit games only")

    def header(self) -> MatchHeader:
        return MatchHeader(
            self.match_name,
            self.gamedef_file,
            self.hands,
            self.seed,
            self.t_response,
            self.t_hand,
            self.t_per_hand,
        )


@dataclass(frozen=True)
class Reply:
    """How the dealer reads one line on a player's turn: an action (possibly changed to a call),
    or None to keep waiting; ``warning`` is the reference dealer's WARNING text, if any."""

    action: str | None
    warning: str | None = None


def parse_reply(line: str, expected: MatchState, legal: tuple[str, ...]) -> Reply:
    """Judge a client's line against the state the dealer waits on (§3, §4).

    >>> from protocol.matchstate import parse_matchstate
    >>> waiting = parse_matchstate("MATCHSTATE:0:1:c:9h6s|")
    >>> parse_reply("MATCHSTATE:0:1:c:9h6s|:r", waiting, ("c", "r"))
    Reply(action='r', warning=None)
    >>> parse_reply("MATCHSTATE:0:1:c:9h6s|\\r:r", waiting, ("c", "r")).warning
    'bad action format in response, changed to call'
    >>> parse_reply("MATCHSTATE:0:1:c:9h6s|:f", waiting, ("c", "r"))
    Reply(action='c', warning='invalid action, changed to call')
    >>> parse_reply("MATCHSTATE:0:0::9h6s|:c", waiting, ("c", "r"))
    Reply(action=None, warning='ignoring un-requested response')
    """
    match = _REPLY.match(line)
    if match is None:
        return Reply(None, "bad state format in response")
    try:
        echoed = parse_matchstate(match.group(1))
    except MatchStateError:
        return Reply(None, "bad state format in response")
    if (
        echoed.position != expected.position
        or echoed.hand_number != expected.hand_number
        or echoed.betting != expected.betting
        or len(echoed.hole_cards) <= expected.position
        or echoed.own_hole_cards != expected.own_hole_cards
        or echoed.board != expected.board
    ):
        return Reply(None, "ignoring un-requested response")
    rest = match.group(2)
    if not rest.startswith(":"):
        return Reply("c", "bad action format in response, changed to call")
    action = _LETTERS.get(rest[1:2])
    if action is None or action not in legal:
        return Reply("c", "invalid action, changed to call")
    return Reply(action)


class DealerSocketError(PokerbotError, OSError):
    """A listening socket the dealer could not open (port taken, no permission)."""


class DealerAbort(Exception):
    """A fatal match error; the message is printed after ``ERROR: ``."""


class _Seat:
    """One player's connection: buffered line reads with deadlines, one write per message."""

    def __init__(
        self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.index = index
        self.reader, self.writer = reader, writer
        self.buffer = LineBuffer()
        self.lines: list[str] = []
        self.match_seconds = 0.0

    async def readline(self, timeout: float) -> str | None:
        """The next line, or None on EOF; raises TimeoutError past ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.lines:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                data = await asyncio.wait_for(self.reader.read(65536), remaining)
            except TimeoutError:  # an OSError subclass: must come first
                raise
            except OSError:
                return None
            if not data:
                return None
            self.lines += self.buffer.feed(data)
        return self.lines.pop(0)

    async def send(self, text: str, timeout: float) -> None:
        """Write one message; a client that stops reading until the buffers fill cannot block
        the dealer for longer than ``timeout`` seconds (TimeoutError, an OSError)."""
        if self.writer.is_closing():
            raise ConnectionResetError
        self.writer.write(text.encode("ascii"))
        await asyncio.wait_for(self.writer.drain(), timeout)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def _stamp(moment: float) -> str:
    return f"{int(moment)}.{int((moment % 1) * 1e6):06d}"


class Dealer:
    """Runs one match. ``out`` gets the ports line and the SCORE line; ``err`` the header,
    traffic (unless quiet), warnings and errors, as the reference writes them."""

    def __init__(
        self, options: DealerOptions, out: TextIO | None = None, err: TextIO | None = None
    ) -> None:
        self.options = options
        self.game = options.game
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.listeners: list[socket.socket] = []
        self.seats: list[_Seat] = []
        self.totals = [0.0] * self.game.num_players
        self.hands_played = 0
        self._log: MatchLogWriter | None = None
        self._tlog: TextIO | None = None

    # -- set-up ---------------------------------------------------------------------------
    def listen(self) -> list[int]:
        """Bind one listening socket per seat and print the ports line (§1.1, ``-p``)."""
        draws = random.Random(self.options.seed)
        ports = []
        for seat in range(self.game.num_players):
            wanted = self.options.ports[seat] if seat < len(self.options.ports) else 0
            attempts = (
                [wanted]
                if wanted
                else (
                    [0]
                    if self.options.os_ports
                    else [draws.randint(1024, 65535) for _ in range(PORT_ATTEMPTS)]
                )
            )
            listener = None
            for port in attempts:
                candidate = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                candidate.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    candidate.bind((self.options.host, port))
                    candidate.listen(1)
                except OSError:
                    candidate.close()
                    continue
                listener = candidate
                break
            if listener is None:
                self._close_listeners()
                raise DealerSocketError(f"could not create listen socket for player {seat + 1}")
            listener.setblocking(False)
            self.listeners.append(listener)
            ports.append(listener.getsockname()[1])
        self.out.write(" ".join(map(str, ports)) + "\n")
        self.out.flush()
        return ports

    def _close_listeners(self) -> None:
        for listener in self.listeners:
            listener.close()

    def _say(self, line: str) -> None:
        self.err.write(line + "\n")
        self.err.flush()

    def _traffic(self, direction: str, seat: int, line: str) -> None:
        if not self.options.quiet:
            self._say(f"{direction} {seat + 1} at {_stamp(time.time())} {line}")

    async def _accept_all(self) -> None:
        loop = asyncio.get_running_loop()
        start_timeout = self.options.start_timeout
        deadline = None if start_timeout < 0 else time.monotonic() + start_timeout / 1000
        for seat, listener in enumerate(self.listeners):
            try:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                connection, _ = await asyncio.wait_for(loop.sock_accept(listener), timeout)
            except TimeoutError:
                raise DealerAbort(f"timed out waiting for seat {seat + 1} to connect") from None
            listener.close()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader, writer = await asyncio.open_connection(sock=connection)
            self.seats.append(_Seat(seat, reader, writer))

    async def _read_versions(self) -> None:
        """Seat order; unlike the reference, a silent client times out after ``t_response``."""
        for seat in self.seats:
            try:
                line = await seat.readline(self.options.t_response / 1000)
            except TimeoutError:
                raise DealerAbort(
                    f"timed out waiting for the version string of seat {seat.index + 1}"
                ) from None
            if line is None:
                raise DealerAbort(f"could not read version string from seat {seat.index + 1}")
            match = _VERSION.match(line)
            if match is None:
                raise DealerAbort(f"invalid version string {line[:100]!r}")
            major, minor, _ = map(int, match.groups())
            if major != 2 or minor > 0:
                self._say("ERROR: this server is currently using version 2.0.0")

    # -- the match ------------------------------------------------------------------------
    async def serve(self) -> int:
        """Play the match; 0 when every hand was played, 1 after a fatal error (§4)."""
        options = self.options
        for line in options.header().lines():
            self._say(line)
        try:
            if options.write_log:
                self._log = MatchLogWriter.open(
                    f"{options.match_name}.log", options.header(), options.append
                )
            if options.write_tlog:
                self._tlog = open(
                    f"{options.match_name}.tlog", "a" if options.append else "w", encoding="ascii"
                )
            await self._accept_all()
            await self._read_versions()
            if not options.quiet:
                self._say(f"STARTED at {_stamp(time.time())}")
            for hand in range(options.hands):
                await self._play_hand(hand)
            self._report_score()
        except DealerAbort as abort:
            self._say(f"ERROR: {abort}")
            return 1
        finally:
            self._close_listeners()
            for seat in self.seats:
                await seat.close()
            if self._log is not None:
                self._log.close()
            if self._tlog is not None:
                self._tlog.close()
        return 0

    def _report_score(self) -> None:
        """FINISHED and SCORE on stderr, SCORE in the log and on stdout, all written before the
        sockets close (as the reference dealer does), so a client that sees EOF finds them."""
        score = format_score_line(tuple(self.totals), self.options.names)
        if not self.options.quiet:
            self._say(f"FINISHED at {_stamp(time.time())}")
        self._say(score)
        if self._log is not None:
            self._log.write_score(tuple(self.totals), self.options.names)
            self._log.close()
            self._log = None
        self.out.write(score + "\n")
        self.out.flush()

    def seat_of(self, position: int, hand: int) -> int:
        """0-based seat holding ``position`` in ``hand`` (§6 rotation, or fixed with ``-f``)."""
        return position if self.options.fixed_seats else seat_of_position(position, hand, self.game.num_players)

    async def _play_hand(self, hand: int) -> None:
        game = self.game
        holes, board = deal_hand(game, self.options.seed, hand)
        state = State(game, holes, board)
        positions = sorted(range(game.num_players), key=lambda p: self.seat_of(p, hand))
        hand_seconds = [0.0] * game.num_players
        while True:
            sent_at = await self._send_states(state, hand, positions)
            if state.is_finished:
                break
            position = state.actor
            assert position is not None
            view = view_of(state, position, hand)
            action = await self._get_action(
                self.seats[self.seat_of(position, hand)], view, state, hand_seconds
            )
            if self._tlog is not None:
                self._tlog.write(f"{action} {hand} {_stamp(sent_at)} {_stamp(time.time())}\n")
            state.apply(action)
        names = tuple(self.options.names[self.seat_of(p, hand)] for p in range(game.num_players))
        record = record_of(state, hand, names)
        for position, value in enumerate(record.values):
            self.totals[self.seat_of(position, hand)] += value
        if self._log is not None:
            self._log.write_hand(record)
        self.hands_played += 1
        if hand % 100 == 0 and not self.options.quiet:
            for seat in self.seats:
                self._say(
                    f"Seconds cumulatively spent in match for seat {seat.index}: {int(seat.match_seconds)}"
                )

    async def _send_states(
        self, state: State, hand: int, positions_in_seat_order: list[int]
    ) -> float:
        reveal = state.is_showdown
        for position in positions_in_seat_order:
            seat = self.seats[self.seat_of(position, hand)]
            line = format_matchstate(view_of(state, position, hand, reveal=reveal))
            self._traffic("TO", seat.index, line)
            try:
                await seat.send(line + "\r\n", self.options.t_response / 1000)
            except (ConnectionError, OSError):
                raise DealerAbort(f"could not send state to seat {seat.index + 1}") from None
        return time.time()

    async def _get_action(
        self, seat: _Seat, view: MatchState, state: State, hand_seconds: list[float]
    ) -> str:
        """Read lines from the acting seat until one counts (§3); enforce the three clocks (§4)."""
        options = self.options
        legal = state.legal_actions()
        start = time.monotonic()
        match_budget = options.t_per_hand * options.hands / 1000
        limits = {
            "response": options.t_response / 1000,
            "hand": options.t_hand / 1000 - hand_seconds[seat.index],
            "match": match_budget - seat.match_seconds,
        }
        while True:
            elapsed = time.monotonic() - start
            binding = min(limits, key=limits.__getitem__)
            try:
                line = await seat.readline(limits[binding] - elapsed)
            except TimeoutError:
                waited = time.monotonic() - start
                if binding == "response":
                    self._say(f"{waited:.6f} seconds spent waiting; timeout {options.t_response}")
                    raise DealerAbort(f"could not get action from seat {seat.index + 1}") from None
                raise DealerAbort(f"seat {seat.index + 1} ran out of time") from None
            if line is None:
                raise DealerAbort(f"could not get action from seat {seat.index + 1}")
            self._traffic("FROM", seat.index, line)
            if is_comment(line):
                continue
            reply = parse_reply(line, view, legal)
            if reply.warning is not None:
                self._say(f"WARNING: {reply.warning}")
            if reply.action is not None:
                used = time.monotonic() - start
                hand_seconds[seat.index] += used
                seat.match_seconds += used
                return reply.action
