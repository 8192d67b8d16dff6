"""The exact targets of an SD-CFR run's value networks in flop hold'em, on the trajectory it took.

Why: when an FHP curve flattens, the cause is sampling noise or fit error. On Leduc
``benchmarks/bench_deep_cfr_oracle.py`` separates them with a perfect approximator (a table of
the summed sampled regrets); FHP's ~10^8 infosets rule that out at a thousand traversals an
iteration. Instead: player ``p``'s value network of iteration ``t`` is fitted (MSE, linear-CFR
row weights) to sampled regrets whose mean at an infoset, over the memory's rows, is
proportional to ``R_p^t(I, a) = sum_{tau <= t} tau r_p^tau(I, a)``, the linearly weighted
cumulative counterfactual regret of the strategies the run played (Brown et al. 2019, sec. 4;
the sampling probability of ``I`` divides every action alike, and regret matching is
scale-free per infoset). So regret matching on ``R_p^t`` is what a perfect fit would play, and its
distance from the network's regret matching is the fit error, infoset by infoset.

``r_p^tau`` comes from one full-width pass of :mod:`bot.flop.game`'s kernels (reach down,
``p``'s counterfactual values up, as :mod:`training.flop.cfr` iterates) over the profile's
strategy tables. The trainer alternates (:mod:`training.deep_cfr.trainer`): at iteration ``tau``
player 0 traverses against the networks of ``tau - 1`` (uniform at ``tau = 1``), player 1
against player 0's network of ``tau`` and its own of ``tau - 1``; the caller passes those
profiles. Memory: one float32 table ``[flops, flop decision nodes, hands, 3]`` (FHP canonical:
1.56 GB) plus a density table a third of that.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from bot.agents.encoding import InfosetEncoder
from bot.flop import game  # its numba kernels: reach down, values up, regret matching
from bot.flop.best_response import FlopPolicy
from protocol.betting_tree import DECISION
from training.deep_cfr.board_targets import RowSink, hand_counts


@njit(cache=True)
def _accumulate(arrays, player, reach, values, valid, hand_cards, weight, regrets, density):  # pragma: no cover - numba
    """At ``player``'s decisions: ``regrets[d, h, a] += weight (v(a) - v)`` and ``density[d, h]
    += weight x`` the opponent's reach over hands sharing no card with ``h`` (the mass the
    board targets divide by and keep rows in proportion to, :mod:`training.deep_cfr.board_targets`)."""
    kind, actor, child, decision = arrays[0], arrays[1], arrays[2], arrays[3]
    mass = np.empty(valid.shape[0])
    for n in range(kind.shape[0]):
        if kind[n] != DECISION or actor[n] != player:
            continue
        d = decision[n]
        game.fold_values(reach[n, 1 - player], hand_cards, valid, 1.0, mass)
        for h in range(valid.shape[0]):
            if valid[h] == 0.0:
                continue
            density[d, h] += weight * mass[h]
            for x in range(3):
                c = child[n, x]
                if c >= 0:
                    regrets[d, h, x] += weight * (values[c, h] - values[n, h])


@njit(parallel=True, cache=True)
def _regret_chunk(arrays, legal, tables, root_reach, valid, hand_cards, order, strength, player, weight,
                  regrets, density, out):  # pragma: no cover - numba
    """:func:`_accumulate` on each flop of a chunk (all arrays sliced to the chunk); ``out[i, t, h]``:
    the player's values at flop root ``t``."""
    num_nodes, num_hands = arrays[0].shape[0], valid.shape[1]
    empty = np.zeros((0, num_hands))
    for i in prange(tables.shape[0]):
        strategy = np.empty((legal.shape[0], num_hands, 3))
        reach = np.empty((num_nodes, 2, num_hands))
        values = np.empty((num_nodes, num_hands))
        game.match_strategy(tables[i], legal, strategy)
        game.reach_down(arrays, strategy, root_reach, valid[i], reach)
        game.values_up(arrays, strategy, player, False, reach, empty, valid[i], hand_cards, 1.0, order[i], strength[i], values)
        _accumulate(arrays, player, reach, values, valid[i], hand_cards, weight, regrets[i], density[i])
        game.store_root_values(arrays, values, out[i])


def regret_matching(regrets: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Regret matching over ``[..., D, H, 3]`` with legal ``[D, 3]``, the highest-regret legal
    action where none is positive (the networks' ``argmax_fallback``)."""
    mask = np.broadcast_to(legal[:, None, :], regrets.shape)
    positive = np.where(mask, np.maximum(regrets, 0.0), 0.0)
    total = positive.sum(axis=-1, keepdims=True)
    best = np.eye(3)[np.where(mask, regrets, -np.inf).argmax(axis=-1)]
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), best)


class ExactRegrets:
    """``R_p^t`` and the sampling density of both players over every infoset of ``fg``."""

    def __init__(self, fg: game.FlopGame, chunk: int = 64) -> None:
        self.fg, self.chunk = fg, chunk
        self.preflop = np.zeros((fg.preflop.num_decisions, fg.num_hands, 3))
        self.pre_density = np.zeros((fg.preflop.num_decisions, fg.num_hands))
        self.flop = np.zeros((fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3), np.float32)
        self.flop_density = np.zeros((fg.num_flops, fg.flop.num_decisions, fg.num_hands), np.float32)
        self.pre_actor = fg.tree.actor[fg.preflop.decision_nodes]
        self.flop_actor = fg.tree.actor[fg.flop.decision_nodes]

    def add(self, weight: float, player: int, profile: FlopPolicy) -> None:
        """Add ``weight x`` ``player``'s instantaneous counterfactual regrets under ``profile``."""
        fg = self.fg
        pre_strategy, pre_reach = fg.preflop_reach(np.asarray(profile.preflop, dtype=np.float64))
        root_reach = game.leaf_reach(fg.preflop, pre_reach)
        order, strength = fg.showdown
        out = np.empty((fg.num_flops, fg.num_transitions, fg.num_hands))
        for lo in range(0, fg.num_flops, self.chunk):
            hi = min(lo + self.chunk, fg.num_flops)
            _regret_chunk(fg.flop.arrays, fg.flop.legal, profile.flop(lo, hi), root_reach, fg.valid[lo:hi], fg.hands,
                          order[lo:hi], strength[lo:hi], player, float(weight), self.flop[lo:hi],
                          self.flop_density[lo:hi], out[lo:hi])  # fmt: skip
        values = fg.preflop_values(pre_strategy, pre_reach, player, False, fg.flop_values_at_leaves(out))
        _accumulate(fg.preflop.arrays, player, pre_reach, values, np.ones(fg.num_hands), fg.hands, float(weight),
                    self.preflop, self.pre_density)

    def fit_error(self, player: int, policy: FlopPolicy) -> dict[str, float]:
        """How far ``policy`` (regret matching on ``player``'s network) plays from regret matching
        on ``R_p``: the L1 distance of the two strategies (0 to 2) and the share of infosets whose
        most likely actions differ, averaged over ``player``'s infosets by sampling density
        (preflop; flop, each flop by the raw flops it stands for; both)."""
        fg = self.fg
        rows = self.pre_actor == player
        sums = {"preflop": np.zeros(3), "flop": np.zeros(3)}
        exact = regret_matching(self.preflop[rows], fg.preflop.legal[rows])
        self._add(sums["preflop"], exact, np.asarray(policy.preflop, np.float64)[rows], self.pre_density[rows])
        rows = self.flop_actor == player
        scale = fg.weights / fg.flops_per_deal
        for lo in range(0, fg.num_flops, self.chunk):
            hi = min(lo + self.chunk, fg.num_flops)
            exact = regret_matching(self.flop[lo:hi, rows], fg.flop.legal[rows])
            density = self.flop_density[lo:hi, rows] * scale[lo:hi, None, None]
            self._add(sums["flop"], exact, policy.flop(lo, hi)[:, rows], density)
        both = sums["preflop"] + sums["flop"]
        result = {}
        for name, (mass, l1, differ) in (*sums.items(), ("all", both)):
            result[f"{name}_l1"] = l1 / mass if mass else 0.0
            result[f"{name}_argmax_differs"] = differ / mass if mass else 0.0
        return result

    def oracle_rows(self, player: int, rows: int, encoder: InfosetEncoder, iteration: int,
                    rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``rows`` advantage-memory rows of ``player`` as a noise-free sampler would hold them:
        infosets drawn in the proportions :mod:`training.deep_cfr.board_targets` keeps rows (the
        opponent's disjoint reach summed with the linear weights, over the opponents a row divides
        by; a flop by its orbit size; a preflop row only from boards its hand misses), each with
        its exact mean target ``R_p / D_p`` (preflop also over the flops a deal sees, the board
        rows' scale): the weighted mean of every row the run could have stored there. A network
        fitted to these is the run's fit without the memory's sampling noise, only its size."""
        fg = self.fg
        flops_per_hand, (pre_opponents, flop_opponents) = hand_counts(fg)
        pre_rows, flop_rows = self.pre_actor == player, self.flop_actor == player
        pre_nodes, flop_nodes = fg.preflop.decision_nodes[pre_rows], fg.flop.decision_nodes[flop_rows]
        pre_weight = self.pre_density[pre_rows] * (flops_per_hand / fg.weights.sum() / pre_opponents)
        flop_weight = self.flop_density[:, flop_rows] * (fg.weights / fg.weights.sum() / flop_opponents)[:, None, None]
        cumulative = np.cumsum(np.concatenate([pre_weight.ravel(), flop_weight.ravel()], dtype=np.float64))
        picked = np.searchsorted(cumulative, rng.random(rows) * cumulative[-1], side="right")
        sink = RowSink(encoder)
        pre = picked[picked < pre_weight.size]
        d, h = np.unravel_index(pre, pre_weight.shape)
        target = self.preflop[pre_rows][d, h] / (self.pre_density[pre_rows][d, h, None] * fg.flops_per_deal)
        sink.add(0, pre_nodes[d], fg.hands[h], fg.flops[0], target)
        f, d, h = np.unravel_index(picked[picked >= pre_weight.size] - pre_weight.size, flop_weight.shape)
        for flop in np.unique(f):  # one board's card slots at a time
            here = f == flop
            dd, hh = d[here], h[here]
            target = self.flop[flop][flop_rows][dd, hh] / self.flop_density[flop][flop_rows][dd, hh, None]
            sink.add(1, flop_nodes[dd], fg.hands[hh], fg.flops[flop], target)
        out = sink.rows()
        out["iteration"] = np.full(len(out["node"]), iteration, dtype=np.int32)
        return out

    @staticmethod
    def _add(sums: np.ndarray, exact: np.ndarray, played: np.ndarray, density: np.ndarray) -> None:
        sums[0] += density.sum()
        sums[1] += (density * np.abs(exact - played).sum(axis=-1)).sum()
        sums[2] += (density * (exact.argmax(axis=-1) != played.argmax(axis=-1))).sum()
