"""AIVAT: an unbiased, lower-variance estimate of what a known agent wins per hand.

Burch, Schmid, Moravčík, Morrill, Bowling, "AIVAT: A New Variance Reduction Technique for Agent
Evaluation in Imperfect Information Games" (AAAI 2018, arXiv 1612.06915), and methods.md §2.
For each played hand, starting from A's chips u(z), subtract a control variate at every chance
event and at every decision of the known agent A on the path::

    Y = u(z) − Σ_chance [v(h·c_obs) − E_{c~chance}[v(h·c)]]
             − Σ_A      [v(h·a_obs) − Σ_a π_A(a|I(h)) v(h·a)]

Each bracket has mean zero given the history before it (c is drawn from the chance
distribution, a from A's strategy), so E[Y] = E[u] for *any* value function v fixed before the
match; a v close to the true expected value cancels most of the luck of the cards and of A's own
sampling. The opponent's decisions get no term: its strategy is not trusted. The chance events
are the deal of the hole cards and each round's board cards; the log of a hand shows every
player's cards (the dealer's ``.log`` and our match records do), which the chance terms need.

A value function gives v at every history, chance nodes included, where v must be (an unbiased
estimate of) the chance average of its children, E_c[v(h·c)]; both below satisfy that, so a
chance term is simply v(h·c_obs) − v(h).

* :class:`ExactValue` (Kuhn, Leduc): the exact expected chips under a strategy pair fixed before
  the match (A's strategy and B's own policy as the estimate of B), over the rest of the tree.
* :class:`EquityValue` (FHP, HULH, any heads-up game): "pot × equity" (methods.md §2's cheap
  fallback): v(h) = P(position 0 wins at showdown | both hands, board so far) · pot − spent₀,
  exact where it counts. Equity is an exact enumeration of the board completions when there are
  at most ``exact_limit`` of them (FHP pre-flop: 17,296 flops; HULH from the flop on), otherwise
  a Monte Carlo estimate from an independent stream (HULH pre-flop), which keeps every term
  zero-mean. It ignores future betting, so it reduces variance less than an exact v.

Not implemented: the paper's further averaging over A's possible private cards weighted by A's
reach (its "imperfect information" section); the estimator here is the basic one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, lru_cache
from itertools import combinations, permutations
from math import comb
from typing import Protocol

import numba
import numpy as np

from bot.agents.base import Agent
from bot.errors import UnsupportedGameError
from bot.threads import thread_counts_kept
from protocol.betting_tree import ACTION_INDEX, DECISION, FOLD_END, BettingTree
from protocol.evaluator import hand_strength, hand_strength_batch
from protocol.gamedef import Game
from protocol.match_log import HandRecord
from protocol.matchstate import MatchState
from protocol.state import split_pots

Holes = tuple[tuple[int, ...], ...]
#: Games with a deck at most this big get the exact value function (Kuhn 3, Leduc 6).
EXACT_VALUE_MAX_DECK = 8


class ValueFunction(Protocol):
    """v(h): chips of position 0 expected at a history with every player's cards known and the
    board dealt so far (fewer board cards than the round needs = a chance node, where v is the
    chance average of its children)."""

    game: Game
    tree: BettingTree

    @property
    def root_value(self) -> float:
        """E over every deal of v at the start of a hand."""
        ...

    def value(self, holes: Holes, board: tuple[int, ...], betting: str) -> float: ...


def view_for(
    game: Game, actor: int, holes: Holes, board: tuple[int, ...], betting: str
) -> MatchState:
    """What ``actor`` sees at this history (own cards, board by round)."""
    rounds = tuple(
        board[game.board_cards_through(r - 1) : game.board_cards_through(r)]
        for r in range(1, betting.count("/") + 1)
    )
    hidden = tuple(h if p == actor else () for p, h in enumerate(holes))
    return MatchState(actor, 0, betting, hidden, rounds)


def _require_heads_up(game: Game) -> None:
    if game.num_players != 2:
        raise UnsupportedGameError(f"{game.name}: AIVAT here is for heads-up games")


def _fold_value(tree: BettingTree, node: int) -> float:
    return float(-tree.spent[node, 0] if tree.folder[node] == 0 else tree.spent[node, 1])


def showdown_share(holes: Holes, boards: np.ndarray) -> float:
    """Mean share of the pot position 0 wins (1 win, ½ tie) over full boards (rows)."""
    n = len(boards)
    strengths = [
        hand_strength_batch(
            np.hstack([np.tile(np.array(h, dtype=np.int8), (n, 1)), boards]).astype(np.int8)
        )
        for h in holes
    ]
    return float(np.mean((strengths[0] > strengths[1]) + 0.5 * (strengths[0] == strengths[1])))


class ExactValue:
    """Exact expected chips for position 0 when ``agents_by_position`` play from the history on."""

    def __init__(self, game: Game, agents_by_position: tuple[Agent, Agent]) -> None:
        _require_heads_up(game)
        if len(game.deck) > EXACT_VALUE_MAX_DECK:
            raise UnsupportedGameError(
                f"{game.name}: the exact AIVAT value function is for decks of at most "
                f"{EXACT_VALUE_MAX_DECK} cards (Kuhn, Leduc)"
            )
        self.game = game
        self.agents = agents_by_position
        self.tree = BettingTree.build(game)
        self._memo: dict[tuple[Holes, tuple[int, ...], str], float] = {}

    @cached_property
    def root_value(self) -> float:
        """The strategy pair's game value for position 0 (mean over every ordered deal)."""
        k = self.game.num_hole_cards
        deals = [
            (tuple(cards[:k]), tuple(cards[k:]))
            for cards in permutations(self.game.deck, 2 * k)
            if list(cards[:k]) == sorted(cards[:k]) and list(cards[k:]) == sorted(cards[k:])
        ]
        return float(np.mean([self.value(h, (), "") for h in deals]))

    def value(self, holes: Holes, board: tuple[int, ...], betting: str) -> float:
        key = (holes, board, betting)
        if key not in self._memo:
            self._memo[key] = self._compute(holes, board, betting)
        return self._memo[key]

    def _compute(self, holes: Holes, board: tuple[int, ...], betting: str) -> float:
        tree, game = self.tree, self.game
        node = tree.node_of[betting]
        if tree.kind[node] == FOLD_END:
            return _fold_value(tree, node)
        if len(board) < game.board_cards_through(int(tree.round[node])):  # chance: next card
            used = set(board).union(*holes)
            return float(
                np.mean(
                    [self.value(holes, board + (c,), betting) for c in game.deck if c not in used]
                )
            )
        if tree.kind[node] != DECISION:
            strength = {p: hand_strength(holes[p] + board) for p in range(2)}
            return float(split_pots([int(x) for x in tree.spent[node]], strength)[0])
        actor = int(tree.actor[node])
        probabilities = self.agents[actor].action_probabilities(
            view_for(game, actor, holes, board, betting)
        )
        return expected_value(self, holes, board, betting, probabilities)


class EquityValue:
    """v(h) = equity of position 0 · pot − its chips in (exact at folds and showdowns of equal
    contributions, i.e. heads-up limit games without short stacks)."""

    def __init__(
        self, game: Game, exact_limit: int = 20000, samples: int = 10000, seed: int = 0
    ) -> None:
        _require_heads_up(game)
        self.game = game
        self.tree = BettingTree.build(game)
        self.exact_limit, self.samples = exact_limit, samples
        self._rng = np.random.default_rng([seed, 0xA1A7])  # never used to deal: independent
        self._equity: dict[tuple[Holes, tuple[int, ...]], float] = {}

    @property
    def root_value(self) -> float:
        """Equity is ½ over random deals (symmetry), so E[v] = ½ · blinds − blind₀."""
        return 0.5 * sum(self.game.blind) - self.game.blind[0]

    def equity(self, holes: Holes, board: tuple[int, ...]) -> float:
        key = (holes, board)
        if key not in self._equity:
            used = set(board).union(*holes)
            unseen = np.array([c for c in self.game.deck if c not in used], dtype=np.int8)
            need = self.game.total_board_cards - len(board)
            if comb(len(unseen), need) <= self.exact_limit:
                rest = unseen[_combination_indices(len(unseen), need)]
            else:
                # each shuffle of the unseen cards yields len // need disjoint completions; each
                # is uniformly distributed, so their mean is an unbiased equity estimate
                per = len(unseen) // need
                shuffles = self._rng.permuted(np.tile(unseen, (-(-self.samples // per), 1)), axis=1)
                rest = shuffles[:, : per * need].reshape(-1, need)
            boards = np.hstack([np.tile(np.array(board, dtype=np.int8), (len(rest), 1)), rest])
            self._equity[key] = showdown_share(holes, boards)
        return self._equity[key]

    def value(self, holes: Holes, board: tuple[int, ...], betting: str) -> float:
        node = self.tree.node_of[betting]
        if self.tree.kind[node] == FOLD_END:
            return _fold_value(self.tree, node)
        return self.equity(holes, board) * float(self.tree.spent[node].sum()) - float(
            self.tree.spent[node, 0]
        )


@lru_cache(maxsize=16)
def _combination_indices(n: int, k: int) -> np.ndarray:
    """All k-subsets of range(n) as rows (cached: the same shapes recur every hand)."""
    rows = list(combinations(range(n), k))
    return np.array(rows, dtype=np.int16).reshape(len(rows), k)


def value_function_for(game: Game, agents_by_position: tuple[Agent, Agent]) -> ValueFunction:
    """The exact value function where it is cheap, pot × equity elsewhere."""
    if len(game.deck) <= EXACT_VALUE_MAX_DECK:
        return ExactValue(game, agents_by_position)
    return EquityValue(game)


def expected_value(
    value: ValueFunction,
    holes: Holes,
    board: tuple[int, ...],
    betting: str,
    probabilities: dict[str, float],
) -> float:
    """Σ_a π(a) v(h·a) at a decision."""
    return sum(
        p * value.value(holes, board, _child(betting, a, value.tree))
        for a, p in probabilities.items()
        if p > 0
    )


def _child(betting: str, action: str, tree: BettingTree) -> str:
    """The betting text after ``action``, with the ``/`` the dealer adds when a round closes."""
    return tree.history[int(tree.child[tree.node_of[betting], ACTION_INDEX[action]])]


def aivat_value(record: HandRecord, position: int, agent: Agent, value: ValueFunction) -> float:
    """AIVAT's estimate of the chips ``position`` (played by ``agent``, whose strategy is
    known) won in the hand ``record``; ``value`` is built for the hand's seating."""
    game, tree = value.game, value.tree
    holes = record.hole_cards
    sign = 1.0 if position == 0 else -1.0
    correction = value.value(holes, (), "") - value.root_value  # the deal of the hole cards
    betting, board = "", ()
    full_board = tuple(c for r in record.board for c in r)
    for round_index, actions in enumerate(record.betting.split("/")):
        dealt = full_board[len(board) : game.board_cards_through(round_index)]
        if dealt:  # this round's board cards: v at the chance node is their average
            correction += value.value(holes, board + dealt, betting) - value.value(
                holes, board, betting
            )
            board = board + dealt
        for action in actions:
            if int(tree.actor[tree.node_of[betting]]) == position:
                probabilities = agent.action_probabilities(
                    view_for(game, position, holes, board, betting)
                )
                expected = expected_value(value, holes, board, betting, probabilities)
                correction += value.value(holes, board, _child(betting, action, tree)) - expected
            betting = _child(betting, action, tree)
    return float(record.values[position] - sign * correction)


def aivat_values(
    records: list[tuple[HandRecord, int]],
    agents: tuple[Agent, Agent],
    game: Game,
    progress: Callable[[], None] | None = None,
) -> np.ndarray:
    """AIVAT estimates for agent ``agents[0]`` over ``(record, A's position)`` pairs; the value
    function sees the strategy pair (A, B) seated as in each hand."""
    values = {
        0: value_function_for(game, (agents[0], agents[1])),
        1: value_function_for(game, (agents[1], agents[0])),
    }
    estimates = np.empty(len(records))
    with thread_counts_kept():
        numba.set_num_threads(1)  # thousands of ~17k-row equity batches: threads only contend
        for i, (record, position) in enumerate(records):
            estimates[i] = aivat_value(record, position, agents[0], values[position])
            if progress is not None:
                progress()
    return estimates
