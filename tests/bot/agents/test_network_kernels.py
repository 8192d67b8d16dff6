"""The blocked trunk (:mod:`bot.agents.network_kernels`) against the torch module, in float32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot.agents.network import DeepCFRNetwork, strategy_from_outputs
from bot.agents.network_kernels import BLOCK_PAIRS, trunk_strategies
from protocol.gamedef import load_game


def _reference(net: DeepCFRNetwork, card_part: torch.Tensor, bet_part: torch.Tensor, legal: torch.Tensor,
               kind: str, argmax_fallback: bool) -> np.ndarray:
    """The torch module's strategy of every (node, card row) pair, ``[nodes, rows, 3]``."""
    combined = (bet_part[:, None, :] + card_part[None, :, :]).reshape(-1, net.width)
    with torch.no_grad():
        outputs = net.head_from(combined)
    pair_legal = legal[:, None, :].expand(-1, len(card_part), -1).reshape(-1, 3)
    return strategy_from_outputs(kind, outputs, pair_legal, argmax_fallback).reshape(len(bet_part), len(card_part), 3).numpy()


@pytest.mark.parametrize("width", [16, 64])
@pytest.mark.parametrize("kind", ["value", "average"])
@pytest.mark.parametrize("argmax_fallback", [True, False])
def test_trunk_equals_the_torch_module(width: int, kind: str, argmax_fallback: bool) -> None:
    torch.manual_seed(width)
    net = DeepCFRNetwork.for_game(load_game("holdem"), width=width)
    nodes = 7
    rows = 3 * (BLOCK_PAIRS // nodes) + 5  # several blocks and a short last one
    card_part = torch.randn(rows, width)
    bet_part = torch.randn(nodes, width)
    legal = torch.tensor([[True, True, True], [False, True, True], [True, True, False]] * 3)[:nodes]
    out = np.full((nodes, rows, 3), np.nan, dtype=np.float32)
    got = trunk_strategies(net, card_part, bet_part, legal, kind, argmax_fallback, out)
    want = _reference(net, card_part, bet_part, legal, kind, argmax_fallback)
    assert got is out
    np.testing.assert_allclose(got, want, atol=2e-5)
    np.testing.assert_allclose(got.sum(axis=2), 1.0, atol=1e-5)
    assert not got[~legal.numpy()[:, None, :].repeat(rows, axis=1)].any()


def test_all_negative_advantages_fall_back() -> None:
    """Rows whose advantages are all <= 0 take the argmax (or uniform) as the module does."""
    torch.manual_seed(0)
    net = DeepCFRNetwork.for_game(load_game("holdem"), width=16)
    with torch.no_grad():
        net.action_head.bias.fill_(-100.0)  # every advantage negative
    card_part, bet_part = torch.randn(50, 16), torch.randn(3, 16)
    legal = torch.tensor([[True, True, True], [False, True, True], [False, True, False]])
    for fallback in (True, False):
        out = np.empty((3, 50, 3), dtype=np.float32)
        got = trunk_strategies(net, card_part, bet_part, legal, "value", fallback, out)
        np.testing.assert_allclose(got, _reference(net, card_part, bet_part, legal, "value", fallback), atol=1e-6)
        assert np.isin(got, np.array([0.0, 1.0] if fallback else [0.0, 0.5, 1.0, 1 / 3], dtype=np.float32)).all()
