"""Exact value-network targets over every private hand of a sampled full board (hold'em).

:mod:`training.deep_cfr.board_targets` samples only the flop of flop hold'em and sums the rest
out; in a game with more rounds (HULH: flop, turn, river) the same idea samples the *whole*
board, every round's public cards at once, uniformly from the deck. Given the board the
betting tree is a plain two-player tree with fold and showdown leaves, so one range-vector pass
over it (:mod:`bot.flop.game`'s kernels, the whole tree as one subtree: both seats' reach of
every hand down, the traverser's counterfactual values up, folds with exact card removal,
showdowns by the sort-by-strength sweep) gives, for every hand ``h`` of the traverser at every
one of its decision nodes ``n``, in every round,

    r(n, h, a) = v(n.a, h) - v(n, h),   v = sum over the opponent's hands o of reach(o) x payoff,

the opponents ``o`` being the hands sharing no card with ``h`` or the board, both seats' play
from the current value networks (regret matching; uniform before a seat's first network), as
external sampling plays them. The row's target is ``r / m``, ``m(n, h)`` the opponent's reach
mass over those hands: the mean regret per opponent hand on this board. Summed over every board
the counted regrets are exactly the full-width counterfactual regrets (a deal is a (hand,
opponent hand, board) triple of disjoint cards, whichever is enumerated first; test on a small
flop game, where the board is the flop), so a sampled board is an unbiased estimate of them; at
a preflop, flop or turn node the board's later cards are the sample (one runout), where
external sampling also samples the opponent's hand and actions.

Why: on HULH the average network's curve flattened at ~-260 mbb/g against the shipped
abstraction from iteration 60 on external-sampling targets (docs/benchmarks/hulh-deep-cfr.md);
on FHP the same flattening was the targets' noise, and exact per-flop targets moved the curve
from ~185 to ~53 mbb/g.

Cost per board: both seats' strategies at all 6,378 decision nodes for all 1,081 live hands
through the networks' compiled trunk (:func:`bot.agents.board_grid.seat_grids`, ~2.4 CPU-s at
width 64), then one pass over the 16,584 nodes (``benchmarks/bench_hulh_runout_targets.py``
prints both). Rows are thinned into the memories in external sampling's proportions as
:func:`training.deep_cfr.board_targets.keep_in_proportion` does for FHP.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from bot.agents.board_grid import seat_grids
from bot.agents.encoding import InfosetEncoder
from bot.flop.game import SubTree
from bot.flop.network_policies import NetPair
from protocol.gamedef import Game
from training.abstraction.board_match import live_hands
from training.deep_cfr.board_targets import MIN_MASS, RowSink, board_passes, keep_in_proportion
from training.deep_cfr.traversal import TraversalResult


def runout_shape_error(game: Game) -> str | None:
    """Why exact full-board targets do not apply to ``game`` (None: they do)."""
    if game.num_players != 2 or not game.is_limit:
        return "needs a two-player limit game"
    if game.num_hole_cards != 2:
        return f"needs two hole cards (the fold and showdown sweeps' card removal), not {game.num_hole_cards}"
    if game.total_board_cards == 0:
        return "has no board to sample"
    return None


class RunoutTargets:
    """Exact per-board memory rows of a game with a board (see the module docstring)."""

    def __init__(self, game: Game, encoder: InfosetEncoder, rows_per_board: int, argmax_fallback: bool) -> None:
        self.game = game
        self.encoder = encoder
        self.rows_per_board = rows_per_board
        self.argmax_fallback = argmax_fallback
        tree = encoder.tree
        #: the whole betting tree as one subtree (root 0, no leaves): a full board leaves no chance
        self.subtree = SubTree.build(tree, np.arange(len(tree.kind)), [0], [])
        self.hands = np.array(list(combinations(sorted(game.deck), game.num_hole_cards)), dtype=np.int64)
        #: each hole-card pair's row in :attr:`hands`
        self.hand_index = {tuple(h): i for i, h in enumerate(self.hands.tolist())}
        self.deck = np.array(sorted(game.deck), dtype=np.int64)
        decisions = self.subtree.decision_nodes
        self.actors = tree.actor[decisions]
        self.rounds = tree.round[decisions].astype(np.int64)
        #: the opponent hands beside a hand on a full board
        self.opponents = comb(len(game.deck) - 2 * game.num_hole_cards - game.total_board_cards, game.num_hole_cards)

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` full boards, each uniform over the deck (int64 ``[count, board cards]``)."""
        return np.stack([rng.choice(self.deck, self.game.total_board_cards, replace=False) for _ in range(count)])

    def tables(self, nets: NetPair, player: int, boards: np.ndarray) -> RunoutTables:
        """``player``'s exact tables on each of ``boards``: one grid per board for both seats'
        strategies, then one parallel range pass over all of them."""
        count, num_hands = len(boards), len(self.hands)
        decisions = self.subtree.decision_nodes
        strategies = np.zeros((count, len(decisions), num_hands, 3), dtype=np.float32)
        valid = np.zeros((count, num_hands))
        live = comb(len(self.deck) - self.game.total_board_cards, self.game.num_hole_cards)
        order = np.zeros((count, live), dtype=np.int64)
        strength = np.zeros((count, live), dtype=np.int64)
        for k, board in enumerate(boards):
            ranked, ranked_strength = live_hands(self.hands, board)
            at = np.array([self.hand_index[tuple(h)] for h in ranked.tolist()], dtype=np.int64)
            valid[k, at] = 1.0
            order[k], strength[k] = at, ranked_strength
            strategies[k][:, at] = seat_grids(nets, "value", self.argmax_fallback, self.encoder, ranked, board, decisions)
        regrets = np.zeros((count, len(decisions), num_hands, 3))
        mass = np.zeros((count, len(decisions), num_hands))
        root = np.zeros((count, 1, num_hands))
        board_passes(self.subtree.arrays, strategies, np.ones((1, 2, num_hands)), valid, self.hands, order, strength,
                     player, regrets, mass, root)  # fmt: skip
        return RunoutTables(boards, valid, regrets, mass, strategies, root[:, 0])

    def results(self, nets: NetPair, player: int, boards: int, batch: int, rng: np.random.Generator,
                keep_strategy: bool):
        """Yield ``(TraversalResult, boards done)`` for ``boards`` boards drawn by ``rng``,
        ``batch`` per pass; the caller's networks are read, never changed."""
        done = 0
        while done < boards:
            picked = self.draw(rng, min(batch, boards - done))
            done += len(picked)
            tables = self.tables(nets, player, picked)
            advantage, strategy = RowSink(self.encoder), RowSink(self.encoder)
            for k in range(len(picked)):
                self.keep(tables, k, player, rng, advantage, strategy if keep_strategy else None)
            evaluated = len(self.subtree.decision_nodes) * int(tables.valid.sum())
            yield TraversalResult(advantage.rows(), strategy.rows(), evaluated, tables.root_values(self.opponents)), done

    def keep(self, tables: RunoutTables, k: int, player: int, rng: np.random.Generator, advantage: RowSink,
             strategy: RowSink | None) -> None:
        """Board ``k``'s candidate rows thinned to ``rows_per_board`` per memory: at the
        traverser's nodes regret over mass, kept in proportion to the opponent's reach; at the
        opponent's its strategy, kept in proportion to its own reach (the average's weight)."""
        mass, valid = tables.mass[k], tables.valid[k]
        for sink, own in ((advantage, True), (strategy, False)):
            if sink is None:
                continue
            d, h = np.nonzero(((self.actors == player) == own)[:, None] & (mass > MIN_MASS) & (valid[None, :] > 0))
            share = mass[d, h] / (self.opponents if own else 1.0)
            target = tables.regrets[k][d, h] / mass[d, h, None] if own else tables.strategies[k][d, h]
            part = (self.rounds[d], self.subtree.decision_nodes[d], self.hands[h], target, share)
            keep_in_proportion([part], self.rows_per_board, rng, sink, tables.boards[k])


@dataclass(frozen=True)
class RunoutTables:
    """Exact tables of a batch of boards for the traverser, indexed ``[board, decision row,
    hand (every hole-card pair of the deck), action]``: ``regrets`` counted (opponent reach
    times chips), ``mass`` (at the traverser's rows the opponent's reach over hands disjoint
    from the hand and the board; at the opponent's its own reach), both seats' ``strategies``;
    ``valid`` ``[board, hand]`` marks the hands that miss the board, ``root`` ``[board, hand]``
    holds the traverser's counted values at the root."""

    boards: np.ndarray
    valid: np.ndarray
    regrets: np.ndarray
    mass: np.ndarray
    strategies: np.ndarray
    root: np.ndarray

    def root_values(self, opponents: int) -> np.ndarray:
        """The traverser's mean chips per hand on each board (over its live hands and their opponents)."""
        return self.root.sum(axis=1) / (self.valid.sum(axis=1) * opponents)
