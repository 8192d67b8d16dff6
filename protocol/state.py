"""The rules engine: one hand of an ACPC limit game, with the reference dealer's semantics.

Every player action has a check that raises with a message (``verify_fold``), a yes/no question
(``can_fold``) and the act itself (``fold``) returning a small immutable :class:`Action`
(pokerkit's pattern). The dealer, the bots, training and the TUI ask ``can_*`` and call the act;
none of them re-implements legality. Rules follow the ACPC server's ``game.c``: who
acts first per round (``firstPlayer``), raise caps that do not count the blinds, no fold when
checking is free, a round closes when everyone still able to act has called the last raise.
It is one module because it is one job, the rules of one hand, and every
rule reads and changes the same :class:`State`.

A whole hand of Leduc (position 0 acts first; each antes 1, bets are 2 then 4):

>>> from protocol.gamedef import load_game
>>> from protocol.cards import cards_from_str
>>> game = load_game("leduc")
>>> state = State(game, hole_cards=(cards_from_str("Kh"), cards_from_str("Qs")),
...               board_cards=cards_from_str("Ks"))
>>> state.actor, state.can_fold(), state.can_raise()
(0, False, True)
>>> state.bet_or_raise()
Action(kind='r', player=0, round=0, spent_after=3)
>>> state.check_or_call().kind, state.round, state.betting_string()
('c', 1, 'rc/')
>>> state.visible_board()
(47,)
>>> _ = state.check_or_call(); _ = state.bet_or_raise(); _ = state.fold()
>>> state.is_finished, state.betting_string(), state.payoffs()
(True, 'rc/crf', (-3, 3))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from protocol.errors import ProtocolError
from protocol.gamedef import Game


class ActionKind(str, Enum):
    """The three limit actions. Each member *is* its ACPC letter (a ``str``): it equals and
    hashes as the letter, and ``str``, f-strings, ``repr`` and JSON give the letter, so betting
    strings, logs, policy files and messages read exactly as with bare letters. (``str, Enum``
    rather than 3.11's ``StrEnum``: the project supports Python 3.10.)"""

    FOLD = "f"
    CALL = "c"
    RAISE = "r"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __repr__(self) -> str:
        return repr(self.value)


FOLD, CALL, RAISE = ActionKind.FOLD, ActionKind.CALL, ActionKind.RAISE
#: Every action, in the order fold, call, raise (the column order of every strategy table).
ACTIONS: tuple[ActionKind, ...] = tuple(ActionKind)
#: The reference dealer's limit on actions in one round (MAX_NUM_ACTIONS).
MAX_ACTIONS_PER_ROUND = 64


class IllegalActionError(ProtocolError, ValueError):
    """An action that the rules do not allow in the current state."""


@dataclass(frozen=True)
class Action:
    """What happened: the ACPC letter, who acted, in which round, and their total commitment."""

    kind: ActionKind
    player: int
    round: int
    spent_after: int


class State:
    """One hand in progress. Cards are optional: without them the betting logic still works
    (the compiled betting tree uses that), but showdown payoffs need every player's cards.

    ``board_cards`` holds the board for every round, dealt in advance as the reference dealer
    does; :meth:`visible_board` shows the part dealt so far.
    """

    def __init__(
        self,
        game: Game,
        hole_cards: Sequence[Sequence[int]] | None = None,
        board_cards: Sequence[int] | None = None,
    ) -> None:
        if not game.is_limit:
            raise NotImplementedError(f"{game.name}: only limit games are playable")
        self.game = game
        self.hole_cards: tuple[tuple[int, ...], ...] | None = (
            tuple(tuple(h) for h in hole_cards) if hole_cards is not None else None
        )
        self.board_cards: tuple[int, ...] | None = (
            tuple(board_cards) if board_cards is not None else None
        )
        self._check_cards()
        self.spent = list(game.blind)
        self.max_spent = max(game.blind)
        self.folded = [False] * game.num_players
        self.round = 0
        self.actions: list[list[Action]] = [[]]
        self._betting = ""  # betting_string(), kept up to date: the dealer sends it per state
        self.num_raises = 0
        self.is_finished = False
        self.actor: int | None = self._first_actor(0)
        if self._num_acting() <= 1:  # everyone all-in from the blinds
            self._finish_at_showdown()

    # -- construction helpers ------------------------------------------------------------
    def _check_cards(self) -> None:
        game = self.game
        seen: list[int] = []
        if self.hole_cards is not None:
            if len(self.hole_cards) != game.num_players or any(
                len(h) != game.num_hole_cards for h in self.hole_cards
            ):
                raise ValueError(
                    f"{game.name}: need {game.num_hole_cards} hole cards for each of "
                    f"{game.num_players} positions"
                )
            seen += [c for h in self.hole_cards for c in h]
        if self.board_cards is not None:
            if len(self.board_cards) != game.total_board_cards:
                raise ValueError(f"{game.name}: need {game.total_board_cards} board cards")
            seen += list(self.board_cards)
        if len(set(seen)) != len(seen) or any(c not in game.deck for c in seen):
            raise ValueError(f"{game.name}: cards repeat or are not in the deck")

    def copy(self) -> State:
        """An independent copy (cards are immutable and shared)."""
        other = State.__new__(State)
        other.__dict__.update(self.__dict__)
        other.spent = list(self.spent)
        other.folded = list(self.folded)
        other.actions = [list(r) for r in self.actions]
        return other

    def with_cards(self, hole_cards: Sequence[Sequence[int]], board_cards: Sequence[int]) -> State:
        """A copy holding every card, for a state replayed without them (a client learns the
        other hands only at the showdown). Raises ``ValueError`` for impossible cards."""
        other = self.copy()
        other.hole_cards = tuple(tuple(h) for h in hole_cards)
        other.board_cards = tuple(board_cards)
        other._check_cards()
        return other

    # -- derived facts -----------------------------------------------------------------
    def _is_all_in(self, player: int) -> bool:
        return self.spent[player] >= self.game.stack[player]

    def _can_act(self, player: int) -> bool:
        return not self.folded[player] and not self._is_all_in(player)

    def _num_acting(self) -> int:
        """Players neither folded nor all-in (inlined ``_can_act``: called on every action)."""
        spent, stack, folded = self.spent, self.game.stack, self.folded
        return sum(1 for p in range(len(folded)) if not folded[p] and spent[p] < stack[p])

    def _next_actor_from(self, player: int) -> int:
        n = self.game.num_players
        for step in range(n):
            candidate = (player + step) % n
            if self._can_act(candidate):
                return candidate
        raise AssertionError("no player can act")

    def _first_actor(self, round_index: int) -> int:
        return self._next_actor_from(self.game.first_player[round_index])

    def _num_called(self) -> int:
        """Players who have matched the current bet this round (ACPC ``numCalled``)."""
        count = 0
        for action in reversed(self.actions[self.round]):
            if action.kind == RAISE:
                return count + (not self._is_all_in(action.player))
            if action.kind == CALL and not self._is_all_in(action.player):
                count += 1
        return count

    @property
    def num_folded(self) -> int:
        return sum(self.folded)

    def to_call(self, player: int | None = None) -> int:
        """Chips ``player`` (default: the actor) must add to call."""
        player = self.actor if player is None else player
        if player is None:
            return 0
        return min(self.max_spent, self.game.stack[player]) - self.spent[player]

    def raise_to_amount(self) -> int:
        """The total commitment after a raise by the actor (limit: one fixed increment)."""
        assert self.actor is not None
        return min(self.max_spent + self.game.raise_size[self.round], self.game.stack[self.actor])

    def visible_board(self) -> tuple[int, ...]:
        """Board cards dealt up to the current round."""
        if self.board_cards is None:
            return ()
        return self.board_cards[: self.game.board_cards_through(self.round)]

    @property
    def pot(self) -> int:
        return sum(self.spent)

    def betting_string(self) -> str:
        """ACPC betting text; a closed round is followed by ``/`` as the dealer writes it."""
        return self._betting

    @property
    def is_showdown(self) -> bool:
        return self.is_finished and self.num_folded < self.game.num_players - 1

    # -- verify / can / act ---------------------------------------------------------------
    # Each rule is written once, as a ``_*_problem`` method that names what forbids the act (or
    # None): ``verify_*`` raises it, ``can_*`` and ``legal_actions`` test it without raising,
    # which keeps the dealer's and the client's per-action checks cheap.
    def _turn_problem(self) -> str | None:
        if self.is_finished or self.actor is None:
            return "the hand is over: nobody may act"
        return None

    def _fold_problem(self) -> str | None:
        """Folding is illegal when checking is free."""
        turn = self._turn_problem()
        if turn is not None:
            return turn
        assert self.actor is not None
        if self.spent[self.actor] >= self.max_spent:
            return "cannot fold: checking is free"
        return None

    def _raise_problem(self) -> str | None:
        """A raise needs room under the round's cap, two players able to act, and chips."""
        turn = self._turn_problem()
        if turn is not None:
            return turn
        cap = self.game.max_raises[self.round]
        if self.num_raises >= cap:
            return f"cannot raise: round {self.round} allows {cap} raises"
        if self._num_acting() <= 1:
            return "cannot raise: nobody else can act"
        if len(self.actions[self.round]) + self.game.num_players > MAX_ACTIONS_PER_ROUND:
            return "cannot raise: too many actions this round"
        if self.raise_to_amount() <= self.max_spent:
            return "cannot raise: no chips left to raise with"
        return None

    def verify_fold(self) -> None:
        """Raise unless the actor may fold: folding is illegal when checking is free."""
        _raise_if(self._fold_problem())

    def verify_check_or_call(self) -> None:
        """Raise unless the actor may check or call (always legal while the hand runs)."""
        _raise_if(self._turn_problem())

    def verify_bet_or_raise(self) -> None:
        """Raise unless the actor may raise: the round's cap, two players able to act, room."""
        _raise_if(self._raise_problem())

    def can_fold(self) -> bool:
        return self._fold_problem() is None

    def can_check_or_call(self) -> bool:
        return self._turn_problem() is None

    def can_bet_or_raise(self) -> bool:
        return self._raise_problem() is None

    can_raise = can_bet_or_raise

    def legal_actions(self) -> tuple[ActionKind, ...]:
        """The legal ACPC letters, in the order fold, call, raise."""
        if self.is_finished:
            return ()
        fold = (FOLD,) if self._fold_problem() is None else ()
        raise_ = (RAISE,) if self._raise_problem() is None else ()
        return fold + (CALL,) + raise_

    def fold(self) -> Action:
        self.verify_fold()
        player = self.actor
        assert player is not None
        self.folded[player] = True
        return self._record(FOLD, player)

    def check_or_call(self) -> Action:
        self.verify_check_or_call()
        player = self.actor
        assert player is not None
        self.spent[player] = min(self.max_spent, self.game.stack[player])
        return self._record(CALL, player)

    def bet_or_raise(self) -> Action:
        self.verify_bet_or_raise()
        player = self.actor
        assert player is not None
        self.max_spent = self.raise_to_amount()
        self.spent[player] = self.max_spent
        self.num_raises += 1
        return self._record(RAISE, player)

    def apply(self, kind: str) -> Action:
        """Apply an ACPC letter ``f``, ``c`` or ``r`` (or an :class:`ActionKind`)."""
        if kind == FOLD:
            return self.fold()
        if kind == CALL:
            return self.check_or_call()
        if kind == RAISE:
            return self.bet_or_raise()
        raise IllegalActionError(f"unknown action {kind!r} (expected one of f, c, r)")

    def _record(self, kind: ActionKind, player: int) -> Action:
        action = Action(kind, player, self.round, self.spent[player])
        self.actions[self.round].append(action)
        self._betting += kind
        self._advance()
        return action

    def _advance(self) -> None:
        """Move the turn on, close the round, or end the hand (ACPC ``doAction``)."""
        if self.num_folded + 1 >= self.game.num_players:
            self.is_finished, self.actor = True, None
        elif self._num_called() >= (acting := self._num_acting()):
            if acting > 1 and self.round + 1 < self.game.num_rounds:
                self.round += 1
                self.actions.append([])
                self._betting += "/"
                self.num_raises = 0
                self.actor = self._first_actor(self.round)
            else:
                self._finish_at_showdown()
        else:
            assert self.actor is not None
            self.actor = self._next_actor_from(self.actor + 1)

    def _finish_at_showdown(self) -> None:
        """End the hand; rounds skipped because of all-ins still show ``/`` and their cards."""
        while self.round + 1 < self.game.num_rounds:
            self.round += 1
            self.actions.append([])
            self._betting += "/"
        self.is_finished, self.actor = True, None

    # -- outcome -----------------------------------------------------------------------
    def payoffs(self) -> tuple[int, ...]:
        """Net chips per position, blinds included (zero-sum). Needs cards at a showdown."""
        if not self.is_finished:
            raise IllegalActionError("the hand is not over")
        players = range(self.game.num_players)
        if not self.is_showdown:
            winner = next(p for p in players if not self.folded[p])
            pot = self.pot
            return tuple(pot - self.spent[p] if p == winner else -self.spent[p] for p in players)
        if self.hole_cards is None or self.board_cards is None:
            raise IllegalActionError("a showdown needs every player's cards")
        return showdown_payoffs(self.spent, self.folded, self.hole_cards, self.visible_board())


def showdown_payoffs(
    spent: Sequence[int],
    folded: Sequence[bool],
    hole_cards: Sequence[Sequence[int]],
    visible_board: Sequence[int],
) -> tuple[int, ...]:
    """Net chips per position at a showdown: the best hands still in split each pot."""
    from protocol.evaluator import hand_strength

    board = tuple(visible_board)
    strength = {
        p: hand_strength(tuple(hole_cards[p]) + board) for p in range(len(spent)) if not folded[p]
    }
    return split_pots(spent, strength)


def split_pots(spent: Sequence[int], strength: dict[int, int]) -> tuple[int, ...]:
    """Net winnings when ``strength`` (players still in, higher better) contest the pot.

    Side pots follow the contribution levels; each pot is split evenly among its best hands,
    with odd chips going to the earliest positions (the reference dealer splits exactly in
    floating point; limit heads-up pots are always even).

    >>> split_pots([4, 4], {0: 10, 1: 7})
    (4, -4)
    >>> split_pots([3, 3], {0: 5, 1: 5})
    (0, 0)
    """
    won = [0.0] * len(spent)
    levels = sorted(set(spent))
    previous = 0
    for level in levels:
        layer = sum(min(s, level) - min(s, previous) for s in spent)
        eligible = [p for p in strength if spent[p] >= level]
        if layer and eligible:
            best = max(strength[p] for p in eligible)
            winners = [p for p in eligible if strength[p] == best]
            for p in winners:
                won[p] += layer / len(winners)
        previous = level
    net = [w - s for w, s in zip(won, spent, strict=True)]
    return tuple(int(x) if float(x).is_integer() else x for x in net)  # type: ignore[misc]


def _raise_if(problem: str | None) -> None:
    if problem is not None:
        raise IllegalActionError(problem)
