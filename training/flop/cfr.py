"""Full-width CFR+ (or DCFR) on flop hold'em, vectorised over hands, one flop at a time.

The losslessly solved FHP: no card abstraction, every infoset of the real game. Each iteration
updates the players in turn (alternating updates). For player p, the preflop strategies give
both players' reach at every preflop line that reaches the flop; then every flop (in parallel,
numba ``prange``) runs one pass of :mod:`bot.flop.game` (reach down, p's counterfactual values
up) and updates p's regrets and strategy sums at its flop nodes for all hands at once; the
flops' root values, weighted and symmetrised (:meth:`bot.flop.game.FlopGame.symmetrize`),
are the preflop leaves' values, and a small preflop pass updates p's preflop rows.

Suit isomorphism: only the canonical flops are solved (FHP: 1,755 of 22,100), each weighted by
its orbit size. Preflop values are averaged within each hand's suit class before the preflop
update, which is the exact counterfactual value when the strategies are suit-invariant; CFR
keeps them so (every update is equivariant under suit renaming), so the canonical solve is the
full-game solve (tested against the all-flops path and tabular CFR+ on a reduced deck).

Variants (Zinkevich et al. 2007 regret matching throughout):

* ``cfr+``: regrets floored at 0 after every update (Tammelin et al. 2015, "Solving Heads-up
  Limit Texas Hold'em", sec. 3); the average weights iteration t by t^k (``average_exponent``:
  1 linear as in the paper, 2 quadratic);
* ``dcfr``: positive regrets x t^a/(t^a+1), negative x t^b/(t^b+1), strategy sum weights
  (t/(t+1))^g after each iteration (Brown & Sandholm 2019, "Solving Imperfect-Information Games
  via Discounted Regret Minimization", sec. 3; default (1.5, 0, 2)).

The strategy sum is stored scaled, ``A_t = A_{t-1} x ((t-1)/t)^k + reach x sigma_t`` (so it
stays O(t) in float32 rather than O(t^(k+1))); normalisation is scale-free.

Memory: two float32 tables ``[flops, flop decision nodes, hands, 3]`` (FHP: 1,755 x 56 x
1,326 x 3 x 4 B = 1.56 GB each) plus two small preflop tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from bot.errors import PokerbotError
from bot.flop.best_response import FlopPolicy, Progress, flop_exploitability, flop_game_for
from bot.flop.game import (
    FlopGame,
    leaf_reach,
    match_strategy,
    reach_down,
    store_root_values,
    values_up,
)
from protocol.betting_tree import DECISION
from protocol.gamedef import Game
from training.tabular.cfr import DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA

FLOP_ALGORITHMS = ("cfr+", "dcfr")


@njit(cache=True)
def update_tables(arrays, player, strategy, reach, values, valid, regrets, average, discounts,
                  floor, average_decay):  # pragma: no cover - numba
    """The CFR update of ``player``'s rows after a pass: regret ``r <- r x discount(sign of r)
    + v(a) - v`` (floored at 0 for CFR+), strategy sum ``s <- s x average_decay + own reach x
    sigma``. ``discounts`` = (positive, negative) regret factors."""
    kind, actor, child, decision, _spent, _folder, _root, _leaf = arrays
    for n in range(kind.shape[0]):
        if kind[n] != DECISION or actor[n] != player:
            continue
        d = decision[n]
        for h in range(valid.shape[0]):
            if valid[h] == 0.0:
                continue
            v = values[n, h]
            own = reach[n, player, h]
            for x in range(3):
                c = child[n, x]
                if c < 0:
                    continue
                r = regrets[d, h, x]
                r = r * (discounts[0] if r > 0 else discounts[1]) + (values[c, h] - v)
                if floor and r < 0.0:
                    r = 0.0
                regrets[d, h, x] = r
                average[d, h, x] = average[d, h, x] * average_decay + own * strategy[d, h, x]


@dataclass(frozen=True)
class FlopCFRConfig:
    """Settings of one full-width flop solve (recorded in the run's config)."""

    algo: str = "cfr+"
    """``cfr+`` or ``dcfr``."""
    average_exponent: float = 2.0
    """CFR+: iteration t's weight in the average is t^k (1 linear, 2 quadratic)."""
    alpha: float = DCFR_ALPHA
    """DCFR: positive regrets x t^alpha / (t^alpha + 1)."""
    beta: float = DCFR_BETA
    """DCFR: negative regrets x t^beta / (t^beta + 1)."""
    gamma: float = DCFR_GAMMA
    """DCFR: the strategy sum x (t / (t + 1))^gamma."""
    canonical: bool = True
    """Solve the canonical flops only (suit isomorphism); False walks every raw flop."""

    def __post_init__(self) -> None:
        if self.algo not in FLOP_ALGORITHMS:
            raise PokerbotError(f"unknown flop CFR variant {self.algo!r}; known: {', '.join(FLOP_ALGORITHMS)}")
        if self.average_exponent < 0:
            raise PokerbotError(f"average_exponent must be >= 0, got {self.average_exponent}")

    def discounts(self, t: int) -> tuple[np.ndarray, bool, float]:
        """Iteration t's (positive, negative) regret factors, floor flag and average decay."""
        if self.algo == "cfr+":
            decay = ((t - 1) / t) ** self.average_exponent
            return np.ones(2), True, decay
        previous = t - 1
        positive = previous**self.alpha / (previous**self.alpha + 1.0) if previous else 0.0
        negative = previous**self.beta / (previous**self.beta + 1.0) if previous else 0.0
        return np.array([positive, negative]), False, ((t - 1) / t) ** self.gamma


@njit(parallel=True, cache=True)
def _cfr_chunk(arrays, legal, regrets, average, lo, hi, player, root_reach, valid, hand_cards, order,
               strength, discounts, floor, decay, out):  # pragma: no cover - numba
    """Player ``player``'s CFR update on flops lo..hi-1 (their table rows updated in place);
    out[c - lo, t, h]: the player's values at flop root t."""
    num_nodes = arrays[0].shape[0]
    num_hands = valid.shape[1]
    empty = np.zeros((0, num_hands))
    for i in prange(hi - lo):
        c = lo + i
        strategy = np.empty((legal.shape[0], num_hands, 3))
        reach = np.empty((num_nodes, 2, num_hands))
        values = np.empty((num_nodes, num_hands))
        match_strategy(regrets[c], legal, strategy)
        reach_down(arrays, strategy, root_reach, valid[c], reach)
        values_up(arrays, strategy, player, False, reach, empty, valid[c], hand_cards, 1.0,
                  order[c], strength[c], values)
        update_tables(arrays, player, strategy, reach, values, valid[c], regrets[c], average[c],
                      discounts, floor, decay)
        store_root_values(arrays, values, out[i])


class FlopCFR:
    """Regret and strategy-sum tables of a flop-hold'em-shaped game, and the CFR iteration."""

    def __init__(self, game: Game, config: FlopCFRConfig = FlopCFRConfig(), chunk: int = 64) -> None:
        self.config = config
        self.fg: FlopGame = flop_game_for(game, config.canonical)
        fg = self.fg
        self.chunk = chunk
        pre_shape = (fg.preflop.num_decisions, fg.num_hands, 3)
        flop_shape = (fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3)
        self.pre_regrets = np.zeros(pre_shape)
        self.pre_average = np.zeros(pre_shape)
        self.regrets = np.zeros(flop_shape, dtype=np.float32)
        self.average = np.zeros(flop_shape, dtype=np.float32)
        self.iteration = 0
        fg.showdown  # noqa: B018 - build the showdown orders before the first pass times anything

    @property
    def table_bytes(self) -> int:
        return self.regrets.nbytes + self.average.nbytes

    @property
    def nodes_per_iteration(self) -> int:
        """(Decision node, live private hand) pairs that one iteration's two passes evaluate,
        every canonical flop once: the full-width count comparable with the sampled
        algorithms' nodes touched (each pair is one infoset visit on that board)."""
        fg = self.fg
        live = int(np.count_nonzero(fg.valid))
        return 2 * (fg.preflop.num_decisions * fg.num_hands + fg.flop.num_decisions * live)

    def iterate(self, progress: Progress | None = None) -> None:
        """One iteration: player 0's update, then player 1's against player 0's new strategy.
        ``progress(done, total)`` counts flops over both updates."""
        self.iteration += 1
        for player in (0, 1):
            self._update(player, progress, player * self.fg.num_flops)

    def _update(self, player: int, progress: Progress | None, done_before: int) -> None:
        fg, config = self.fg, self.config
        discounts, floor, decay = config.discounts(self.iteration)
        pre_strategy, pre_reach = fg.preflop_reach(self.pre_regrets)
        root_reach = leaf_reach(fg.preflop, pre_reach)
        order, strength = fg.showdown
        valid = fg.valid
        out = np.empty((fg.num_flops, fg.num_transitions, fg.num_hands))
        for lo in range(0, fg.num_flops, self.chunk):
            hi = min(lo + self.chunk, fg.num_flops)
            _cfr_chunk(fg.flop.arrays, fg.flop.legal, self.regrets, self.average, lo, hi, player, root_reach,
                       valid, fg.hands, order, strength, discounts, floor, decay, out[lo:hi])  # fmt: skip
            if progress is not None:
                progress(done_before + hi, 2 * fg.num_flops)
        leaf = fg.flop_values_at_leaves(out)
        values = fg.preflop_values(pre_strategy, pre_reach, player, False, leaf)
        update_tables(fg.preflop.arrays, player, pre_strategy, pre_reach, values, np.ones(fg.num_hands),
                      self.pre_regrets, self.pre_average, discounts, floor, decay)  # fmt: skip

    # -- the average strategy ------------------------------------------------------------------
    def average_policy(self) -> FlopPolicy:
        """The average strategy (the profile that converges to Nash) as a :class:`FlopPolicy`
        over this solver's flops."""
        average = self.average
        return FlopPolicy(self.pre_average, lambda lo, hi: average[lo:hi], self.fg.canonical)

    def exploitability(self, progress: Progress | None = None):
        """Exact :class:`~bot.evaluation.best_response.ExploitabilityReport` of the average strategy."""
        return flop_exploitability(self.fg, self.average_policy(), progress)

    # -- checkpoints -------------------------------------------------------------------------
    def tables(self) -> dict[str, np.ndarray]:
        """Everything that continues the run."""
        return {"pre_regrets": self.pre_regrets, "pre_average": self.pre_average,
                "regrets": self.regrets, "average": self.average}  # fmt: skip

    def restore(self, load: Callable[[str], np.ndarray], iteration: int) -> None:
        """Copy tables in place from ``load(name)`` (arrays of the same shapes)."""
        for name, target in self.tables().items():
            stored = load(name)
            if stored.shape != target.shape:
                raise PokerbotError(f"checkpoint table {name!r} has shape {stored.shape}, expected {target.shape}")
            target[...] = stored
        self.iteration = iteration
