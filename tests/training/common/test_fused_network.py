"""The compiled kernels of training/common/fused_network.py compute what torch autograd computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot.agents.network import DeepCFRNetwork
from training.common.fused_network import Features, FusedNetwork, fit_weighted_mse
from training.deep_cfr.config import DeepCFRConfig

#: (card groups, bet slots): Leduc's layout and a HULH-like one (hole, flop, turn, river).
LAYOUTS = [((1, 1), 8), ((2, 3, 1, 1), 16)]


def _batch(group_sizes: tuple[int, ...], bet_slots: int, n: int = 300, seed: int = 0):
    """Random inputs with hidden cards (-1) and unset bet slots (-1), targets, masks, weights."""
    g = torch.Generator().manual_seed(seed)
    card_pool = torch.randint(-1, 52, (40, sum(group_sizes)), generator=g)
    bet_pool = torch.where(torch.rand(25, bet_slots, generator=g) < 0.3, -1.0, torch.rand(25, bet_slots, generator=g) * 4)
    # rows repeat card and bet inputs, as real batches do (the branches run on distinct ones)
    cards = card_pool[torch.randint(0, 40, (n,), generator=g)]
    bets = bet_pool[torch.randint(0, 25, (n,), generator=g)]
    legal = (torch.rand(n, 3, generator=g) > 0.25).float()
    return cards, bets, legal, torch.randn(n, 3, generator=g), torch.rand(n, generator=g)


def _net(group_sizes: tuple[int, ...], bet_slots: int, width: int = 16) -> DeepCFRNetwork:
    torch.manual_seed(3)
    return DeepCFRNetwork(group_sizes, bet_slots, width)


@pytest.mark.parametrize(("group_sizes", "bet_slots"), LAYOUTS)
def test_forward_and_backward_equal_autograd(group_sizes, bet_slots) -> None:
    net = _net(group_sizes, bet_slots)
    cards, bets, *_ = _batch(group_sizes, bet_slots)
    fused = FusedNetwork.from_module(net)
    outputs = fused.forward(Features.build(cards.numpy(), bets.numpy(), group_sizes))
    expected = net(cards, bets)
    np.testing.assert_allclose(outputs, expected.detach().numpy(), rtol=1e-5, atol=1e-5)

    d_out = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
    (expected * d_out).sum().backward()
    fused.backward(d_out.numpy())
    autograd = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy()
    assert np.abs(autograd).max() > 1.0  # every layer gets a gradient worth comparing
    np.testing.assert_allclose(fused.grad, autograd, rtol=1e-4, atol=1e-4 * np.abs(autograd).max())


def _torch_fit(net, cards, bets, legal, target, weight, steps, lr, clip, picks=None):
    optimizer = torch.optim.Adam(net.parameters(), lr=0.0)
    losses = []
    for step in range(steps):
        optimizer.param_groups[0]["lr"] = float(np.broadcast_to(lr, (steps,))[step])
        rows = slice(None) if picks is None else torch.from_numpy(picks[step])
        outputs = net(cards[rows], bets[rows])
        loss = (((outputs - target[rows]) ** 2 * legal[rows]).sum(1) * weight[rows]).sum() / 50.0
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(net.parameters()), clip)
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("clip", [1.0, 0.05])  # 0.05: every step is clipped
@pytest.mark.parametrize("minibatches", [False, True])
@pytest.mark.parametrize("lr", [3e-3, np.array([3e-3, 2e-3, 1e-3, 5e-4, 1e-4])])  # constant, per-step schedule
@pytest.mark.parametrize("threads", [1, 2])  # 2: each step's rows split over two threads
def test_fit_equals_torch_adam_with_clipping(clip: float, minibatches: bool, lr, threads: int) -> None:
    group_sizes, bet_slots = LAYOUTS[0]
    cards, bets, legal, target, weight = _batch(group_sizes, bet_slots)
    picks = np.random.default_rng(0).integers(0, len(cards), size=(5, 64)) if minibatches else None
    reference, fused_net = _net(group_sizes, bet_slots), _net(group_sizes, bet_slots)
    expected = _torch_fit(reference, cards, bets, legal, target, weight, 5, lr, clip, picks)
    losses = fit_weighted_mse(fused_net, Features.build(cards.numpy(), bets.numpy(), group_sizes), target.numpy(),
                              legal.numpy(), weight.numpy(), 50.0, 5, lr, clip, picks=picks, threads=threads)
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    assert expected[-1] < expected[0]
    for a, b in zip(reference.parameters(), fused_net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_sgd_step_equals_torch_sgd() -> None:
    group_sizes, bet_slots = LAYOUTS[0]
    cards, bets, _, target, _ = _batch(group_sizes, bet_slots)
    reference, fused_net = _net(group_sizes, bet_slots), _net(group_sizes, bet_slots)
    fused = FusedNetwork.from_module(fused_net)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.05)
    features = Features.build(cards.numpy(), bets.numpy(), group_sizes)
    for _ in range(3):
        loss = ((reference(cards, bets) - target) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(reference.parameters()), 0.5)
        optimizer.step()
        fused.backward(2 * (fused.forward(features) - target.numpy()) / target.numel())
        fused.sgd_step(0.05, 0.5)
    fused.copy_to(fused_net)
    for a, b in zip(reference.parameters(), fused_net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_cosine_schedule_decays_each_fit_to_zero(tmp_path) -> None:
    from training.deep_cfr.trainer import DeepCFRTrainer

    config = DeepCFRConfig(game="kuhn", iterations=1, learning_rate=0.01, lr_schedule="cosine", evaluate_every=0)
    rates = DeepCFRTrainer.new(config, tmp_path / "r", progress=False).fit.learning_rates(4)
    np.testing.assert_allclose(rates, [0.01, 0.01 * (1 + np.cos(np.pi / 4)) / 2, 0.005, 0.01 * (1 - np.cos(np.pi / 4)) / 2])
    with pytest.raises(ValueError, match="lr_schedule"):
        DeepCFRConfig(lr_schedule="step").validate()


def test_fit_backend_names_are_checked() -> None:
    for backend in ("auto", "torch", "fused", "bf16"):
        DeepCFRConfig(fit_backend=backend, merge_duplicates=False, canonical_suits=True).validate()
    with pytest.raises(ValueError, match="fit_backend must be"):
        DeepCFRConfig(fit_backend="numba").validate()
