"""Small formatting helpers shared by the watch panels (numbers, cards, sparklines, bars)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from protocol.cards import card_to_str

SPARK = "▁▂▃▄▅▆▇█"
ACTION_NAMES = ("f", "c", "r")


def number(value: float | None, digits: int = 3) -> str:
    """A short signed number; ``–`` for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:+.{digits}f}"


def prob(value: float | None) -> str:
    if value is None or math.isnan(value):
        return " –  "
    return f"{value:.2f}"


def seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    if value >= 60:
        return f"{value / 60:.1f} min"
    return f"{value:.2f} s"


def card(code: int) -> str:
    """ACPC text of a card code, ``··`` for an empty slot (-1)."""
    return "··" if code < 0 else card_to_str(int(code))


def sparkline(values: Sequence[float], lo: float | None = None, hi: float | None = None) -> str:
    """One character per value, scaled to [lo, hi] (default: the values' own range)."""
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite:
        return ""
    lo = min(finite) if lo is None else lo
    hi = max(finite) if hi is None else hi
    span = hi - lo or 1.0
    out = []
    for v in values:
        if v is None or math.isnan(v):
            out.append(" ")
        else:
            level = int(round((min(max(v, lo), hi) - lo) / span * (len(SPARK) - 1)))
            out.append(SPARK[level])
    return "".join(out)


def bar(fraction: float, width: int = 20) -> str:
    """A fill bar ``█████░░░░░``."""
    fraction = min(max(fraction, 0.0), 1.0)
    full = int(round(fraction * width))
    return "█" * full + "░" * (width - full)


def legal_actions(legal: Sequence[bool]) -> list[int]:
    return [a for a in range(3) if legal[a]]
