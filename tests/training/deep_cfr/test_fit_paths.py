"""Where value networks train (training/deep_cfr/fit.py): the compiled row-minibatch fit equals
torch's on the same batches, bf16 agrees with fp32 within bf16's precision, and the path is
chosen from the device and recorded in every iteration's metrics."""

from __future__ import annotations

import copy
import json

import numba
import numpy as np
import pytest
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from bot.threads import thread_counts_kept
from protocol.gamedef import load_game
from training.common.reservoir import Reservoir
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.fit import (
    BF16,
    BF16_MIN_BATCH,
    FUSED,
    TORCH,
    NetworkFit,
    native_bf16,
    resolve_fit_path,
)

CPU = torch.device("cpu")


def _memory(encoder: InfosetEncoder, rows: int = 2000, seed: int = 0) -> Reservoir:
    """Random advantage-memory rows at FHP's decision nodes (cards: 2 hole, 0 or 3 board)."""
    rng = np.random.default_rng(seed)
    nodes = np.flatnonzero(encoder.legal.sum(axis=1) > 0)
    cards = np.stack([rng.choice(52, 5, replace=False) for _ in range(rows)]).astype(np.int8)
    cards[rng.random(rows) < 0.4, 2:] = -1
    memory = Reservoir(rows, {"node": ((), np.int32), "cards": ((5,), np.int8), "target": ((3,), np.float32),
                              "iteration": ((), np.int32)})
    memory.add({"node": rng.choice(nodes, rows).astype(np.int32), "cards": cards,
                "target": (rng.standard_normal((rows, 3)) * 50).astype(np.float32),
                "iteration": rng.integers(1, 6, rows).astype(np.int32)}, rng)
    return memory


def _fit(backend: str, canonical: bool, steps: int, batch: int = 64, width: int = 16, threads: int = 1):
    game = load_game("fhp")
    encoder = InfosetEncoder(game)
    config = DeepCFRConfig(game="fhp", fit_backend=backend, canonical_suits=canonical, normalize_targets=True,
                           lr_schedule="cosine", learning_rate=2e-3, width=width, threads=threads)
    fit = NetworkFit(config, encoder, CPU, None)
    torch.manual_seed(5)
    net = DeepCFRNetwork.for_game(game, width=width, canonical_suits=canonical)
    initial = copy.deepcopy(net)
    memory = _memory(encoder)
    loss, form = fit.fit(net, torch.optim.Adam(net.parameters()), memory, steps, batch, np.random.default_rng(7),
                         average=False, iteration=5)
    return fit, net, initial, memory, encoder, loss, form


@pytest.mark.parametrize("canonical", [False, True])
def test_compiled_row_fit_equals_torch_on_the_same_batches(canonical):
    """Same draws, same loss, same Adam: the weights after 120 steps (two compiled segments)
    agree to float rounding."""
    fused_fit, fused_net, _, *_, fused_loss, form = _fit("fused", canonical, 120)
    torch_fit, torch_net, *_, torch_loss, torch_form = _fit("torch", canonical, 120)
    assert (fused_fit.path, torch_fit.path, form, torch_form) == (FUSED, TORCH, "rows", "rows")
    assert fused_fit.target_scale == pytest.approx(torch_fit.target_scale)
    assert fused_loss == pytest.approx(torch_loss, rel=1e-4)
    for a, b in zip(fused_net.parameters(), torch_net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=2e-5)


@pytest.mark.parametrize("batch", [64, 61])
def test_compiled_row_fit_on_two_threads_equals_one_thread(batch, monkeypatch):
    """Each step's rows split over two numba threads (an odd batch: unequal parts, each with its
    own distinct betting nodes) give the one-thread fit's weights up to the order of a float
    sum, and the same weights bit for bit when run again."""
    from training.common import fused_rows

    *_, one_net, _, _, _, one_loss, _ = _fit("fused", True, 120, batch=batch, threads=1)

    def one_thread_kernel(*args):
        raise AssertionError("two threads asked for, the one-thread kernel ran")

    monkeypatch.setattr(fused_rows, "_fit_rows", one_thread_kernel)
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's pool has one thread on this machine")
    with thread_counts_kept():
        numba.set_num_threads(2)  # as the trainer's use_threads(2) does; earlier tests may leave it at 1
        two = [_fit("fused", True, 120, batch=batch, threads=2) for _ in range(2)]
    assert two[0][-2] == pytest.approx(one_loss, rel=1e-4)
    for a, b, again in zip(one_net.parameters(), two[0][1].parameters(), two[1][1].parameters(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-3, atol=2e-5)
        assert torch.equal(b, again)


def test_bf16_fit_agrees_with_fp32_within_bf16_precision():
    """bfloat16 products (8-bit mantissa: ~0.4% per rounding) over fp32 master weights: after 60
    steps the tail loss is within 2% of fp32's and the outputs within 0.1 (normalised targets,
    RMS 1; measured 0.04 on AVX2), while the fit moved them by over 1."""
    fp32_fit, fp32_net, initial, memory, encoder, fp32_loss, _ = _fit("torch", True, 60)
    bf16_fit, bf16_net, *_, bf16_loss, _ = _fit("bf16", True, 60)
    assert bf16_fit.path == BF16
    assert bf16_loss == pytest.approx(fp32_loss, rel=0.02)
    rows = memory.stored()
    cards = torch.from_numpy(rows["cards"].astype(np.int64))
    bets = torch.from_numpy(encoder.bets[rows["node"]])
    with torch.no_grad():
        fp32, bf16, start = (net(cards, bets) for net in (fp32_net, bf16_net, initial))
    assert (fp32 - bf16).abs().max() < 0.1
    assert (fp32 - start).abs().max() > 1.0


def test_the_path_follows_the_device_and_backend(tmp_path):
    assert resolve_fit_path(DeepCFRConfig(), CPU, native=False) == FUSED
    assert resolve_fit_path(DeepCFRConfig(batch_size=1024), CPU, native=True) == FUSED  # small batches: the kernels
    assert resolve_fit_path(DeepCFRConfig(batch_size=BF16_MIN_BATCH), CPU, native=True) == BF16
    assert resolve_fit_path(DeepCFRConfig(batch_size=20_000), CPU, native=False) == FUSED
    assert resolve_fit_path(DeepCFRConfig(fit_backend="fused", batch_size=20_000), CPU, native=True) == FUSED
    assert resolve_fit_path(DeepCFRConfig(), torch.device("cuda")) == TORCH
    assert resolve_fit_path(DeepCFRConfig(fit_backend="torch"), CPU) == TORCH
    assert resolve_fit_path(DeepCFRConfig(fit_backend="bf16"), CPU) == BF16
    for flags, expected in (("fpu avx2 fma", False), ("avx2 avx512f avx512_bf16", True), ("avx2 amx_bf16", True)):
        info = tmp_path / f"cpuinfo{expected}{len(flags)}"
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert native_bf16(info) is expected
    assert native_bf16(tmp_path / "missing") is False


def test_every_iteration_records_the_fit_path(tmp_path):
    from training.deep_cfr.trainer import DeepCFRTrainer

    config = DeepCFRConfig(game="kuhn", iterations=2, traversals=50, sgd_steps=5, evaluate_every=0, width=8,
                           batch_size=64, merge_duplicates=True, threads=1)
    trainer = DeepCFRTrainer.new(config, tmp_path / "run", progress=False)
    trainer.train()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    iterations = [r for r in records if "iteration" in r and "fit_backend" in r]
    assert len(iterations) == 2
    for record in iterations:
        assert record["fit_backend"] == FUSED
        assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
        assert record["cpu_native_bf16"] == native_bf16()


def test_compiled_row_fit_reports_its_segments():
    """A compiled row fit runs in segments of SEGMENT steps and reports after each (a HULH fit
    runs for hours); that the segments continue one Adam run is the equality test above."""
    from training.common import fused_rows

    class Seen:
        def __init__(self):
            self.calls = []

        def advance_iteration(self, done, total, label):
            self.calls.append((done, total, label))

    game = load_game("fhp")
    encoder = InfosetEncoder(game)
    fit = NetworkFit(DeepCFRConfig(game="fhp", fit_backend="fused", width=8), encoder, CPU, None)
    fit.progress = Seen()
    torch.manual_seed(5)
    net = DeepCFRNetwork.for_game(game, width=8)
    fit.fit(net, torch.optim.Adam(net.parameters()), _memory(encoder), 250, 32, np.random.default_rng(7),
            average=False, iteration=5, label="p0")
    assert fused_rows.SEGMENT == 100 and fit.progress.calls == [(100, 250, "p0"), (200, 250, "p0"), (250, 250, "p0")]


def test_a_fresh_process_fits_on_two_threads_without_nested_blas_threads():
    """The first two-thread fit of a fresh process runs scipy's BLAS (numba's np.dot) on one
    thread inside numba's threads: before the limit covered that library, every product large
    enough for OpenBLAS to thread (the presets' width 64, 1,024-row halves) printed its "Detect
    OpenMP Loop" warning (and may hang, it says)."""
    script = (
        "import numpy as np, torch\n"
        "from bot.agents.encoding import InfosetEncoder\n"
        "from bot.agents.network import DeepCFRNetwork\n"
        "from protocol.gamedef import load_game\n"
        "from training.common.fused_rows import fit_rows_mse\n"
        "encoder = InfosetEncoder(load_game('fhp'))\n"
        "rng = np.random.default_rng(0)\n"
        "nodes = np.flatnonzero(encoder.legal.sum(axis=1) > 0)\n"
        "cards = np.argsort(rng.random((4096, 52)), axis=1)[:, :5].astype(np.int8)\n"
        "net = DeepCFRNetwork.for_game(load_game('fhp'), width=64)\n"
        "fit_rows_mse(net, cards, rng.choice(nodes, 4096), rng.standard_normal((4096, 3)).astype(np.float32),\n"
        "             np.ones(4096), encoder.bets, encoder.legal, 2048.0, rng.integers(0, 4096, (10, 2048)),\n"
        "             np.full(10, 1e-3), 1.0, threads=2)\n"
        "print('fitted')\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NUMBA_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fitted"
    assert "Detect OpenMP Loop" not in done.stderr
