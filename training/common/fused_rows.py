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
import torch

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
    _summed_update,
    one_blas_thread,
    thread_parts,
)

#: Steps per compiled call: between calls the fit reports its progress (a HULH fit runs for hours).
SEGMENT = 100


def fit_rows_mse(net: DeepCFRNetwork, cards: np.ndarray, node: np.ndarray, target: np.ndarray, row_weight: np.ndarray,
                 node_bets: np.ndarray, node_legal: np.ndarray, denominator: float, picks: np.ndarray,
                 lr: np.ndarray, max_norm: float, progress: Callable[[int], None] | None = None,
                 threads: int = 1) -> np.ndarray:
    """Adam on ``sum_{i in batch} w_i sum_a legal_ia (V(x_i)_a - y_ia)^2 / denominator`` for the
    memory rows ``picks [steps, batch]`` of each step, ``lr [steps]`` the step's rate.

    ``cards [rows, slots]`` (-1 = no card, raw: canonicalised here when ``net.canonical_suits``),
    ``node [rows]``, ``target [rows, 3]`` and ``row_weight [rows]`` are the memory's rows;
    ``node_bets [nodes, bet_slots]`` and ``node_legal [nodes, 3]`` the encoder's tables. ``net``
    trains in place with a fresh Adam state, as the torch path's fresh optimizer; every step's
    loss is returned. The steps run in compiled segments of :data:`SEGMENT`, each followed by
    ``progress(steps done)``. With ``threads`` > 1 each step's rows are split into that many
    parts on numba threads and their gradients summed in a fixed order before the one update:
    the same step up to the order of a float sum (why: on a 2-core machine the fits are most of
    an FHP or HULH iteration, and one step's ~2,000 rows are plenty for two cores)."""
    fused = FusedNetwork.from_module(net)
    steps = picks.shape[0]
    losses = np.empty(steps, np.float64)
    scale = (np.asarray(row_weight, np.float64) * (2.0 / denominator)).astype(np.float32)
    memory = (np.ascontiguousarray(cards), np.ascontiguousarray(node), np.ascontiguousarray(target, dtype=np.float32),
              scale, _bet_features(np.asarray(node_bets, np.float32)), np.ascontiguousarray(node_legal, dtype=np.float32))
    picks = np.ascontiguousarray(picks, dtype=np.int64)
    lr = np.ascontiguousarray(lr, dtype=np.float64)
    chunks = thread_parts(threads, picks.shape[1])
    torch_threads = torch.get_num_threads()
    network = (fused.theta, fused.grad, fused.exp_avg, fused.exp_avg_sq, fused._offsets,
               np.asarray(net.group_sizes, np.int64), net.width)
    with one_blas_thread():
        for first in range(0, steps, SEGMENT):
            last = min(steps, first + SEGMENT)
            rows = (*memory, picks[first:last], net.canonical_suits, SUIT_PERMUTATIONS)
            settings = (first, lr[first:last], 0.9, 0.999, 1e-8, max_norm, losses[first:last])
            if chunks == 1:
                _fit_rows(*network, *rows, *settings)
            else:
                _fit_rows_threads(*network, *rows, chunks, *settings)
                torch.set_num_threads(torch_threads)
            if progress is not None:
                progress(last)
    fused.copy_to(net)
    return losses


@nb.njit(cache=True, fastmath=True, nogil=True)
def _fit_rows(theta, grad, exp_avg, exp_avg_sq, offsets, group_sizes, w, cards, node, target, scale, node_bets,
              node_legal, picks, canonical, permutations, first, lrs, beta1, beta2, eps, max_norm, losses):  # pragma: no cover - numba
    """Steps ``first ..`` of :func:`fit_rows_mse` on one thread (``first`` counts Adam's bias correction)."""
    slot_of_node = np.full(node_bets.shape[0], -1, np.int64)
    for step in range(picks.shape[0]):
        losses[step] = _memory_rows_gradient(theta, grad, offsets, group_sizes, w, cards, node, target, scale,
                                             node_bets, node_legal, picks[step], canonical, permutations, slot_of_node)
        _clip_and_adam(theta, grad, exp_avg, exp_avg_sq, first + step + 1, lrs[step], beta1, beta2, eps, max_norm)


@nb.njit(cache=True, fastmath=True, nogil=True, parallel=True)
def _fit_rows_threads(theta, grad, exp_avg, exp_avg_sq, offsets, group_sizes, w, cards, node, target, scale, node_bets,
                      node_legal, picks, canonical, permutations, chunks, first, lrs, beta1, beta2, eps, max_norm,
                      losses):  # pragma: no cover - numba
    """:func:`_fit_rows` with each step's rows split into ``chunks`` parts on parallel threads
    (each gathers its own rows' distinct betting nodes); the parts' gradients are summed in a
    fixed order, then one update."""
    bounds = np.linspace(0, picks.shape[1], chunks + 1).astype(np.int64)
    grads = np.zeros((chunks, grad.shape[0]), np.float32)
    slots = np.full((chunks, node_bets.shape[0]), -1, np.int64)
    parts = np.zeros(chunks)
    for step in range(picks.shape[0]):
        for c in nb.prange(chunks):
            parts[c] = _memory_rows_gradient(theta, grads[c], offsets, group_sizes, w, cards, node, target, scale,
                                             node_bets, node_legal, picks[step, bounds[c]:bounds[c + 1]], canonical,
                                             permutations, slots[c])
        losses[step] = _summed_update(theta, grad, grads, parts, exp_avg, exp_avg_sq, first + step + 1, lrs[step],
                                      beta1, beta2, eps, max_norm)


@nb.njit(cache=True, fastmath=True, nogil=True)
def _memory_rows_gradient(theta, grad, offsets, group_sizes, w, cards, node, target, scale, node_bets, node_legal,
                          rows, canonical, permutations, slot_of_node):  # pragma: no cover - numba
    """Loss of the memory's ``rows`` and its gradient into ``grad`` (every block written): their
    cards gathered (canonicalised when ``canonical``) and counted per card group, the bet branch
    run on their distinct betting nodes only. ``slot_of_node`` is all -1 on entry and on return."""
    groups = group_sizes.shape[0]
    batch = rows.shape[0]
    distinct = np.empty(batch, np.int64)
    bet_index = np.empty(batch, np.int64)
    batch_cards = np.empty((batch, cards.shape[1]), np.int64)
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
    card_index = np.arange(batch)
    _forward(theta, offsets, groups, w, counts, card_index, bets, bet_index, cache)
    out = cache[11]
    d_out = np.empty((batch, NUM_ACTIONS), np.float32)
    loss = 0.0
    for i in range(batch):
        r = rows[i]
        for a in range(NUM_ACTIONS):
            error = out[i, a] - target[r, a]
            s = scale[r] * node_legal[node[r], a]
            d_out[i, a] = s * error
            loss += 0.5 * s * error * error
    _backward(theta, grad, offsets, groups, w, counts, card_index, bets, bet_index, cache, d_out)
    return loss
