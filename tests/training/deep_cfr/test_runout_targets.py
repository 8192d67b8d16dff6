"""Full-board targets: on every board the exact regrets of the networks' profile, summed over all
boards the full-width counterfactual regrets; HULH boards read the networks as they play."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, regret_matching
from bot.errors import ConfigError
from bot.flop.game import FlopGame
from bot.flop.network_policies import network_policy
from protocol.gamedef import load_game
from tests.training.flop.test_flop_solver import TINY_FHP
from training.abstraction.board_match import all_boards
from training.deep_cfr.board_targets import MIN_MASS, RowSink
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.exact_targets import ExactRegrets
from training.deep_cfr.runout_targets import RunoutTargets
from training.deep_cfr.trainer import DeepCFRTrainer


def random_nets(encoder: InfosetEncoder, seed: int) -> tuple[DeepCFRNetwork, DeepCFRNetwork]:
    torch.manual_seed(seed)
    return tuple(DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, 8).eval() for _ in range(2))  # type: ignore[return-value]


@pytest.mark.parametrize("player", [0, 1])
def test_every_board_sums_to_the_full_width_regrets(player):
    """On the tiny flop game a full board is a flop: each board's flop rows are the exact
    per-flop regrets and masses, and the preflop rows summed over every board are the
    full-width preflop regrets (a deal is a disjoint (hand, opponent, board) triple)."""
    fg = FlopGame.build(TINY_FHP, canonical=False)
    encoder = InfosetEncoder(TINY_FHP, fg.tree)
    nets = random_nets(encoder, 5)
    exact = ExactRegrets(fg, chunk=9)
    exact.add(1.0, player, network_policy(fg, nets, "value"))
    sampler = RunoutTargets(TINY_FHP, encoder, 1000, argmax_fallback=True)
    position = {tuple(sorted(h)): i for i, h in enumerate(sampler.hands.tolist())}
    same_hands = [position[tuple(sorted(h))] for h in fg.hands.tolist()]  # fg's hand order in the sampler's
    boards = all_boards(TINY_FHP)
    tables = sampler.tables(nets, player, boards)
    row = {int(n): i for i, n in enumerate(sampler.subtree.decision_nodes)}
    flop_rows = [row[int(n)] for n in fg.flop.decision_nodes]
    pre_rows = [row[int(n)] for n in fg.preflop.decision_nodes]
    flop_index = {tuple(sorted(f)): c for c, f in enumerate(fg.flops.tolist())}
    own = exact.flop_actor == player
    for k, board in enumerate(boards):
        c = flop_index[tuple(sorted(board.tolist()))]
        ours = tables.regrets[k][flop_rows][:, same_hands]
        np.testing.assert_allclose(ours[own], exact.flop[c][own], rtol=1e-4, atol=1e-2)
    summed = tables.regrets.sum(axis=0)[pre_rows][:, same_hands]
    pre_own = exact.pre_actor == player
    np.testing.assert_allclose(summed[pre_own], exact.preflop[pre_own], rtol=1e-5, atol=1e-2)
    assert np.abs(exact.preflop[pre_own]).max() > 1.0  # not a comparison of zeros


def test_kept_rows_carry_each_rounds_cards_and_targets():
    """Rows keep in proportion to reach (every candidate when ``rows_per_board`` is huge), each
    row shows only its round's board cards, and targets are regret over mass."""
    fg = FlopGame.build(TINY_FHP, canonical=False)
    encoder = InfosetEncoder(TINY_FHP, fg.tree)
    sampler = RunoutTargets(TINY_FHP, encoder, 10**18, argmax_fallback=True)
    tables = sampler.tables(random_nets(encoder, 2), 0, sampler.draw(np.random.default_rng(3), 1))
    advantage, strategy = RowSink(encoder), RowSink(encoder)
    sampler.keep(tables, 0, 0, np.random.default_rng(1), advantage, strategy)
    rows, played = advantage.rows(), strategy.rows()
    mass, valid = tables.mass[0], tables.valid[0]
    candidates = (sampler.actors == 0)[:, None] & (mass > MIN_MASS) & (valid[None, :] > 0)
    assert len(rows["node"]) == int(candidates.sum()) > 0 and len(played["node"]) > 0
    preflop = fg.tree.round[rows["node"]] == 0
    assert (rows["cards"][preflop, 2:] == -1).all() and (rows["cards"][~preflop, 2:5] == tables.boards[0]).all()
    np.testing.assert_allclose(played["target"].sum(axis=1), 1.0, atol=1e-5)
    sampler.rows_per_board = 30
    results = [r for r, _ in sampler.results((None, None), 1, 200, 50, np.random.default_rng(2), False)]
    assert sum(len(r.advantage["node"]) for r in results) / 200 == pytest.approx(30, rel=0.08)


def test_holdem_boards_read_the_networks_as_they_play():
    """On HULH the strategy walked at (node, hand) of a board is regret matching of that seat's
    network's outputs for that hand and that round's cards (checked at decisions of every
    round), and the 1,081 live hands are the valid ones."""
    game = load_game("holdem")
    encoder = InfosetEncoder(game)
    nets = random_nets(encoder, 7)
    sampler = RunoutTargets(game, encoder, 100, argmax_fallback=True)
    board = sampler.draw(np.random.default_rng(0), 1)
    tables = sampler.tables(nets, 0, board)
    assert tables.valid[0].sum() == 1081 and np.isfinite(tables.regrets).all()
    assert not np.isin(sampler.hands[tables.valid[0] > 0], board[0]).any()
    rng = np.random.default_rng(4)
    for rnd in range(4):
        for d in rng.choice(np.flatnonzero(sampler.rounds == rnd), 3):
            node = int(sampler.subtree.decision_nodes[d])
            h = rng.choice(np.flatnonzero(tables.valid[0]))
            cards = np.full(encoder.num_card_slots, -1, dtype=np.int64)
            shown = np.concatenate([sampler.hands[h], board[0][: game.board_cards_through(rnd)]])
            cards[: len(shown)] = shown
            net = nets[int(sampler.actors[d])]
            with torch.no_grad():
                outputs = net(net.cards_seen(torch.from_numpy(cards[None])), torch.from_numpy(encoder.bets[[node]]))
            legal = torch.from_numpy(encoder.legal[[node]])
            expected = regret_matching(outputs, legal, True)[0].numpy()
            np.testing.assert_allclose(tables.strategies[0][d, h], expected, atol=2e-5)


def test_board_targets_need_two_hole_cards(tmp_path):
    with pytest.raises(ConfigError, match="two hole cards"):
        DeepCFRTrainer.new(DeepCFRConfig(game="leduc", targets="board", iterations=1, threads=1), tmp_path / "run",
                           progress=False)  # fmt: skip
