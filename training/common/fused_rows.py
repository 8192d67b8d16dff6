"""The paper's minibatch fit (uniform memory rows, Brown et al. 2019 algorithm 1) in the compiled
kernels of :mod:`training.common.fused_network`.

Why: FHP's and HULH's memories hold millions of mostly distinct inputs, so their fits draw
minibatches of rows (``batch_form`` ``rows``) instead of the full-batch merged problems that
Leduc trains on. In torch a step of the FHP preset (width 32, batch 1,024) is ~60 small operators
of dispatch, autograd and optimizer bookkeeping; here a whole fit is one compiled call: each step
gathers its rows' cards (suit-canonical when the network reads them so, with the same
:func:`bot.agents.network.canonical_suit_cards` rule), counts them per card group, runs the bet
branch on the batch's distinct betting nodes only, then the same forward, backward, gradient clip
and Adam update as the full-batch kernels (``tests/training/common/test_fused_network.py`` compares a fit with
torch's on the same batches). ``benchmarks/bench_fit_speed.py`` prints both speeds.
"""

from __future__ import annotations

from collections.abc import Callable

import numba as nb
import numpy as np
from threadpoolctl import threadpool_limits

from bot.agents.network import SUIT_PERMUTATIONS, DeepCFRNetwork, canonical_rows
from training.common.fused_network import (
    NUM_ACTIONS,
    FusedNetwork,
    _backward,
    _bet_features,
    _card_counts,
    _clip_and_adam,
    _forward,
    _new_cache,
)

#: Steps per compiled call: between calls the fit reports its progress (a HULH fit runs for hours).
SEGMENT = 100


def fit_rows_mse(net: DeepCFRNetwork, cards: np.ndarray, node: np.ndarray, target: np.ndarray, row_weight: np.ndarray,
                 node_bets: np.ndarray, node_legal: np.ndarray, denominator: float, picks: np.ndarray,
                 lr: np.ndarray, max_norm: float, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Adam on ``sum_{i in batch} w_i sum_a legal_ia (V(x_i)_a - y_ia)^2 / denominator`` for the
    memory rows ``picks [steps, batch]`` of each step, ``lr [steps]`` the step's rate.

    ``cards [rows, slots]`` (-1 = no card, raw: canonicalised here when ``net.canonical_suits``),
    ``node [rows]``, ``target [rows, 3]`` and ``row_weight [rows]`` are the memory's rows;
    ``node_bets [nodes, bet_slots]`` and ``node_legal [nodes, 3]`` the encoder's tables. ``net``
    trains in place with a fresh Adam state, as the torch path's fresh optimizer; every step's
    loss is returned. The steps run in compiled segments of :data:`SEGMENT`, each followed by
    ``progress(steps done)``."""
    fused = FusedNetwork.from_module(net)
    steps = picks.shape[0]
    losses = np.empty(steps, np.float64)
    scale = (np.asarray(row_weight, np.float64) * (2.0 / denominator)).astype(np.float32)
    memory = (np.ascontiguousarray(cards), np.ascontiguousarray(node), np.ascontiguousarray(target, dtype=np.float32),
              scale, _bet_features(np.asarray(node_bets, np.float32)), np.ascontiguousarray(node_legal, dtype=np.float32))
    picks = np.ascontiguousarray(picks, dtype=np.int64)
    lr = np.ascontiguousarray(lr, dtype=np.float64)
    with threadpool_limits(limits=1, user_api="blas"):
        for first in range(0, steps, SEGMENT):
            last = min(steps, first + SEGMENT)
            _fit_rows(fused.theta, fused.grad, fused.exp_avg, fused.exp_avg_sq, fused._offsets,
                      np.asarray(net.group_sizes, np.int64), net.width, *memory, picks[first:last], net.canonical_suits,
                      SUIT_PERMUTATIONS, first, lr[first:last], 0.9, 0.999, 1e-8, max_norm, losses[first:last])
            if progress is not None:
                progress(last)
    fused.copy_to(net)
    return losses


@nb.njit(cache=True, fastmath=True, nogil=True)
def _fit_rows(theta, grad, exp_avg, exp_avg_sq, offsets, group_sizes, w, cards, node, target, scale, node_bets,
              node_legal, picks, canonical, permutations, first, lrs, beta1, beta2, eps, max_norm, losses):  # pragma: no cover - numba
    """Steps ``first ..`` of :func:`fit_rows_mse` (``first`` counts Adam's bias correction)."""
    groups = group_sizes.shape[0]
    batch = picks.shape[1]
    slot_of_node = np.full(node_bets.shape[0], -1, np.int64)  # the batch's distinct nodes, reset each step
    distinct = np.empty(batch, np.int64)
    bet_index = np.empty(batch, np.int64)
    card_index = np.arange(batch)
    batch_cards = np.empty((batch, cards.shape[1]), np.int64)
    d_out = np.empty((batch, NUM_ACTIONS), np.float32)
    for step in range(picks.shape[0]):
        rows = picks[step]
        count = 0
        for i in range(batch):
            for k in range(cards.shape[1]):
                batch_cards[i, k] = cards[rows[i], k]
            n = node[rows[i]]
            if slot_of_node[n] < 0:
                slot_of_node[n] = count
                distinct[count] = n
                count += 1
            bet_index[i] = slot_of_node[n]
        bets = np.empty((count, node_bets.shape[1]), np.float32)
        for k in range(count):
            bets[k] = node_bets[distinct[k]]
            slot_of_node[distinct[k]] = -1
        seen = canonical_rows(batch_cards, group_sizes, permutations) if canonical else batch_cards
        counts = _card_counts(seen, group_sizes)
        cache = _new_cache(batch, batch, count, groups, w)
        _forward(theta, offsets, groups, w, counts, card_index, bets, bet_index, cache)
        out = cache[11]
        loss = 0.0
        for i in range(batch):
            r = rows[i]
            for a in range(NUM_ACTIONS):
                error = out[i, a] - target[r, a]
                s = scale[r] * node_legal[node[r], a]
                d_out[i, a] = s * error
                loss += 0.5 * s * error * error
        _backward(theta, grad, offsets, groups, w, counts, card_index, bets, bet_index, cache, d_out)
        losses[step] = loss
        _clip_and_adam(theta, grad, exp_avg, exp_avg_sq, first + step + 1, lrs[step], beta1, beta2, eps, max_norm)
