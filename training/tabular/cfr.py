"""Full-width tabular CFR, CFR+, Linear CFR and DCFR on the public tree.

One iteration updates the players in turn (alternating updates): for player p, the walk of
:class:`bot.evaluation.best_response.PublicTree` carries both players' reach under the current strategies
down and brings p's counterfactual action values back up at every one of p's nodes as
``[boards, hands, 3]`` arrays; the ``on_decision`` hook turns them into regrets for every
infoset of that node at once. There is no second tree walker.

Variants (all regret matching, Zinkevich et al. 2007, eq. 5-8):

* ``cfr``: accumulate regrets, uniform average of current strategies.
* ``cfr+``: regrets floored at 0 after every update, linear average (weight t)
  (Tammelin et al. 2015, "Solving Heads-up Limit Texas Hold'em", sec. 3).
* ``linear-cfr``: DCFR(1, 1, 1): iteration t's regrets and strategy weighted by t
  (Brown & Sandholm 2019, "Solving Imperfect-Information Games via Discounted Regret
  Minimization", sec. 3).
* ``dcfr``: after iteration t, positive regrets x t^a/(t^a+1), negative regrets x t^b/(t^b+1),
  strategy sum x (t/(t+1))^g; the paper's default (a, b, g) = (1.5, 0, 2).

When all regrets of an infoset are non-positive, the current strategy is uniform over the legal
actions; an infoset never reached by its owner has a uniform average strategy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.agents.infosets import normalise_average
from bot.evaluation.best_response import PublicTree, public_tree_for
from bot.run_files import CFR_VARIANTS
from protocol.gamedef import Game

#: Algorithms this module runs (``pokerbot solve --algo``; the list is bot.run_files').
ALGORITHMS = CFR_VARIANTS
#: DCFR's discounts, the paper's recommended (alpha, beta, gamma) = (1.5, 0, 2) (Brown &
#: Sandholm 2019, "Solving Imperfect-Information Games via Discounted Regret Minimization"):
#: the defaults of every DCFR here (tabular, the ``pokerbot solve`` config, the FHP solve).
DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA = 1.5, 0.0, 2.0


@dataclass(frozen=True)
class CFRConfig:
    """Settings of one full-width CFR run."""

    algo: str = "cfr+"
    """One of ``cfr``, ``cfr+``, ``linear-cfr``, ``dcfr``."""
    alpha: float = DCFR_ALPHA
    """DCFR: positive regrets are discounted by t^alpha / (t^alpha + 1)."""
    beta: float = DCFR_BETA
    """DCFR: negative regrets are discounted by t^beta / (t^beta + 1)."""
    gamma: float = DCFR_GAMMA
    """DCFR: the strategy sum is discounted by (t / (t + 1))^gamma."""

    def __post_init__(self) -> None:
        if self.algo not in ALGORITHMS:
            raise ValueError(f"unknown CFR variant {self.algo!r}; known: {', '.join(ALGORITHMS)}")

    @property
    def discounts(self) -> tuple[float, float, float] | None:
        """(alpha, beta, gamma) for the discounted variants, None for cfr / cfr+."""
        if self.algo == "linear-cfr":
            return (1.0, 1.0, 1.0)
        if self.algo == "dcfr":
            return (self.alpha, self.beta, self.gamma)
        return None


def regret_matching(regrets: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Current strategy ``[..., 3]`` from regrets: positive part normalised, uniform over the
    legal actions where no regret is positive."""
    positive = np.maximum(regrets, 0.0) * legal
    total = positive.sum(axis=-1, keepdims=True)
    uniform = legal / legal.sum()
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def restore_tables(solver: object, state: dict[str, np.ndarray], names: tuple[str, ...]) -> None:
    """Copy checkpointed tables into a solver's arrays in place, and its iteration count."""
    for name in names:
        target = getattr(solver, name)
        if state[name].shape != target.shape:
            raise ValueError(f"checkpoint table {name!r} has shape {state[name].shape}, expected {target.shape}")
        target[...] = state[name]
    solver.iteration = int(state["iteration"])


class TabularCFR:
    """Regret and strategy-sum tables in the slot layout of :class:`bot.agents.infosets.InfosetSpace`."""

    def __init__(self, game: Game, config: CFRConfig = CFRConfig()) -> None:
        self.config = config
        self.public: PublicTree = public_tree_for(game)
        self.space = self.public.space
        slots = self.space.num_slots
        self.regrets = np.zeros((slots, 3))
        self.strategy_sum = np.zeros((slots, 3))
        self.current = self.space.to_dense(self.space.uniform_strategy())
        self.iteration = 0
        # per-node views [boards, hands, 3] of the three tables, made once
        self._regret_blocks = self.space.node_blocks(self.regrets)
        self._current_blocks = self.space.node_blocks(self.current)
        self._sum_blocks = self.space.node_blocks(self.strategy_sum)

    def iterate(self) -> None:
        """One iteration: update player 0, then player 1 against player 0's new strategy."""
        self.iteration += 1
        for player in (0, 1):
            self._update(player)

    def run(self, iterations: int) -> None:
        """Run ``iterations`` more iterations (same interface as the MCCFR solver)."""
        for _ in range(iterations):
            self.iterate()

    def _update(self, player: int) -> None:
        t = self.iteration
        config, space, public = self.config, self.space, self.public
        discounts = config.discounts
        average_weight = float(t) if config.algo == "cfr+" else 1.0

        def update(node: int, boards: slice, own_reach: np.ndarray, action_values: np.ndarray,
                   value: np.ndarray) -> None:
            legal = space.tree.legal[node]
            regrets = self._regret_blocks[node][boards]
            current = self._current_blocks[node][boards]
            strategy_sum = self._sum_blocks[node][boards]
            strategy_sum += (average_weight * own_reach)[..., None] * current
            regrets += (action_values - value[..., None]) * legal
            if config.algo == "cfr+":
                np.maximum(regrets, 0.0, out=regrets)
            elif discounts is not None:
                alpha, beta, gamma = discounts
                positive = t**alpha / (t**alpha + 1.0)
                negative = t**beta / (t**beta + 1.0)
                regrets *= np.where(regrets > 0, positive, negative)
                strategy_sum *= (t / (t + 1.0)) ** gamma
            current[...] = regret_matching(regrets, legal)

        public.counterfactual_values(player, self._current_blocks, on_decision=update)

    def state(self) -> dict[str, np.ndarray]:
        """Everything needed to continue the run (for checkpoints)."""
        return {
            "regrets": self.regrets, "strategy_sum": self.strategy_sum,
            "current": self.current, "iteration": np.array(self.iteration),
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Continue from :meth:`state` (copied in place: the node views stay valid)."""
        restore_tables(self, state, ("regrets", "strategy_sum", "current"))

    def average_strategy(self) -> np.ndarray:
        """The average strategy ``[num_infosets, 3]`` (the profile that converges to Nash)."""
        return normalise_average(self.space.from_dense(self.strategy_sum), self.space.legal)

    def current_strategy(self) -> np.ndarray:
        """This iteration's regret-matching strategy ``[num_infosets, 3]`` (not convergent)."""
        return self.space.from_dense(self.current)
