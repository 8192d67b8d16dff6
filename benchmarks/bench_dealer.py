"""Benchmark of the ACPC dealer and client: hands per second over loopback TCP, and CPU per hand.

Four set-ups, run one after the other at the same load, every client in its own process (as
the reference ``example_player`` clients run beside the reference ``dealer``):

1. **echo bound**: a blocking-socket Python server that sends the precomputed MATCHSTATE lines of
   the same hands and reads the same replies, with no game logic at all; two fast clients. No
   Python dealer can beat this figure on this machine.
2. **our dealer, fast clients**: ``protocol.dealer.Dealer`` (writing its ``.log``) with two
   minimal always-call socket clients written below (standing in for ``example_player``).
3. **our dealer, our clients**: the dealer with two ``pokerbot connect``-equivalent clients
   (:func:`bot.evaluation.match.run_as_client` with the ``call`` agent, in their own processes).
4. **our client alone**: the echo server with one of our clients and one fast client, so the
   client's own speed shows without our dealer's cost.

First, the logic alone, in this process without sockets: our dealer playing the hands against
an in-memory echo, and our client's parsing, checks, replay and agent on the lines it receives.

Wall hands/s depend on what else runs on the machine; CPU microseconds per hand (user + system,
of the server process and of each client process) much less. So every line also says what the
CPU figures imply on an idle machine: hands per dealer CPU-second (the rate if the dealer had a
core to itself and the clients cost nothing, as C clients nearly do), and the 2-core bound
``1e6 / max(dealer, (dealer + clients) / 2)`` (three processes sharing two idle cores: the
dealer's work is serial, and two cores give at most two CPU-seconds per second).

Every set-up plays always-call heads-up limit hold'em: 8 actions and 18 state lines per hand.

Run from the repository root::

    python benchmarks/bench_dealer.py                  # 20,000 hands each (5,000 with our clients)
    python benchmarks/bench_dealer.py --hands 10000 --client-hands 2000
    python benchmarks/bench_dealer.py --logic-only     # only the no-socket figures
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runnable as a plain script without `pip install -e .`

from benchmarks.bench_cfr_leduc import machine  # noqa: E402  (one machine line for every benchmark)
from protocol.dealer import Dealer, DealerOptions  # noqa: E402
from protocol.dealing import deal_hand  # noqa: E402
from protocol.gamedef import Game, load_game  # noqa: E402
from protocol.matchstate import format_matchstate, view_of  # noqa: E402
from protocol.state import State  # noqa: E402

GAME = "holdem"


# -- the clients (each runs in its own process: ``bench_dealer.py --client KIND PORT``) ----------
def fast_client(port: int, game: Game) -> None:
    """An always-call client with the least work a correct heads-up limit client can do: split
    the line, find whose turn it is from the betting (a round is closed by a call after at least
    two actions), echo the line with ``:c``. Standing in for the reference ``example_player``."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"VERSION:2.0.0\r\n")
    started = None
    finished = 0
    first = game.first_player
    last_round = game.num_rounds - 1
    pending = b""
    while True:
        data = sock.recv(65536)
        if not data:
            break
        started = started or (time.perf_counter(), time.process_time())
        pending += data
        *lines, pending = pending.split(b"\n")
        replies = []
        for raw in lines:
            line = raw.rstrip(b"\r")
            fields = line.split(b":")
            if len(fields) != 5 or b"f" in fields[3]:
                continue
            rounds = fields[3].split(b"/")
            actions = rounds[-1]
            if len(actions) >= 2 and actions.endswith(b"c") and len(rounds) - 1 == last_round:
                finished += 1
                continue  # the showdown state
            actor = (first[len(rounds) - 1] + len(actions)) % 2
            if actor == int(fields[1]):
                replies.append(line + b":c\r\n")
        if replies:
            sock.sendall(b"".join(replies))
    sock.close()
    assert started is not None
    print(time.perf_counter() - started[0], time.process_time() - started[1], finished)


def our_client(port: int, game: Game) -> None:
    """What ``pokerbot connect 127.0.0.1 PORT --agent call`` runs, minus the CLI start-up."""
    from bot.agents.base import CallAgent
    from bot.evaluation.match import run_as_client

    started: list[float] = []

    def first_hand(_turn) -> None:  # the clock starts after the first hand, as near as can be
        if not started:
            started.extend((time.perf_counter(), time.process_time()))

    summary = run_as_client(game, CallAgent(game), "127.0.0.1", port, seed=0, on_hand=first_hand)
    wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
    print(wall, cpu, summary.hands - 1)


CLIENTS = {"fast": fast_client, "ours": our_client}


def start_client(kind: str, port: int) -> subprocess.Popen:
    """A client process; it prints its wall and CPU seconds from the first state it receives
    (our client: the end of the first hand) to the end of the match."""
    command = [sys.executable, __file__, "--client", kind, str(port)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)


def client_times(clients: list[subprocess.Popen]) -> list[tuple[float, float, int]]:
    """(wall seconds, CPU seconds, hands in that time) of each client."""
    times = []
    for client in clients:
        wall, cpu, hands = client.communicate()[0].split()[-3:]
        times.append((float(wall), float(cpu), int(hands)))
    return times


@dataclass
class Figure:
    """One set-up's throughput: wall hands/s, and CPU microseconds per hand of the server (our
    dealer or the echo server, this process) and of each client (its own process)."""

    label: str
    hands: int
    wall: float
    server_cpu: float
    clients_cpu: list[float]

    def line(self) -> str:
        server, clients = self.per_hand(self.server_cpu), [self.per_hand(c) for c in self.clients_cpu]
        two_cores = 1e6 / max(server, (server + sum(clients)) / 2)
        return (
            f"{self.label:32s} {self.hands / self.wall:7,.0f} hands/s   CPU us/hand: "
            f"server {server:5.0f}, clients {' + '.join(f'{c:5.0f}' for c in clients)}   "
            f"idle: {1e6 / server:6,.0f} hands per server CPU-s, 2-core bound {two_cores:6,.0f}"
            f"   ({self.hands:,} hands)"
        )

    def per_hand(self, seconds: float) -> float:
        return 1e6 * seconds / self.hands


class _EchoSocket:
    """In place of a client's socket: remembers the last line the dealer sent and answers it
    with ``:c`` (the dealer only reads from the seat whose turn it is, which is the seat whose
    last line is the state it waits on)."""

    def __init__(self) -> None:
        self.last = b""

    def sendall(self, data: bytes) -> None:
        self.last = data[: data.rindex(b"\r\n")].rsplit(b"\r\n", 1)[-1]

    def recv(self, _size: int) -> bytes:
        return self.last + b":c\r\n"

    def settimeout(self, _seconds: float | None) -> None:
        pass

    def setsockopt(self, *_option: object) -> None:
        pass

    def close(self) -> None:
        pass


def dealer_logic_cpu(hands: int, scratch: str) -> float:
    """CPU microseconds per hand of our dealer without sockets: the whole match loop (deal,
    states, replies, scoring, the ``.log``), its seats connected to :class:`_EchoSocket`."""
    from protocol.dealer_seat import Seat

    game = load_game(GAME)
    options = DealerOptions(
        str(Path(scratch) / "logic"), GAME, game, hands, 0, ("a", "b"), quiet=True, os_ports=True
    )
    dealer = Dealer(options, out=io.StringIO(), err=io.StringIO())
    seats = [Seat(i, _EchoSocket(), 600.0) for i in range(2)]  # type: ignore[arg-type]
    dealer._accept_all = lambda: dealer.seats.extend(seats)  # type: ignore[method-assign]
    dealer._read_versions = lambda: None  # type: ignore[method-assign]
    start = time.process_time()
    if dealer.run() != 0 or dealer.hands_played != hands:
        raise SystemExit(f"dealer failed without sockets: {dealer.hands_played} hands")
    return 1e6 * (time.process_time() - start) / hands


def client_logic_cpu(game: Game, script) -> float:
    """CPU microseconds per hand of our client's logic alone, no sockets: every line seat 1
    receives, interpreted as the connection does (one tracker), with the ``call`` agent
    deciding on its turns through the same hooks as over the wire."""
    from bot.agents.base import CallAgent
    from bot.evaluation.match import AgentClient
    from protocol.acpc_client import HandTracker, interpret

    lines = [to_first.decode().rstrip("\r\n") for steps in script for to_first, _, _ in steps]
    tracker, client = HandTracker(game), AgentClient(CallAgent(game), seed=0)
    start = time.process_time()
    for line in lines:
        turn = interpret(line, game, tracker)
        client._on_turn(turn)
        if turn.is_our_turn:
            client.decide(turn.view)
    return 1e6 * (time.process_time() - start) / len(script)


# -- the echo bound ---------------------------------------------------------------------------
def hand_script(game: Game, hands: int) -> list[list[tuple[bytes, bytes, int | None]]]:
    """Per hand, per state: (line to seat 1, line to seat 2, the seat that must reply or None),
    of always-call hands dealt as our dealer deals them (seats rotate every hand)."""
    script = []
    for hand in range(hands):
        holes, board = deal_hand(game, 0, hand)
        state = State(game, holes, board)
        seat_of = [(position + hand) % 2 for position in range(2)]
        steps = []
        while True:
            lines = [b"", b""]
            for position in range(2):
                view = view_of(state, position, hand, reveal=state.is_showdown)
                lines[seat_of[position]] = (format_matchstate(view) + "\r\n").encode()
            actor = None if state.is_finished else seat_of[state.actor]
            steps.append((lines[0], lines[1], actor))
            if state.is_finished:
                break
            state.check_or_call()
        script.append(steps)
    return script


def echo_server(listeners: list[socket.socket], script) -> tuple[float, float]:
    """Serve the script to whoever connected; wall and CPU seconds from the first state to the
    last."""
    seats = [listener.accept()[0] for listener in listeners]
    for seat in seats:
        seat.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    pending = [b"", b""]

    def read_line(seat: int) -> None:
        while b"\n" not in pending[seat]:
            pending[seat] += seats[seat].recv(65536)
        pending[seat] = pending[seat].split(b"\n", 1)[1]

    for seat in range(2):
        read_line(seat)  # the version line
    start, cpu = time.perf_counter(), time.process_time()
    for steps in script:
        for to_first, to_second, actor in steps:
            seats[0].sendall(to_first)
            seats[1].sendall(to_second)
            if actor is not None:
                read_line(actor)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    for seat in seats:
        seat.close()
    return elapsed, cpu


def run_echo(label: str, kinds: tuple[str, str], script) -> Figure:
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in kinds]
    clients = [
        start_client(kind, listener.getsockname()[1])
        for kind, listener in zip(kinds, listeners, strict=True)
    ]
    elapsed, cpu = echo_server(listeners, script)
    for listener in listeners:
        listener.close()
    clients_cpu = [cpu / hands * len(script) for _, cpu, hands in client_times(clients)]
    return Figure(label, len(script), elapsed, cpu, clients_cpu)


# -- our dealer -------------------------------------------------------------------------------
def run_dealer(label: str, kinds: tuple[str, str], hands: int, scratch: str) -> Figure:
    """Our dealer in this process; the wall time is the clients' (the longer of the two, from
    their first state to EOF), so client start-up does not count."""
    game = load_game(GAME)
    options = DealerOptions(
        str(Path(scratch) / f"bench-{kinds[0]}"),
        GAME,
        game,
        hands,
        0,
        ("a", "b"),
        quiet=True,
        os_ports=True,
        start_timeout=60000,
        t_response=60000,
    )
    dealer = Dealer(options, out=io.StringIO(), err=io.StringIO())
    ports = dealer.listen()
    clients = [start_client(kind, port) for kind, port in zip(kinds, ports, strict=True)]
    cpu = time.process_time()
    status = asyncio.run(dealer.serve())
    cpu = time.process_time() - cpu
    if status != 0 or dealer.hands_played != hands:
        raise SystemExit(f"dealer failed: status {status}, {dealer.hands_played} hands")
    times = client_times(clients)
    wall = max(w / timed * hands for w, _, timed in times)
    return Figure(label, hands, wall, cpu, [c / timed * hands for _, c, timed in times])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=20000, help="hands with fast clients")
    parser.add_argument("--client-hands", type=int, default=5000, help="hands with our clients")
    parser.add_argument("--client", nargs=2, metavar=("KIND", "PORT"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--logic-only", action="store_true", help="only our client's logic without sockets"
    )
    args = parser.parse_args()
    if args.client:
        CLIENTS[args.client[0]](int(args.client[1]), load_game(GAME))
        return
    print(machine())
    print(f"always-call {GAME}; every client in its own process; hands/s over loopback TCP")
    game = load_game(GAME)
    with tempfile.TemporaryDirectory() as scratch:
        script = hand_script(game, args.hands)
        short = script[: args.client_hands]
        dealer_logic = dealer_logic_cpu(args.hands, scratch)
        print(f"our dealer's logic alone, no sockets: CPU {dealer_logic:.0f} us/hand", flush=True)
        logic = client_logic_cpu(game, short)
        print(f"our client's logic alone, no sockets: CPU {logic:.0f} us/hand", flush=True)
        if args.logic_only:
            return
        setups = [
            lambda: run_echo("echo bound, fast clients", ("fast", "fast"), script),
            lambda: run_dealer("our dealer, fast clients", ("fast", "fast"), args.hands, scratch),
            lambda: run_dealer(
                "our dealer, our clients", ("ours", "ours"), args.client_hands, scratch
            ),
            lambda: run_echo("echo server, our client + fast", ("ours", "fast"), short),
        ]
        for setup in setups:
            print(setup().line(), flush=True)
    print(f"load after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
