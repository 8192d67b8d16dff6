"""Fitting Deep CFR's networks: the weighted MSE of Brown et al. 2019 (algorithm 1), in one place.

A value network fits the sampled instantaneous regrets of its player's advantage memory, an
average network (Deep CFR) the strategy vectors of the strategy memory; both minimise the mean
squared error over legal actions, each row weighted by its iteration under linear CFR (sec.
5.2, batch weights rescaled by ``2 / T``), with Adam and a gradient-norm clip. The batches come
in three forms with one loss (:mod:`training.deep_cfr.merged_memory`): ``rows`` (uniform minibatches of
memory rows, the paper), ``full`` (every distinct input each step: the exact full-memory
gradient) and ``weighted`` (distinct inputs drawn by total weight).

Where value networks train (``fit_backend``, resolved by :func:`resolve_fit_path`): on the CPU in
compiled fp32 kernels (:mod:`training.common.fused_network` for merged batches, :mod:`training.common.fused_rows`
for row minibatches: the same maths and update rule as torch autograd; on the AMD EPYC (AVX2)
3.2x torch's steps per second at the FHP preset's shape, where torch's per-operator overhead
dominates, and within ~10% of torch at the paper's width-96 shapes, where BLAS does), in torch
fp32 (GPUs), or in torch with bfloat16 matrix products
(``bf16``: autocast over fp32 master weights, the mixed precision of Micikevicius et al. 2018
with bf16's fp32 exponent range, so no loss scaling). bf16 pays only where the CPU multiplies
bf16 natively (AVX512-BF16 or AMX, :func:`native_bf16`); on AVX2 it is 3-5x slower than fp32
(``benchmarks/bench_fit_speed.py``), so ``auto`` picks it only where the CPU has them and the
minibatches are large (:data:`BF16_MIN_BATCH`). The path that ran is
recorded in every iteration's metrics (:meth:`NetworkFit.provenance`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.input_keys import InputKeys
from bot.agents.network import DeepCFRNetwork, canonical_suit_cards, masked_softmax
from training.common.fused_network import Features, fit_weighted_mse
from training.common.fused_rows import fit_rows_mse
from training.common.reservoir import Reservoir
from training.contract.entry import worker_threads
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.merged_memory import MergedRows, merge_rows, row_weights


@dataclass(frozen=True)
class MergedProblem:
    """One fit's loss over a memory's distinct inputs, in numpy, for either training backend."""

    merged: MergedRows
    target: np.ndarray
    """Weighted mean targets (normalised if asked), float32 ``[distinct, 3]``."""
    weight: np.ndarray
    """Per distinct input: its loss weight (linear weighting and ``2 / T`` included)."""
    denominator: float
    picks: np.ndarray | None
    """``weighted`` form: the rows of every step ``[steps, batch]``; ``None``: ``full``."""
    form: str

    def torch_batches(self, device: torch.device, bets: torch.Tensor, legal: torch.Tensor, steps: int):
        """``steps`` batches ``(cards, bets, legal, target, weight, denominator)`` on ``device``."""
        node = torch.from_numpy(self.merged.node.astype(np.int64)).to(device)
        cards = torch.from_numpy(self.merged.cards).to(device)
        target = torch.from_numpy(self.target).to(device)
        weight = torch.from_numpy(self.weight).to(device)
        if self.picks is None:
            full = (cards, bets[node], legal[node], target, weight, self.denominator)
            return (full for _ in range(steps))
        picks = torch.from_numpy(self.picks).to(device)
        return ((cards[p], bets[node[p]], legal[node[p]], target[p], weight[p], self.denominator) for p in picks)


#: The ways a value network can train (see the module docstring), named as ``fit_backend`` names them.
FUSED, TORCH, BF16 = "fused", "torch", "bf16"


@cache
def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU has bf16 dot-product instructions (the ``avx512_bf16`` or ``amx_bf16``
    flag), which oneDNN uses for bf16 matrix products; without them bf16 is converted to fp32
    and back around every product (False where the flags cannot be read: not Linux)."""
    try:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


#: Smallest minibatch at which ``auto`` trains in bf16 on a CPU with native bf16: measured on the
#: AMD EPYC with AVX512-BF16 (``benchmarks/bench_fit_speed.py``), bf16 autocast ran 1.9x the
#: fused kernels' steps/s at batch 10,000 (width 96) and 1.6x at 20,000, but 0.70x at the 2-core
#: presets' 1,024 (width 64), where the kernels' low per-step overhead wins.
BF16_MIN_BATCH = 4096


def resolve_fit_path(config: DeepCFRConfig, device: torch.device, native: bool | None = None) -> str:
    """The path value networks train on: ``fused``/``torch``/``bf16`` as asked; ``auto``: on a
    GPU torch; on a CPU with native bf16 (:func:`native_bf16`; ``native`` overrides the
    detection) and minibatches of at least :data:`BF16_MIN_BATCH` rows bf16, else the compiled
    fp32 kernels (3.2x torch at the FHP preset's shape on the AMD EPYC with AVX2, level with it
    at the paper's shapes; ``benchmarks/bench_fit_speed.py``)."""
    if config.fit_backend == "auto" and device.type == "cpu":
        native = native_bf16() if native is None else native
        return BF16 if native and config.batch_size >= BF16_MIN_BATCH else FUSED
    if config.fit_backend == "fused":
        return FUSED
    return BF16 if config.fit_backend == "bf16" else TORCH


class NetworkFit:
    """Trains a network on a memory for one Deep CFR run (its config, encoder and device)."""

    def __init__(self, config: DeepCFRConfig, encoder: InfosetEncoder, device: torch.device, input_keys: InputKeys) -> None:
        self.config = config
        self.encoder = encoder
        self.device = device
        self.input_keys = input_keys
        self.bets = torch.from_numpy(encoder.bets).to(device)
        self.legal = torch.from_numpy(encoder.legal).to(device)
        #: Where value networks train (:func:`resolve_fit_path`); average networks use torch.
        self.path = resolve_fit_path(config, device)
        #: The divisor of the last fit's targets (``normalize_targets``; 1.0 otherwise): network
        #: outputs times it are chips, logged as ``target_scale_p<player>`` for ``pokerbot watch``.
        self.target_scale = 1.0
        #: Where torch fits report their steps (the trainer sets its progress display here).
        self.progress: Any = None
        #: The run's stop policy (:class:`training.contract.entry.StopRequest`): checked every step, so a
        #: stop request or the end of the time budget abandons a fit of hours within seconds.
        self.stop: Any = None

    def fit(self, net: DeepCFRNetwork, optimizer: torch.optim.Optimizer, memory: Reservoir, steps: int,
             batch_size: int, rng: np.random.Generator, average: bool, iteration: int,
             label: str = "SGD") -> tuple[float, str]:
        """Weighted MSE over legal actions (Brown et al. 2019, algorithm 1 losses).

        Returns the mean loss of the last 10% of steps and the batch form used: ``rows`` (uniform
        minibatches of memory rows, the paper), or with ``merge_duplicates`` ``full`` (every
        distinct input each step: the exact full-memory gradient) or ``weighted`` (distinct
        inputs drawn by total weight); see :mod:`training.deep_cfr.merged_memory`. Value networks on
        merged batches train in the compiled kernels of :mod:`training.common.fused_network` when
        ``fit_backend`` resolves to ``fused`` (a fresh Adam state, like ``optimizer`` here).
        Torch steps and fused row-minibatch segments are reported to :attr:`progress` as
        ``label`` (FHP/HULH fits take minutes to hours); each torch step and each segment ends
        with :attr:`stop`'s check (which may abandon the fit); a merged fused fit checks it
        between compiled calls of :data:`training.common.fused_network.STEPS_PER_CALL` steps."""
        cfg = self.config
        normalize = cfg.normalize_targets and not average
        if self.path == FUSED and not average:
            if not cfg.merge_duplicates:
                return self.fit_fused_rows(net, memory, steps, batch_size, rng, iteration, normalize, label)
            return self.fit_fused(net, self.merged_problem(memory, steps, batch_size, rng, iteration, normalize), steps)
        batches, form = self.batches(memory, steps, batch_size, rng, iteration, normalize)
        net.train()
        rates = self.learning_rates(steps).tolist()
        tail_from = _tail_start(steps)
        losses = []
        parameters = list(net.parameters())  # once: ``net.parameters()`` walks the modules each call
        full_batch_features = None  # the full form repeats one batch: its inputs are embedded once
        for step, (cards, bets, legal, target, weight, denominator) in enumerate(batches):
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.path == BF16 and not average):
                if form == "full":
                    full_batch_features = full_batch_features or net.input_features(cards, bets)
                    outputs = net.forward_features(full_batch_features)
                else:
                    outputs = net(cards, bets)
            outputs = outputs.float()
            if average:
                outputs = masked_softmax(outputs, legal).nan_to_num(0.0)
            per_row = ((outputs - target) ** 2 * legal).sum(dim=1)
            loss = (per_row * weight).sum() / denominator
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, cfg.grad_clip, foreach=True)
            for group in optimizer.param_groups:
                group["lr"] = rates[step]
            optimizer.step()
            if step >= tail_from:  # read back only then, so a step costs no synchronisation
                losses.append(loss.item())
            if self.progress is not None:
                self.progress.advance_iteration(step + 1, steps, label)
            if self.stop is not None:
                self.stop.check()
        net.eval()
        return float(np.mean(losses)), form

    def learning_rates(self, steps: int) -> np.ndarray:
        """The learning rate of each of a fit's ``steps`` (see ``lr_schedule``)."""
        rate = self.config.learning_rate
        if self.config.lr_schedule == "cosine":
            return rate * 0.5 * (1.0 + np.cos(np.pi * np.arange(steps) / steps))
        return np.full(steps, rate)

    def provenance(self) -> dict:
        """What the fits ran on, for every iteration's metrics: the value networks' path and the
        CPU's instruction set as torch sees it (``AVX2``, ``AVX512``, ...) and its bf16 support."""
        return {"fit_backend": self.path, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                "cpu_native_bf16": native_bf16()}

    def fit_fused_rows(self, net: DeepCFRNetwork, memory: Reservoir, steps: int, batch_size: int,
                       rng: np.random.Generator, iteration: int, normalize: bool, label: str) -> tuple[float, str]:
        """:meth:`fit` of a value network on row minibatches in :func:`training.common.fused_rows.fit_rows_mse`:
        the batches, weights and targets of :meth:`row_batches` (same draws from ``rng``); its
        compiled segments report to :attr:`progress` as ``label``."""
        raw, weights, picks, divisor = self.row_problem(memory, steps, batch_size, rng, iteration, normalize)

        def report(done: int) -> None:
            if self.progress is not None:
                self.progress.advance_iteration(done, steps, label)
            if self.stop is not None:
                self.stop.check()

        losses = fit_rows_mse(net, raw["cards"], raw["node"], raw["target"] / np.float32(divisor), weights,
                              self.encoder.bets, self.encoder.legal, batch_size, picks, self.learning_rates(steps),
                              self.config.grad_clip, report, threads=worker_threads(self.config.threads))
        net.eval()
        return float(np.mean(losses[_tail_start(steps):])), "rows"

    def fit_fused(self, net: DeepCFRNetwork, problem: MergedProblem, steps: int) -> tuple[float, str]:
        """:meth:`fit` of a value network in :func:`training.common.fused_network.fit_weighted_mse`."""
        cfg = self.config
        cards = problem.merged.cards
        if net.canonical_suits:
            cards = canonical_suit_cards(torch.from_numpy(cards), net.group_sizes).numpy()
        features = Features.build(cards, self.encoder.bets[problem.merged.node], self.encoder.group_sizes)
        losses = fit_weighted_mse(net, features, problem.target, self.encoder.legal[problem.merged.node],
                                  problem.weight, problem.denominator, steps, self.learning_rates(steps), cfg.grad_clip,
                                  picks=problem.picks, threads=worker_threads(cfg.threads),
                                  check=self.stop.check if self.stop is not None else None)
        net.eval()
        return float(np.mean(losses[_tail_start(steps):])), problem.form

    def batches(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator, iteration: int,
                normalize: bool = False) -> tuple[Iterable[tuple], str]:
        """``steps`` torch batches ``(cards, bets, legal, target, weight, denominator)`` and their form."""
        if self.config.merge_duplicates:
            problem = self.merged_problem(memory, steps, batch_size, rng, iteration, normalize)
            return problem.torch_batches(self.device, self.bets, self.legal, steps), problem.form
        return self.row_batches(memory, steps, batch_size, rng, iteration, normalize), "rows"

    def merged_problem(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator,
                       iteration: int, normalize: bool) -> MergedProblem:
        """The memory's loss over its distinct inputs (:mod:`training.deep_cfr.merged_memory`).

        Linear CFR weights a row by its iteration times ``2 / T`` (sec. 5.2). ``full`` when the
        distinct inputs fit in a batch; otherwise ``weighted``: every step's rows are drawn at
        once with probability proportional to their total weight. ``normalize`` divides the
        targets by their weighted RMS over legal actions (see ``normalize_targets``)."""
        cfg = self.config
        scale = 2.0 / max(iteration, 1) if cfg.linear_weighting else 1.0
        if memory.listener is not None:
            merged = memory.listener.merged()
        else:
            merged = merge_rows(memory.stored(), self.input_keys, cfg.linear_weighting)
        divisor = _rms(merged.target, self.encoder.legal[merged.node], merged.weight) if normalize else 1.0
        self.target_scale = divisor
        target = (merged.target / divisor).astype(np.float32)
        if len(merged) <= batch_size:
            return MergedProblem(merged, target, (merged.weight * scale).astype(np.float32), merged.rows, None, "full")
        probabilities = merged.weight.astype(np.float64) / merged.weight.sum()
        picks = rng.choice(len(merged), size=(steps, batch_size), p=probabilities)
        weight = np.full(len(merged), scale * float(merged.weight.sum()) / merged.rows, np.float32)
        return MergedProblem(merged, target, weight, batch_size, picks, "weighted")

    def row_problem(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator, iteration: int,
                    normalize: bool) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, float]:
        """What a row-minibatch fit needs, for the torch and the compiled path alike: the memory's
        rows, each row's loss weight (times 2/iteration under linear weighting), the rows of every
        step drawn from ``rng`` at once, and the target divisor (also kept as
        :attr:`target_scale`)."""
        cfg = self.config
        scale = 2.0 / max(iteration, 1) if cfg.linear_weighting else 1.0
        raw = memory.stored()
        weights = row_weights(raw, cfg.linear_weighting)
        picks = rng.integers(0, len(memory), size=(steps, batch_size))
        divisor = _rms(raw["target"], self.encoder.legal[raw["node"]], weights) if normalize else 1.0
        self.target_scale = divisor
        return raw, weights * scale, picks, divisor

    def row_batches(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator, iteration: int,
                    normalize: bool):
        """``steps`` uniform minibatches of memory rows ``(cards, bets, legal, target, weight,
        denominator)`` on the device, the paper's form. Indices for all steps are drawn at once
        and the batches gathered on the device from the memory's rows, moved there once per fit
        (on the CPU zero-copy views): a step costs no numpy round trip and, on a GPU, no host
        copy (HULH's 40M-row memory is ~1 GB, copied once per fit instead of 32,000 batches)."""
        device = self.device
        raw, weights, row_picks, divisor = self.row_problem(memory, steps, batch_size, rng, iteration, normalize)
        stored = {name: torch.from_numpy(raw[name]).to(device) for name in ("node", "cards", "target")}
        row_weight = torch.from_numpy(weights.astype(np.float32)).to(device)
        picks = torch.from_numpy(row_picks).to(device)
        for p in picks:
            node = stored["node"][p].long()
            yield (stored["cards"][p], self.bets[node], self.legal[node], stored["target"][p] / divisor, row_weight[p],
                   batch_size)


def _tail_start(steps: int) -> int:
    """First step of a fit's last 10%, whose mean loss is the fit's reported loss."""
    return steps - max(1, steps // 10)


def _rms(target: np.ndarray, legal: np.ndarray, weight: np.ndarray) -> float:
    """Weighted root mean square of ``target`` over legal actions (1.0 for an all-zero memory)."""
    squares = (target.astype(np.float64) ** 2 * legal).sum(axis=1)
    value = float(np.sqrt((weight * squares).sum() / max((weight * legal.sum(axis=1)).sum(), 1e-30)))
    return value if value > 0 else 1.0
