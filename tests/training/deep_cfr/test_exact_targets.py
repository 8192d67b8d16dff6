"""The exact targets of value networks on a flop game: full-width counterfactual regrets of given
profiles, checked against the full-width flop CFR solver's own first iteration."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from bot.agents.encoding import InfosetEncoder
from bot.flop.best_response import FlopPolicy
from bot.flop.game import match_strategy
from tests.training.flop.test_flop_solver import TINY_FHP
from training.deep_cfr.exact_targets import ExactRegrets, regret_matching
from training.flop.cfr import FlopCFR, FlopCFRConfig


def policy_of(fg, pre_table: np.ndarray, flop_table: np.ndarray) -> FlopPolicy:
    """Regret matching of both tables as a profile."""
    pre = np.empty(pre_table.shape)
    match_strategy(pre_table.astype(np.float64), fg.preflop.legal, pre)
    flop = np.empty(flop_table.shape, np.float32)
    for c in range(len(flop)):
        strategy = np.empty(flop_table.shape[1:])
        match_strategy(flop_table[c].astype(np.float64), fg.flop.legal, strategy)
        flop[c] = strategy
    return FlopPolicy(pre, lambda lo, hi: flop[lo:hi], True)


def test_regrets_of_a_profile_equal_the_solvers_first_iteration():
    """DCFR's first iteration discounts nothing, so after it the solver's regret tables hold
    player 0's instantaneous regrets under uniform play and player 1's under player 0's updated
    strategy and its own uniform one: exactly what ExactRegrets adds for those two profiles."""
    solver = FlopCFR(TINY_FHP, FlopCFRConfig("dcfr"), chunk=7)
    solver.iterate()
    fg = solver.fg
    targets = ExactRegrets(fg, chunk=5)
    zeros_pre, zeros_flop = np.zeros_like(solver.pre_regrets), np.zeros_like(solver.regrets)
    targets.add(2.0, 0, policy_of(fg, zeros_pre, zeros_flop))
    pre_rows, flop_rows = targets.pre_actor == 0, targets.flop_actor == 0
    after_p0_pre, after_p0_flop = zeros_pre.copy(), zeros_flop.copy()  # player 0 updated, player 1 still at 0
    after_p0_pre[pre_rows], after_p0_flop[:, flop_rows] = solver.pre_regrets[pre_rows], solver.regrets[:, flop_rows]
    targets.add(1.0, 1, policy_of(fg, after_p0_pre, after_p0_flop))
    valid = fg.valid[:, None, :, None] > 0
    expected_flop = np.where(flop_rows[None, :, None, None], 2.0, 1.0) * solver.regrets
    assert np.abs(np.where(valid, targets.flop - expected_flop, 0.0)).max() < 1e-4 * np.abs(expected_flop).max()
    expected_pre = np.where(pre_rows[:, None, None], 2.0, 1.0) * solver.pre_regrets
    assert targets.preflop == pytest.approx(expected_pre, abs=1e-6 * np.abs(expected_pre).max())
    assert targets.pre_density[pre_rows].min() > 0  # every preflop infoset of player 0 is sampled


def test_fit_error_is_zero_for_the_exact_strategy_and_two_for_its_opposite():
    solver = FlopCFR(TINY_FHP, FlopCFRConfig("dcfr"), chunk=7)
    fg = solver.fg
    targets = ExactRegrets(fg, chunk=5)
    uniform = policy_of(fg, np.zeros_like(solver.pre_regrets), np.zeros_like(solver.regrets))
    targets.add(1.0, 0, uniform)
    exact = FlopPolicy(regret_matching(targets.preflop, fg.preflop.legal),
                       lambda lo, hi: regret_matching(targets.flop[lo:hi], fg.flop.legal), True)
    assert targets.fit_error(0, exact)["all_l1"] == pytest.approx(0.0, abs=1e-9)
    error = targets.fit_error(0, uniform)
    assert 0 < error["preflop_l1"] <= 2 and 0 < error["flop_l1"] <= 2
    assert 0 < error["all_argmax_differs"] <= 1


def test_density_is_the_opponents_reach_over_hands_disjoint_from_the_hand():
    """Every opponent hand reaches the game's first decision with probability 1, so the first
    actor's density there is the weight times the opponent hands sharing no card with the hand."""
    fg = FlopCFR(TINY_FHP, FlopCFRConfig("dcfr"), chunk=7).fg
    targets = ExactRegrets(fg, chunk=5)
    first = int(np.argmin(fg.preflop.decision_nodes))
    actor = int(targets.pre_actor[first])
    targets.add(3.0, actor, policy_of(fg, np.zeros((fg.preflop.num_decisions, fg.num_hands, 3)),
                                      np.zeros((fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3))))
    deck = len(fg.game.deck)
    assert targets.pre_density[first] == pytest.approx(np.full(fg.num_hands, 3.0 * comb(deck - 2, 2)))


def test_oracle_rows_carry_each_infosets_exact_mean_target_in_the_board_targets_proportions():
    fg = FlopCFR(TINY_FHP, FlopCFRConfig("dcfr"), chunk=7).fg
    targets = ExactRegrets(fg, chunk=5)
    rng = np.random.default_rng(0)
    for t in (1, 2):  # two random profiles, so the regrets are not uniform play's
        pre = rng.normal(size=(fg.preflop.num_decisions, fg.num_hands, 3))
        flop = rng.normal(size=(fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3))
        targets.add(float(t), 0, policy_of(fg, pre, flop))
    encoder = InfosetEncoder(fg.game)
    rows = targets.oracle_rows(0, 40_000, encoder, 7, np.random.default_rng(1))
    assert (rows["iteration"] == 7).all()
    hand_of = {tuple(h): i for i, h in enumerate(fg.hands.tolist())}
    flop_of = {tuple(f): i for i, f in enumerate(fg.flops.tolist())}
    pre_index = {n: d for d, n in enumerate(fg.preflop.decision_nodes.tolist())}
    flop_index = {n: d for d, n in enumerate(fg.flop.decision_nodes.tolist())}
    preflop_rows = 0
    for node, cards, target in zip(rows["node"].tolist(), rows["cards"].tolist(), rows["target"], strict=True):
        h = hand_of[tuple(cards[:2])]
        assert fg.tree.actor[node] == 0
        if node in pre_index:
            d = pre_index[node]
            expected = targets.preflop[d, h] / (targets.pre_density[d, h] * fg.flops_per_deal)
            assert cards[2:] == [-1, -1, -1]
            preflop_rows += 1
        else:
            f, d = flop_of[tuple(cards[2:])], flop_index[node]
            expected = targets.flop[f, d, h] / targets.flop_density[f, d, h]
            assert fg.valid[f, h] > 0
        assert target == pytest.approx(expected, rel=1e-4, abs=1e-6)
    # a board keeps preflop rows by mass over C(deck - 2, 2) opponents, from the boards the hand
    # misses; flop rows by mass over C(deck - 5, 2), a flop by its raw flops
    deck, rows_of_p0 = len(fg.game.deck), targets.pre_actor == 0
    pre_mass = targets.pre_density[rows_of_p0].sum() * comb(deck - 2, 3) / fg.weights.sum() / comb(deck - 2, 2)
    flop_mass = (targets.flop_density[:, targets.flop_actor == 0].sum(axis=(1, 2)) * fg.weights).sum() / (
        fg.weights.sum() * comb(deck - 5, 2))
    share = pre_mass / (pre_mass + flop_mass)
    assert abs(preflop_rows / 40_000 - share) < 4 * np.sqrt(share * (1 - share) / 40_000)
