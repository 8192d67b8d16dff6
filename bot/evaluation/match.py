"""Head-to-head matches between two agents: in-process (fast) or through our dealer (``--wire``).

Both ways deal with :func:`protocol.dealing.deal_hand` and give each agent the same views, so for
one seed they produce the same hands, hand for hand (``tests/bot/evaluation/test_match.py`` proves it).

Randomness is *common random numbers*: the agent in position ``p`` of deal ``d`` samples from
``np.random.default_rng([seed, d, p])``. A client derives the same key from the MATCHSTATE it
receives, so nothing else is shared between the ways of playing. In a duplicate match the
mirrored hand (same deal, seats swapped) draws the same numbers in the same situations, so an
agent playing itself cancels exactly (methods.md §2, "implementation tip").

Seats and positions follow the reference ACPC dealer (``dealer.c``): agent A sits in seat 1,
so it holds position ``hand % 2`` heads-up; in the mirrored half of a duplicate match it sits in
seat 2. ``MatchResult.hands`` lists A's chips per hand; statistics are in
:mod:`bot.evaluation.statistics`, which never sees agents.
"""

from __future__ import annotations

import io
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from bot.agents.base import Agent
from bot.errors import PokerbotError
from protocol.acpc_client import DEFAULT_READ_TIMEOUT, ACPCConnection, ClientSummary, Turn
from protocol.dealer import Dealer, DealerOptions
from protocol.dealing import deal_hand, position_of_seat
from protocol.gamedef import Game
from protocol.match_log import HandRecord, MatchHeader, MatchLogWriter, read_match_log, record_of
from protocol.matchstate import MatchState, view_of
from protocol.state import State

AgentFactory = Callable[[], Agent]
T = TypeVar("T")

#: Most deals one match may ask for. Every hand's result is kept for the statistics (about a
#: kilobyte each), so ten million deals already need gigabytes; more is a typo, not a plan.
MAX_MATCH_HANDS = 10_000_000


def require_playable(game: Game, hands: int | None = None) -> None:
    """Refuse, in one line, what a two-agent limit match cannot be: a game for more than two
    players, a no-limit game, or an absurd number of hands."""
    if game.num_players != 2:
        raise PokerbotError(
            f"{game.name}: {game.num_players}-player game; matches are heads-up (2 players) only"
        )
    if not game.is_limit:
        raise PokerbotError(f"{game.name}: only limit games are playable")
    if hands is not None and not 1 <= hands <= MAX_MATCH_HANDS:
        raise PokerbotError(f"{hands} hands: a match plays 1 to {MAX_MATCH_HANDS:,} hands")


def agent_rng(seed: int, hand_number: int, position: int) -> np.random.Generator:
    """The common-random-numbers stream of whoever acts in ``position`` of deal ``hand_number``."""
    return np.random.default_rng([seed, hand_number, position])


@dataclass(frozen=True)
class HandResult:
    """One hand from agent A's side: which deal, which position A held, what A won."""

    deal: int
    mirrored: bool  # the seat-swapped replay of the deal in a duplicate match
    position: int  # A's position in this hand
    chips: float  # A's net chips
    record: HandRecord  # the full hand as a log line states it (names in position order)


@dataclass
class MatchResult:
    game: Game
    names: tuple[str, str]
    seed: int
    duplicate: bool
    hands: list[HandResult] = field(default_factory=list)
    interrupted: bool = False

    @property
    def chips(self) -> np.ndarray:
        return np.array([h.chips for h in self.hands], dtype=float)


def play_hand(game: Game, agents_by_position: list[Agent], hand_number: int, seed: int) -> State:
    """One hand on the rules engine: deal, ask agents in turn, return the finished state."""
    holes, board = deal_hand(game, seed, hand_number)
    state = State(game, holes, board)
    rngs = [agent_rng(seed, hand_number, p) for p in range(game.num_players)]
    for position, agent in enumerate(agents_by_position):
        agent.begin_hand(view_of(state, position, hand_number))
    while not state.is_finished:
        position = state.actor
        assert position is not None
        view = view_of(state, position, hand_number)
        state.apply(agents_by_position[position].act(view, rngs[position]))
    reveal = state.is_showdown
    for position, agent in enumerate(agents_by_position):
        agent.end_hand(view_of(state, position, hand_number, reveal=reveal))
    return state


def _schedule(hands: int, duplicate: bool) -> Iterator[tuple[int, bool]]:
    """(deal, mirrored) in play order: each deal then its twin when duplicate; generated as
    played, so nothing proportional to ``hands`` is built before the first hand."""
    halves = (False, True) if duplicate else (False,)
    return ((deal, mirrored) for deal in range(hands) for mirrored in halves)


def in_seat_order(pair: tuple[T, T], mirrored: bool) -> tuple[T, T]:
    """``(A's, B's)`` in seat order: A in seat 1, or in seat 2 in the mirrored half."""
    return (pair[1], pair[0]) if mirrored else pair


@dataclass(frozen=True)
class Seating:
    """One hand of a match: the deal, which half it belongs to, and where agent A sits."""

    deal: int
    mirrored: bool

    @property
    def a_position(self) -> int:
        """A's position: its seat's, rotating with the deal as the ACPC dealer rotates it."""
        return position_of_seat(1 if self.mirrored else 0, self.deal, 2)

    def in_position_order(self, pair: tuple[T, T]) -> tuple[T, T]:
        """``(A's, B's)`` in position order for this hand."""
        return pair if self.a_position == 0 else (pair[1], pair[0])


def _play_schedule(result: MatchResult, hands: int, record_of_hand: Callable[[Seating], HandRecord],
                   after_hand: Callable[[Seating, HandRecord], None] | None = None) -> None:
    """The one hand loop of every transport: for each scheduled hand, its record (played now in
    process, or read back from the dealer's log) becomes A's :class:`HandResult`."""
    for deal, mirrored in _schedule(hands, result.duplicate):
        seating = Seating(deal, mirrored)
        record = record_of_hand(seating)
        result.hands.append(HandResult(deal, mirrored, seating.a_position, record.values[seating.a_position], record))
        if after_hand is not None:
            after_hand(seating, record)


def run_in_process(
    game: Game,
    agents: tuple[Agent, Agent],
    names: tuple[str, str],
    hands: int,
    seed: int,
    duplicate: bool = False,
    log_path: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> MatchResult:
    """Play ``hands`` deals (each twice, seats swapped, when ``duplicate``). Ctrl-C stops early
    with the hands finished so far (``interrupted``). ``log_path`` writes an ACPC ``.log``
    (the mirrored half to ``<stem>.mirror.log``) exactly as our dealer would."""
    require_playable(game, hands)
    result = MatchResult(game, names, seed, duplicate)
    logs = _open_logs(log_path, game, hands, seed, duplicate)
    totals = {False: [0.0, 0.0], True: [0.0, 0.0]}  # per half, in that half's seat order

    def play(seating: Seating) -> HandRecord:
        state = play_hand(game, list(seating.in_position_order(agents)), seating.deal, seed)
        return record_of(state, seating.deal, seating.in_position_order(names))

    def log(seating: Seating, record: HandRecord) -> None:
        for seat in range(2):
            totals[seating.mirrored][seat] += record.values[position_of_seat(seat, seating.deal, 2)]
        if logs:
            logs[seating.mirrored].write_hand(record)
        if progress is not None:
            progress(1)

    try:
        _play_schedule(result, hands, play, log)
    except KeyboardInterrupt:
        result.interrupted = True
    for mirrored, writer in logs.items():
        if not result.interrupted:
            writer.write_score(tuple(totals[mirrored]), in_seat_order(names, mirrored))
        writer.close()
    return result


def mirror_log_path(log_path: str) -> str:
    path = Path(log_path)
    return str(path.with_name(path.stem + ".mirror" + (path.suffix or ".log")))


def _open_logs(
    log_path: str | None, game: Game, hands: int, seed: int, duplicate: bool
) -> dict[bool, MatchLogWriter]:
    if log_path is None:
        return {}
    paths = {False: log_path} | ({True: mirror_log_path(log_path)} if duplicate else {})
    return {
        mirrored: MatchLogWriter.open(
            path, MatchHeader(Path(path).stem, game.name + ".game", hands, seed)
        )
        for mirrored, path in paths.items()
    }


# -- playing as an ACPC client -------------------------------------------------------------
class AgentClient:
    """Drives an :class:`ACPCConnection` with an agent: begin/end hand hooks, common random
    numbers keyed by (seed, hand, position) from the view, a callback per finished hand."""

    def __init__(
        self, agent: Agent, seed: int, on_hand: Callable[[Turn], None] | None = None
    ) -> None:
        self.agent, self.seed, self.on_hand = agent, seed, on_hand
        self._rng: np.random.Generator | None = None
        self._hand: int | None = None

    def _on_turn(self, turn: Turn) -> None:
        view = turn.view
        if self._hand != view.hand_number:
            self._hand = view.hand_number
            self._rng = agent_rng(self.seed, view.hand_number, view.position)
            self.agent.begin_hand(view)
        if turn.is_final:
            self.agent.end_hand(view)
            self._hand = None
            if self.on_hand is not None:
                self.on_hand(turn)

    def decide(self, view: MatchState) -> str:
        assert self._rng is not None
        return self.agent.act(view, self._rng)

    def play(self, connection: ACPCConnection) -> ClientSummary:
        return connection.play(self.decide, on_turn=self._on_turn)


def run_wire(
    game: Game,
    agent_factories: tuple[AgentFactory, AgentFactory],
    names: tuple[str, str],
    hands: int,
    seed: int,
    duplicate: bool = False,
    log_path: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> MatchResult:
    """The same match through our dealer on loopback TCP with two of our clients (each in a
    thread, each with its own agent instance); results are read back from the dealer's log."""
    require_playable(game, hands)
    result = MatchResult(game, names, seed, duplicate)
    with tempfile.TemporaryDirectory() as scratch:
        stem = str(Path(log_path).with_suffix("")) if log_path else str(Path(scratch) / "match")
        halves = [(False, stem)] + ([(True, stem + ".mirror")] if duplicate else [])
        records = {
            mirrored: _dealer_run(game, in_seat_order(agent_factories, mirrored), in_seat_order(names, mirrored),
                                  hands, seed, match_name, progress)
            for mirrored, match_name in halves
        }
    _play_schedule(result, hands, lambda seating: records[seating.mirrored][seating.deal])
    return result


def _dealer_run(
    game: Game,
    factories: tuple[AgentFactory, AgentFactory],
    names: tuple[str, str],
    hands: int,
    seed: int,
    match_name: str,
    progress: Callable[[int], None] | None,
) -> list[HandRecord]:
    options = DealerOptions(
        match_name, game.name + ".game", game, hands, seed, names, quiet=True, os_ports=True
    )
    err = io.StringIO()
    dealer = Dealer(options, out=io.StringIO(), err=err)
    ports = dealer.listen()
    failures: list[BaseException] = []

    def client(seat: int) -> None:
        on_hand = (lambda _turn: progress(1)) if (progress is not None and seat == 0) else None
        try:
            with ACPCConnection.connect("127.0.0.1", ports[seat], game) as connection:
                AgentClient(factories[seat](), seed, on_hand).play(connection)
        except Exception as error:  # reported after the dealer stops
            failures.append(error)

    threads = [threading.Thread(target=client, args=(seat,), daemon=True) for seat in range(2)]
    for thread in threads:
        thread.start()
    status = dealer.run()
    for thread in threads:
        thread.join()
    if status != 0 or failures:
        detail = "; ".join(str(f) for f in failures) or err.getvalue().strip().splitlines()[-1]
        raise PokerbotError(f"wire match failed: {detail}")
    log = read_match_log(match_name + ".log")
    return log.hands


def run_as_client(
    game: Game,
    agent: Agent,
    host: str,
    port: int,
    seed: int,
    on_hand: Callable[[Turn], None] | None = None,
    read_timeout: float | None = DEFAULT_READ_TIMEOUT,
) -> ClientSummary:
    """Play whatever match an external dealer runs (``pokerbot connect``, ``match --dealer``);
    ``read_timeout``: seconds to wait for the dealer's next line before giving up."""
    require_playable(game)
    with ACPCConnection.connect(host, port, game, read_timeout=read_timeout) as connection:
        return AgentClient(agent, seed, on_hand).play(connection)
