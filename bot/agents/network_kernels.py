"""The appendix C network's trunk over a grid of (card row x betting node), in one compiled pass.

Why: an exact FHP evaluation reads a network at every (flop, decision node, hand), ~33M
distinct (node, card row) inputs per network and seat on the canonical flops. The card branch
depends on the cards only and the bet branch on the node only (Brown et al. 2019, appendix C),
and the first trunk layer is affine in their concatenation, so its two halves are computed once
per card row and once per node (:class:`bot.flop.network_policies.NetworkGrid`); only ``comb2``,
``comb3``, the layer norm, the head and the strategy rule must run per (node, card row). Done in
torch, that is ~15 operators over tensors of hundreds of MB each, memory-bound; here each block
of a few card rows times every node stays in the core's cache from the first layer's ReLU to the
strategy (regret matching, Brown et al. 2019 sec. 3, or the average network's masked softmax),
with the two ``w x w`` products in BLAS (``np.dot``). The maths is the torch module's in float32
(``tests/bot/flop/test_flop_network_policies.py`` compares both); reduced precision is not used: on CPUs
without native bf16 arithmetic (AVX2) it would only add conversions.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import torch
from threadpoolctl import threadpool_limits

from bot.agents.network import DeepCFRNetwork

#: Card rows per block: BLOCK x nodes x width x 4 bytes x 2 buffers stays in a core's L2 cache
#: (16 x 28 x 32: 114 KB at FHP's width 32, one seat's 28 flop decision nodes).
BLOCK = 16
LAYER_NORM_EPS = 1e-5


def trunk_strategies(net: DeepCFRNetwork, card_part: torch.Tensor, bet_part: torch.Tensor, legal: torch.Tensor,
                     kind: str, argmax_fallback: bool, out: np.ndarray) -> np.ndarray:
    """``out``, float32 ``[nodes, rows, 3]``: the strategy of every (node, card row) pair, given
    the first trunk layer's card half per row ``card_part [rows, w]`` and its bet half plus bias
    per node ``bet_part [nodes, w]`` (pre-activation), the nodes' ``legal [nodes, 3]`` actions
    and the network ``kind`` (``value``: regret matching; ``average``: masked softmax)."""
    def array(tensor: torch.Tensor) -> np.ndarray:
        return np.ascontiguousarray(tensor.detach().cpu().numpy(), dtype=np.float32)

    with threadpool_limits(limits=1, user_api="blas"):  # parallel over blocks, one BLAS thread each
        _trunk(array(card_part), array(bet_part), array(net.comb2.weight.T), array(net.comb2.bias),
               array(net.comb3.weight.T), array(net.comb3.bias), array(net.action_head.weight),
               array(net.action_head.bias), np.ascontiguousarray(legal.cpu().numpy(), dtype=np.bool_),
               kind == "value", argmax_fallback, out)
    return out


@nb.njit(parallel=True, cache=True, fastmath=True)
def _trunk(card_part, bet_part, w2t, b2, w3t, b3, head, head_bias, legal, value, argmax_fallback, out):  # pragma: no cover - numba
    rows, nodes, w = card_part.shape[0], bet_part.shape[0], card_part.shape[1]
    for block in nb.prange((rows + BLOCK - 1) // BLOCK):
        lo = block * BLOCK
        n = min(rows, lo + BLOCK) - lo
        z = np.empty((nodes * n, w), np.float32)
        h = np.empty((nodes * n, w), np.float32)
        for d in range(nodes):
            for i in range(n):
                for j in range(w):
                    z[d * n + i, j] = max(card_part[lo + i, j] + bet_part[d, j], np.float32(0.0))
        for weight_t, bias in ((w2t, b2), (w3t, b3)):  # z = relu(z @ W.T + b + z), twice
            np.dot(z, weight_t, h)
            for r in range(nodes * n):
                for j in range(w):
                    z[r, j] = max(h[r, j] + bias[j] + z[r, j], np.float32(0.0))
        logits = np.empty(3, np.float32)
        for d in range(nodes):
            for i in range(n):
                r = d * n + i
                mean = np.float32(0.0)
                for j in range(w):
                    mean += z[r, j]
                mean /= w
                var = np.float32(0.0)
                for j in range(w):
                    var += (z[r, j] - mean) ** 2
                scale = np.float32(1.0) / np.sqrt(var / w + np.float32(LAYER_NORM_EPS))
                for a in range(3):
                    total = np.float32(0.0)
                    for j in range(w):
                        total += (z[r, j] - mean) * head[a, j]
                    logits[a] = total * scale + head_bias[a]
                _strategy(logits, legal[d], value, argmax_fallback, out[d, lo + i])


@nb.njit(cache=True, fastmath=True)
def _strategy(logits, legal, value, argmax_fallback, out):  # pragma: no cover - numba
    """:func:`bot.agents.network.regret_matching` (``value``) or ``masked_softmax`` of one row."""
    if value:
        total = np.float32(0.0)
        for a in range(3):
            out[a] = max(logits[a], np.float32(0.0)) if legal[a] else np.float32(0.0)
            total += out[a]
        if total > 0.0:
            for a in range(3):
                out[a] /= total
            return
        best = -1
        legal_count = 0
        for a in range(3):
            if legal[a]:
                legal_count += 1
                if best < 0 or logits[a] > logits[best]:
                    best = a
        for a in range(3):
            if argmax_fallback:
                out[a] = np.float32(1.0) if a == best else np.float32(0.0)
            else:
                out[a] = np.float32(1.0) / legal_count if legal[a] else np.float32(0.0)
        return
    top = -np.inf
    for a in range(3):
        if legal[a] and logits[a] > top:
            top = logits[a]
    total = np.float32(0.0)
    for a in range(3):
        out[a] = np.exp(logits[a] - top) if legal[a] else np.float32(0.0)
        total += out[a]
    for a in range(3):
        out[a] /= total


def scatter_strategies(strategy: np.ndarray, row_of: np.ndarray, nodes: np.ndarray, out: np.ndarray) -> None:
    """``out[flop, nodes[k], hand] = strategy[k, row_of[r]]`` for every row ``r`` = flop x hands
    + hand of ``out [flops, D, hands, 3]`` (0 where ``row_of`` is -1: not a deal): the distinct
    card rows' strategies written back to every (flop, hand) that reads them, in the best
    response's layout (one node at a time: the writes in order)."""
    _scatter(np.ascontiguousarray(strategy, dtype=np.float32), row_of.astype(np.int64), nodes.astype(np.int64), out)


@nb.njit(parallel=True, cache=True)
def _scatter(strategy, row_of, nodes, out):  # pragma: no cover - numba
    flops, hands = out.shape[0], out.shape[2]
    for k in nb.prange(nodes.shape[0]):
        for flop in range(flops):
            target = out[flop, nodes[k]]
            for hand in range(hands):
                row = row_of[flop * hands + hand]
                if row >= 0:
                    for a in range(3):
                        target[hand, a] = strategy[k, row, a]
                else:
                    for a in range(3):
                        target[hand, a] = np.float32(0.0)
