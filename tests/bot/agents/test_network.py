"""The appendix C network: shapes, parameter count, card embedding semantics, regret matching."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, masked_softmax, regret_matching
from protocol.gamedef import load_game

PAPER_PARAMETERS = 98_948


def expected_count(groups: int, bet_slots: int, width: int, actions: int = 3) -> int:
    """Appendix C layer by layer: 3 embeddings (13+4+52 rows) per group, card1..3, bet1..2,
    comb1..3, head."""
    embeddings = groups * 69 * width
    card = (groups * width * width + width) + 2 * (width * width + width)
    bet = (2 * bet_slots * width + width) + (width * width + width)
    trunk = (2 * width * width + width) + 2 * (width * width + width)
    return embeddings + card + bet + trunk + width * actions + actions


@pytest.mark.parametrize("game,width", [("kuhn", 16), ("leduc", 64), ("fhp", 96), ("holdem", 64)])
def test_shapes_and_parameter_count(game: str, width: int) -> None:
    net = DeepCFRNetwork.for_game(load_game(game), width=width)
    assert net.num_parameters() == expected_count(len(net.group_sizes), net.bet_slots, width)
    cards = torch.full((5, sum(net.group_sizes)), -1)
    cards[:, 0] = torch.arange(5)
    out = net(cards, torch.zeros(5, net.bet_slots))
    assert out.shape == (5, 3)


def test_paper_fhp_setting_parameter_count() -> None:
    """FHP as the paper encodes it: hole and flop groups, 6 betting positions per round,
    3 actions. Width 96 is the closest width to the paper's 98,948 parameters (+0.6%); no
    integer width matches exactly with the appendix code's layer shapes."""
    net = DeepCFRNetwork.for_game(load_game("fhp"), width=96, bet_slots=12)
    print(f"FHP, paper layout, width 96: {net.num_parameters():,} parameters (paper: {PAPER_PARAMETERS:,})")
    assert net.num_parameters() == 99_555
    assert abs(net.num_parameters() - PAPER_PARAMETERS) / PAPER_PARAMETERS < 0.01
    counts = {w: expected_count(2, 12, w) for w in range(16, 257)}
    assert PAPER_PARAMETERS not in counts.values()
    assert min(counts, key=lambda w: abs(counts[w] - PAPER_PARAMETERS)) == 96


def test_card_groups_are_order_free_and_missing_cards_add_nothing() -> None:
    torch.manual_seed(0)
    net = DeepCFRNetwork((2, 3), bet_slots=4, width=8).eval()
    bets = torch.tensor([[0.5, 1.0, -1.0, -1.0]])
    a = net(torch.tensor([[12, 40, 3, 17, 25]]), bets)
    b = net(torch.tensor([[40, 12, 25, 3, 17]]), bets)  # permuted within each group
    assert torch.allclose(a, b, atol=1e-6)
    emb = net.card_embeddings[0]
    assert torch.equal(emb(torch.tensor([[-1, -1]])), torch.zeros(1, 8))
    assert torch.allclose(emb(torch.tensor([[7, -1]])), emb(torch.tensor([[7]])))


def test_trunk_output_is_normalised_before_the_head() -> None:
    net = DeepCFRNetwork((1,), bet_slots=2, width=16)
    captured = {}
    net.action_head.register_forward_hook(lambda m, inp, out: captured.setdefault("z", inp[0]))
    net(torch.tensor([[3], [9]]), torch.tensor([[1.0, -1.0], [0.0, 2.0]]))
    z = captured["z"]
    assert torch.allclose(z.mean(dim=1), torch.zeros(2), atol=1e-5)
    assert torch.allclose(z.var(dim=1, unbiased=False), torch.ones(2), atol=1e-3)


def test_regret_matching_cases() -> None:
    legal = torch.tensor([[True, True, True], [False, True, True], [False, True, True], [True, True, False]])
    adv = torch.tensor([[1.0, 3.0, -2.0], [5.0, -1.0, -0.5], [9.0, 0.0, 0.0], [-3.0, -1.0, 7.0]])
    sigma = regret_matching(adv, legal)
    expected = torch.tensor([[0.25, 0.75, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    assert torch.allclose(sigma, expected)
    uniform = regret_matching(adv, legal, argmax_fallback=False)
    assert torch.allclose(uniform[1], torch.tensor([0.0, 0.5, 0.5]))
    assert torch.allclose(uniform[3], torch.tensor([0.5, 0.5, 0.0]))


def test_masked_softmax_ignores_illegal_logits() -> None:
    probs = masked_softmax(torch.tensor([[100.0, 0.0, 0.0]]), torch.tensor([[False, True, True]]))
    assert torch.allclose(probs, torch.tensor([[0.0, 0.5, 0.5]]))


def test_forward_features_equals_forward_with_the_same_gradients() -> None:
    """The count-matrix embedding used by full-batch training is the lookup embedding exactly."""
    torch.manual_seed(3)
    net = DeepCFRNetwork.for_game(load_game("holdem"), width=24)
    encoder = InfosetEncoder(load_game("holdem"))
    rng = np.random.default_rng(0)
    cards = torch.from_numpy(np.where(rng.random((50, 7)) < 0.3, -1, rng.integers(0, 52, (50, 7))).astype(np.int8))
    bets = torch.from_numpy(encoder.bets[rng.integers(0, encoder.tree.num_nodes, 50)])
    direct = net(cards, bets)
    direct_grads = torch.autograd.grad(direct.square().sum(), list(net.parameters()))
    via = net.forward_features(net.input_features(cards, bets))
    via_grads = torch.autograd.grad(via.square().sum(), list(net.parameters()))
    torch.testing.assert_close(via, direct, rtol=1e-5, atol=1e-5)
    for a, b in zip(via_grads, direct_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
