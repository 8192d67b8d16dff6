"""Local best response (LBR) for two-player limit games: a lower bound on exploitability.

Lisy & Bowling, *Equilibrium Approximation Quality of Current No-Limit Poker Bots* (AAAI-17
workshops; arXiv:1612.07547), Algorithm 1, for limit betting. LBR plays one seat against the
agent, which it may query for every private hand. It keeps the agent's *range*: a distribution
over the agent's possible hands, uniform at the start over hands consistent with the cards LBR
sees, multiplied after each agent action by the agent's probability of that action with each
hand (Bayes), and cut to hands that miss each new board card. At each of its decisions LBR
assumes both players only check or call from then on (a check-down), and values

* fold: ``-s_L`` (LBR's chips in the pot);
* call: ``S (2e - 1)``, with ``S`` the stake after calling and ``e = P(win) + P(tie)/2``, LBR's
  check-down equity against the range (the remaining board enumerated, or sampled when that
  would take more than ``max_enumeration`` hand evaluations; :class:`EquityCounters` records
  how often and how many runouts; computed in :mod:`bot.evaluation.lbr_equity`);
* raise: ``f s_A + (1 - f) S' (2e' - 1)``: the agent folds with probability ``f`` (its fold
  probability after the raise, averaged over the range: fold equity) and LBR wins its ``s_A``;
  otherwise it calls and the stake is ``S'``, the equity ``e'`` taken against the range of hands
  that do not fold. This is the paper's ``fp * pot + (1 - fp) * (WP * (pot + raise) - raise)``
  written as net chips.

It takes the best (ties within :data:`TIE` chips: call, then raise, then fold). In ``call_rounds`` it only checks or
calls (PokerRL's "check/call before round r" option), which skips the costly early equities.

LBR is a real strategy, so its expected winnings are a lower bound on the agent's
exploitability: averaged over the two seats, on NashConv/2 (:mod:`bot.evaluation.best_response`). A run
plays every deal twice, LBR once in each position with the cards dealt by position
(:func:`protocol.dealing.deal_hand`): the two halves form one duplicate observation. The agent's
actions are drawn from the same range probabilities LBR updates with, with the match runner's
common random numbers (:func:`bot.evaluation.match.agent_rng`).

The range, the three action values and the duplicate deal loop live here, since all read one
per-hand range state; the equities in :mod:`bot.evaluation.lbr_equity`, the exact
(enumerating) variant that checks the whole in :mod:`bot.evaluation.lbr_exact`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from bot.agents.base import Agent
from bot.evaluation.lbr_equity import (
    EquityCounters,
    LBRConfig,
    LBRError,
    PrivateHands,
    checkdown_equity,
)
from bot.evaluation.match import agent_rng
from bot.evaluation.statistics import Estimate, estimate, pair_means
from protocol.dealing import deal_hand
from protocol.gamedef import UNLIMITED_STACK, Game
from protocol.matchstate import MatchState
from protocol.state import ACTIONS, CALL, FOLD, RAISE, State

#: Utilities closer than this (chips) are ties, so rounding never decides between actions.
TIE = 1e-9
#: LBR with no call-only rounds and the default equity limits.
DEFAULT_CONFIG = LBRConfig()


# -- one decision -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """LBR's action and the check-down utilities (net chips) it compared; None = illegal."""

    action: str
    fold: float | None
    call: float
    raise_: float | None


def choose(state: State, responder: int, weights: np.ndarray, equity: np.ndarray,
           fold_after_raise: np.ndarray | None) -> Choice:
    """Lisy & Bowling's rule at ``responder``'s turn: ``weights`` is the agent's range ``[H]``,
    ``equity`` LBR's check-down equity per hand, ``fold_after_raise`` the agent's fold
    probability per hand after LBR raises (None when raising is not considered)."""
    opponent = 1 - responder
    p = weights / weights.sum()
    call = state.max_spent * (2.0 * float(p @ equity) - 1.0)
    fold = -float(state.spent[responder]) if state.can_fold() else None
    raise_ = None
    if fold_after_raise is not None:
        folds = float(p @ fold_after_raise)
        stays = p * (1.0 - fold_after_raise)
        called = 0.0
        if stays.sum() > 0:
            called = state.raise_to_amount() * (2.0 * float(stays @ equity) / float(stays.sum()) - 1.0)
        raise_ = folds * state.spent[opponent] + (1.0 - folds) * called
    action, best = CALL, call
    if raise_ is not None and raise_ > best + TIE:
        action, best = RAISE, raise_
    if fold is not None and fold > best + TIE:
        action = FOLD
    return Choice(action, fold, call, raise_)


def agent_view(game: Game, state: State, position: int, hole: tuple[int, ...],
               board: tuple[int, ...], hand_number: int) -> MatchState:
    """The agent's view at ``state``: its hole cards ``hole`` (range queries replace them),
    the board of the rounds so far, the other player's cards unknown."""
    rounds = tuple(
        tuple(board[game.board_cards_through(r - 1) : game.board_cards_through(r)]) for r in range(1, state.round + 1)
    )
    holes = tuple(tuple(hole) if p == position else () for p in range(game.num_players))
    return MatchState(position, hand_number, state.betting_string(), holes, rounds)


class Responder:
    """LBR's queries and decisions against one agent; shared by the sampled runner and the
    exact evaluator (:mod:`bot.evaluation.lbr_exact`), so both play exactly the same strategy."""

    def __init__(self, game: Game, agent: Agent, config: LBRConfig = DEFAULT_CONFIG) -> None:
        check_game(game)
        self.game, self.agent, self.config = game, agent, config
        self.hands = PrivateHands(game)
        self.counters = EquityCounters()
        self.agent_queries = 0
        self.hands_queried = 0

    def agent_probabilities(self, state: State, weights: np.ndarray, board: tuple[int, ...],
                            hand_number: int, hole: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(support, ``[len(support), 3]``): the agent's action probabilities for every hand
        of its range (``weights > 0``) at ``state``; ``hole`` fills its view (default: the
        first hand of the support)."""
        support = np.flatnonzero(weights > 0)
        position = state.actor
        assert position is not None
        if hole is None:
            hole = tuple(int(c) for c in self.hands.cards[support[0]])
        view = agent_view(self.game, state, position, hole, board, hand_number)
        probabilities = np.asarray(self.agent.range_probabilities(view, self.hands.cards[support]), dtype=np.float64)
        self.agent_queries += 1
        self.hands_queried += len(support)
        if probabilities.shape != (len(support), len(ACTIONS)) or not np.all(np.isfinite(probabilities)) or (probabilities < 0).any():
            raise LBRError(f"agent {self.agent.name}: range_probabilities gave an invalid array of shape {probabilities.shape} at {view.betting!r}")
        return support, probabilities

    def decide(self, state: State, weights: np.ndarray, board: tuple[int, ...], hand_number: int,
               equities: EquityMemo) -> Choice:
        """LBR's choice at its turn in ``state`` against the range ``weights``."""
        responder = state.actor
        assert responder is not None
        if state.round in self.config.call_rounds:
            return Choice(CALL, None, 0.0, None)
        fold_after = None
        if state.can_raise():
            after = state.copy()
            after.bet_or_raise()
            support, probabilities = self.agent_probabilities(after, weights, board, hand_number)
            fold_after = np.zeros(len(weights))
            fold_after[support] = probabilities[:, ACTIONS.index(FOLD)]
        return choose(state, responder, weights, equities(board, weights > 0), fold_after)

    # -- one sampled hand -------------------------------------------------------------------
    def play(self, seed: int, deal: int, responder: int) -> float:
        """LBR's net chips in deal ``deal`` sitting in position ``responder``."""
        game = self.game
        holes, board = deal_hand(game, seed, deal)
        state = State(game, holes, board)
        opponent = 1 - responder
        rng = agent_rng(seed, deal, opponent)
        weights = self.hands.disjoint(holes[responder]).astype(np.float64)
        true_row = self.hands.row(holes[opponent])
        seen, equities = 0, EquityMemo(self, holes[responder], np.random.default_rng([seed, deal, 2 + responder]))
        self.agent.begin_hand(agent_view(game, state, opponent, holes[opponent], (), deal))
        while not state.is_finished:
            visible = state.visible_board()
            if len(visible) > seen:
                weights *= self.hands.disjoint(visible[seen:])
                seen = len(visible)
            if state.actor == opponent:
                support, probabilities = self.agent_probabilities(state, weights, visible, deal, holes[opponent])
                row = probabilities[np.searchsorted(support, true_row)]
                kinds = np.flatnonzero(row > 0)
                action = int(kinds[rng.choice(len(kinds), p=row[kinds] / row[kinds].sum())])
                weights[support] *= probabilities[:, action]
                weights /= weights.sum()
                state.apply(ACTIONS[action])
            else:
                state.apply(self.decide(state, weights, visible, deal, equities).action)
        final = agent_view(game, state, opponent, holes[opponent], state.visible_board(), deal)
        if state.is_showdown:
            final = MatchState(final.position, deal, final.betting, tuple(holes), final.board)
        self.agent.end_hand(final)
        return float(state.payoffs()[responder])


class EquityMemo:
    """LBR's check-down equities for one hole-card holding, computed once per board.

    With ``restrict`` only the hands of the range at the first request on a board are computed
    (exact for the rest of the round, since ranges only shrink within a round); the exact
    evaluator turns it off because it reaches one board along many betting paths."""

    def __init__(self, responder: Responder, hole: tuple[int, ...], rng: np.random.Generator,
                 restrict: bool = True) -> None:
        self.responder, self.hole, self.rng, self.restrict = responder, tuple(hole), rng, restrict
        self.values: dict[tuple[int, ...], np.ndarray] = {}

    def __call__(self, board: tuple[int, ...], among: np.ndarray) -> np.ndarray:
        if board not in self.values:
            lbr = self.responder
            self.values[board] = checkdown_equity(lbr.game, lbr.hands, self.hole, board, lbr.config, self.rng,
                                                  lbr.counters, among if self.restrict else None)
        return self.values[board]


def check_game(game: Game) -> None:
    if game.num_players != 2 or not game.is_limit:
        raise LBRError(f"{game.name}: LBR is implemented for two-player limit games")
    if any(s != UNLIMITED_STACK for s in game.stack):
        raise LBRError(f"{game.name}: LBR's check-down values assume no stack limits")
    if game.num_hole_cards + game.total_board_cards > 7:
        raise LBRError(f"{game.name}: showdowns of more than 7 cards are not supported")


# -- a run ------------------------------------------------------------------------------------


@dataclass
class LBRResult:
    """LBR's chips per deal in each position (column = LBR's position), and the run's facts."""

    game: Game
    agent_name: str
    seed: int
    config: LBRConfig
    chips: list[tuple[float, float]] = field(default_factory=list)
    counters: EquityCounters = field(default_factory=EquityCounters)
    agent_queries: int = 0
    hands_queried: int = 0
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def deals(self) -> int:
        return len(self.chips)

    def mbb(self) -> np.ndarray:
        return 1000.0 * np.array(self.chips, dtype=float).reshape(-1, 2) / self.game.big_blind

    def seat(self, position: int) -> Estimate:
        """LBR's mbb/g in one position (a lower bound on that seat's best-response value)."""
        return estimate(self.mbb()[:, position])

    def overall(self) -> Estimate:
        """Mean over both positions, one duplicate pair per deal: a lower bound on the
        agent's exploitability (NashConv/2)."""
        values = self.mbb()
        return estimate(pair_means(values[:, 0], values[:, 1]))

    def to_dict(self) -> dict:
        seats = {}
        if self.deals:
            seats = {"overall": self.overall().to_dict(), "position_0": self.seat(0).to_dict(), "position_1": self.seat(1).to_dict()}
        return {
            "game": self.game.name, "agent": self.agent_name, "seed": self.seed, "config": self.config.to_dict(),
            "deals": self.deals, "hands_per_seat": self.deals, "unit": "mbb/g",
            "meaning": "LBR's winnings: a lower bound on the agent's exploitability (NashConv/2 for overall)",
            "estimates": seats, "equity": asdict(self.counters), "agent_queries": self.agent_queries,
            "hands_queried": self.hands_queried, "seconds": self.seconds, "interrupted": self.interrupted,
            "chips": [list(pair) for pair in self.chips],
        }


def run_lbr(game: Game, agent: Agent, deals: int, seed: int, config: LBRConfig = DEFAULT_CONFIG,
            result: LBRResult | None = None, progress: Callable[[int], None] | None = None) -> LBRResult:
    """Play deals ``result.deals .. deals - 1`` (continuing ``result`` when given), each with
    LBR in position 0 and then 1. Ctrl-C stops after the last whole deal (``interrupted``)."""
    responder = Responder(game, agent, config)
    if result is None:
        result = LBRResult(game, agent.name, seed, config)
    responder.counters = result.counters
    started = time.perf_counter()
    try:
        for deal in range(result.deals, deals):
            pair = (responder.play(seed, deal, 0), responder.play(seed, deal, 1))
            result.chips.append(pair)
            if progress is not None:
                progress(1)
    except KeyboardInterrupt:
        result.interrupted = True
    result.agent_queries += responder.agent_queries
    result.hands_queried += responder.hands_queried
    result.seconds += time.perf_counter() - started
    return result
