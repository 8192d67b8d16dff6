"""Board targets: the exact regrets over every hand of a sampled flop, summed over all flops,
are the full-width counterfactual regrets; the kept rows follow external sampling's proportions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from bot.errors import ConfigError
from bot.flop.game import FlopGame, leaf_reach, reach_down
from bot.flop.network_policies import network_policy
from tests.training.flop.test_flop_solver import TINY_FHP
from training.deep_cfr.board_targets import MIN_MASS, BoardTargets, RowSink
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.exact_targets import ExactRegrets
from training.deep_cfr.trainer import DeepCFRTrainer
from training.flop.cfr import FlopCFR, FlopCFRConfig


def every_board(fg: FlopGame, nets, player: int, rows_per_board: int = 1000):
    sampler = BoardTargets(fg, InfosetEncoder(TINY_FHP, fg.tree), rows_per_board, argmax_fallback=True)
    return sampler, sampler.boards(nets, player, np.arange(fg.num_flops), sampler.preflop(nets))


def summed_preflop(sampler: BoardTargets, boards) -> np.ndarray:
    """The boards' preflop regrets as the full-width sum over flops: each board stands for all
    the flops its hands can see, so the mean over a hand's flops times C(deck - 4, 3)."""
    fg = sampler.fg
    return sum(b.regrets[0] for b in boards) * fg.flops_per_deal / sampler.flops_per_hand


def test_uniform_boards_are_the_flop_solvers_first_iteration():
    """DCFR's first iteration discounts nothing: player 0's regret tables after it are its
    instantaneous regrets under uniform play, flop by flop and preflop."""
    solver = FlopCFR(TINY_FHP, FlopCFRConfig("dcfr", canonical=False), chunk=7)
    solver.iterate()
    sampler, boards = every_board(solver.fg, (None, None), 0)
    rows = solver.fg.tree.actor[solver.fg.flop.decision_nodes] == 0
    for c, board in enumerate(boards):
        np.testing.assert_allclose(board.regrets[1][rows], solver.regrets[c][rows], rtol=1e-5, atol=1e-3)
    pre_rows = solver.fg.tree.actor[solver.fg.preflop.decision_nodes] == 0
    np.testing.assert_allclose(summed_preflop(sampler, boards)[pre_rows], solver.pre_regrets[pre_rows], rtol=1e-6, atol=1e-3)
    assert np.abs(solver.pre_regrets[pre_rows]).max() > 1.0  # not a comparison of zeros


@pytest.mark.parametrize("player", [0, 1])
def test_network_boards_are_the_exact_regrets_of_the_networks_profile(player):
    """With trained-looking (random) networks on both seats, every board's tables are
    :class:`ExactRegrets`' full-width regrets of the networks' regret-matching profile."""
    fg = FlopGame.build(TINY_FHP, canonical=False)
    encoder = InfosetEncoder(TINY_FHP, fg.tree)
    torch.manual_seed(5)
    nets = tuple(DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, 8).eval() for _ in range(2))
    exact = ExactRegrets(fg, chunk=9)
    exact.add(1.0, player, network_policy(fg, nets, "value"))
    sampler, boards = every_board(fg, nets, player)
    rows = exact.flop_actor == player
    for c, board in enumerate(boards):
        np.testing.assert_allclose(board.regrets[1][rows], exact.flop[c][rows], rtol=1e-4, atol=1e-2)
    # the mass at the player's flop nodes: the opponent's reach over hands disjoint from the hand, by brute force
    policy = network_policy(fg, nets, "value")
    pre_strategy, pre_reach = fg.preflop_reach(np.asarray(policy.preflop, dtype=np.float64))
    disjoint = (fg.hands[:, None, :, None] != fg.hands[None, :, None, :]).all(axis=(2, 3))
    for c in (0, fg.num_flops // 2):
        reach = np.zeros((fg.flop.num_nodes, 2, fg.num_hands))
        reach_down(fg.flop.arrays, policy.flop(c, c + 1)[0], leaf_reach(fg.preflop, pre_reach), fg.valid[c], reach)
        nodes = np.flatnonzero(fg.flop.decision >= 0)
        for n in nodes[fg.flop.actor[nodes] == player]:
            brute = (disjoint @ reach[n, 1 - player]) * fg.valid[c]
            np.testing.assert_allclose(boards[c].mass[1][fg.flop.decision[n]], brute, rtol=1e-6, atol=1e-9)
    pre_rows = exact.pre_actor == player
    np.testing.assert_allclose(summed_preflop(sampler, boards)[pre_rows], exact.preflop[pre_rows], rtol=1e-5, atol=1e-2)


def test_kept_rows_follow_the_opponents_reach():
    """Every candidate row is kept when ``rows_per_board`` exceeds them, its target the regret
    over the mass; with a small ``rows_per_board`` the rows per board average it."""
    fg = FlopGame.build(TINY_FHP, canonical=True)
    encoder = InfosetEncoder(TINY_FHP, fg.tree)
    sampler = BoardTargets(fg, encoder, 10**9, argmax_fallback=True)
    board = sampler.boards((None, None), 0, np.array([3]), sampler.preflop((None, None)))[0]
    advantage, strategy = RowSink(encoder), RowSink(encoder)
    sampler._keep(board, 0, np.random.default_rng(1), advantage, strategy)
    rows, played = advantage.rows(), strategy.rows()
    actors = (fg.tree.actor[fg.preflop.decision_nodes], fg.tree.actor[fg.flop.decision_nodes])
    own = sum(int(((actors[r] == 0)[:, None] & (board.mass[r] > MIN_MASS) & (board.valid > 0)).sum()) for r in (0, 1))
    other = sum(int(((actors[r] == 1)[:, None] & (board.mass[r] > MIN_MASS) & (board.valid > 0)).sum()) for r in (0, 1))
    assert len(rows["node"]) == own > 0 and len(played["node"]) == other > 0
    flop_rows = rows["cards"][:, 2] >= 0
    assert (rows["cards"][flop_rows, 2:5] == fg.flops[3]).all() and (rows["cards"][~flop_rows, 2:] == -1).all()
    d = np.flatnonzero(actors[1] == 0)[0]
    h = np.flatnonzero(board.mass[1][d] > 0)[0]
    match = (rows["node"] == fg.flop.decision_nodes[d]) & (rows["cards"][:, :2] == fg.hands[h]).all(axis=1)
    np.testing.assert_allclose(rows["target"][match][0], board.regrets[1][d, h] / board.mass[1][d, h], rtol=1e-5)
    np.testing.assert_allclose(played["target"].sum(axis=1), 1.0, atol=1e-5)  # strategy rows are distributions
    sampler.rows_per_board = 40
    results = [r for r, _ in sampler.results((None, None), 1, 400, 50, np.random.default_rng(2), False)]
    assert sum(len(r.advantage["node"]) for r in results) / 400 == pytest.approx(40, rel=0.05)
    # one range pass a board: every (decision node, hand) preflop, every live hand on the flop (C(7, 2) of 10 cards)
    per_board = fg.preflop.num_decisions * fg.num_hands + fg.flop.num_decisions * 21
    assert sum(r.infosets_evaluated for r in results) == 400 * per_board


def test_targets_are_sampled_or_board():
    with pytest.raises(ConfigError, match="targets must be"):
        DeepCFRConfig(targets="exact")


def test_traversals_flag_on_a_board_preset_is_refused(tmp_path):
    """``--traversals`` would be ignored by the fhp preset's board targets: a one-line error instead."""
    from click.testing import CliRunner

    from bot.cli import main

    result = CliRunner().invoke(main, ["train", "--game", "fhp", "--algo", "sd-cfr", "--traversals", "100",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code != 0 and "targets = \"sampled\"" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "run").exists()


def test_an_sd_cfr_run_on_board_targets_learns_and_resumes_exactly(tmp_path):
    gamedef = tmp_path / "tiny.game"
    gamedef.write_text(TINY_FHP.to_text())
    settings = dict(game=str(gamedef), targets="board", boards=24, rows_per_board=300, board_batch=8, width=16,
                    sgd_steps=60, batch_size=256, advantage_memory=50_000, threads=1, canonical_suits=True,
                    evaluate_every=1, checkpoint_every=1, lr_schedule="cosine", learning_rate=2e-3,
                    normalize_targets=True)
    whole = DeepCFRTrainer.new(DeepCFRConfig(iterations=4, **settings), tmp_path / "whole", progress=False).train()
    curve = [r["sdcfr_exploitability_mbb"] for r in whole]
    assert curve[-1] < curve[0]
    first = DeepCFRTrainer.new(DeepCFRConfig(iterations=2, **settings), tmp_path / "split", progress=False)
    first.train()
    resumed = DeepCFRTrainer.resume(tmp_path / "split", progress=False)
    resumed.config = DeepCFRConfig(**{**resumed.config.__dict__, "iterations": 4})
    tail = resumed.train()
    assert [r["sdcfr_exploitability_mbb"] for r in tail] == pytest.approx(curve[2:], abs=1e-6)
