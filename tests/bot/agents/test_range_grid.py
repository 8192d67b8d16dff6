"""``RangeGrid``: a network's strategy for every hand of a range from kept card halves and node
grids equals the network's own forward pass, whatever was asked before it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bot.agents.range_grid as range_grid
from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, strategy_from_outputs
from bot.agents.range_grid import RangeGrid
from protocol.gamedef import load_game

HOLDEM, LEDUC = load_game("holdem"), load_game("leduc")


def forward(encoder: InfosetEncoder, net: DeepCFRNetwork, kind: str, node: int, board: tuple[int, ...],
            hands: np.ndarray) -> np.ndarray:
    """The torch forward pass on the card slots :meth:`InfosetEncoder.encode_view` lays out."""
    rows = np.full((len(hands), encoder.num_card_slots), -1, dtype=np.int64)
    rows[:, : hands.shape[1]] = hands
    rows[:, hands.shape[1] : hands.shape[1] + len(board)] = board
    bets = torch.from_numpy(np.repeat(encoder.bets[[node]], len(hands), axis=0))
    legal = torch.from_numpy(np.repeat(encoder.legal[[node]], len(hands), axis=0))
    with torch.no_grad():
        outputs = net(torch.from_numpy(rows), bets)
    return strategy_from_outputs(kind, outputs, legal, True).double().numpy()


def decision_nodes(encoder: InfosetEncoder, round_index: int, count: int) -> list[int]:
    tree = encoder.tree
    nodes = [n for n in tree.decision_ids if tree.round[n] == round_index]
    return nodes[:: max(1, len(nodes) // count)][:count]


@pytest.mark.parametrize("canonical_suits", [False, True])
@pytest.mark.parametrize("kind", ["value", "average"])
def test_hold_em_ranges_equal_the_forward_pass_on_every_round(kind, canonical_suits):
    torch.manual_seed(1)
    net = DeepCFRNetwork.for_game(HOLDEM, width=16, canonical_suits=canonical_suits).eval()
    encoder = InfosetEncoder(HOLDEM)
    grid = RangeGrid(encoder)
    deck = np.random.default_rng(2).permutation(52)
    full_board = tuple(int(c) for c in deck[:5])
    for round_index, shown in enumerate((0, 3, 4, 5)):
        board = full_board[:shown]
        live, _ = grid.live_hands(board)
        assert len(live) == (52 - shown) * (51 - shown) // 2
        hands = live[np.random.default_rng(round_index).permutation(len(live))[:200]][:, ::-1]  # either card order
        for node in decision_nodes(encoder, round_index, 3):
            got = grid.strategies("net", net, kind, True, node, board, hands)
            np.testing.assert_allclose(got, forward(encoder, net, kind, node, board, hands), atol=2e-5)
            np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-5)


def test_kept_grids_answer_any_subset_and_survive_eviction(monkeypatch):
    """A later query on a subset reads the same rows; evicted halves, grids and live hands
    recompute to the same values; two networks under different keys never share a grid."""
    monkeypatch.setattr(range_grid, "CARD_HALVES_KEPT", 1)
    monkeypatch.setattr(range_grid, "STRATEGIES_KEPT", 2)
    monkeypatch.setattr(range_grid, "BOARDS_KEPT", 1)
    torch.manual_seed(3)
    nets = [DeepCFRNetwork.for_game(LEDUC, width=8).eval() for _ in range(2)]
    encoder = InfosetEncoder(LEDUC)
    grid = RangeGrid(encoder)
    board, other_board = (int(LEDUC.deck[0]),), (int(LEDUC.deck[-1]),)
    hands, _ = grid.live_hands(board)
    node = decision_nodes(encoder, 1, 1)[0]
    first = [grid.strategies(k, nets[k], "value", True, node, board, hands) for k in (0, 1)]
    assert not np.allclose(first[0], first[1])
    for other in decision_nodes(encoder, 1, 4):  # push the first grids, halves and live hands out
        grid.strategies(0, nets[0], "value", True, other, other_board, grid.live_hands(other_board)[0])
    for k in (0, 1):
        np.testing.assert_array_equal(grid.strategies(k, nets[k], "value", True, node, board, hands), first[k])
        np.testing.assert_array_equal(grid.strategies(k, nets[k], "value", True, node, board, hands[::-2]),
                                      first[k][::-2])


def test_a_hand_on_the_board_is_refused():
    encoder = InfosetEncoder(HOLDEM)
    net = DeepCFRNetwork.for_game(HOLDEM, width=8).eval()
    node = decision_nodes(encoder, 1, 1)[0]
    with pytest.raises(ValueError, match=r"shares a card with the board \(0, 5, 9\)"):
        RangeGrid(encoder).strategies("net", net, "value", True, node, (0, 5, 9), np.array([[9, 20], [1, 2]]))
