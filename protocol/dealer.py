"""An ACPC-compatible dealer (TCP, blocking sockets), behaving as the reference ``dealer`` does.

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
    status = dealer.run()           # 0 on a complete match, 1 on any fatal error
    status = await dealer.serve()   # the same from asyncio code (run in a worker thread)

Speed (``benchmarks/bench_dealer.py``): the dealer only ever waits on one seat, so it uses
blocking sockets whose deadlines the kernel keeps (:mod:`protocol.dealer_seat`: one system call
per read or write); every line a seat gets between two waits goes out in one write, with
TCP_NODELAY (each write is a whole message someone waits on, so Nagle's delay would only stall
it); the betting is walked on the game's shared :mod:`protocol.betting_nodes` graph instead of
a rules-engine state per hand; view strings and the log line come from per-hand pieces
(:class:`HandViews`); a reply that echoes the state verbatim with a legal letter is taken
without parsing (:mod:`protocol.replies`).
"""

from __future__ import annotations

import asyncio
import random
import re
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from protocol.acpc_client import is_comment
from protocol.betting_nodes import betting_root
from protocol.dealer_seat import Seat
from protocol.dealing import deal_hand, seat_of_position
from protocol.errors import ConfigError, PokerbotError, UnsupportedGameError
from protocol.gamedef import Game
from protocol.match_log import MatchHeader, MatchLogWriter, format_score_line, state_line
from protocol.matchstate import HandViews
from protocol.replies import ACTION_LETTERS, judge_reply

#: Port draws per seat when no port is given (the reference retries 10 extra times).
PORT_ATTEMPTS = 11
_VERSION = re.compile(r"^VERSION:(\d+)\.(\d+)\.(\d+)")


class DealerSocketError(PokerbotError, OSError):
    """A listening socket the dealer could not open (port taken, no permission)."""


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


class DealerAbort(Exception):
    """A fatal match error; the message is printed after ``ERROR: ``."""


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
        self.seats: list[Seat] = []
        self.totals = [0.0] * self.game.num_players
        self.hands_played = 0
        self._log: MatchLogWriter | None = None
        self._tlog: TextIO | None = None
        self._seatings: dict[int, tuple[list[Seat], list[int], str]] = {}

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

    def _accept_all(self) -> None:
        start_timeout = self.options.start_timeout
        deadline = None if start_timeout < 0 else time.monotonic() + start_timeout / 1000
        for seat, listener in enumerate(self.listeners):
            listener.settimeout(
                None if deadline is None else max(1e-3, deadline - time.monotonic())
            )
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                raise DealerAbort(f"timed out waiting for seat {seat + 1} to connect") from None
            listener.close()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.seats.append(Seat(seat, connection, self.options.t_response / 1000))

    def _read_versions(self) -> None:
        """Seat order; unlike the reference, a silent client times out after ``t_response``."""
        for seat in self.seats:
            try:
                line = seat.readline(self.options.t_response / 1000)
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
        """:meth:`run` in a worker thread, for callers that drive the dealer from asyncio."""
        return await asyncio.to_thread(self.run)

    def run(self) -> int:
        """Play the match; 0 when every hand was played, 1 after a fatal error (§4)."""
        options = self.options
        for line in options.header().lines():
            self._say(line)
        try:
            if options.write_log:
                self._log = self._open(
                    lambda path: MatchLogWriter.open(path, options.header(), options.append), ".log"
                )
            if options.write_tlog:
                self._tlog = self._open(
                    lambda path: open(path, "a" if options.append else "w", encoding="ascii"),
                    ".tlog",
                )
            self._accept_all()
            self._read_versions()
            if not options.quiet:
                self._say(f"STARTED at {_stamp(time.time())}")
            for hand in range(options.hands):
                self._play_hand(hand)
            self._flush_all()
            self._report_score()
        except DealerAbort as abort:
            self._say(f"ERROR: {abort}")
            return 1
        finally:
            self._close_listeners()
            for seat in self.seats:
                seat.close()
            if self._log is not None:
                self._log.close()
            if self._tlog is not None:
                self._tlog.close()
        return 0

    def _open(self, opener: Callable[[str], Any], suffix: str) -> Any:
        """A log file beside the match name; a missing folder is an error, not created."""
        path = f"{self.options.match_name}{suffix}"
        try:
            return opener(path)
        except PokerbotError as error:  # the log writer's own one-line message names the path
            raise DealerAbort(str(error)) from None
        except OSError as error:
            raise DealerAbort(f"{path}: cannot write ({error.strerror or error})") from None

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
        if self.options.fixed_seats:
            return position
        return seat_of_position(position, hand, self.game.num_players)

    def _seating(self, hand: int) -> tuple[list[Seat], list[int], str]:
        """The seats by position in ``hand``, the positions in seat order (the order states go
        out in) and the names by position as the log writes them; one per rotation."""
        rotation = hand % self.game.num_players
        seating = self._seatings.get(rotation)
        if seating is None:
            positions = range(self.game.num_players)
            seats = [self.seats[self.seat_of(p, hand)] for p in positions]
            in_seat_order = sorted(positions, key=lambda p: seats[p].index)
            names = "|".join(self.options.names[seat.index] for seat in seats)
            seating = self._seatings[rotation] = (seats, in_seat_order, names)
        return seating

    def _play_hand(self, hand: int) -> None:
        """Deal, send every state to every seat, take the actor's reply, until the hand ends;
        then score it and log it. The betting is walked on the game's shared
        :class:`~protocol.betting_nodes.BettingNode` graph, and view strings come from the
        hand's :class:`HandViews` pieces, so nothing is stepped or formatted twice."""
        game = self.game
        holes, board = deal_hand(game, self.options.seed, hand)
        views = HandViews(game, holes, board, hand)
        seats, in_seat_order, names = self._seating(hand)
        traffic = not self.options.quiet
        tlog = self._tlog
        hand_seconds = [0.0] * game.num_players
        node = betting_root(game)
        lines = [""] * game.num_players
        while True:
            reveal = node.is_showdown
            for position in in_seat_order:  # every seat's view, queued in seat order
                line = lines[position] = views.line(node, position, reveal)
                if traffic:
                    self._say(f"TO {seats[position].index + 1} at {_stamp(time.time())} {line}")
                seats[position].outbox.append(line + "\r\n")
            if node.is_finished:
                break
            actor = node.actor
            assert actor is not None
            self._flush_all()  # before any wait, so nobody waits on a state not sent
            sent_at = time.time() if tlog is not None else 0.0
            action = self._get_action(seats[actor], lines[actor], node.legal, hand_seconds)
            if tlog is not None:
                tlog.write(f"{action} {hand} {_stamp(sent_at)} {_stamp(time.time())}\n")
            node = node.child(action)
        if node.is_showdown:
            visible = board[: game.board_cards_through(node.round)]
            values = node.showdown_payoffs(holes, visible)
        else:
            values = node.payoffs()
        for seat, value in zip(seats, values, strict=True):
            self.totals[seat.index] += value
        if self._log is not None:
            self._log.write_state_line(
                state_line(hand, node.betting, views.log_cards(node.round), values, names)
            )
        self.hands_played += 1
        if hand % 100 == 0 and traffic:
            for seat in self.seats:
                self._say(
                    f"Seconds cumulatively spent in match for seat {seat.index}: "
                    f"{int(seat.match_seconds)}"
                )

    def _flush_all(self) -> None:
        for seat in self.seats:
            try:
                seat.flush()
            except OSError:
                raise DealerAbort(f"could not send state to seat {seat.index + 1}") from None

    def _get_action(
        self, seat: Seat, expected: str, legal: tuple[str, ...], hand_seconds: list[float]
    ) -> str:
        """Read lines from the acting seat until one counts (§3); enforce the three clocks (§4).
        A verbatim echo of ``expected`` with a legal letter, what every correct client sends, is
        taken without further checks; anything else is judged by :func:`judge_reply`."""
        options = self.options
        start = time.monotonic()
        limits = {
            "response": options.t_response / 1000,
            "hand": options.t_hand / 1000 - hand_seconds[seat.index],
            "match": options.t_per_hand * options.hands / 1000 - seat.match_seconds,
        }
        binding = min(limits, key=limits.__getitem__)
        echo = expected + ":"
        size = len(echo)
        while True:
            elapsed = time.monotonic() - start
            try:
                line = seat.readline(limits[binding] - elapsed)
            except TimeoutError:
                waited = time.monotonic() - start
                if binding == "response":
                    self._say(f"{waited:.6f} seconds spent waiting; timeout {options.t_response}")
                    raise DealerAbort(f"could not get action from seat {seat.index + 1}") from None
                raise DealerAbort(f"seat {seat.index + 1} ran out of time") from None
            if line is None:
                raise DealerAbort(f"could not get action from seat {seat.index + 1}")
            if not options.quiet:
                self._say(f"FROM {seat.index + 1} at {_stamp(time.time())} {line}")
            action = ACTION_LETTERS.get(line[size : size + 1]) if line.startswith(echo) else None
            if action is None or action not in legal:
                if is_comment(line):
                    continue
                reply = judge_reply(line, expected, legal)
                if reply.warning is not None:
                    self._say(f"WARNING: {reply.warning}")
                action = reply.action
            if action is not None:
                used = time.monotonic() - start
                hand_seconds[seat.index] += used
                seat.match_seconds += used
                return action
