"""The table of information sets: network advantages, exact targets, regret-matching strategy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from textual.widgets import DataTable

from tui.watch.model import Infoset, WatchModel
from tui.watch.text import number, prob


def signed(value: float) -> str:
    return number(value, 2)


def triple(values: np.ndarray | None, legal: np.ndarray, cell: Callable[[float], str] = signed) -> str:
    """f c r values side by side, ``·`` at illegal actions."""
    if values is None:
        return "–"
    blank = "·".center(len(cell(0.0)))
    return " ".join(cell(float(values[a])) if legal[a] else blank for a in range(3))


def chips(infoset: Infoset) -> np.ndarray | None:
    """The network's advantages in chips (fit units when the run did not log its scale)."""
    if infoset.advantages is None:
        return None
    raw = infoset.advantages.raw[infoset.index]
    return raw * infoset.scale if infoset.scale is not None else raw


class AdvantageTable(DataTable):
    """One row per infoset; the highlighted row drives the walkthrough."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.add_columns("infoset", "network V(I,·) f c r", "exact target f c r", "σ = RM(V) f c r", "")

    def show(self, model: WatchModel, iteration: int) -> None:
        row = self.cursor_row
        self.clear()
        for index in range(model.batch.space.num_infosets):
            infoset = model.infoset(index, iteration)
            strategy = None if infoset.advantages is None else infoset.advantages.strategy[index]
            fallback = infoset.advantages is not None and bool(infoset.advantages.fallback[index])
            self.add_row(infoset.key, triple(chips(infoset), infoset.legal), triple(infoset.exact, infoset.legal),
                         triple(strategy, infoset.legal, prob), "argmax" if fallback else "", key=str(index))
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1))
