"""Exact quantities behind a Deep CFR / SD-CFR run on a small game (Kuhn, Leduc).

**What a value network estimates.** At iteration ``t`` player ``p``'s external-sampling
traversals visit an infoset ``I`` with probability ``pi_-p(I)`` (chance and opponent reach) and
store the sampled instantaneous regret, whose mean given a visit is ``r^t(I, a) / pi_-p(I)``,
with ``r^t`` the counterfactual regret of ``sigma^t`` (Lanctot et al. 2009, external sampling;
Brown et al. 2019, algorithm 2). The value network minimises a squared error over the
reservoir memory with each row weighted by its iteration (linear CFR, Brown et al. 2019
sec. 5.2), so its best possible output at ``I`` is the weighted mean target

    A^t(I, a) = sum_{s<=t} w_s r^s(I, a) / sum_{s<=t} w_s pi^s_-p(I),   w_s = s (or 1),

a positive per-infoset rescaling of linear CFR's cumulative regret: regret matching on it is
linear CFR's strategy. :class:`ExactHistory` computes ``A^t`` exactly from the run's own
strategies, one SD-CFR stack entry at a time, with the same public-tree walk as the tabular
solver (:meth:`bot.evaluation.best_response.PublicTree.counterfactual_values`, the regrets exactly as
:mod:`training.tabular.cfr` forms them), plus the exact SD-CFR average strategy after every iteration.

**Which strategies.** Updates alternate as in the trainer: player 0 traverses iteration ``t``
against ``sigma^t``; player 1 then traverses against player 0's refitted strategy
``sigma_0^{t+1}`` and its own ``sigma_1^t``. Stack entry ``k`` holds the networks fitted at
iteration ``k`` (``sigma^{k+1}``; entry 0 is the uniform ``sigma^1``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bot.agents.deep_cfr import InfosetBatch, StackAverage
from bot.agents.network import regret_matching
from bot.evaluation.best_response import public_tree_for
from protocol.gamedef import Game


class ExactHistory:
    """Exact regret targets and average strategies, built entry by entry (see the module doc)."""

    def __init__(self, game: Game, linear_weighting: bool = True) -> None:
        self.public = public_tree_for(game)
        self.space = self.public.space
        self.linear_weighting = linear_weighting
        self.average = StackAverage(game)
        slots = self.space.num_slots
        #: sum_s w_s r^s (chance-weighted counterfactual regrets) and sum_s w_s pi^s_-p, dense.
        self.regret_sum = np.zeros((slots, 3))
        self.reach_sum = np.zeros(slots)
        #: Per iteration t >= 1 (index t - 1): A^t over infosets ``[n, 3]`` (NaN where unreached).
        self.targets: list[np.ndarray] = []
        #: Per stack entry k (index k): the SD-CFR average strategy after entries 0..k.
        self.averages: list[np.ndarray] = []
        self._previous: np.ndarray | None = None

    @property
    def entries(self) -> int:
        return len(self.averages)

    def add_entry(self, strategy: np.ndarray, weight: float) -> None:
        """Stack entry ``k = entries``: its strategy ``sigma^{k+1}`` ``[n, 3]`` and stack weight."""
        strategy = np.asarray(strategy, dtype=np.float64)
        if self._previous is not None:
            t = len(self.targets) + 1
            w = float(t) if self.linear_weighting else 1.0
            first_mover = self.space.player == 0
            self.accumulate(0, self._previous, w)
            self.accumulate(1, np.where(first_mover[:, None], strategy, self._previous), w)
            reach = self.space.from_dense(self.reach_sum)
            regrets = self.space.from_dense(self.regret_sum)
            with np.errstate(invalid="ignore", divide="ignore"):
                self.targets.append(np.where(reach[:, None] > 0, regrets / reach[:, None], np.nan))
        self.average.add(strategy, weight)
        self.averages.append(self.average.strategy())
        self._previous = strategy

    def accumulate(self, player: int, profile: np.ndarray, weight: float) -> None:
        """Add ``weight`` x (``player``'s counterfactual regrets and chance-and-opponent reach)
        under ``profile``, at every infoset of ``player``."""
        space, public, tree = self.space, self.public, self.space.tree
        dense = space.to_dense(profile)

        def add_regrets(node: int, boards: slice, own_reach: np.ndarray, action_values: np.ndarray,
                        value: np.ndarray) -> None:
            regret = (action_values - value[..., None]) * tree.legal[node]  # as training.tabular.cfr
            space.node_block(self.regret_sum, node)[boards] += weight * regret

        public.counterfactual_values(player, space.node_blocks(dense), on_decision=add_regrets)
        opponent_reach = self.average.own_reach(dense, 1 - player)
        for node in tree.decision_ids:
            if tree.actor[node] != player:
                continue
            rnd = int(tree.round[node])
            valid = public.valid_float[rnd]
            reach = public.disjoint_reach(opponent_reach[node] * valid) * valid * public.deal_weight[rnd]
            space.node_block(self.reach_sum, node)[...] += weight * reach


@dataclass(frozen=True)
class Advantages:
    """A pair of value networks read at every infoset, and what regret matching makes of it."""

    raw: np.ndarray
    """Network outputs ``[n, 3]`` (the fit's normalised units when the run normalises targets)."""
    strategy: np.ndarray
    """Regret matching on the outputs over legal actions ``[n, 3]``."""
    fallback: np.ndarray
    """bool ``[n]``: no legal output was positive, so the strategy is the argmax (or uniform)."""


def network_advantages(batch: InfosetBatch, nets: tuple, argmax_fallback: bool) -> Advantages:
    """:class:`Advantages` of value networks ``(player 0's, player 1's)`` at every infoset."""
    outputs = batch.outputs(nets)
    strategy = regret_matching(outputs, batch.legal, argmax_fallback).double().numpy()
    legal = batch.legal.numpy()
    raw = outputs.double().numpy()
    fallback = ~((raw > 0) & legal).any(axis=1)
    return Advantages(np.where(legal, raw, 0.0), strategy, fallback)


def regret_matching_exact(target: np.ndarray, legal: np.ndarray, argmax_fallback: bool) -> np.ndarray:
    """Regret matching on exact targets ``[n, 3]`` (rows of NaN, never reached, stay NaN)."""
    reached = ~np.isnan(target).any(axis=1)
    out = np.full(target.shape, np.nan)
    if reached.any():
        rows = torch.from_numpy(target[reached])
        out[reached] = regret_matching(rows, torch.from_numpy(legal[reached]), argmax_fallback).numpy()
    return out
