"""Flop hold'em as range vectors per flop: the shared core of the FHP solver and best response.

Flop hold'em (FHP, Brown et al. 2019, "Deep Counterfactual Regret Minimization", sec. 5) has two
betting rounds and one chance event after the first: the three-card flop. Every public state
is (betting node, flop), so, as in Johanson, Waugh, Bowling & Zinkevich, *Accelerating Best
Response Calculation in Large Extensive Games* (IJCAI 2011), each carries a vector over the
1,326 hole-card pairs instead of recursing per hand. This module compiles a game of that shape
(two players, limit, no board in round 0, two hole cards) into:

* :class:`SubTree`: flat arrays of the preflop tree (its round-1 children are *leaves* whose
  values come from the flop pass) and of the flop forest (one subtree per preflop line that
  reaches the flop; its roots take their reach from the preflop pass);
* :class:`FlopGame`: the hands, the flops walked (either all raw flops, or the canonical flops
  under suit isomorphism with their orbit sizes as weights), per-flop validity and showdown
  orders;
* numba kernels: :func:`reach_down` and :func:`values_up` (one player's counterfactual values:
  expectation, or best response at the player's nodes), fold and showdown values with exact
  card removal (the showdown is the sort-by-strength sweep of Johanson et al. 2011, sec. 4.2).

Values are counted, not normalised: a value at a flop node is the sum over opponent hands of
reach x payoff; the preflop fold values are scaled by the flops per deal, C(deck - 4, 3), so
the root sum divided by :attr:`FlopGame.deals` is chips per hand.

Canonical flops: for a policy that is invariant under suit renaming, ``cfv_{sigma f}(h) =
cfv_f(sigma^-1 h)``, so the sum over all raw flops of a hand's value equals the mean, over the
hand's preflop suit class, of ``sum_c w_c cfv_c(h')`` (w_c the orbit size of canonical flop c):
:meth:`FlopGame.symmetrize` is that mean.

It is one module because the compiled arrays and the numba kernels that walk
them are one layout: a field added to :class:`SubTree` changes every kernel's signature here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from math import comb

import numpy as np
from numba import njit

from protocol.betting_tree import DECISION, FOLD_END, SHOWDOWN, BettingTree
from protocol.evaluator import NUM_CARDS, hand_strength_batch
from protocol.gamedef import Game
from protocol.isomorphism import HandIndexer, canonical_representatives

#: Local node kind of a preflop node whose values come from the flop pass.
LEAF = 3


class FlopGameError(ValueError):
    """A game this module cannot compile (wrong shape)."""


@dataclass(frozen=True, eq=False)
class SubTree:
    """One round's nodes as flat arrays in preorder (local ids), for the numba passes.

    ``root[n]``: index into the root-reach array for subtree roots, else -1; ``leaf[n]``: index
    into the leaf-value array at :data:`LEAF` nodes, else -1; ``decision[n]``: row of the
    node in strategy tables ``[D, H, 3]``, else -1.
    """

    nodes: np.ndarray  # int64 [N]: betting-tree node ids
    kind: np.ndarray  # int8 [N]
    actor: np.ndarray  # int8 [N]
    child: np.ndarray  # int32 [N, 3], local ids, -1 where illegal
    decision: np.ndarray  # int32 [N]
    spent: np.ndarray  # float64 [N, 2]
    folder: np.ndarray  # int8 [N]
    root: np.ndarray  # int32 [N]
    leaf: np.ndarray  # int32 [N]
    decision_nodes: np.ndarray  # int64 [D]: betting-tree node id of each table row
    legal: np.ndarray  # bool [D, 3]

    @classmethod
    def build(cls, tree: BettingTree, nodes: np.ndarray, roots: list[int], leaves: list[int]) -> SubTree:
        local = {int(n): i for i, n in enumerate(nodes)}
        kind = tree.kind[nodes].copy()
        leaf = np.full(len(nodes), -1, dtype=np.int32)
        for index, n in enumerate(leaves):
            kind[local[n]] = LEAF
            leaf[local[n]] = index
        root = np.full(len(nodes), -1, dtype=np.int32)
        for index, n in enumerate(roots):
            root[local[n]] = index
        child = np.full((len(nodes), 3), -1, dtype=np.int32)
        decision = np.full(len(nodes), -1, dtype=np.int32)
        decision_nodes = []
        for i, n in enumerate(nodes):
            if kind[i] != DECISION:
                continue
            decision[i] = len(decision_nodes)
            decision_nodes.append(int(n))
            for a, c in enumerate(tree.child[n]):
                if c >= 0:
                    child[i, a] = local[int(c)]
        decision_nodes = np.array(decision_nodes, dtype=np.int64)
        return cls(
            nodes=np.asarray(nodes, dtype=np.int64), kind=kind.astype(np.int8),
            actor=tree.actor[nodes].astype(np.int8), child=child, decision=decision,
            spent=tree.spent[nodes].astype(np.float64), folder=tree.folder[nodes].astype(np.int8),
            root=root, leaf=leaf, decision_nodes=decision_nodes, legal=tree.legal[decision_nodes],
        )  # fmt: skip

    @property
    def arrays(self) -> tuple:
        """What the numba kernels take."""
        return (self.kind, self.actor, self.child, self.decision, self.spent, self.folder, self.root, self.leaf)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_decisions(self) -> int:
        return len(self.decision_nodes)


def flop_shape_error(game: Game) -> str | None:
    """Why ``game`` is not flop-hold'em shaped (None when it is)."""
    if game.num_players != 2 or not game.is_limit:
        return "two-player limit games only"
    if game.num_rounds != 2 or game.num_board_cards[0] != 0 or game.num_board_cards[1] < 1:
        return "two rounds, no board cards in the first, a board in the second"
    if game.num_hole_cards != 2:
        return "two hole cards"
    return None


@dataclass(frozen=True, eq=False)
class FlopGame:
    """A flop-hold'em-shaped game compiled for per-flop range passes."""

    game: Game
    tree: BettingTree
    preflop: SubTree
    flop: SubTree
    hands: np.ndarray  # int64 [H, 2], the order of bot.agents.infosets (descending combos)
    flops: np.ndarray  # int64 [F, k]: the flops walked
    weights: np.ndarray  # float64 [F]: raw flops each stands for (1 on the all-flops path)
    canonical: bool
    hand_class: np.ndarray  # int64 [H]: preflop suit-isomorphism class of each hand

    @classmethod
    def build(cls, game: Game, canonical: bool) -> FlopGame:
        problem = flop_shape_error(game)
        if problem is not None:
            raise FlopGameError(f"{game.name}: the flop solver handles {problem}")
        tree = BettingTree.build(game)
        pre_nodes = np.flatnonzero(tree.round == 0)
        flop_nodes = np.flatnonzero(tree.round == 1)
        transitions = [int(n) for n in flop_nodes if tree.round[tree.parent[n]] == 0]
        pre_all = np.sort(np.concatenate([pre_nodes, transitions]))
        if np.any(tree.kind[pre_nodes] == SHOWDOWN):
            raise FlopGameError(f"{game.name}: a showdown before the flop (all-in) is not supported")
        deck = list(game.deck)
        hands = np.array(list(itertools.combinations(sorted(deck, reverse=True), 2)), dtype=np.int64)
        k = game.num_board_cards[1]
        if canonical:
            indexer = HandIndexer((k,), game.num_ranks, game.num_suits)
            reps, weights = canonical_representatives(indexer, tuple(deck))
            flops = -np.sort(-reps.astype(np.int64), axis=1)
        else:
            flops = np.array(list(itertools.combinations(sorted(deck, reverse=True), k)), dtype=np.int64)
            weights = np.ones(len(flops), dtype=np.int64)
        hand_class = HandIndexer((2,), game.num_ranks, game.num_suits).index_batch(hands)
        return cls(
            game=game, tree=tree,
            preflop=SubTree.build(tree, pre_all, [0], transitions),
            flop=SubTree.build(tree, flop_nodes, transitions, []),
            hands=hands, flops=flops, weights=weights.astype(np.float64), canonical=canonical,
            hand_class=hand_class,
        )  # fmt: skip

    # -- sizes and chance --------------------------------------------------------------------
    @property
    def num_hands(self) -> int:
        return len(self.hands)

    @property
    def num_flops(self) -> int:
        return len(self.flops)

    @property
    def num_transitions(self) -> int:
        return int((self.preflop.leaf >= 0).sum())

    @cached_property
    def flops_per_deal(self) -> int:
        """Raw flops dealt after two hands: C(deck - 4, k)."""
        return comb(len(self.game.deck) - 4, int(self.game.num_board_cards[1]))

    @cached_property
    def deals(self) -> float:
        """Equally likely (hand 0, hand 1, flop) deals: the divisor from counts to chips/hand."""
        deck = len(self.game.deck)
        return float(comb(deck, 2) * comb(deck - 2, 2) * self.flops_per_deal)

    # -- per-flop card arrays ------------------------------------------------------------------
    @cached_property
    def valid(self) -> np.ndarray:
        """float64 [F, H]: 1 where the hand shares no card with the flop."""
        hand_mask = (np.int64(1) << self.hands[:, 0]) | (np.int64(1) << self.hands[:, 1])
        flop_mask = np.zeros(self.num_flops, dtype=np.int64)
        for col in range(self.flops.shape[1]):
            flop_mask |= np.int64(1) << self.flops[:, col]
        return ((flop_mask[:, None] & hand_mask[None, :]) == 0).astype(np.float64)

    @cached_property
    def showdown(self) -> tuple[np.ndarray, np.ndarray]:
        """Per flop: the valid hands in ascending strength (int16 [F, V]) and their strengths
        (int32 [F, V]), for :func:`showdown_values`."""
        valid = self.valid.astype(bool)
        flop_index, hand_index = np.nonzero(valid)
        cards = np.concatenate([self.hands[hand_index], self.flops[flop_index]], axis=1).astype(np.int8)
        strength = np.full(valid.shape, np.iinfo(np.int32).min, dtype=np.int32)
        strength[flop_index, hand_index] = hand_strength_batch(cards)
        num_valid = int(valid[0].sum())
        order = np.argsort(strength, axis=1, kind="stable")[:, -num_valid:]
        return order.astype(np.int16), np.take_along_axis(strength, order, axis=1)

    @cached_property
    def _class_members(self) -> tuple[np.ndarray, np.ndarray]:
        counts = np.bincount(self.hand_class).astype(np.float64)
        return self.hand_class, counts

    def symmetrize(self, values: np.ndarray) -> np.ndarray:
        """Values ``[..., H]`` averaged within each preflop suit class (exact for suit-invariant
        policies on the canonical path; the identity on the all-flops path)."""
        if not self.canonical:
            return values
        cls_, counts = self._class_members
        flat = values.reshape(-1, values.shape[-1])
        sums = np.zeros((flat.shape[0], len(counts)))
        for row in range(flat.shape[0]):
            sums[row] = np.bincount(cls_, weights=flat[row], minlength=len(counts))
        return (sums / counts)[:, cls_].reshape(values.shape)

    def flop_values_at_leaves(self, per_flop: np.ndarray) -> np.ndarray:
        """``sum_c w_c per_flop[c]`` over flops ``[F, ..., H]``, symmetrised: the preflop leaf
        values of the whole flop round."""
        return self.symmetrize(np.tensordot(self.weights, per_flop, axes=1))

    # -- the preflop pass (small: one betting tree over the hands) ----------------------------
    def preflop_reach(self, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The preflop strategy of ``table [D0, H, 3]`` (regret matching) and both players'
        reach ``[N0, 2, H]`` under it."""
        pre = self.preflop
        strategy = np.empty((pre.num_decisions, self.num_hands, 3))
        match_strategy(np.ascontiguousarray(table), pre.legal, strategy)
        reach = np.zeros((pre.num_nodes, 2, self.num_hands))
        ones = np.ones(self.num_hands)
        reach_down(pre.arrays, strategy, np.ones((1, 2, self.num_hands)), ones, reach)
        return strategy, reach

    def preflop_values(self, strategy: np.ndarray, reach: np.ndarray, player: int, best_response: bool,
                       leaf_values: np.ndarray) -> np.ndarray:
        """``player``'s values ``[N0, H]`` at the preflop nodes given the flop's values at the
        leaves ``[T, H]`` (already weighted and symmetrised)."""
        values = np.zeros((self.preflop.num_nodes, self.num_hands))
        no_showdown = (np.zeros(0, dtype=np.int16), np.zeros(0, dtype=np.int32))
        values_up(self.preflop.arrays, strategy, player, best_response, reach,
                  np.ascontiguousarray(leaf_values, dtype=np.float64), np.ones(self.num_hands), self.hands,
                  float(self.flops_per_deal), *no_showdown, values)  # fmt: skip
        return values

    def uniform_table(self, subtree: SubTree, flops: int | None = None) -> np.ndarray:
        """Uniform play as a float32 table ``[D, H, 3]`` (or ``[flops, D, H, 3]``)."""
        row = (subtree.legal / subtree.legal.sum(axis=1, keepdims=True)).astype(np.float32)
        table = np.broadcast_to(row[:, None, :], (subtree.num_decisions, self.num_hands, 3))
        if flops is not None:
            table = np.broadcast_to(table, (flops, *table.shape))
        return np.ascontiguousarray(table)


# -- numba kernels ----------------------------------------------------------------------------

@njit(cache=True)
def match_strategy(table, legal, out):  # pragma: no cover - numba
    """out[d, h] = regret matching of ``table[d, h]`` over the legal actions: the positive part
    normalised, uniform where nothing is positive. For a strategy sum or a strategy (both
    non-negative) this is normalisation, so one function reads regrets, averages and policies."""
    for d in range(table.shape[0]):
        count = 0
        for a in range(3):
            if legal[d, a]:
                count += 1
        for h in range(table.shape[1]):
            total = 0.0
            for a in range(3):
                if legal[d, a] and table[d, h, a] > 0:
                    total += table[d, h, a]
            for a in range(3):
                if not legal[d, a]:
                    out[d, h, a] = 0.0
                elif total > 0:
                    out[d, h, a] = max(table[d, h, a], 0.0) / total
                else:
                    out[d, h, a] = 1.0 / count


@njit(cache=True)
def reach_down(arrays, strategy, root_reach, valid, reach):  # pragma: no cover - numba
    """Both players' reach ``reach[n, p, h]`` at every node, from the roots' reach (times the
    hands valid here) and ``strategy [D, H, 3]`` at the decision nodes."""
    kind, actor, child, decision, _spent, _folder, root, _leaf = arrays
    num_hands = valid.shape[0]
    for n in range(kind.shape[0]):
        if root[n] >= 0:
            for p in range(2):
                for h in range(num_hands):
                    reach[n, p, h] = root_reach[root[n], p, h] * valid[h]
        if kind[n] != DECISION:
            continue
        a, d = actor[n], decision[n]
        for x in range(3):
            c = child[n, x]
            if c < 0:
                continue
            for h in range(num_hands):
                reach[c, a, h] = reach[n, a, h] * strategy[d, h, x]
                reach[c, 1 - a, h] = reach[n, 1 - a, h]


@njit(cache=True)
def fold_values(opponent_reach, hand_cards, valid, scale, out):  # pragma: no cover - numba
    """out[h] = scale x (opponent reach of hands sharing no card with h), by inclusion-exclusion:
    total - reach through h's first card - through its second + reach of h itself."""
    per_card = np.zeros(NUM_CARDS)
    total = 0.0
    for h in range(opponent_reach.shape[0]):
        r = opponent_reach[h]
        total += r
        per_card[hand_cards[h, 0]] += r
        per_card[hand_cards[h, 1]] += r
    for h in range(opponent_reach.shape[0]):
        disjoint = total - per_card[hand_cards[h, 0]] - per_card[hand_cards[h, 1]] + opponent_reach[h]
        out[h] = scale * disjoint * valid[h]


@njit(cache=True)
def showdown_values(order, strength, opponent_reach, hand_cards, out):  # pragma: no cover - numba
    """out[h] = opponent reach of weaker hands sharing no card with h - that of stronger ones.

    ``order``: this flop's valid hands in ascending strength, ``strength`` their strengths.
    Ascending, the hands passed are the weaker ones, descending the stronger ones; the reach
    disjoint from h is ``total - card_total[c1] - card_total[c2]`` (exact with two hole cards:
    the only hand holding both of h's cards is h, never strictly weaker or stronger); ties win
    nothing. (:func:`bot.evaluation.best_response._showdown_sweep` is the many-board form; this one-board
    form without its index indirection runs 2.4x faster, and the showdowns are most of a pass.)
    """
    card_total = np.zeros(NUM_CARDS)
    n = order.shape[0]
    total = 0.0
    i = 0
    while i < n:
        j = i
        while j < n and strength[j] == strength[i]:
            j += 1
        for m in range(i, j):
            h = order[m]
            out[h] = total - card_total[hand_cards[h, 0]] - card_total[hand_cards[h, 1]]
        for m in range(i, j):
            h = order[m]
            r = opponent_reach[h]
            total += r
            card_total[hand_cards[h, 0]] += r
            card_total[hand_cards[h, 1]] += r
        i = j
    card_total[:] = 0.0
    total = 0.0
    j = n
    while j > 0:
        i = j
        while i > 0 and strength[i - 1] == strength[j - 1]:
            i -= 1
        for m in range(i, j):
            h = order[m]
            out[h] -= total - card_total[hand_cards[h, 0]] - card_total[hand_cards[h, 1]]
        for m in range(i, j):
            h = order[m]
            r = opponent_reach[h]
            total += r
            card_total[hand_cards[h, 0]] += r
            card_total[hand_cards[h, 1]] += r
        j = i


@njit(cache=True)
def values_up(arrays, strategy, player, best_response, reach, leaf_values, valid, hand_cards,
              fold_scale, order, strength, values):  # pragma: no cover - numba
    """``player``'s counterfactual values ``values[n, h]`` at every node, bottom-up: terminals
    from the opponent's reach, :data:`LEAF` nodes from ``leaf_values [leaves, H]``, the
    player's nodes as the expectation under ``strategy`` (or the max over legal actions with
    ``best_response``), the opponent's as the sum over its actions (its reach already carries
    its strategy). ``order``/``strength`` ``[V]``: this flop's showdown order."""
    kind, actor, child, decision, spent, folder, _root, leaf = arrays
    num_hands = valid.shape[0]
    opponent = 1 - player
    for n in range(kind.shape[0] - 1, -1, -1):
        k = kind[n]
        if k == FOLD_END:
            won = -spent[n, player] if folder[n] == player else spent[n, opponent]
            fold_values(reach[n, opponent], hand_cards, valid, won * fold_scale, values[n])
        elif k == SHOWDOWN:
            values[n, :] = 0.0
            showdown_values(order, strength, reach[n, opponent], hand_cards, values[n])
            stake = spent[n, player]
            for h in range(num_hands):
                values[n, h] *= stake * valid[h]
        elif k == LEAF:
            for h in range(num_hands):
                values[n, h] = leaf_values[leaf[n], h]
        elif actor[n] == player:
            d = decision[n]
            for h in range(num_hands):
                best = -np.inf
                expected = 0.0
                for x in range(3):
                    c = child[n, x]
                    if c < 0:
                        continue
                    v = values[c, h]
                    expected += strategy[d, h, x] * v
                    if v > best:
                        best = v
                values[n, h] = best if best_response else expected
        else:
            for h in range(num_hands):
                total = 0.0
                for x in range(3):
                    c = child[n, x]
                    if c >= 0:
                        total += values[c, h]
                values[n, h] = total


@njit(cache=True)
def store_root_values(arrays, values, out):  # pragma: no cover - numba
    """out[root index, h] = values at each subtree root."""
    root = arrays[6]
    for n in range(root.shape[0]):
        if root[n] >= 0:
            out[root[n], :] = values[n, :]


def root_values(subtree: SubTree, values: np.ndarray) -> np.ndarray:
    """Values ``[roots, H]`` at the subtree's roots, in root-index order."""
    roots = np.flatnonzero(subtree.root >= 0)
    return values[roots[np.argsort(subtree.root[roots])]]


def leaf_reach(subtree: SubTree, reach: np.ndarray) -> np.ndarray:
    """Reach ``[leaves, 2, H]`` at the subtree's leaves, in leaf-index order (the flop roots'
    reach)."""
    leaves = np.flatnonzero(subtree.leaf >= 0)
    return np.ascontiguousarray(reach[leaves[np.argsort(subtree.leaf[leaves])]])
