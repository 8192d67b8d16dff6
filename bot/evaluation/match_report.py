"""What ``pokerbot match`` and ``pokerbot report`` show: one statistics summary of a match
(every estimator's mbb/g with its 95% interval), rendered as a rich table, JSON and a PNG.

The summary is built from per-hand arrays only (chips of the evaluated player, its position,
the deal and which half of a duplicate match), so a match played in-process, over the wire, or
read from any ACPC ``.log`` is summarised the same way.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from bot.errors import PokerbotError
from bot.evaluation.statistics import (
    Estimate,
    estimate,
    hands_for_half_width,
    pair_means,
    running_interval,
)
from protocol.files import output_error

DEFAULT_HALF_WIDTH_MBB = 10.0


@dataclass(frozen=True)
class HandSeries:
    """Per-hand data of the evaluated player (``chips`` net per hand, blinds included)."""

    chips: np.ndarray
    position: np.ndarray
    deal: np.ndarray
    mirrored: np.ndarray  # bool: the seat-swapped half of a duplicate match
    aivat_chips: np.ndarray | None = None


@dataclass(frozen=True)
class Row:
    label: str
    hands: int
    chips: float
    estimate: Estimate
    hands_needed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "hands": self.hands,
            "total_chips": self.chips,
            "hands_needed": self.hands_needed,
        } | self.estimate.to_dict()


def duplicate_pairs(series: HandSeries) -> tuple[np.ndarray, np.ndarray]:
    """Indices of (hand, seat-swapped twin) for every deal played both ways."""
    first = {
        int(d): i
        for i, (d, m) in enumerate(zip(series.deal, series.mirrored, strict=True))
        if not m
    }
    second = {
        int(d): i for i, (d, m) in enumerate(zip(series.deal, series.mirrored, strict=True)) if m
    }
    deals = sorted(set(first) & set(second))
    return np.array([first[d] for d in deals], dtype=int), np.array(
        [second[d] for d in deals], dtype=int
    )


def summarize(
    series: HandSeries, big_blind: int, half_width: float = DEFAULT_HALF_WIDTH_MBB
) -> dict[str, Any]:
    """Every estimator as a row, in mbb/g (1000 · chips / big blind), plus variance reductions."""
    scale = 1000.0 / big_blind
    mbb = series.chips * scale
    rows: list[Row] = []

    def add(
        label: str, values: np.ndarray, hands: int, chips: float, hands_per_obs: int = 1
    ) -> Estimate:
        est = estimate(values)
        # a duplicate observation is a pair of hands: pairs needed × 2
        rows.append(
            Row(label, hands, chips, est, hands_per_obs * hands_for_half_width(est.std, half_width))
        )
        return est

    raw = add("all hands", mbb, len(mbb), float(series.chips.sum()))
    for position in sorted(set(series.position.tolist())):
        mask = series.position == position
        if mask.sum() > 1:
            add(f"position {position}", mbb[mask], int(mask.sum()), float(series.chips[mask].sum()))
    reductions: dict[str, float] = {}
    first, second = duplicate_pairs(series)
    if len(first) > 1:
        pairs = pair_means(mbb[first], mbb[second])
        paired = add(
            "duplicate",
            pairs,
            2 * len(first),
            float(series.chips[first].sum() + series.chips[second].sum()),
            2,
        )
        reductions["duplicate"] = raw.std**2 / (2 * paired.std**2) if paired.std > 0 else math.inf
    if series.aivat_chips is not None:
        corrected = add(
            "AIVAT", series.aivat_chips * scale, len(mbb), float(series.aivat_chips.sum())
        )
        reductions["aivat"] = raw.std**2 / corrected.std**2 if corrected.std > 0 else math.inf
        if len(first) > 1:  # both: AIVAT values averaged over each deal and its twin
            aivat_mbb = series.aivat_chips * scale
            both = add(
                "AIVAT + duplicate",
                pair_means(aivat_mbb[first], aivat_mbb[second]),
                2 * len(first),
                float(series.aivat_chips[first].sum() + series.aivat_chips[second].sum()),
                2,
            )
            reductions["aivat + duplicate"] = (
                raw.std**2 / (2 * both.std**2) if both.std > 0 else math.inf
            )
    return {
        "hands": len(mbb),
        "big_blind": big_blind,
        "half_width_mbb": half_width,
        "rows": [r.to_dict() for r in rows],
        "variance_reduction": reductions,
        "per_hand": {
            "deal": series.deal.tolist(),
            "mirrored": series.mirrored.tolist(),
            "position": series.position.tolist(),
            "chips": series.chips.tolist(),
            **(
                {"aivat_chips": series.aivat_chips.tolist()}
                if series.aivat_chips is not None
                else {}
            ),
        },
    }


def _number(x: float, digits: int = 1) -> str:
    return "inf" if not math.isfinite(x) else f"{x:,.{digits}f}"


def table(summary: dict[str, Any], title: str) -> Table:
    """The summary's rows; ``summary["unit"]`` names what a row counts (hands unless a board
    match says ``boards``: ``training.abstraction.board_match``)."""
    width = summary["half_width_mbb"]
    unit = summary.get("unit", "hands")
    out = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for header in (
        "estimator",
        unit,
        "chips",
        "mbb/g",
        "std err",
        "95% CI",
        "excl. 0",
        f"{unit} for ±{width:g}",
    ):
        out.add_column(header, justify="left" if header == "estimator" else "right", no_wrap=True)
    for row in summary["rows"]:
        ci = f"[{_number(row['low'])}, {_number(row['high'])}]"
        excludes = "[green]yes[/]" if row["excludes_zero"] else "no"
        out.add_row(
            row["label"],
            f"{row['hands']:,}",
            _number(row["total_chips"], 0),
            _number(row["mean"]),
            _number(row["stderr"]),
            ci,
            excludes,
            f"{row['hands_needed']:,}",
        )
    for name, factor in summary["variance_reduction"].items():
        out.caption = (
            out.caption + "; " if out.caption else ""
        ) + f"{name} variance reduction ×{_number(factor, 2)}"
    return out


def console() -> Console:
    """A console that does not squeeze the table when output is not a terminal."""
    plain = Console()
    return plain if plain.is_terminal else Console(width=120)


def require_folder(path: str | None, option: str) -> None:
    """Fail before any work if ``path`` (an output option's value) lies in a folder that does
    not exist: outputs never create folders, so a typo cannot scatter files anywhere."""
    if path is None:
        return
    folder = Path(path).parent
    if not folder.is_dir():
        raise PokerbotError(f"{option} {path}: folder {folder} does not exist")


def write_json(summary: dict[str, Any], path: str) -> None:
    try:
        Path(path).write_text(json.dumps(summary, indent=1, allow_nan=True) + "\n")
    except OSError as error:
        raise output_error(path, error) from None


def plot(summary: dict[str, Any], path: str, title: str) -> None:
    """Cumulative mbb/g against hands with the 95% band, for the raw and AIVAT estimates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = 1000.0 / summary["big_blind"]
    per_hand = summary["per_hand"]
    chips = np.array(per_hand["chips"]) * scale
    series = {"all hands": (chips, 1)}
    first, second = duplicate_pairs(
        HandSeries(
            chips,
            np.array(per_hand["position"]),
            np.array(per_hand["deal"]),
            np.array(per_hand["mirrored"]),
        )
    )
    if len(first) > 1:
        series["duplicate pairs"] = (pair_means(chips[first], chips[second]), 2)
    if "aivat_chips" in per_hand:
        series["AIVAT"] = (np.array(per_hand["aivat_chips"]) * scale, 1)
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for label, (values, hands_per_obs) in series.items():
        mean, half = running_interval(values)
        x = hands_per_obs * np.arange(1, len(values) + 1)
        axes.plot(x, mean, label=f"{label} mean")
        axes.fill_between(x, mean - half, mean + half, alpha=0.25, label=f"{label} 95% CI")
    # the first hands' intervals are huge; frame the part after the first 5% (at least 20 hands)
    settled = [
        (m - h)[len(m) // 20 + 20 :].tolist() + (m + h)[len(m) // 20 + 20 :].tolist()
        for m, h in (running_interval(v) for v, _ in series.values())
    ]
    visible = [y for ys in settled for y in ys if math.isfinite(y)]
    if visible:
        low, high = min(visible + [0.0]), max(visible + [0.0])
        axes.set_ylim(low - 0.1 * (high - low + 1), high + 0.1 * (high - low + 1))
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xlabel("hands")
    axes.set_ylabel("mbb/g")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=110)
    except OSError as error:
        raise output_error(path, error) from None
    plt.close(figure)
