"""The appendix C network (:class:`bot.agents.network.DeepCFRNetwork`) trained in compiled CPU kernels.

Why: on Kuhn and Leduc every fit is a *full-batch* problem (a few hundred distinct inputs, see
:mod:`training.deep_cfr.merged_memory`) for a ~14k-parameter network, repeated hundreds of times per
iteration. In torch such a step costs ~1.6 ms of which ~80% is per-operator dispatch, autograd
and optimizer bookkeeping (about 60 small operators per step; ``benchmarks/bench_deep_cfr_throughput.py``
prints the steps per second of both).
It is one module because its kernels share one flat parameter layout
(:func:`_layout`): forward, backward, clipping and the optimizer steps are one computation.
Here the forward pass, the backward pass, gradient-norm clipping and the Adam/SGD update are each
one numba-compiled call over a single flat parameter buffer, and the matrix products go to BLAS
through numba's ``np.dot`` (scipy's BLAS), so a step costs what its arithmetic costs.

The maths is exactly the torch module's (same layer order, skips, ReLU gradient at 0, biased
layer-norm variance with eps 1e-5), and the update rules are torch's ``clip_grad_norm_`` and
``Adam``/``SGD``; ``tests/training/common/test_fused_network.py`` checks outputs, gradients and parameters after
several steps against torch autograd. Weights come from and go back to a torch module
(:meth:`FusedNetwork.from_module`, :meth:`FusedNetwork.copy_to`), so initialisation, bundles and
checkpoints are unchanged.

Backward of the layer norm (``z -> (z - mean) / std``): with ``n = (z - mu) * r``, ``r = 1/std``,
``dz = r * (dn - mean(dn) - n * mean(dn * n))`` (row-wise means over the width).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba as nb
import numpy as np
import torch
from threadpoolctl import threadpool_limits

from bot.agents.network import NUM_ACTIONS, DeepCFRNetwork


def one_blas_thread() -> threadpool_limits:
    """A context in which every BLAS library of the process runs on one thread, scipy's included:
    numba's ``np.dot`` calls scipy's BLAS (a library of its own, loaded by the first compiled
    call), so it is loaded here first. Why: a limit covers only the libraries loaded when it is
    set, and an unlimited BLAS called from numba's parallel threads starts its own threads inside
    them (a fresh process's first two-thread fit printed "OpenBLAS Warning : Detect OpenMP Loop
    and this application may hang" at every product); these products are small, one BLAS thread
    each is fastest."""
    import scipy.linalg.cython_blas  # noqa: F401  (loads the library the limit must cover)

    return threadpool_limits(limits=1, user_api="blas")


def thread_parts(threads: int, rows: int) -> int:
    """How many parts a threaded fit splits each step's ``rows`` into: ``threads``, capped by
    numba's current pool and the rows; 1 (the one-thread kernels, no parallel region) when one
    thread is asked for. Why only then: starting numba's OpenMP layer resets the OpenMP thread
    count that torch shares (measured: torch steps 35x slower afterwards), so a caller that ran
    the threaded kernel puts torch's count back."""
    return 1 if threads <= 1 else max(1, min(threads, nb.get_num_threads(), rows))


#: Columns of one card group's count features, in the order of that group's embedding
#: parameters in ``named_parameters()`` (rank 13, suit 4, card 52): the group's three embedding
#: tables are then one contiguous ``[69, width]`` block of the flat parameter buffer.
GROUP_FEATURES = 13 + 4 + 52
LAYER_NORM_EPS = 1e-5
_LINEARS = ("card1", "card2", "card3", "bet1", "bet2", "comb1", "comb2", "comb3", "action_head")


@dataclass
class Features:
    """A batch in the weight-free form the kernels read.

    The card branch sees only the cards and the bet branch only the betting, and a batch repeats
    both heavily (a Leduc batch of ~470 inputs has ~40 distinct card slots and ~30 distinct bet
    sequences), so each branch runs on its distinct inputs and the trunk gathers them per row:
    the same function and gradients at roughly half the arithmetic of a step."""

    card_counts: np.ndarray
    """``[groups, C, 69]`` float32 over the C distinct card rows: per group, how often each
    rank, suit and card occurs."""
    card_index: np.ndarray
    """``[N]`` int64: each row's distinct card row."""
    bet_inputs: np.ndarray
    """``[B, 2 * bet_slots]`` float32 over the B distinct bet rows: the bet branch's input
    (clamped sizes, occurred flags)."""
    bet_index: np.ndarray
    """``[N]`` int64: each row's distinct bet row."""

    def __len__(self) -> int:
        return len(self.card_index)

    @classmethod
    def build(cls, cards: np.ndarray, bets: np.ndarray, group_sizes: tuple[int, ...]) -> Features:
        """From the encoder's ``cards [N, slots]`` (-1 = no card) and ``bets [N, bet_slots]``."""
        distinct_cards, card_index = np.unique(np.asarray(cards, dtype=np.int64), axis=0, return_inverse=True)
        distinct_bets, bet_index = np.unique(np.asarray(bets, dtype=np.float32), axis=0, return_inverse=True)
        return cls(_card_counts(np.ascontiguousarray(distinct_cards), np.asarray(group_sizes, np.int64)),
                   card_index.reshape(-1).astype(np.int64), _bet_features(distinct_bets),
                   bet_index.reshape(-1).astype(np.int64))


def _bet_features(bets: np.ndarray) -> np.ndarray:
    """``DeepCFRNetwork._trunk``'s bet input: ``[clamp(bets, 0, 1e6), bets >= 0]``."""
    return np.ascontiguousarray(np.concatenate([np.clip(bets, 0, 1e6), (bets >= 0)], axis=1), dtype=np.float32)


@nb.njit(cache=True, fastmath=True, nogil=True)
def _card_counts(cards: np.ndarray, group_sizes: np.ndarray) -> np.ndarray:
    counts = np.zeros((len(group_sizes), len(cards), GROUP_FEATURES), np.float32)
    for i in range(len(cards)):
        slot = 0
        for g in range(len(group_sizes)):
            for _ in range(group_sizes[g]):
                card = cards[i, slot]
                slot += 1
                if card >= 0:
                    counts[g, i, card // 4] += 1.0
                    counts[g, i, 13 + card % 4] += 1.0
                    counts[g, i, 17 + card] += 1.0
    return counts


class FusedNetwork:
    """A :class:`DeepCFRNetwork`'s weights in one flat float32 buffer, with compiled steps.

    Use: ``fused = FusedNetwork.from_module(net)``; per step ``out = fused.forward(features)``,
    compute ``d_out`` (the loss gradient w.r.t. the outputs), ``fused.backward(d_out)``,
    ``fused.adam_step(lr, clip)``; finally ``fused.copy_to(net)``. ``forward`` keeps the
    activations of its batch for the following ``backward``.
    """

    def __init__(self, group_sizes: tuple[int, ...], bet_slots: int, width: int, theta: np.ndarray) -> None:
        self.group_sizes, self.bet_slots, self.width = tuple(group_sizes), bet_slots, width
        self.theta = theta
        self.grad = np.zeros_like(theta)
        self.exp_avg = np.zeros_like(theta)
        self.exp_avg_sq = np.zeros_like(theta)
        self.steps = 0
        self._offsets = _layout(len(group_sizes), bet_slots, width)
        self._cache: tuple | None = None

    @classmethod
    def from_module(cls, net: DeepCFRNetwork) -> FusedNetwork:
        """Copy ``net``'s weights (optimizer state starts empty, as for a fresh torch Adam)."""
        names = [name for name, _ in net.named_parameters()]
        if names != _parameter_names(len(net.group_sizes)):
            raise ValueError(f"FusedNetwork: unexpected parameter layout {names}")
        theta = torch.cat([p.detach().reshape(-1).float().cpu() for p in net.parameters()]).numpy().copy()
        return cls(net.group_sizes, net.bet_slots, net.width, theta)

    @classmethod
    def tied_to(cls, net: DeepCFRNetwork) -> FusedNetwork:
        """A fused network whose flat weight buffer *is* ``net``'s storage: every parameter of
        ``net`` becomes a view into it, so a compiled update is at once visible to the torch
        module that acts, is evaluated and is checkpointed (and ``load_state_dict`` writes into
        the buffer), with no copy per step (a copy each way costs more than a step). NFSP's
        networks train this way; CPU only."""
        fused = cls.from_module(net)
        buffer = torch.from_numpy(fused.theta)
        start = 0
        with torch.no_grad():
            for parameter in net.parameters():
                parameter.data = buffer[start:start + parameter.numel()].view_as(parameter)
                start += parameter.numel()
        return fused

    def copy_to(self, net: DeepCFRNetwork) -> None:
        """Write the weights back into ``net`` (same architecture)."""
        with torch.no_grad():
            start = 0
            for p in net.parameters():
                p.copy_(torch.from_numpy(self.theta[start:start + p.numel()]).view_as(p))
                start += p.numel()

    def forward(self, features: Features) -> np.ndarray:
        """Outputs ``[N, 3]`` (float32), keeping the activations for :meth:`backward`."""
        groups, w = len(self.group_sizes), self.width
        cache = _new_cache(len(features), features.card_counts.shape[1], len(features.bet_inputs), groups, w)
        _forward(self.theta, self._offsets, groups, w, features.card_counts, features.card_index,
                 features.bet_inputs, features.bet_index, cache)
        self._cache = (features, cache)
        return cache[11]

    def backward(self, d_out: np.ndarray) -> None:
        """Gradient of the loss into :attr:`grad`, given ``d loss / d outputs`` of the last forward."""
        if self._cache is None:
            raise RuntimeError("FusedNetwork.backward needs a forward pass first")
        features, cache = self._cache
        _backward(self.theta, self.grad, self._offsets, len(self.group_sizes), self.width, features.card_counts,
                  features.card_index, features.bet_inputs, features.bet_index, cache,
                  np.ascontiguousarray(d_out, dtype=np.float32))

    def adam_step(self, lr: float, max_norm: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> float:
        """``clip_grad_norm_(max_norm)`` then one torch-Adam update; returns the pre-clip norm."""
        self.steps += 1
        return _clip_and_adam(self.theta, self.grad, self.exp_avg, self.exp_avg_sq, self.steps,
                              lr, betas[0], betas[1], eps, max_norm)

    def sgd_step(self, lr: float, max_norm: float) -> float:
        """``clip_grad_norm_(max_norm)`` then plain SGD; returns the pre-clip norm."""
        self.steps += 1
        return _clip_and_sgd(self.theta, self.grad, lr, max_norm)


#: Steps per compiled call of a fit: between calls a stop request is checked, so a fit of hours
#: (a large merged memory) is abandoned within about this many steps of one.
STEPS_PER_CALL = 256


def fit_weighted_mse(net: DeepCFRNetwork, features: Features, target: np.ndarray, legal: np.ndarray,
                     weight: np.ndarray, denominator: float, steps: int, lr: float | np.ndarray, max_norm: float,
                     picks: np.ndarray | None = None, threads: int = 1,
                     check: Callable[[], None] | None = None) -> np.ndarray:
    """Adam on Deep CFR's value loss ``sum_i w_i sum_a legal_ia (V(x_i)_a - y_ia)^2 / denominator``.

    Every step uses the whole batch, or with ``picks [steps, batch]`` the rows it names (then
    ``weight`` is indexed by them too). All ``steps`` run in one compiled call; ``net`` is trained
    in place (weights copied in and back; a fresh Adam state, as the trainer's torch path uses)
    and every step's loss is returned. With ``threads`` > 1 each step's rows are split over that
    many numba threads (the gradient is the same sum, added in another order); BLAS stays on one
    thread per caller, which is fastest for these small products. The steps run in compiled
    calls of :data:`STEPS_PER_CALL` (the same updates as one call: Adam's step count carries
    over), with ``check()`` between them: it may raise to abandon the fit (a stop request).
    """
    fused = FusedNetwork.from_module(net)
    scale = np.asarray(weight, np.float32)[:, None] * np.asarray(legal, np.float32) * np.float32(2.0 / denominator)
    picks = np.zeros((0, 0), np.int64) if picks is None else np.ascontiguousarray(picks, dtype=np.int64)
    losses = np.empty(steps, np.float64)
    rows = len(features) if picks.size == 0 else picks.shape[1]
    chunks = thread_parts(threads, rows)
    torch_threads = torch.get_num_threads()
    arrays = (fused.theta, fused.grad, fused.exp_avg, fused.exp_avg_sq, fused._offsets, len(fused.group_sizes),
              fused.width, features.card_counts, features.card_index, features.bet_inputs, features.bet_index,
              np.ascontiguousarray(target, dtype=np.float32), np.ascontiguousarray(scale), picks)
    rates = np.broadcast_to(np.asarray(lr, np.float64), (steps,)).copy()
    with one_blas_thread():
        for first in range(0, steps, STEPS_PER_CALL):
            last = min(first + STEPS_PER_CALL, steps)
            part = arrays[:-1] + (picks[first:last] if picks.size else picks,)
            settings = (first, rates[first:last], 0.9, 0.999, 1e-8, max_norm, losses[first:last])
            if chunks == 1:  # no parallel region at all: spinning worker threads cost dearly on a busy machine
                _fit_weighted_mse(*part, *settings)
            else:
                _fit_weighted_mse_threads(*part, chunks, *settings)
                torch.set_num_threads(torch_threads)
            if check is not None:
                check()
    fused.copy_to(net)
    return losses


def _parameter_names(groups: int) -> list[str]:
    names = [f"card_embeddings.{g}.{table}.weight" for g in range(groups) for table in ("rank", "suit", "card")]
    return names + [f"{layer}.{kind}" for layer in _LINEARS for kind in ("weight", "bias")]


def _layout(groups: int, bet_slots: int, width: int) -> np.ndarray:
    """Start of each block in the flat buffer: per group its ``[69, w]`` embedding block, then
    weight and bias of each linear layer in :data:`_LINEARS` order (``named_parameters`` order)."""
    sizes = [GROUP_FEATURES * width] * groups
    fan_in = {"card1": groups * width, "bet1": 2 * bet_slots, "comb1": 2 * width}
    for layer in _LINEARS:
        out = NUM_ACTIONS if layer == "action_head" else width
        sizes += [out * fan_in.get(layer, width), out]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


# -- kernels ---------------------------------------------------------------------------------------
# Block indices in the layout: groups embedding blocks, then (weight, bias) per linear layer.

@nb.njit(cache=True, fastmath=True, nogil=True)
def _block(theta, offsets, index, rows, cols):
    return theta[offsets[index]:offsets[index + 1]].reshape((rows, cols))


@nb.njit(cache=True, fastmath=True, nogil=True)
def _bias(theta, offsets, index):
    return theta[offsets[index]:offsets[index + 1]]


@nb.njit(cache=True, fastmath=True, nogil=True)
def _linear_relu(x, weight, bias, out, skip):
    """``out = relu(x @ weight.T + bias [+ skip])`` (``skip`` empty = none)."""
    np.dot(x, weight.T, out)
    if skip.shape[0] > 0:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = max(out[i, j] + bias[j] + skip[i, j], np.float32(0.0))
    else:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = max(out[i, j] + bias[j], np.float32(0.0))


@nb.njit(cache=True)
def _new_cache(n, distinct_cards, distinct_bets, groups, w):
    """Activations of one batch: x, h1..h3 (card branch, per distinct card row), y1, y2 (bet
    branch, per distinct bet row), z0..z3 (trunk), the normalised zn, the outputs and the layer
    norm's 1/std per row."""
    def f(rows, cols):
        return np.empty((rows, cols), np.float32)
    c, b = distinct_cards, distinct_bets
    return (f(c, groups * w), f(c, w), f(c, w), f(c, w), f(b, w), f(b, w), f(n, 2 * w), f(n, w), f(n, w), f(n, w),
            f(n, w), f(n, NUM_ACTIONS), np.empty(n, np.float32))


@nb.njit(cache=True, fastmath=True, nogil=True)
def _forward(theta, offsets, groups, w, counts, card_index, bets, bet_index, cache):
    x, h1, h2, h3, y1, y2, z0, z1, z2, z3, zn, out, rstd = cache
    none = np.empty((0, 0), np.float32)
    for g in range(groups):
        np.dot(counts[g], _block(theta, offsets, g, GROUP_FEATURES, w), h1)
        x[:, g * w:(g + 1) * w] = h1
    b = groups  # first linear block
    _linear_relu(x, _block(theta, offsets, b, w, groups * w), _bias(theta, offsets, b + 1), h1, none)
    _linear_relu(h1, _block(theta, offsets, b + 2, w, w), _bias(theta, offsets, b + 3), h2, none)
    _linear_relu(h2, _block(theta, offsets, b + 4, w, w), _bias(theta, offsets, b + 5), h3, none)
    _linear_relu(bets, _block(theta, offsets, b + 6, w, bets.shape[1]), _bias(theta, offsets, b + 7), y1, none)
    _linear_relu(y1, _block(theta, offsets, b + 8, w, w), _bias(theta, offsets, b + 9), y2, y1)
    for i in range(z0.shape[0]):
        z0[i, :w] = h3[card_index[i]]
        z0[i, w:] = y2[bet_index[i]]
    _linear_relu(z0, _block(theta, offsets, b + 10, w, 2 * w), _bias(theta, offsets, b + 11), z1, none)
    _linear_relu(z1, _block(theta, offsets, b + 12, w, w), _bias(theta, offsets, b + 13), z2, z1)
    _linear_relu(z2, _block(theta, offsets, b + 14, w, w), _bias(theta, offsets, b + 15), z3, z2)
    for i in range(z3.shape[0]):
        mean = 0.0
        for j in range(w):
            mean += z3[i, j]
        mean /= w
        var = 0.0
        for j in range(w):
            var += (z3[i, j] - mean) ** 2
        r = 1.0 / np.sqrt(var / w + LAYER_NORM_EPS)
        rstd[i] = r
        for j in range(w):
            zn[i, j] = (z3[i, j] - mean) * r
    head = _block(theta, offsets, b + 16, NUM_ACTIONS, w)
    np.dot(zn, head.T, out)
    head_bias = _bias(theta, offsets, b + 17)
    for i in range(out.shape[0]):
        for a in range(NUM_ACTIONS):
            out[i, a] += head_bias[a]


@nb.njit(cache=True, fastmath=True, nogil=True)
def _linear_backward(d_act, act, x, weight, grad, offsets, index, d_x, skip):
    """Backward of ``act = relu(x @ W.T + b [+ x])``: turns ``d_act`` into the pre-activation
    gradient in place, writes dW and db into ``grad`` and, if ``d_x`` is non-empty, ``d_x``
    (plus ``d_act`` itself through the skip when ``skip``)."""
    for i in range(d_act.shape[0]):
        for j in range(d_act.shape[1]):
            d_act[i, j] = d_act[i, j] if act[i, j] > 0.0 else np.float32(0.0)
    np.dot(d_act.T, x, _block(grad, offsets, index, d_act.shape[1], x.shape[1]))
    d_bias = _bias(grad, offsets, index + 1)
    d_bias[:] = 0.0
    for i in range(d_act.shape[0]):
        for j in range(d_act.shape[1]):
            d_bias[j] += d_act[i, j]
    if d_x.shape[0] > 0:
        np.dot(d_act, weight, d_x)
        if skip:
            d_x += d_act


@nb.njit(cache=True, fastmath=True, nogil=True)
def _backward(theta, grad, offsets, groups, w, counts, card_index, bets, bet_index, cache, d_out):
    x, h1, h2, h3, y1, y2, z0, z1, z2, z3, zn, out, rstd = cache
    n = d_out.shape[0]
    b = groups
    none = np.empty((0, 0), np.float32)
    # head and layer norm
    head = _block(theta, offsets, b + 16, NUM_ACTIONS, w)
    np.dot(d_out.T, zn, _block(grad, offsets, b + 16, NUM_ACTIONS, w))
    d_head_bias = _bias(grad, offsets, b + 17)
    d_head_bias[:] = 0.0
    for i in range(n):
        for a in range(NUM_ACTIONS):
            d_head_bias[a] += d_out[i, a]
    d_zn = np.dot(d_out, head)
    d_z3 = np.empty((n, w), np.float32)
    for i in range(n):
        mean_d = 0.0
        mean_dn = 0.0
        for j in range(w):
            mean_d += d_zn[i, j]
            mean_dn += d_zn[i, j] * zn[i, j]
        mean_d /= w
        mean_dn /= w
        for j in range(w):
            d_z3[i, j] = rstd[i] * (d_zn[i, j] - mean_d - zn[i, j] * mean_dn)
    # trunk
    d_z2 = np.empty((n, w), np.float32)
    _linear_backward(d_z3, z3, z2, _block(theta, offsets, b + 14, w, w), grad, offsets, b + 14, d_z2, True)
    d_z1 = np.empty((n, w), np.float32)
    _linear_backward(d_z2, z2, z1, _block(theta, offsets, b + 12, w, w), grad, offsets, b + 12, d_z1, True)
    d_z0 = np.empty((n, 2 * w), np.float32)
    _linear_backward(d_z1, z1, z0, _block(theta, offsets, b + 10, w, 2 * w), grad, offsets, b + 10, d_z0, False)
    # branches: scatter the trunk's input gradient back onto the distinct rows
    d_h3 = np.zeros((h3.shape[0], w), np.float32)
    d_y2 = np.zeros((y2.shape[0], w), np.float32)
    for i in range(n):
        d_h3[card_index[i]] += d_z0[i, :w]
        d_y2[bet_index[i]] += d_z0[i, w:]
    d_y1 = np.empty((y1.shape[0], w), np.float32)
    _linear_backward(d_y2, y2, y1, _block(theta, offsets, b + 8, w, w), grad, offsets, b + 8, d_y1, True)
    _linear_backward(d_y1, y1, bets, _block(theta, offsets, b + 6, w, bets.shape[1]), grad, offsets, b + 6, none, False)
    d_h2 = np.empty((h2.shape[0], w), np.float32)
    _linear_backward(d_h3, h3, h2, _block(theta, offsets, b + 4, w, w), grad, offsets, b + 4, d_h2, False)
    d_h1 = np.empty((h1.shape[0], w), np.float32)
    _linear_backward(d_h2, h2, h1, _block(theta, offsets, b + 2, w, w), grad, offsets, b + 2, d_h1, False)
    d_x = np.empty((x.shape[0], groups * w), np.float32)
    _linear_backward(d_h1, h1, x, _block(theta, offsets, b, w, groups * w), grad, offsets, b, d_x, False)
    for g in range(groups):
        np.dot(counts[g].T, np.ascontiguousarray(d_x[:, g * w:(g + 1) * w]), _block(grad, offsets, g, GROUP_FEATURES, w))


@nb.njit(cache=True, fastmath=True, nogil=True)
def _fit_weighted_mse(theta, grad, exp_avg, exp_avg_sq, offsets, groups, w, counts, card_index, bets, bet_index,
                      target, scale, picks, first, lrs, beta1, beta2, eps, max_norm, losses):
    """Steps ``first + 1 ..`` of :func:`fit_weighted_mse` on one thread (``picks``, ``lrs`` and
    ``losses`` are those steps' rows)."""
    n = target.shape[0] if picks.shape[0] == 0 else picks.shape[1]
    cache = _new_cache(n, counts.shape[1], bets.shape[0], groups, w)
    for step in range(losses.shape[0]):
        rows = np.arange(n) if picks.shape[0] == 0 else picks[step]
        losses[step] = _rows_gradient(theta, grad, offsets, groups, w, counts, card_index, bets, bet_index,
                                      target, scale, rows, cache)
        _clip_and_adam(theta, grad, exp_avg, exp_avg_sq, first + step + 1, lrs[step], beta1, beta2, eps, max_norm)


@nb.njit(cache=True, fastmath=True, nogil=True, parallel=True)
def _fit_weighted_mse_threads(theta, grad, exp_avg, exp_avg_sq, offsets, groups, w, counts, card_index, bets,
                              bet_index, target, scale, picks, chunks, first, lrs, beta1, beta2, eps, max_norm, losses):
    """The steps of :func:`fit_weighted_mse` with each step's rows split into ``chunks`` parts on
    parallel threads (the branches, ~40 distinct rows, are recomputed per part); their
    gradients are summed in a fixed order, then one update."""
    n = target.shape[0] if picks.shape[0] == 0 else picks.shape[1]
    bounds = np.linspace(0, n, chunks + 1).astype(np.int64)
    caches = [_new_cache(bounds[c + 1] - bounds[c], counts.shape[1], bets.shape[0], groups, w) for c in range(chunks)]
    grads = np.zeros((chunks, grad.shape[0]), np.float32)
    parts = np.zeros(chunks)
    for step in range(losses.shape[0]):
        rows = np.arange(n) if picks.shape[0] == 0 else picks[step]
        for c in nb.prange(chunks):
            parts[c] = _rows_gradient(theta, grads[c], offsets, groups, w, counts, card_index, bets, bet_index,
                                      target, scale, rows[bounds[c]:bounds[c + 1]], caches[c])
        losses[step] = _summed_update(theta, grad, grads, parts, exp_avg, exp_avg_sq, first + step + 1, lrs[step],
                                      beta1, beta2, eps, max_norm)


@nb.njit(cache=True, fastmath=True, nogil=True)
def _summed_update(theta, grad, grads, parts, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, max_norm):
    """The end of a threaded step: the parts' gradients ``grads [parts, parameters]`` summed in
    a fixed order into ``grad`` (so a run repeats bit for bit), one clip-and-Adam update; returns
    the step's loss, the sum of ``parts``."""
    grad[:] = grads[0]
    for c in range(1, grads.shape[0]):
        grad += grads[c]
    _clip_and_adam(theta, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, max_norm)
    return parts.sum()


@nb.njit(cache=True, fastmath=True, nogil=True)
def _rows_gradient(theta, grad, offsets, groups, w, counts, card_index, bets, bet_index, target, scale, rows, cache):
    """Loss of ``rows`` and its gradient into ``grad``; ``d_out = scale * (V - y)`` with
    ``scale = 2 w legal / denominator``."""
    row_cards, row_bets = card_index[rows], bet_index[rows]
    _forward(theta, offsets, groups, w, counts, row_cards, bets, row_bets, cache)
    error = cache[11] - target[rows]
    d_out = scale[rows] * error
    _backward(theta, grad, offsets, groups, w, counts, row_cards, bets, row_bets, cache, d_out)
    return 0.5 * np.sum(d_out * error)


@nb.njit(cache=True, fastmath=True, nogil=True)
def _clip(grad, max_norm):
    """torch ``clip_grad_norm_``: scale by ``min(1, max_norm / (norm + 1e-6))``; returns the norm."""
    total = 0.0
    for k in range(grad.shape[0]):
        total += np.float64(grad[k]) * grad[k]
    norm = np.sqrt(total)
    coefficient = max_norm / (norm + 1e-6)
    if coefficient < 1.0:
        for k in range(grad.shape[0]):
            grad[k] *= coefficient
    return norm


@nb.njit(cache=True, fastmath=True, nogil=True)
def _clip_and_adam(theta, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, max_norm):
    norm = _clip(grad, max_norm)
    step_size = np.float32(lr / (1.0 - beta1 ** step))
    correction2_sqrt = np.float32(np.sqrt(1.0 - beta2 ** step))
    b1, b2, e = np.float32(beta1), np.float32(beta2), np.float32(eps)
    for k in range(theta.shape[0]):
        g = grad[k]
        exp_avg[k] += (np.float32(1.0) - b1) * (g - exp_avg[k])
        exp_avg_sq[k] = b2 * exp_avg_sq[k] + (np.float32(1.0) - b2) * g * g
        theta[k] -= step_size * exp_avg[k] / (np.sqrt(exp_avg_sq[k]) / correction2_sqrt + e)
    return norm


@nb.njit(cache=True, fastmath=True, nogil=True)
def _clip_and_sgd(theta, grad, lr, max_norm):
    norm = _clip(grad, max_norm)
    for k in range(theta.shape[0]):
        theta[k] -= lr * grad[k]
    return norm
