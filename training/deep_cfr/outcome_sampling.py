"""Batched outcome-sampling trajectories with epsilon exploration and optional history-action
baselines (OS-SD-CFR and DREAM; Steinberger, Lerer & Brown 2020, sec. 4.2-5.2).

One call plays ``n`` trajectories of one traverser ``i`` together. Deals are sampled up front
(chance is sampled once per trajectory, with its true probabilities, so it needs no correction
and no baseline: DREAM is model-free and keeps baselines for player actions only). The
trajectories then advance level by level through the compiled betting tree, one row per live
trajectory, with one strategy call per acting player and one baseline call per level: at the
traverser's nodes the action is drawn from the sampling policy of eq. 3,
``xi(a) = epsilon / |A| + (1 - epsilon) sigma(a)``, at the opponent's from ``sigma``.

A backward pass along each trajectory forms the baseline-adjusted sampled values of eqs. 4-7
(VR-MCCFR, Schmid et al. 2019; Davis, Schmid & Bowling 2019): at a node ``h`` where ``a*`` was
sampled with probability ``q(a*)`` (``xi`` at the traverser's nodes, ``sigma`` at the
opponent's) and led to ``h'``,

    v~(h, a) = b(h, a) + [a = a*] (v~(h') - b(h, a)) / q(a*),      v~(h) = sum_a sigma(a) v~(h, a),

with ``v~(z)`` the traverser's payoff at the terminal ``z``. With ``b = 0`` this is plain outcome
sampling (OS-SD-CFR); DREAM's ``b`` is its learned Q (:mod:`training.deep_cfr.q_baseline`). Either way
``v~`` is an unbiased estimate of the values under ``sigma`` (any fixed baseline cancels in
expectation), and the better ``b`` predicts ``v~(h')`` the smaller its variance.

Memory inserts (sec. 5.1): at every traverser node the sampled advantages
``d~(I, a) = v~(h, a) - v~(h)`` (0 on illegal actions) with the importance weight
``1 / x_i^xi(I)``, the inverse of the traverser's own sampling reach: a history is reached with
probability ``x_i^xi(h) pi_-i(h) P(chance)``, so the weighted sample's expectation is the exact
counterfactual regret ``sum_{h in I} pi_-i(h) P(chance) (v(h, a) - v(h))`` that an external-
sampling traversal's regret sample has (tested on Kuhn). Every step ``(h, a*, h')`` is also
returned as a transition for the baseline's expected-SARSA buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bot.agents.encoding import InfosetEncoder
from protocol.betting_tree import DECISION
from training.deep_cfr.traversal import Deals, StrategyFn, sample_actions, terminal_payoff

#: ``baseline(nodes [n], deal rows [n]) -> b(h, a) [n, 3]``: the traverser's value estimate of
#: each action at the histories (node, deal); zero on illegal actions is not required.
BaselineFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class OutcomeSamplingResult:
    """Advantage rows (``node``, ``cards``, ``target``, ``weight``), the trajectories' steps, and
    counts for metrics."""

    advantage: dict[str, np.ndarray]
    transitions: dict[str, np.ndarray]
    """One row per step: ``deal`` (row of the batch's deals), ``node``, ``action``, ``next_node``."""
    infosets_evaluated: int
    root_value: np.ndarray
    """The traverser's sampled value ``v~(root)`` of each trajectory (float64 ``[n]``)."""


def exploration_policy(sigma: np.ndarray, legal: np.ndarray, epsilon: float) -> np.ndarray:
    """The traverser's sampling policy ``xi = epsilon * uniform + (1 - epsilon) * sigma`` (eq. 3)."""
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return epsilon * uniform + (1.0 - epsilon) * sigma


def sample_trajectories(encoder: InfosetEncoder, deals: Deals, traverser: int, strategy: StrategyFn,
                        rng: np.random.Generator, epsilon: float,
                        baseline: BaselineFn | None = None) -> OutcomeSamplingResult:
    """Outcome-sampling trajectories of ``traverser``, one per deal (see the module docstring)."""
    if not 0.0 < epsilon <= 1.0:
        raise ValueError(f"outcome sampling needs exploration 0 < epsilon <= 1, got {epsilon}")
    tree = encoder.tree
    n = len(deals)
    trajectory = np.arange(n, dtype=np.int64)  # live trajectories (rows of the batch)
    node = np.zeros(n, dtype=np.int64)
    reach = np.ones(n, dtype=np.float64)  # the traverser's sampling reach x_i^xi(h)
    terminal_value = np.zeros(n, dtype=np.float64)
    levels: list[dict[str, np.ndarray]] = []
    evaluated = 0
    while len(trajectory):
        ended = tree.kind[node] != DECISION
        if ended.any():
            terminal_value[trajectory[ended]] = terminal_payoff(encoder, node[ended], deals, trajectory[ended], traverser)
            trajectory, node, reach = trajectory[~ended], node[~ended], reach[~ended]
            if not len(trajectory):
                break
        legal = tree.legal[node]
        sigma = np.zeros((len(node), 3), dtype=np.float64)
        sampling = np.zeros((len(node), 3), dtype=np.float64)
        cards = np.zeros((len(node), encoder.num_card_slots), dtype=np.int8)
        actor = tree.actor[node].astype(np.int64)
        for player in (0, 1):
            rows = np.flatnonzero(actor == player)
            if not len(rows):
                continue
            rnd = tree.round[node[rows]].astype(np.int64)
            deal = trajectory[rows]
            cards[rows] = encoder.card_slots(deals.holes[deal], deals.board[deal], np.full(len(rows), player), rnd)
            sigma[rows] = strategy(player, node[rows], cards[rows])
            sampling[rows] = (exploration_policy(sigma[rows], legal[rows], epsilon) if player == traverser
                              else sigma[rows])
            evaluated += len(rows)
        action = sample_actions(sampling, rng)
        picked = sampling[np.arange(len(node)), action]
        b = np.zeros((len(node), 3)) if baseline is None else np.where(legal, baseline(node, trajectory), 0.0)
        mine = actor == traverser
        levels.append({"trajectory": trajectory, "node": node, "action": action, "picked": picked, "sigma": sigma,
                       "baseline": b, "traverser": mine, "reach": reach, "cards": cards})
        reach = np.where(mine, reach * picked, reach)
        node = tree.child[node, action].astype(np.int64)

    # backward pass (eqs. 4-7): each level's rows are completed by their trajectory's next value
    value = terminal_value.copy()  # v~ of each trajectory's node one level below the current
    advantage_parts: list[dict[str, np.ndarray]] = []
    steps: list[dict[str, np.ndarray]] = []
    for index in range(len(levels) - 1, -1, -1):
        level = levels[index]
        rows = np.arange(len(level["node"]))
        below = value[level["trajectory"]]
        action_values = level["baseline"].copy()
        chosen = level["action"]
        action_values[rows, chosen] += (below - level["baseline"][rows, chosen]) / level["picked"]
        action_values = np.where(tree.legal[level["node"]], action_values, 0.0)
        node_value = (level["sigma"] * action_values).sum(axis=1)
        value[level["trajectory"]] = node_value
        mine = level["traverser"]
        advantage_parts.append({
            "node": level["node"][mine].astype(np.int32),
            "cards": level["cards"][mine],
            "target": np.where(tree.legal[level["node"][mine]], action_values[mine] - node_value[mine, None], 0.0)
            .astype(np.float32),
            "weight": (1.0 / level["reach"][mine]).astype(np.float32),
        })
        steps.append({"deal": level["trajectory"], "node": level["node"].astype(np.int32),
                      "action": chosen.astype(np.int8),
                      "next_node": tree.child[level["node"], chosen].astype(np.int32)})
    return OutcomeSamplingResult(_concatenate(advantage_parts), _concatenate(steps), evaluated, value)


def _concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Field-wise concatenation of the levels' rows (the root level always exists)."""
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
