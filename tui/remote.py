"""A :class:`~tui.session.Table` whose hands come from an ACPC dealer: the person plays through
the same TUI as an ACPC client (``pokerbot play --connect HOST PORT --game GAMEDEF``).

The dealer is the truth: every line it sends (:class:`protocol.acpc_client.Turn`) replaces the
view, and the betting is replayed on the rules engine for the widgets. The person's action is
sent with :meth:`ACPCConnection.send_action` and shown at once; anything else (the opponent's
actions, the echo of ours, the next hand) is read in the app's worker thread through
:meth:`RemoteSession.decide_bot`, so the screen never waits on the network.
"""

from __future__ import annotations

from protocol.acpc_client import ACPCConnection, ACPCConnectionError, ACPCProtocolError, Turn
from protocol.gamedef import Game
from protocol.match_log import HandRecord
from protocol.state import IllegalActionError
from tui.session import BOT, HUMAN, BotDecision, HandResult, Table, folder_of


class RemoteSession(Table):
    """The person's seat at a dealer; the other seat is whoever the dealer seated there."""

    def __init__(self, game: Game, connection: ACPCConnection, where: str) -> None:
        self.game = game
        self.connection = connection
        self.where = where
        self._turns = connection.turns()
        self.turn: Turn | None = None
        self.state = None
        self.hand_number = -1
        self.hands = None
        self.results = []
        self.names = {HUMAN: "human", BOT: "opponent"}
        self.seat_names = {HUMAN: "You", BOT: "Opponent"}
        #: Set when our action is sent and the dealer has not answered yet.
        self._waiting = False
        #: Why the match ended ("" while it runs).
        self.end_reason = ""
        self._ended = False
        self._incoming: Turn | None = None

    @classmethod
    def connect(cls, game: Game, host: str, port: int) -> RemoteSession:
        return cls(game, ACPCConnection.connect(host, port, game), f"{host}:{port}")

    # -- what the screen shows -------------------------------------------------------------
    @property
    def human_position(self) -> int:
        return self.turn.view.position if self.turn is not None else 0

    def hole_cards(self, position: int) -> tuple[int, ...] | None:
        assert self.turn is not None
        return self.turn.view.hole_cards[position] or None

    def visible_board(self) -> tuple[int, ...]:
        return self.turn.view.board_flat if self.turn is not None else ()

    def title(self) -> str:
        return f"{self.game.name}  hand {self.hand_number + 1}  dealer {self.where}"

    @property
    def is_over(self) -> bool:
        return self._ended

    @property
    def in_hand(self) -> bool:
        return self.turn is not None and not self.turn.is_final and not self._ended

    def to_act(self) -> str | None:
        if not self.in_hand:
            return None
        assert self.turn is not None
        return HUMAN if self.turn.is_our_turn and not self._waiting else BOT

    # -- reading from the dealer (worker thread) ------------------------------------------
    def _read(self) -> Turn | None:
        """The next state from the dealer, or None when the match is over or broken."""
        try:
            return next(self._turns)
        except StopIteration:
            self.end_reason = "the dealer ended the match"
        except (ACPCProtocolError, ACPCConnectionError) as error:
            self.end_reason = str(error)
        self._ended = True
        self.connection.close()
        return None

    def _show(self, turn: Turn) -> None:
        self.turn = turn
        self.hand_number = turn.view.hand_number
        self.state = turn.view.to_state(self.game)
        self._waiting = False

    def start_hand(self) -> None:
        """Wait for the first state of the next hand (blocking: call it in a worker)."""
        turn = self._read()
        if turn is not None:
            self._show(turn)

    def decide_bot(self) -> BotDecision:
        """Wait for the dealer's next state; ``kind`` is the opponent's letter if it brought one
        (None for the echo of our own action)."""
        assert self.turn is not None and self.state is not None
        before = self.turn.view
        turn = self._read()
        if turn is None:
            return BotDecision(before, {}, None)
        old, new = self.state.betting_string().replace("/", ""), turn.view.betting.replace("/", "")
        kind = None
        same_hand = turn.view.hand_number == before.hand_number
        if same_hand and len(new) == len(old) + 1 and new.startswith(old) and self.state.actor != self.human_position:
            kind = new[-1]
        self._incoming = turn
        return BotDecision(turn.view, {}, kind)

    def apply_bot(self, decision: BotDecision) -> None:
        """Show the state :meth:`decide_bot` read (nothing if the match ended)."""
        if self._incoming is not None:
            incoming, self._incoming = self._incoming, None
            self._show(incoming)

    # -- the person ----------------------------------------------------------------------
    def act(self, kind: str) -> None:
        """Send the person's action; it shows at once (the dealer's echo confirms it)."""
        if self.to_act() != HUMAN:
            raise IllegalActionError("it is not your turn")
        assert self.turn is not None and self.state is not None
        if kind not in self.turn.legal:
            self.state.copy().apply(kind)  # raises with the rule's reason
        self.connection.send_action(self.turn, kind)
        self.state.apply(kind)
        self._waiting = True

    def finish_hand(self) -> HandResult:
        """The finished hand as the dealer's final state shows it (the opponent's cards only
        after a showdown)."""
        turn, state = self.turn, self.state
        if turn is None or state is None or not turn.is_final or turn.values is None:
            raise IllegalActionError("the hand is not finished")
        if self.results and self.results[-1].hand_number == self.hand_number:
            return self.results[-1]
        view = turn.view
        names = tuple(self.names[self.seat_of(p)] for p in range(2))
        record = HandRecord(view.hand_number, view.betting, view.hole_cards, view.board, turn.values, names)
        result = HandResult(record, human_position=view.position, folder=folder_of(state))
        self.results.append(result)
        return result

    def summary_line(self) -> str:
        stats = self.stats()
        reason = f" ({self.end_reason})" if self.end_reason else ""
        return f"{stats.hands} hands at {self.where}, you {stats.total:+d} chips, {stats.mbb_per_game:+.0f} mbb/g{reason}"
