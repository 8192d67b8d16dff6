"""Exact value-network targets over every private hand of a sampled flop (FHP-shaped games).

Why: on FHP the SD-CFR curve flattens because the external-sampling targets are noisy, not
because the networks cannot fit (``benchmarks/bench_fhp_fit_error.py``, docs/benchmarks/fhp-sd-cfr.md):
one traversal samples the opponent's cards, the opponent's actions and the flop, and the
memory's mean at an infoset converges slowly. This sampler keeps only the flop sampled. Each
"board" is one flop drawn uniformly; on it one range-vector pass (:mod:`bot.flop.game`, as the
FHP solver and best response walk: reach down, the traverser's counterfactual values up, folds
and showdowns with exact card removal) gives, for **every** hand ``h`` of the traverser at
**every** one of its decision nodes ``n`` (preflop and flop), the counterfactual regret

    r(n, h, a) = v(n.a, h) - v(n, h),   v = sum over the opponent's hands o of reach(o) x payoff,

with the opponent's strategy and the traverser's continuation both from the current value
networks (regret matching; uniform before a player's first network), exactly as external
sampling's traversals play them. The row's target is ``r / m`` with ``m(n, h)`` the opponent's
reach mass at ``n`` over the hands that share no card with ``h`` (and the flop): the mean that
external sampling's targets converge to at that infoset (the sampled regret of a deal, in
chips). Preflop nodes read the flop through this one board: ``C(deck - 2, 3) x`` its values,
an unbiased estimate of the sum over the flops the hand can see.

Which rows enter the memory: external sampling inserts infoset ``(n, h, flop)`` as often as the
opponent reaches it, ``m(n, h) / (opponent hands)``; here every row of a board is a candidate and
is kept with probability ``min(1, c x m / hands)``, ``c`` chosen so that ``rows_per_board`` are
kept on average. The memory then holds the infosets in external sampling's proportions, each
with its exact value on the board instead of one deal's sample. Deep CFR's strategy memory is
filled the same way at the opponent's nodes, in proportion to the opponent's own reach (the
average strategy's weighting), with its regret-matching strategy as the target.

Suit symmetry: with suit-canonical networks (``canonical_suits``) the boards are the canonical
flops drawn in proportion to their orbit sizes, which is the uniform flop up to a suit renaming
the networks cannot see; otherwise every raw flop.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from math import comb

import numpy as np
from numba import njit, prange

from bot.agents.encoding import InfosetEncoder
from bot.flop.game import (
    FlopGame,
    fold_values,
    leaf_reach,
    reach_down,
    store_root_values,
    values_up,
)
from bot.flop.network_policies import NetPair, NetworkGrid
from protocol.betting_tree import DECISION
from training.deep_cfr.traversal import TraversalResult, empty_rows

#: Masses below this are inclusion-exclusion rounding (a hand's disjoint reach that is exactly 0
#: comes out ~1e-20): such candidates are dropped, their regret over mass is noise over noise.
#: A real row that light would be kept with probability ~1e-12 x rows per board anyway.
MIN_MASS = 1e-12


@njit(cache=True)
def _node_rows(arrays, player, reach, values, valid, hand_cards, regrets, mass):  # pragma: no cover - numba
    """At ``player``'s decisions: ``regrets[d, h, a] = v(a) - v`` and ``mass[d, h]`` the
    opponent's reach over hands disjoint from ``h``; at the opponent's: ``mass[d, h]`` its own
    reach (the average strategy's weight)."""
    kind, actor, child, decision = arrays[0], arrays[1], arrays[2], arrays[3]
    for n in range(kind.shape[0]):
        if kind[n] != DECISION:
            continue
        d = decision[n]
        if actor[n] != player:
            for h in range(valid.shape[0]):
                mass[d, h] = reach[n, actor[n], h] * valid[h]
            continue
        fold_values(reach[n, 1 - player], hand_cards, valid, 1.0, mass[d])
        for h in range(valid.shape[0]):
            for x in range(3):
                c = child[n, x]
                regrets[d, h, x] = values[c, h] - values[n, h] if c >= 0 and valid[h] > 0 else 0.0


@njit(parallel=True, cache=True)
def board_passes(arrays, strategies, root_reach, valid, hand_cards, order, strength, player,
                 regrets, mass, out):  # pragma: no cover - numba
    """One range pass per board (in parallel): regrets and masses at the subtree's decisions
    (FHP: the flop forest; a game walked on a full board: the whole tree), and ``out[i, t, h]``,
    the player's values at root ``t`` of board ``i``."""
    num_nodes, num_hands = arrays[0].shape[0], valid.shape[1]
    empty = np.zeros((0, num_hands))
    for i in prange(strategies.shape[0]):
        reach = np.empty((num_nodes, 2, num_hands))
        values = np.empty((num_nodes, num_hands))
        reach_down(arrays, strategies[i], root_reach, valid[i], reach)
        values_up(arrays, strategies[i], player, False, reach, empty, valid[i], hand_cards, 1.0,
                  order[i], strength[i], values)
        _node_rows(arrays, player, reach, values, valid[i], hand_cards, regrets[i], mass[i])
        store_root_values(arrays, values, out[i])


def hand_counts(fg: FlopGame) -> tuple[int, tuple[int, int]]:
    """The flops a hand can see, and the opponent hands beside a hand preflop and on a flop: what
    a board's rows are scaled and kept by (:class:`BoardTargets`, and the noise-free rows of
    :meth:`training.deep_cfr.exact_targets.ExactRegrets.oracle_rows` in the same proportions)."""
    hole, deck, flop = fg.hands.shape[1], len(fg.game.deck), fg.flops.shape[1]
    return comb(deck - hole, flop), (comb(deck - hole, hole), comb(deck - hole - flop, hole))


class BoardTargets:
    """Exact per-board memory rows of an FHP-shaped game (see the module docstring)."""

    def __init__(self, fg: FlopGame, encoder: InfosetEncoder, rows_per_board: int, argmax_fallback: bool,
                 device: str = "cpu") -> None:
        self.fg = fg
        self.encoder = encoder
        self.rows_per_board = rows_per_board
        self.argmax_fallback = argmax_fallback
        self.device = device
        self.probabilities = fg.weights / fg.weights.sum()
        #: flops a hand can see, and the opponent hands beside a hand preflop / on a flop
        self.flops_per_hand, self.opponents = hand_counts(fg)
        #: the actor of every decision row, preflop and flop
        self.actors = (fg.tree.actor[fg.preflop.decision_nodes], fg.tree.actor[fg.flop.decision_nodes])

    def preflop(self, nets: NetPair) -> tuple[np.ndarray, np.ndarray]:
        """Both seats' preflop strategies ``[D0, H, 3]`` under ``nets`` and the reach ``[N0, 2, H]``."""
        grid = NetworkGrid(self.fg, self.device)
        return self.fg.preflop_reach(grid.strategies(nets, "value", self.argmax_fallback, 0)[0])

    def results(self, nets: NetPair, player: int, boards: int, batch: int, rng: np.random.Generator,
                keep_strategy: bool):
        """Yield ``(TraversalResult, boards done)`` for ``boards`` flops drawn by ``rng``, ``batch``
        flops per numba call; the caller's networks are read, never changed."""
        fg = self.fg
        preflop = self.preflop(nets)
        drawn = rng.choice(fg.num_flops, size=boards, p=self.probabilities)
        done = 0
        while done < boards:
            picked = drawn[done : done + batch]
            done += len(picked)
            advantage, strategy = RowSink(self.encoder), RowSink(self.encoder)
            evaluated = 0
            for board in self.boards(nets, player, picked, preflop):
                self._keep(board, player, rng, advantage, strategy if keep_strategy else None)
                # one range pass: (decision node, hand) pairs, as FlopCFR.nodes_per_iteration counts a pass
                evaluated += fg.preflop.num_decisions * fg.num_hands + fg.flop.num_decisions * int(board.valid.sum())
            yield TraversalResult(advantage.rows(), strategy.rows(), evaluated, np.zeros(len(picked))), done

    def boards(self, nets: NetPair, player: int, picked: np.ndarray,
               preflop: tuple[np.ndarray, np.ndarray]) -> list[Board]:
        """The exact tables of flops ``picked`` (indices into the game's flops) for ``player``:
        one network call and one parallel range pass over all of them."""
        fg = self.fg
        pre_strategy, pre_reach = preflop
        sub = dataclasses.replace(fg, flops=fg.flops[picked], weights=np.ones(len(picked)))
        strategies = NetworkGrid(sub, self.device).strategies(nets, "value", self.argmax_fallback, 1, 0, len(picked))
        flop = fg.flop
        regrets = np.zeros((len(picked), flop.num_decisions, fg.num_hands, 3))
        mass = np.zeros((len(picked), flop.num_decisions, fg.num_hands))
        out = np.zeros((len(picked), fg.num_transitions, fg.num_hands))
        order, strength = sub.showdown
        valid = sub.valid
        board_passes(flop.arrays, strategies, leaf_reach(fg.preflop, pre_reach), valid, fg.hands, order, strength,
                     player, regrets, mass, out)
        boards = []
        for i in range(len(picked)):
            values = fg.preflop_values(pre_strategy, pre_reach, player, False, self.flops_per_hand * out[i])
            pre_regrets = np.zeros((fg.preflop.num_decisions, fg.num_hands, 3))
            pre_mass = np.zeros((fg.preflop.num_decisions, fg.num_hands))
            _node_rows(fg.preflop.arrays, player, pre_reach, values / fg.flops_per_deal, valid[i], fg.hands,
                       pre_regrets, pre_mass)
            boards.append(Board(sub.flops[i], valid[i], (pre_regrets, regrets[i]), (pre_mass, mass[i]),
                                (pre_strategy, strategies[i])))
        return boards

    def _keep(self, board: Board, player: int, rng: np.random.Generator, advantage: RowSink,
              strategy: RowSink | None) -> None:
        """Thin one board's candidate rows to ``rows_per_board`` expected rows per memory, each
        kept in proportion to how often external sampling would visit it (module docstring)."""
        fg, actors = self.fg, self.actors
        for sink, own in ((advantage, True), (strategy, False)):
            if sink is None:
                continue
            parts = []
            for rnd, subtree in enumerate((fg.preflop, fg.flop)):
                mass = board.mass[rnd]
                d, h = np.nonzero(((actors[rnd] == player) == own)[:, None] & (mass > MIN_MASS) & (board.valid[None, :] > 0))
                share = mass[d, h] / (self.opponents[rnd] if own else 1.0)
                target = board.regrets[rnd][d, h] / mass[d, h, None] if own else board.strategies[rnd][d, h]
                parts.append((rnd, subtree.decision_nodes[d], fg.hands[h], target, share))
            keep_in_proportion(parts, self.rows_per_board, rng, sink, board.flop)


def keep_in_proportion(parts: list[tuple], rows_per_board: int, rng: np.random.Generator, sink: RowSink,
                       board: np.ndarray) -> None:
    """Add to ``sink`` each candidate row of ``parts`` (``(round, nodes, holes, targets, shares)``
    per part; ``round`` one int or one per row) with probability ``min(1, c x share)``, ``c`` such
    that ``rows_per_board`` rows are kept on average: the rows in the proportions external
    sampling would visit them, each with its exact target."""
    total = sum(p[4].sum() for p in parts)
    if total <= 0:
        return
    scale = rows_per_board / total
    for rnd, nodes, holes, target, share in parts:
        kept = rng.random(len(share)) < scale * share
        sink.add(rnd if np.ndim(rnd) == 0 else rnd[kept], nodes[kept], holes[kept], board, target[kept])


@dataclass
class Board:
    """One flop's exact tables for the traverser, per round (0 preflop, 1 flop): ``regrets``
    ``[D, H, 3]`` (counted: the opponent's reach times chips), ``mass`` ``[D, H]`` (at the
    traverser's nodes the opponent's reach over hands disjoint from the hand; at the opponent's,
    its own reach) and both seats' ``strategies`` ``[D, H, 3]``; ``valid`` ``[H]``: the hands
    that miss the flop."""

    flop: np.ndarray
    valid: np.ndarray
    regrets: tuple[np.ndarray, np.ndarray]
    mass: tuple[np.ndarray, np.ndarray]
    strategies: tuple[np.ndarray, np.ndarray]


class RowSink:
    """Memory rows (node, card slots, target) gathered from a batch of boards."""

    def __init__(self, encoder: InfosetEncoder) -> None:
        self.encoder = encoder
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, rnd: int | np.ndarray, nodes: np.ndarray, holes: np.ndarray, board: np.ndarray,
            target: np.ndarray) -> None:
        """Rows at betting ``nodes`` (of round ``rnd``: one, or one per row) for ``holes`` on
        ``board`` (the cards dealt so far or the whole board: each row sees its round's)."""
        n = len(nodes)
        if not n:
            return
        cards = np.broadcast_to(board.astype(np.int8), (n, len(board)))
        slots = self.encoder.card_slots(holes.astype(np.int8)[:, None, :], cards, np.zeros(n, dtype=np.int64),
                                        np.broadcast_to(rnd, n))
        self.parts.append((nodes.astype(np.int32), slots, target.astype(np.float32)))

    def rows(self) -> dict[str, np.ndarray]:
        if not self.parts:
            return empty_rows(self.encoder)
        return {key: np.concatenate([p[i] for p in self.parts]) for i, key in enumerate(("node", "cards", "target"))}
