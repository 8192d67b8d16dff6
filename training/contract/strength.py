"""A strength signal for training runs on games too large for exact exploitability (HULH, FHP).

A loss says how well a network fits its targets, not how well the policy plays. On Kuhn and
Leduc the runs log exact exploitability; on hold'em they log instead, every ``strength_every``
iterations (NFSP: self-play steps) and *off the training clock*:

* ``h2h_mbb`` ± ``h2h_ci_mbb``: the policy's winnings against a fixed reference agent
  (``strength_reference``, by default the shipped bot ``default``), a fixed yardstick, so the
  curve is comparable across runs. Either over ``strength_boards`` sampled boards, each exact
  over every pair of hole cards and every action in both seats (:mod:`training.abstraction.board_match`,
  ``h2h_boards``; the 95% interval over the boards), or over ``strength_hands`` duplicate deals,
  each played in both seats with the same cards (:func:`bot.evaluation.match.run_in_process`,
  ``h2h_hands``; the interval over the deal pairs). Boards are what make the signal readable on
  HULH: 200 dealt hands gave intervals of ±360-780 mbb/g there, where one board's spread between
  these policies is 80-180 mbb/g (``docs/benchmarks/hulh-deep-cfr.md``);
* ``lbr_mbb`` ± ``lbr_ci_mbb`` (when ``strength_lbr_hands`` > 0): local best response's
  winnings against the policy (Lisy & Bowling 2017, :mod:`bot.evaluation.lbr`), a lower bound on its
  exploitability (NashConv/2).

``strength_s`` is the wall time the measurement took; the run's ``train_seconds`` /
``elapsed_s`` exclude it. The match and LBR seeds are fixed per run, so every measurement deals
the same cards and the curve's changes come from the policy, not from the deal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from bot.agents.base import Agent
from bot.errors import ConfigError
from protocol.gamedef import Game

#: Keys a strength measurement adds to a metrics line (plots and ``pokerbot watch`` read them).
H2H, H2H_CI, LBR, LBR_CI = "h2h_mbb", "h2h_ci_mbb", "lbr_mbb", "lbr_ci_mbb"


@dataclass(frozen=True)
class StrengthOptions:
    """The config fields of every trainer (NFSP, Deep CFR / SD-CFR, DREAM) that set the signal."""

    strength_every: int = 0
    """Iterations (NFSP: self-play steps, a multiple of ``eval_every``) between strength
    measurements where exact exploitability is out of reach, logged in metrics.jsonl and kept
    off the training clock (0: never; the FHP and hold'em presets turn it on)."""
    strength_hands: int = 100
    """Duplicate deals (each played in both seats) against the reference per measurement (when
    ``strength_boards`` is 0)."""
    strength_boards: int = 0
    """Sampled boards (each exact over hole cards and actions, both seats) against the reference
    per measurement, in place of ``strength_hands``' dealt hands (0: deal hands). Both policies
    must be readable over a whole board: a solved abstraction, or a Deep CFR / SD-CFR / NFSP
    network policy."""
    strength_lbr_hands: int = 0
    """LBR deals (both seats) per measurement (0: no LBR; it costs ~1 s a hand on HULH)."""
    strength_reference: str = "default"
    """The fixed reference agent (default: the game's shipped bot)."""


@dataclass(frozen=True)
class StrengthSettings:
    """When and how much to measure (the config fields ``strength_*`` of each algorithm)."""

    every: int
    hands: int
    lbr_hands: int
    reference: str
    seed: int
    boards: int = 0

    def __post_init__(self) -> None:
        for name in ("every", "hands", "lbr_hands", "boards"):
            if getattr(self, name) < 0:
                raise ConfigError(f"strength_{name}: must be >= 0, got {getattr(self, name)}")
        if self.boards == 1:
            raise ConfigError("strength_boards: one board gives no interval; use 0 (dealt hands) or at least 2")

    @classmethod
    def of(cls, config: StrengthOptions) -> StrengthSettings:
        """The settings of an NFSP / Deep CFR / DREAM config."""
        return cls(config.strength_every, config.strength_hands, config.strength_lbr_hands,
                   config.strength_reference, config.seed, config.strength_boards)  # fmt: skip

    def due(self, count: int) -> bool:
        """Whether iteration / step ``count`` gets a measurement."""
        return self.every > 0 and (self.hands > 0 or self.boards > 0 or self.lbr_hands > 0) and count % self.every == 0


def strength_reference(settings: StrengthSettings, game: Game) -> Agent | None:
    """The agent the head-to-head plays (``settings.reference``), or None when no head-to-head is
    configured. With ``strength_boards`` it must be readable over a whole board: checked here,
    when the run starts, so a reference the board match cannot read is a one-line error before
    any training rather than at the first measurement."""
    if not settings.every or not (settings.hands or settings.boards):
        return None
    from bot.registry import resolve_agent

    reference = resolve_agent(settings.reference, game)
    if settings.boards:
        from training.abstraction.board_match import board_policy

        board_policy(reference, "strength_reference (strength_boards)")
    return reference


def measure_strength(game: Game, agent: Agent, reference: Agent | None, settings: StrengthSettings) -> dict[str, float | int | str]:
    """Head-to-head of ``agent`` against ``reference`` (the agent ``settings.reference`` names)
    and LBR of ``agent`` (see the module docstring)."""
    from bot.evaluation.lbr import LBRConfig, run_lbr
    from bot.evaluation.match import run_in_process
    from bot.evaluation.statistics import estimate, pair_means

    started = time.perf_counter()
    out: dict[str, float | int | str] = {}
    if settings.boards and reference is not None:
        import numba

        from training.abstraction.board_match import BoardMatch, sample_boards

        boards = sample_boards(game, settings.seed, 0, settings.boards)
        values = BoardMatch(game, agent, reference).values(boards, numba.get_num_threads())  # the run's threads
        both = estimate(values.duplicate * (1000.0 / game.big_blind))
        out |= {H2H: both.mean, H2H_CI: both.half_width, "h2h_boards": settings.boards, "h2h_reference": settings.reference}
    elif settings.hands and reference is not None:
        result = run_in_process(game, (agent, reference), ("policy", settings.reference), settings.hands,
                                settings.seed, duplicate=True)  # fmt: skip
        chips = {(h.deal, h.mirrored): h.chips for h in result.hands}
        deals = sorted(d for d, mirrored in chips if not mirrored and (d, True) in chips)
        scale = 1000.0 / game.big_blind
        both = estimate(pair_means(np.array([chips[d, False] for d in deals]) * scale,
                                   np.array([chips[d, True] for d in deals]) * scale))  # fmt: skip
        out |= {H2H: both.mean, H2H_CI: both.half_width, "h2h_hands": 2 * len(deals), "h2h_reference": settings.reference}
    if settings.lbr_hands:
        lbr = run_lbr(game, agent, settings.lbr_hands, settings.seed, LBRConfig()).overall()
        out |= {LBR: lbr.mean, LBR_CI: lbr.half_width, "lbr_hands": 2 * settings.lbr_hands}
    out["strength_s"] = time.perf_counter() - started
    return out


def strength_summary(record: dict) -> str:
    """The progress line's text for a measurement in ``record`` ('' when none)."""
    parts = []
    if H2H in record:
        parts.append(f"vs {record['h2h_reference']} {record[H2H]:+.0f} ± {record[H2H_CI]:.0f} mbb/g")
    if LBR in record:
        parts.append(f"LBR {record[LBR]:.0f} ± {record[LBR_CI]:.0f} mbb/g")
    return ", ".join(parts)
