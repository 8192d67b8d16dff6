"""Batched outcome sampling (OS-SD-CFR / DREAM, Steinberger et al. 2020, eqs. 3-8) on Kuhn: the
importance-weighted sampled advantages are unbiased estimates of the exact counterfactual
regrets, with no baseline, a wrong baseline and the exact Q baseline, and the exact baseline
cuts their variance."""

from __future__ import annotations

import numpy as np
import pytest

from protocol.betting_tree import DECISION
from tests.training.deep_cfr.test_deep_cfr_traversal import (
    ENC,
    GAME,
    TREE,
    exact_regrets,
    random_profile,
    strategy_fn,
    terminal_value,
)
from training.deep_cfr.outcome_sampling import exploration_policy, sample_trajectories
from training.deep_cfr.traversal import deal_batch


def exact_q(profile, traverser: int) -> dict[tuple[int, int, int], np.ndarray]:
    """Q(h, a): the traverser's expected payoff after action ``a`` at history (hole 0, hole 1,
    node) when both players then follow ``profile``, by brute force."""
    table: dict[tuple[int, int, int], np.ndarray] = {}

    def value(node: int, holes: tuple[int, int]) -> float:
        if TREE.kind[node] != DECISION:
            return terminal_value(node, holes, traverser)
        q = np.array([value(int(TREE.child[node, a]), holes) if TREE.legal[node, a] else 0.0 for a in range(3)])
        table[(*holes, node)] = q
        return float(profile[(holes[int(TREE.actor[node])], node)] @ q)

    for a in GAME.deck:
        for b in GAME.deck:
            if a != b:
                value(0, (a, b))
    return table


def baseline_fn(table, deals):
    def baseline(nodes, rows):
        return np.array([table[(int(deals.holes[r, 0, 0]), int(deals.holes[r, 1, 0]), int(n))]
                         for n, r in zip(nodes, rows, strict=True)])

    return baseline


def weighted_advantage_moments(profile, traverser, baseline_table, seed, n=40_000, batches=4, epsilon=0.6):
    """Per infoset (card, node): the mean and the second moment per trajectory of the weighted
    sampled advantage ``d~ / x_i^xi`` (0 where the trajectory does not reach the infoset)."""
    rng = np.random.default_rng(seed)
    sums: dict[tuple[int, int], np.ndarray] = {}
    squares: dict[tuple[int, int], np.ndarray] = {}
    for _ in range(batches):
        deals = deal_batch(ENC, n, rng)
        baseline = None if baseline_table is None else baseline_fn(baseline_table, deals)
        result = sample_trajectories(ENC, deals, traverser, strategy_fn(profile), rng, epsilon, baseline)
        adv = result.advantage
        weighted = adv["target"].astype(np.float64) * adv["weight"][:, None]
        for node, cards, x in zip(adv["node"], adv["cards"], weighted, strict=True):
            key = (int(cards[0]), int(node))
            sums[key] = sums.get(key, np.zeros(3)) + x
            squares[key] = squares.get(key, np.zeros(3)) + x**2
    total = n * batches
    return {k: v / total for k, v in sums.items()}, {k: v / total for k, v in squares.items()}, total


def assert_unbiased(mean, second, total, exact):
    for key, r in exact.items():
        stderr = np.sqrt(np.maximum(second[key] - mean[key] ** 2, 1e-12) / total)
        assert np.all(np.abs(mean[key] - r) <= 5 * stderr + 1e-9), (key, mean[key], r, stderr)


@pytest.mark.parametrize("traverser", [0, 1])
def test_weighted_os_advantages_match_exact_counterfactual_regrets(traverser: int) -> None:
    profile = random_profile(7)
    exact, _ = exact_regrets(profile, traverser)
    mean, second, total = weighted_advantage_moments(profile, traverser, None, seed=11)
    assert set(mean) == set(exact)
    assert_unbiased(mean, second, total, exact)
    assert max(np.abs(r).max() for r in exact.values()) > 0.05  # the test has power


def test_any_baseline_keeps_the_estimate_unbiased() -> None:
    """A wrong baseline (random numbers) cancels in expectation (eq. 4)."""
    profile = random_profile(5)
    exact, _ = exact_regrets(profile, 0)
    rng = np.random.default_rng(1)
    wrong = {key: rng.normal(0, 2, 3) for key in exact_q(profile, 0)}
    mean, second, total = weighted_advantage_moments(profile, 0, wrong, seed=3)
    assert_unbiased(mean, second, total, exact)


def test_exact_baseline_cuts_the_variance() -> None:
    """With the exact Q every action value is exact given the history: the only noise left is
    which histories are sampled and their importance weights."""
    profile = random_profile(9)
    exact, _ = exact_regrets(profile, 1)
    plain_mean, plain_second, total = weighted_advantage_moments(profile, 1, None, seed=5)
    q_mean, q_second, _ = weighted_advantage_moments(profile, 1, exact_q(profile, 1), seed=5)
    assert_unbiased(q_mean, q_second, total, exact)
    plain = sum((plain_second[k] - plain_mean[k] ** 2).sum() for k in exact)
    with_q = sum((q_second[k] - q_mean[k] ** 2).sum() for k in exact)
    assert with_q < 0.5 * plain, (with_q, plain)


def test_root_value_is_unbiased_and_exact_with_the_exact_baseline() -> None:
    profile = random_profile(9)
    _, expected = exact_regrets(profile, 0)
    rng = np.random.default_rng(2)
    deals = deal_batch(ENC, 100_000, rng)
    roots = sample_trajectories(ENC, deals, 0, strategy_fn(profile), rng, 0.5).root_value
    assert abs(roots.mean() - expected) < 5 * roots.std() / np.sqrt(len(roots))
    table = exact_q(profile, 0)
    deals = deal_batch(ENC, 2_000, rng)
    roots = sample_trajectories(ENC, deals, 0, strategy_fn(profile), rng, 0.5, baseline_fn(table, deals)).root_value
    per_deal = [float(profile[(int(h[0, 0]), 0)] @ table[(int(h[0, 0]), int(h[1, 0]), 0)]) for h in deals.holes]
    assert np.allclose(roots, per_deal)  # no noise left but the deal


def test_exploration_policy_and_transitions() -> None:
    legal = np.array([[False, True, True], [True, True, True]])
    sigma = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    xi = exploration_policy(sigma, legal, 0.6)
    assert np.allclose(xi, [[0.0, 0.7, 0.3], [0.28, 0.32, 0.40]])
    profile = random_profile(3)
    rng = np.random.default_rng(0)
    deals = deal_batch(ENC, 500, rng)
    result = sample_trajectories(ENC, deals, 0, strategy_fn(profile), rng, 0.6)
    steps = result.transitions
    assert np.array_equal(TREE.child[steps["node"], steps["action"]], steps["next_node"])
    assert TREE.legal[steps["node"], steps["action"]].all()
    assert np.bincount(steps["deal"], minlength=500).min() >= 2  # every Kuhn hand has >= 2 actions
    assert (TREE.actor[result.advantage["node"]] == 0).all()
    assert (result.advantage["weight"] >= 1).all()
    assert (result.advantage["target"][~TREE.legal[result.advantage["node"]]] == 0).all()
