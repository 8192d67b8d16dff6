"""The appendix C network's trunk over a grid of (card row x betting node), in blocks that stay in cache.

Why: an exact FHP evaluation reads a network at every (flop, decision node, hand), ~33M
distinct (node, card row) inputs per network and seat on the canonical flops, and a HULH board
grid ~3.5M per seat. The card branch depends on the cards only and the bet branch on the node
only (Brown et al. 2019, appendix C), and the first trunk layer is affine in their
concatenation, so its two halves are computed once per card row and once per node
(:class:`bot.flop.network_policies.NetworkGrid`); only ``comb2``, ``comb3``, the layer norm,
the head and the strategy rule must run per (node, card row).

How: a block of card rows times every node (:data:`BLOCK_PAIRS` pairs, 0.5 MB per buffer at
width 64) goes through compiled element-wise passes (the first layer's ReLU; ``comb2``'s
residual; ``comb3``'s residual with each row's layer-norm statistics; the head's normalisation
and the strategy rule: regret matching, Brown et al. 2019 sec. 3, or the average network's
masked softmax), with the ``w x w`` products and the head's ``w x 3`` between them as torch
matrix products on the whole block. The previous kernel ran ``np.dot`` inside a compiled loop
on 16-card-row blocks and the layer norm and head per row; this one measured 1.69 against 2.0
CPU-s per HULH board grid (median of 5 pairs, ``farm-bench`` on
``benchmarks/bench_hulh_table1.py --grid-speed``). The maths is the torch module's in float32
(``tests/bot/agents/test_network_kernels.py``). bf16 products (AMX) were measured and not
adopted: at 4,096 x 64 x 64 they take 34 ns a pair against fp32's 65, but converting each
block to bf16 in torch costs more than that saves, and the exact evaluations would no longer
be float32-exact.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import torch

from bot.agents.network import DeepCFRNetwork

#: (node, card row) pairs per block: 2,048 x width 64 x 4 bytes = 0.5 MB per buffer. 2,048 and
#: 4,096 measured 1.80-2.07 and 2.12-2.27 CPU-s per HULH board grid (two runs each, load 3).
BLOCK_PAIRS = 2048
LAYER_NORM_EPS = 1e-5


@torch.no_grad()
def trunk_strategies(net: DeepCFRNetwork, card_part: torch.Tensor, bet_part: torch.Tensor, legal: torch.Tensor,
                     kind: str, argmax_fallback: bool, out: np.ndarray) -> np.ndarray:
    """``out``, float32 ``[nodes, rows, 3]``: the strategy of every (node, card row) pair, given
    the first trunk layer's card half per row ``card_part [rows, w]`` and its bet half plus bias
    per node ``bet_part [nodes, w]`` (pre-activation), the nodes' ``legal [nodes, 3]`` actions
    and the network ``kind`` (``value``: regret matching; ``average``: masked softmax)."""
    def array(tensor: torch.Tensor) -> np.ndarray:
        return np.ascontiguousarray(tensor.detach().cpu().numpy(), dtype=np.float32)

    cards, bets = array(card_part), array(bet_part)
    rows, nodes, width = cards.shape[0], bets.shape[0], cards.shape[1]
    w2t, b2 = torch.from_numpy(array(net.comb2.weight.T)), array(net.comb2.bias)
    w3t, b3 = torch.from_numpy(array(net.comb3.weight.T)), array(net.comb3.bias)
    node_legal = np.ascontiguousarray(legal.cpu().numpy(), dtype=np.bool_)
    head_t = torch.from_numpy(array(net.action_head.weight.T))
    head_sum, head_bias = head_t.numpy().sum(axis=0), array(net.action_head.bias)
    block = max(1, BLOCK_PAIRS // max(1, nodes))
    pairs = nodes * min(block, rows)
    z, h = torch.empty((pairs, width)), torch.empty((pairs, width))
    raw, norm = torch.empty((pairs, 3)), np.empty((pairs, 2), np.float32)
    for lo in range(0, rows, block):
        n = min(rows, lo + block) - lo
        zb, hb, rb = z[: nodes * n], h[: nodes * n], raw[: nodes * n]
        _first_layer(cards, bets, lo, n, zb.numpy())
        torch.mm(zb, w2t, out=hb)
        _residual(hb.numpy(), b2, zb.numpy())
        torch.mm(zb, w3t, out=hb)
        _residual_norm(hb.numpy(), b3, zb.numpy(), norm)
        torch.mm(zb, head_t, out=rb)
        _head_strategies(rb.numpy(), norm, head_sum, head_bias, node_legal, kind == "value", argmax_fallback, lo, n, out)
    return out


@nb.njit(parallel=True, cache=True, fastmath=True)
def _first_layer(card_part, bet_part, lo, n, z):  # pragma: no cover - numba
    """z[d x n + i] = relu(card half of row lo + i + bet half of node d)."""
    nodes, w = bet_part.shape
    for d in nb.prange(nodes):
        for i in range(n):
            for j in range(w):
                z[d * n + i, j] = max(card_part[lo + i, j] + bet_part[d, j], np.float32(0.0))


@nb.njit(parallel=True, cache=True, fastmath=True)
def _residual(product, bias, z):  # pragma: no cover - numba
    """z = relu(z @ W.T + b + z), given ``product`` = z @ W.T."""
    for r in nb.prange(z.shape[0]):
        for j in range(z.shape[1]):
            z[r, j] = max(product[r, j] + bias[j] + z[r, j], np.float32(0.0))


@nb.njit(parallel=True, cache=True, fastmath=True)
def _residual_norm(product, bias, z, norm):  # pragma: no cover - numba
    """The last residual layer, then each row's mean and inverse standard deviation into
    ``norm [rows, 2]`` (the layer norm, no affine, applied by :func:`_head_strategies`)."""
    w = z.shape[1]
    for r in nb.prange(z.shape[0]):
        total = np.float32(0.0)
        for j in range(w):
            value = max(product[r, j] + bias[j] + z[r, j], np.float32(0.0))
            z[r, j] = value
            total += value
        mean = total / w
        var = np.float32(0.0)
        for j in range(w):
            var += (z[r, j] - mean) ** 2
        norm[r, 0] = mean
        norm[r, 1] = np.float32(1.0) / np.sqrt(var / w + np.float32(LAYER_NORM_EPS))


@nb.njit(parallel=True, cache=True, fastmath=True)
def _head_strategies(raw, norm, head_sum, head_bias, legal, value, argmax_fallback, lo, n, out):  # pragma: no cover - numba
    """The head on the normalised rows, ``((z - mean) . head_a) x scale + bias_a`` from
    ``raw = z . head_a``, and the strategy rule, written to ``out[d, lo + i]``."""
    for d in nb.prange(legal.shape[0]):
        logits = np.empty(3, np.float32)
        for i in range(n):
            r = d * n + i
            for a in range(3):
                logits[a] = (raw[r, a] - norm[r, 0] * head_sum[a]) * norm[r, 1] + head_bias[a]
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
