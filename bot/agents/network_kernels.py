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
residual; ``comb3``'s residual, the layer norm and the head in one pass; the strategy rule:
regret matching, Brown et al. 2019 sec. 3, or the average network's masked softmax, whose
exponentials torch computes vectorised), with the two ``w x w`` products between them as torch
matrix products on the whole block (~90% of the core's float32 peak at width 64: 79 ns a row
each on the AMD EPYC, where a large square product reaches 117 GFLOPS). The previous kernel ran
``np.dot`` inside a compiled loop on 16-card-row blocks and the layer norm and head per row;
the blocked one measured 1.69 against 2.0 CPU-s per HULH board grid (median of 5 pairs,
``farm-bench`` on ``benchmarks/bench_hulh_table1.py --grid-speed``). Fusing the head into the
layer-norm pass (its ``w x 3`` torch product took 47 ns a row) and writing the strategy rule
without per-pair array views took the trunk from 235-244 to 177-185 ns a pair at width 64 over
28 nodes (``docs/benchmarks/fhp-exact-exploitability.md``). The maths is the torch module's in
float32 (``tests/bot/agents/test_network_kernels.py``). bf16 products were measured and not
adopted: at 2,048 x 64 x 64 they take 22-24 ns a row against fp32's 79 on the AMD EPYC (34
against 65 ns a pair on an Intel Xeon with AMX), but the evaluations would no longer be
float32-exact (a prototype with bf16 products moved a width-64 Deep CFR average network's
1425.031 mbb/g to 1426.062), and torch's CPU product gives no float32 output from bf16 inputs,
so each block's product is rounded to bf16 too.
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
    head, head_bias = array(net.action_head.weight), array(net.action_head.bias)
    head_sum = head.sum(axis=1)
    block = max(1, BLOCK_PAIRS // max(1, nodes))
    pairs = nodes * min(block, rows)
    buffers = torch.empty((pairs, width)), torch.empty((pairs, width)), torch.empty((pairs, 3))
    for lo in range(0, rows, block):
        n = min(rows, lo + block) - lo
        if lo == 0 or n < block:  # the block's tensors and their arrays (again for a short last block only)
            z, h, logits = (buffer[: nodes * n] for buffer in buffers)
            zn, hn, ln = z.numpy(), h.numpy(), logits.numpy()
        _first_layer(cards, bets, lo, n, zn)
        torch.mm(z, w2t, out=h)
        _residual(hn, b2, zn)
        torch.mm(z, w3t, out=h)
        _last_layer(hn, b3, zn, head, head_sum, head_bias, ln)
        if kind == "value":
            _regret_matching(ln, node_legal, argmax_fallback, lo, n, out)
        else:
            _shift_logits(ln, node_legal, n)
            torch.exp_(logits)  # vectorised (numba's exp is libm's, one value at a time: ~25 ns a pair)
            _normalise(ln, lo, n, out)
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
def _last_layer(product, bias, z, head, head_sum, head_bias, logits):  # pragma: no cover - numba
    """The last residual layer, the layer norm (no affine) and the head of each pair, into
    ``logits [pairs, 3]``, in one pass over the rows (a ``w x 3`` torch product cost 47 ns a row
    at width 64, 60% of a ``w x w`` one: its 3 columns leave the vector units idle). The head
    reads the raw rows: ``((z - mean) . head_a) x inv_std + bias_a`` = ``(z . head_a - mean x
    sum(head_a)) x inv_std + bias_a``."""
    w = z.shape[1]
    for r in nb.prange(z.shape[0]):
        total = np.float32(0.0)
        raw0, raw1, raw2 = np.float32(0.0), np.float32(0.0), np.float32(0.0)
        for j in range(w):
            x = max(product[r, j] + bias[j] + z[r, j], np.float32(0.0))
            z[r, j] = x
            total += x
            raw0 += x * head[0, j]
            raw1 += x * head[1, j]
            raw2 += x * head[2, j]
        mean = total / w
        var = np.float32(0.0)
        for j in range(w):
            var += (z[r, j] - mean) ** 2
        inv_std = np.float32(1.0) / np.sqrt(var / w + np.float32(LAYER_NORM_EPS))
        logits[r, 0] = (raw0 - mean * head_sum[0]) * inv_std + head_bias[0]
        logits[r, 1] = (raw1 - mean * head_sum[1]) * inv_std + head_bias[1]
        logits[r, 2] = (raw2 - mean * head_sum[2]) * inv_std + head_bias[2]


# The strategy rules below write scalars: a view per pair (``out[d, i]``, ``legal[d]``) costs a
# reference count each, which made the rule 70 ns a pair against ~3 now.

@nb.njit(parallel=True, cache=True, fastmath=True)
def _regret_matching(logits, legal, argmax_fallback, lo, n, out):  # pragma: no cover - numba
    """:func:`bot.agents.network.regret_matching` of pair ``d x n + i`` into ``out[d, lo + i]``:
    the positive legal advantages normalised, else the first highest legal one (``argmax_fallback``)
    or uniform over the legal actions."""
    zero = np.float32(0.0)
    for d in nb.prange(legal.shape[0]):
        l0, l1, l2 = legal[d, 0], legal[d, 1], legal[d, 2]
        for i in range(n):
            r = d * n + i
            g0, g1, g2 = logits[r, 0], logits[r, 1], logits[r, 2]
            p0, p1, p2 = max(g0, zero) if l0 else zero, max(g1, zero) if l1 else zero, max(g2, zero) if l2 else zero
            total = p0 + p1 + p2
            if total > 0.0:
                p0, p1, p2 = p0 / total, p1 / total, p2 / total
            elif argmax_fallback:
                best, top = (0, g0) if l0 else ((1, g1) if l1 else (2, g2))
                if l1 and g1 > top:
                    best, top = 1, g1
                if l2 and g2 > top:
                    best = 2
                p0, p1, p2 = np.float32(best == 0), np.float32(best == 1), np.float32(best == 2)
            else:
                share = np.float32(1.0) / (np.float32(l0) + np.float32(l1) + np.float32(l2))
                p0, p1, p2 = share * l0, share * l1, share * l2
            out[d, lo + i, 0], out[d, lo + i, 1], out[d, lo + i, 2] = p0, p1, p2


@nb.njit(parallel=True, cache=True)
def _shift_logits(logits, legal, n):  # pragma: no cover - numba
    """The masked softmax's exponents, in place: each pair's logits minus its highest legal one,
    -inf where illegal (the pair's row is ``d x n + i`` for node ``d``; no ``fastmath``, which
    may assume no infinities)."""
    for d in nb.prange(legal.shape[0]):
        for i in range(n):
            r = d * n + i
            top = -np.inf
            for a in range(3):
                if legal[d, a]:
                    top = max(top, logits[r, a])
            for a in range(3):
                logits[r, a] = logits[r, a] - top if legal[d, a] else -np.inf


@nb.njit(parallel=True, cache=True, fastmath=True)
def _normalise(weights, lo, n, out):  # pragma: no cover - numba
    """``out[d, lo + i]`` = pair ``d x n + i``'s ``weights`` over their sum."""
    for d in nb.prange(out.shape[0]):
        for i in range(n):
            r = d * n + i
            total = weights[r, 0] + weights[r, 1] + weights[r, 2]
            out[d, lo + i, 0], out[d, lo + i, 1], out[d, lo + i, 2] = (
                weights[r, 0] / total, weights[r, 1] / total, weights[r, 2] / total)


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
