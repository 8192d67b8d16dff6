"""NFSP's exact SL and Q steps in the compiled kernels (``fused``) equal the torch steps: loss,
gradient and parameters after several updates (a target refit falls inside the round), and the
torch networks see the kernels' updates without copies."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from training.contract.entry import config_of, preset
from training.nfsp.config import NFSPConfig
from training.nfsp.learner import NFSP
from training.nfsp.steps import supervised_loss, supervised_loss_gradient


def _twins(**changes) -> tuple[NFSP, NFSP]:
    """Two Leduc learners with the same seed, memories and weights, torch and fused steps; no
    learning during the 60 self-play steps (learn_every is huge), so the steps under test are the
    first ones."""
    config = config_of("nfsp", preset("nfsp", "leduc") | {"num_envs": 32, "rl_capacity": 3_000, "learn_every": 10**9,
                                                "updates_per_learn": 5, "target_update_every": 3} | changes)
    learners = (NFSP(config), NFSP(dataclasses.replace(config, fused=True)))
    for learner in learners:
        for _ in range(60):
            learner.step()
    assert len(learners[0].players[1].replay) == len(learners[1].players[1].replay) > 500
    return learners


def _parameters(network: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in network.parameters()])


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def test_fused_q_steps_equal_the_torch_steps() -> None:
    """Five exact double-DQN steps with a target refit after the third: same loss at every step,
    same gradient at the first and the same Q and target weights at the end."""
    plain, fused = _twins()
    player = 1
    groups = plain._replay_groups(player)
    torch_p, fused_p = plain.players[player], fused.players[player]
    assert _close(_parameters(torch_p.q), _parameters(fused_p.q))

    loss = plain._exact_q_loss(torch_p, groups)
    torch_p.q.zero_grad()
    loss.backward()
    first_grad = torch.cat([p.grad.reshape(-1) for p in torch_p.q.parameters()])
    torch_losses = []
    for _ in range(5):
        plain._learn_q(player, groups)
        torch_losses.append(plain.last_losses["q_loss_1"])

    original = fused_p.fused_q.sgd_step
    grads = []

    def recording_step(lr: float, max_norm: float) -> float:
        grads.append(torch.from_numpy(fused_p.fused_q.grad.copy()))
        return original(lr, max_norm)

    fused_p.fused_q.sgd_step = recording_step
    fused._learn_q_fused(player, fused._replay_groups(player))
    assert len(grads) == 5 and fused_p.q_updates == torch_p.q_updates == 5
    assert _close(grads[0], first_grad)
    assert fused.last_losses["q_loss_1"] == pytest.approx(torch_losses[-1], rel=1e-4)
    assert _close(_parameters(torch_p.q), _parameters(fused_p.q))
    assert _close(_parameters(torch_p.q_target), _parameters(fused_p.q_target))
    assert not _close(_parameters(torch_p.q_target), _parameters(torch_p.q))  # refit after 3, not 5


def test_fused_supervised_steps_equal_the_torch_steps() -> None:
    """Three exact SL steps: same loss each step and the same Pi weights, which the policy the
    learner acts with and evaluates (sharing the buffer) sees."""
    plain, fused = _twins(sl_lr=0.5)
    for _ in range(3):
        plain._learn_pi(0)
        fused._learn_pi(0)
        assert fused.last_losses["pi_loss_0"] == pytest.approx(plain.last_losses["pi_loss_0"], rel=1e-5)
    assert fused.players[0].pi_updates == 3
    assert _close(_parameters(plain.players[0].pi), _parameters(fused.players[0].pi))
    assert np.allclose(plain.policy.strategy(), fused.policy.strategy(), atol=1e-5)


def test_supervised_gradient_equals_autograd() -> None:
    """The closed-form softmax cross-entropy gradient equals torch autograd's on random logits,
    counts and legal masks (float64)."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(50, 3)) * 3
    legal = rng.random((50, 3)) < 0.7
    legal[:, 1] = True
    counts = rng.integers(0, 5, size=(50, 3)) * legal
    counts[:, 1] += 1
    loss, gradient = supervised_loss_gradient(logits, legal, counts)
    x = torch.tensor(logits, requires_grad=True)
    expected = supervised_loss(x, torch.from_numpy(legal), torch.tensor(counts, dtype=torch.float64))
    expected.backward()
    assert loss == pytest.approx(expected.item(), rel=1e-12)
    assert np.allclose(gradient, x.grad.numpy(), atol=1e-6)


def test_fused_needs_cpu_sgd_and_an_exact_step() -> None:
    for bad in ({"optimizer": "adam"}, {"device": "cuda"}, {"sl_full_batch": False, "rl_full_batch": False}):
        with pytest.raises(ValueError, match="fused needs device = cpu, optimizer = sgd"):
            NFSPConfig(**({"fused": True, "sl_full_batch": True} | bad))
