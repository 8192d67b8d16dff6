"""Batched external-sampling traversals: sampled regrets are unbiased estimates of the exact
counterfactual regrets (Brown et al. 2019, sec. 4 / Lanctot et al. 2009), checked on Kuhn."""

from __future__ import annotations

import numpy as np
import pytest

from bot.agents.encoding import InfosetEncoder
from protocol.betting_tree import DECISION, FOLD_END
from protocol.evaluator import hand_strength
from protocol.gamedef import load_game
from training.deep_cfr.traversal import deal_batch, terminal_payoff, traverse

GAME = load_game("kuhn")
ENC = InfosetEncoder(GAME)
TREE = ENC.tree


def random_profile(seed: int) -> dict[tuple[int, int], np.ndarray]:
    """A fixed random strategy per Kuhn infoset (card, node)."""
    rng = np.random.default_rng(seed)
    profile = {}
    for node in TREE.decision_ids:
        for card in GAME.deck:
            p = rng.random(3) * TREE.legal[node]
            profile[(card, int(node))] = p / p.sum()
    return profile


def strategy_fn(profile):
    def strategy(player, nodes, cards):
        return np.array([profile[(int(c[0]), int(n))] for n, c in zip(nodes, cards, strict=True)])

    return strategy


def terminal_value(node: int, holes, traverser: int) -> float:
    """The traverser's payoff at terminal ``node`` of a Kuhn deal ``holes`` (one card each)."""
    spent = TREE.spent[node]
    if TREE.kind[node] == FOLD_END:
        return -spent[traverser] if TREE.folder[node] == traverser else spent[1 - traverser]
    mine, theirs = hand_strength([holes[traverser]]), hand_strength([holes[1 - traverser]])
    return spent[1 - traverser] if mine > theirs else -spent[traverser]


def exact_regrets(profile, traverser: int) -> tuple[dict[tuple[int, int], np.ndarray], float]:
    """r(I, a) = sum over deals h in I of P(deal) pi_-i(h) (v(h a) - v(h)), by brute force, and
    the traverser's expected payoff."""
    deals = [(a, b) for a in GAME.deck for b in GAME.deck if a != b]
    regrets: dict[tuple[int, int], np.ndarray] = {}

    def value(node: int, holes, reach_other: float) -> float:
        if TREE.kind[node] != DECISION:
            return terminal_value(node, holes, traverser)
        actor = int(TREE.actor[node])
        sigma = profile[(holes[actor], node)]
        children = {a: int(TREE.child[node, a]) for a in range(3) if TREE.legal[node, a]}
        if actor != traverser:
            return sum(sigma[a] * value(c, holes, reach_other * sigma[a]) for a, c in children.items())
        action_values = np.zeros(3)
        for a, c in children.items():
            action_values[a] = value(c, holes, reach_other)
        v = float(sigma @ action_values)
        key = (holes[traverser], node)
        regret = np.where(TREE.legal[node], action_values - v, 0.0)
        regrets[key] = regrets.get(key, np.zeros(3)) + reach_other * regret / len(deals)
        return v

    root = sum(value(0, holes, 1.0) for holes in deals) / len(deals)
    return regrets, root


@pytest.mark.parametrize("traverser", [0, 1])
def test_sampled_regrets_match_exact_counterfactual_regrets(traverser: int) -> None:
    profile = random_profile(7)
    exact, _ = exact_regrets(profile, traverser)
    rng = np.random.default_rng(11)
    n, batches = 40_000, 5
    sums: dict[tuple[int, int], np.ndarray] = {k: np.zeros(3) for k in exact}
    squares: dict[tuple[int, int], np.ndarray] = {k: np.zeros(3) for k in exact}
    for _ in range(batches):
        result = traverse(ENC, deal_batch(ENC, n, rng), traverser, strategy_fn(profile), rng)
        adv = result.advantage
        for node, cards, target in zip(adv["node"], adv["cards"], adv["target"], strict=True):
            key = (int(cards[0]), int(node))
            sums[key] += target
            squares[key] += target.astype(np.float64) ** 2
    total = n * batches
    for key, r in exact.items():
        mean = sums[key] / total
        stderr = np.sqrt(np.maximum(squares[key] / total - mean**2, 1e-12) / total)
        assert np.all(np.abs(mean - r) <= 5 * stderr + 1e-9), (key, mean, r, stderr)
    # the test has power: the regrets are not all tiny
    assert max(np.abs(r).max() for r in exact.values()) > 0.05


def test_strategy_samples_are_the_opponents_strategy() -> None:
    profile = random_profile(3)
    rng = np.random.default_rng(0)
    result = traverse(ENC, deal_batch(ENC, 2000, rng), 0, strategy_fn(profile), rng)
    strat = result.strategy
    assert len(strat["node"]) > 0
    assert (TREE.actor[strat["node"]] == 1).all()
    for node, cards, target in zip(strat["node"][:50], strat["cards"][:50], strat["target"][:50], strict=True):
        assert np.allclose(target, profile[(int(cards[0]), int(node))])
    adv = result.advantage
    assert (TREE.actor[adv["node"]] == 0).all()
    assert (adv["target"][~TREE.legal[adv["node"]]] == 0).all()  # illegal actions carry no regret


def test_root_values_are_unbiased_for_the_profile_value() -> None:
    """The traverser's sampled root value averages to its exact expected payoff."""
    profile = random_profile(9)
    _, expected = exact_regrets(profile, 0)
    rng = np.random.default_rng(2)
    roots = traverse(ENC, deal_batch(ENC, 200_000, rng), 0, strategy_fn(profile), rng).root_value
    assert abs(roots.mean() - expected) < 5 * roots.std() / np.sqrt(len(roots))
    assert abs(expected) > 0.01  # a non-trivial value, so the check has power


def test_terminal_payoffs_follow_the_rules() -> None:
    rng = np.random.default_rng(4)
    deals = deal_batch(ENC, 64, rng)
    for history in ("cc", "rc", "crc", "rf", "crf"):
        node = TREE.node_of[history]
        rows = np.arange(len(deals))
        pay = terminal_payoff(ENC, np.full(len(rows), node), deals, rows, 0)
        for row in rows:
            holes = deals.holes[row]
            if history.endswith("f"):
                folder = TREE.folder[node]
                expected = -TREE.spent[node, 0] if folder == 0 else TREE.spent[node, 1]
            else:
                win = hand_strength(holes[0].tolist()) > hand_strength(holes[1].tolist())
                expected = TREE.spent[node, 1] if win else -TREE.spent[node, 0]
            assert pay[row] == expected
