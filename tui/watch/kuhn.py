"""Kuhn poker's Nash equilibria, the dashed targets of the convergence panel.

Kuhn (1950) found every equilibrium: the first player bets the lowest card with some
probability ``alpha`` in [0, 1/3], never bets the middle card, bets the highest with ``3 alpha``,
and after checking and facing a bet calls with the middle card with ``alpha + 1/3`` (folding the
lowest, calling the highest); the second player's strategy is unique: after a check it bets the
highest card, checks the middle one and bluffs the lowest with 1/3; facing a bet it calls the
highest, calls the middle card with 1/3 and folds the lowest. The game's value for the first
player is -1/18 for every ``alpha``.

ACPC's Kuhn (``kuhn.limit.2p``) deals Q < K < A of one suit; an infoset key is
``<card>s||<betting>``. :data:`TARGETS` gives, per key, the action whose probability is plotted
(``r`` = bet where a bet is possible, ``c`` = call when facing one) and its equilibrium
probability as a function of ``alpha``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bot.agents.infosets import InfosetSpace

ALPHA_MAX = 1.0 / 3.0

#: key -> (plotted action letter, equilibrium probability of that action given alpha).
TARGETS: dict[str, tuple[str, Callable[[float], float]]] = {
    "Qs||": ("r", lambda a: a),
    "Ks||": ("r", lambda a: 0.0),
    "As||": ("r", lambda a: 3 * a),
    "Qs||c": ("r", lambda a: 1 / 3),
    "Ks||c": ("r", lambda a: 0.0),
    "As||c": ("r", lambda a: 1.0),
    "Qs||r": ("c", lambda a: 0.0),
    "Ks||r": ("c", lambda a: 1 / 3),
    "As||r": ("c", lambda a: 1.0),
    "Qs||cr": ("c", lambda a: 0.0),
    "Ks||cr": ("c", lambda a: a + 1 / 3),
    "As||cr": ("c", lambda a: 1.0),
}
ACTION_COLUMN = {"f": 0, "c": 1, "r": 2}


def is_kuhn(space: InfosetSpace) -> bool:
    return set(space.keys) == set(TARGETS)


def alpha_of(strategy: np.ndarray, space: InfosetSpace) -> float:
    """The family member nearest a strategy: its lowest-card bet probability, clipped to [0, 1/3]."""
    return float(np.clip(strategy[space.index("Qs||"), ACTION_COLUMN["r"]], 0.0, ALPHA_MAX))


def plotted(strategy: np.ndarray, space: InfosetSpace) -> dict[str, float]:
    """Per key, the probability of its plotted action (bet, or call when facing a bet)."""
    return {key: float(strategy[space.index(key), ACTION_COLUMN[action]]) for key, (action, _) in TARGETS.items()}


def target_range(key: str) -> tuple[float, float]:
    """The equilibrium probabilities of ``key``'s plotted action over the whole family."""
    rule = TARGETS[key][1]
    ends = (rule(0.0), rule(ALPHA_MAX))
    return min(ends), max(ends)


def equilibrium(space: InfosetSpace, alpha: float) -> np.ndarray:
    """The family member ``alpha`` as a strategy array ``[12, 3]`` (for the tests)."""
    strategy = np.zeros((space.num_infosets, 3))
    for key, (action, rule) in TARGETS.items():
        row = space.index(key)
        other = "c" if action == "r" else "f"
        strategy[row, ACTION_COLUMN[action]] = rule(alpha)
        strategy[row, ACTION_COLUMN[other]] = 1.0 - rule(alpha)
    return strategy
