"""A heads-up table session, person against an :class:`~bot.agents.base.Agent`, without any UI.

The session owns the truth the screen shows: it deals each hand with
:func:`protocol.dealing.deal_hand` (so a seed replays the same cards), runs the rules engine
:class:`~protocol.state.State`, asks the agent for its actions, and keeps session totals. Seats
rotate as the reference ACPC dealer (``dealer.c``) rotates them: in hand ``h``
position ``p`` is held by seat ``((p + h) mod 2) + 1``, and the person is seat 1, so the person
is position ``h mod 2``. Widgets only read this object and call :meth:`TableSession.act`; tests
drive whole hands through it directly.
It is one module because the session, its end-of-hand result and the words
that describe its actions all read the one hand in progress; the screen imports only this.

A Leduc hand against a calling station (hand 0: the person is position 0 and acts first):

>>> from bot.agents.base import CallAgent
>>> from protocol.gamedef import load_game
>>> session = TableSession(load_game("leduc"), CallAgent(load_game("leduc")), seed=3)
>>> session.start_hand(); session.human_position, session.to_act()
(0, 'human')
>>> session.act("r"); session.bot_turn().kind
'c'
>>> session.act("c"); session.bot_turn().kind
'c'
>>> result = session.finish_hand()
>>> result.betting, result.human_net == -result.bot_net, session.hands_played
('rc/cc', True, 1)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from bot.agents.base import Agent
from bot.errors import UnsupportedGameError
from bot.evaluation.statistics import estimate
from protocol.dealing import deal_hand, position_of_seat
from protocol.gamedef import Game
from protocol.match_log import HandRecord, record_of
from protocol.matchstate import MatchState, view_of
from protocol.state import CALL, RAISE, IllegalActionError, State

HUMAN, BOT = "human", "bot"


@dataclass(frozen=True)
class BotDecision:
    """One decision of the other side: the view it saw, its action probabilities and what it
    chose. The probabilities are kept for the learning aid that shows them *after* the hand.
    From a remote dealer it is the new view, no probabilities, and the opponent's letter when
    the line brought one (None for the echo of the person's own action or a new hand)."""

    view: MatchState
    probabilities: dict[str, float]
    kind: str | None


@dataclass(frozen=True)
class HandResult:
    """A finished hand: its ACPC log record (position order) plus the person's side of it."""

    record: HandRecord
    human_position: int
    folder: int | None
    decisions: tuple[BotDecision, ...] = ()

    @property
    def hand_number(self) -> int:
        return self.record.hand_number

    @property
    def betting(self) -> str:
        return self.record.betting

    @property
    def hole_cards(self) -> tuple[tuple[int, ...], ...]:
        return self.record.hole_cards

    @property
    def board(self) -> tuple[int, ...]:
        """Board cards the hand reached, flat."""
        return tuple(c for cards in self.record.board for c in cards)

    @property
    def bot_position(self) -> int:
        return 1 - self.human_position

    @property
    def human_net(self) -> int:
        return int(self.record.values[self.human_position])

    @property
    def bot_net(self) -> int:
        return int(self.record.values[self.bot_position])

    @property
    def is_showdown(self) -> bool:
        return self.folder is None


@dataclass(frozen=True)
class SessionStats:
    """The person's results so far; mbb/g = 1000 x chips per hand / big blind (reference.md)."""

    hands: int
    total: int
    mbb_per_game: float
    ci95: float
    cumulative: tuple[int, ...]


def session_stats(results: list[int], big_blind: int) -> SessionStats:
    """Mean and 95% interval (:func:`bot.evaluation.statistics.estimate`) of per-hand results in mbb/g.
    With fewer than two hands the interval is infinite: nothing is known yet.

    >>> s = session_stats([10, -20, 40], big_blind=10)  # 1000, -2000, 4000 mbb: sd 3000
    >>> s.total, s.mbb_per_game, round(s.ci95, 1), s.cumulative
    (30, 1000.0, 3394.8, (10, -10, 30))
    """
    if not results:
        return SessionStats(0, 0, 0.0, math.inf, ())
    summary = estimate([1000.0 * r / big_blind for r in results])
    cumulative = tuple(int(x) for x in np.cumsum(results))
    return SessionStats(len(results), int(sum(results)), summary.mean, summary.half_width, cumulative)


class Table(ABC):
    """What the screen needs from any heads-up table, local or over the ACPC wire.

    Subclasses set ``game``, ``state`` (the rules engine for the current hand; it may lack
    cards the person cannot see), ``hand_number``, ``human_position``, ``names`` and
    ``results``, and implement the hand life cycle. ``to_act() == "bot"`` means the table is
    waiting on the other side: the app then runs :meth:`decide_bot` in a worker thread and
    applies its answer with :meth:`apply_bot` on the UI thread.
    """

    game: Game
    state: State | None
    hand_number: int
    hands: int | None
    results: list[HandResult]
    names: dict[str, str]
    #: How the screen calls the two sides.
    seat_names = {HUMAN: "You", BOT: "Bot"}
    #: Why the session ended early, if it did (a dealer closing the connection).
    end_reason = ""

    # -- seats and cards ------------------------------------------------------------------
    @property
    @abstractmethod
    def human_position(self) -> int:
        """The person's position (0 or 1) in the current hand."""

    @property
    def bot_position(self) -> int:
        return 1 - self.human_position

    def seat_of(self, position: int) -> str:
        return HUMAN if position == self.human_position else BOT

    @abstractmethod
    def hole_cards(self, position: int) -> tuple[int, ...] | None:
        """The cards the person may see at ``position`` (None: face down)."""

    @abstractmethod
    def visible_board(self) -> tuple[int, ...]:
        """Board cards dealt so far in the current hand."""

    @abstractmethod
    def title(self) -> str:
        """One line saying what this table is (shown at the top)."""

    # -- hand life cycle -----------------------------------------------------------------
    @property
    @abstractmethod
    def is_over(self) -> bool:
        """True when no more hands will come (hand limit reached, or the dealer is done)."""

    @property
    def in_hand(self) -> bool:
        return self.state is not None and not self.state.is_finished

    @abstractmethod
    def start_hand(self) -> None:
        """Begin the next hand (may block: the app calls it in a worker thread)."""

    def to_act(self) -> str | None:
        """``"human"``, ``"bot"`` (the other side) or None when no hand is running."""
        if not self.in_hand:
            return None
        assert self.state is not None and self.state.actor is not None
        return self.seat_of(self.state.actor)

    def legal_actions(self) -> tuple[str, ...]:
        """The person's legal letters now (empty when it is not their turn)."""
        if self.to_act() != HUMAN:
            return ()
        assert self.state is not None
        return self.state.legal_actions()

    @abstractmethod
    def act(self, kind: str) -> None:
        """The person's action; :class:`IllegalActionError` with the rule's reason if illegal."""

    @abstractmethod
    def decide_bot(self) -> BotDecision:
        """The other side's next move, without changing the table (runs in a worker thread)."""

    @abstractmethod
    def apply_bot(self, decision: BotDecision) -> None:
        """Apply what :meth:`decide_bot` returned (on the UI thread)."""

    @abstractmethod
    def finish_hand(self) -> HandResult:
        """Record the finished hand and return it (idempotent)."""

    def action_label(self, kind: str) -> str:
        """Button text for the person's action now (see :func:`describe_action`)."""
        assert self.state is not None
        return describe_action(self.state, kind)

    # -- totals --------------------------------------------------------------------------
    @property
    def human_total(self) -> int:
        return sum(r.human_net for r in self.results)

    def stats(self) -> SessionStats:
        return session_stats([r.human_net for r in self.results], self.game.big_blind)

    @property
    def hands_played(self) -> int:
        return len(self.results)


class TableSession(Table):
    """Heads-up play in-process: the person (seat 1) against ``agent`` (seat 2) in ``game``.

    ``seed`` fixes the deals (via :func:`deal_hand`) and the agent's random choices; ``hands``
    limits the session (None: until the person quits)."""

    def __init__(
        self,
        game: Game,
        agent: Agent,
        seed: int = 0,
        hands: int | None = None,
        human_name: str = "human",
    ) -> None:
        if game.num_players != 2:
            raise UnsupportedGameError(f"{game.name}: the table is heads-up only (2 players)")
        self.game = game
        self.agent = agent
        self.seed = seed
        self.hands = hands
        self.hand_number = -1
        self.state = None
        self.results = []
        self.decisions: list[BotDecision] = []
        bot_name = agent.name if agent.name != human_name else f"{agent.name}-bot"
        #: Player names in the session log, by side (ACPC names: no ``|`` or ``:``).
        self.names = {HUMAN: human_name, BOT: bot_name.replace("|", "_").replace(":", "_")}
        self.seat_names = {HUMAN: "You", BOT: "Bot"}
        self.rng = np.random.default_rng([seed, 0x9E3779B9])

    @property
    def human_position(self) -> int:
        """Position of seat 1 in the current hand under the dealer's rotation."""
        return position_of_seat(0, self.hand_number, 2)

    def hole_cards(self, position: int) -> tuple[int, ...] | None:
        """The person's own cards; the bot's only once a showdown revealed them."""
        state = self.state
        assert state is not None and state.hole_cards is not None
        shown = position == self.human_position or state.is_showdown
        return state.hole_cards[position] if shown else None

    def visible_board(self) -> tuple[int, ...]:
        return self.state.visible_board() if self.state is not None else ()

    def title(self) -> str:
        hands = f"/{self.hands}" if self.hands else ""
        return f"{self.game.name}  hand {self.hand_number + 1}{hands}  vs {self.agent.name}  seed {self.seed}"

    @property
    def is_over(self) -> bool:
        """True when the session's hand limit is reached."""
        return self.hands is not None and len(self.results) >= self.hands

    def start_hand(self) -> None:
        """Deal the next hand (deals depend only on the seed and the hand number)."""
        if self.in_hand:
            raise IllegalActionError("the current hand is not finished")
        if self.is_over:
            raise IllegalActionError(f"the session is over: {self.hands} hands played")
        self.hand_number += 1
        holes, board = deal_hand(self.game, self.seed, self.hand_number)
        self.state = State(self.game, holes, board)
        self.decisions = []
        self.agent.begin_hand(self.view(self.bot_position))

    def view(self, position: int, reveal: bool = False) -> MatchState:
        """What ``position`` sees now (its MATCHSTATE view)."""
        assert self.state is not None
        return view_of(self.state, position, self.hand_number, reveal)

    def act(self, kind: str) -> None:
        """The person acts; raises :class:`IllegalActionError` with the rule's reason."""
        if self.to_act() != HUMAN:
            raise IllegalActionError("it is not your turn")
        assert self.state is not None
        self.state.apply(kind)

    def decide_bot(self) -> BotDecision:
        """The bot's decision at the current state, without applying it (safe to run in a
        worker thread: it only reads the state)."""
        if self.to_act() != BOT:
            raise IllegalActionError("it is not the bot's turn")
        view = self.view(self.bot_position)
        probabilities = self.agent.action_probabilities(view)
        return BotDecision(view, dict(probabilities), self.agent.act(view, self.rng))

    def apply_bot(self, decision: BotDecision) -> None:
        """Apply a decision made by :meth:`decide_bot` for the current state."""
        assert self.state is not None
        if self.to_act() != BOT or decision.view.betting != self.state.betting_string():
            raise IllegalActionError("that bot decision is for another state")
        assert decision.kind is not None
        self.state.apply(decision.kind)
        self.decisions.append(decision)

    def bot_turn(self) -> BotDecision:
        """Decide and apply the bot's action (the synchronous path tests use)."""
        decision = self.decide_bot()
        self.apply_bot(decision)
        return decision

    def finish_hand(self) -> HandResult:
        """Settle the finished hand: record it, tell the agent the final state."""
        state = self.state
        if state is None or not state.is_finished:
            raise IllegalActionError("the hand is not finished")
        if self.results and self.results[-1].hand_number == self.hand_number:
            return self.results[-1]
        names = tuple(self.names[self.seat_of(p)] for p in range(2))
        result = HandResult(
            record_of(state, self.hand_number, names),
            human_position=self.human_position,
            folder=folder_of(state),
            decisions=tuple(self.decisions),
        )
        self.results.append(result)
        self.agent.end_hand(self.view(self.bot_position, reveal=True))
        return result


def folder_of(state: State) -> int | None:
    """The position that folded, or None (heads-up: at most one)."""
    return next((p for p, folded in enumerate(state.folded) if folded), None)


def round_base(state: State) -> int:
    """Chips each side had in before the current betting round (0 in the first round, so the
    blinds count as that round's bets)."""
    for actions in reversed(state.actions[: state.round]):
        if actions:
            return actions[-1].spent_after
    return 0


def describe_action(state: State, kind: str) -> str:
    """What action ``kind`` by the actor of ``state`` is called at the table: ``fold``,
    ``check`` or ``call 10``, ``bet 10`` or ``raise to 30``; amounts count this betting round
    (blinds included), as players say them.

    >>> from protocol.gamedef import load_game
    >>> state = State(load_game("holdem"))
    >>> [describe_action(state, k) for k in "fcr"]
    ['fold', 'call 5', 'raise to 20']
    >>> _ = state.check_or_call(); _ = state.check_or_call()
    >>> [describe_action(state, k) for k in "cr"]
    ['check', 'bet 10']
    """
    if kind == CALL:
        owed = state.to_call()
        return "check" if owed == 0 else f"call {owed}"
    if kind == RAISE:
        if state.num_raises == 0 and (state.round > 0 or len(set(state.game.blind)) == 1):
            return f"bet {state.game.raise_size[state.round]}"
        return f"raise to {state.raise_to_amount() - round_base(state)}"
    return "fold"


def describe_betting(game: Game, betting: str) -> list[list[tuple[int, str]]]:
    """Each round's actions as (position, words), replayed on the rules engine.

    >>> from protocol.gamedef import load_game
    >>> describe_betting(load_game("holdem"), "rc/cr")
    [[(1, 'raise to 20'), (0, 'call 10')], [(0, 'check'), (1, 'bet 10')]]
    """
    state = State(game)
    rounds: list[list[tuple[int, str]]] = [[]]
    for letter in betting:
        if letter == "/":
            continue
        while len(rounds) <= state.round:
            rounds.append([])
        actor = state.actor
        assert actor is not None
        rounds[state.round].append((actor, describe_action(state, letter)))
        state.apply(letter)
    return rounds
