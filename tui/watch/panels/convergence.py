"""Kuhn: the average strategy at each infoset converging to Kuhn's equilibrium family.

Rows: per infoset the probability of betting (or calling, facing a bet) under the SD-CFR
average after each iteration, as a sparkline on a fixed 0..1 scale, its value at the selected
iteration, the equilibrium target for the run's own alpha (see :mod:`tui.watch.kuhn`) and the
family's range. The plot shows the highlighted row over iterations with the targets dashed."""

from __future__ import annotations

import numpy as np
from textual.widgets import DataTable

from tui.watch import kuhn
from tui.watch.model import WatchModel
from tui.watch.panels.plot import SafePlot
from tui.watch.text import sparkline

SPARK_WIDTH = 30
#: Points of a dashed target line.
DASHES = 40


def averages_upto(model: WatchModel, iteration: int) -> list:
    """SD-CFR averages after iterations 0..``iteration`` (as far as loaded)."""
    return model.average_history()[: iteration + 1]


class ConvergenceTable(DataTable):
    """One row per Kuhn infoset (see the module docstring)."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("infoset", "act", "σ̄ over iterations (0..1)", "now", "target", "family")

    def show(self, model: WatchModel, iteration: int) -> None:
        row = self.cursor_row
        self.clear()
        space = model.batch.space
        history = averages_upto(model, iteration)
        if not history:
            return
        alpha = kuhn.alpha_of(history[-1], space)
        series = [kuhn.plotted(s, space) for s in history]
        step = max(1, -(-len(series) // SPARK_WIDTH))
        for key, (action, rule) in kuhn.TARGETS.items():
            values = [point[key] for point in series[::step]]
            lo, hi = kuhn.target_range(key)
            family = f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"
            self.add_row(key, "bet" if action == "r" else "call", sparkline(values, 0.0, 1.0),
                         f"{series[-1][key]:.3f}", f"{rule(alpha):.3f}", family, key=key)
        self.move_cursor(row=min(row, self.row_count - 1))


class ConvergencePlot(SafePlot):
    """The highlighted infoset's average probability against iterations; targets dashed."""

    def show(self, model: WatchModel, iteration: int, key: str) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        space = model.batch.space
        history = averages_upto(model, iteration)
        if history:
            action, rule = kuhn.TARGETS[key]
            xs = list(range(len(history)))
            plt.plot(xs, [kuhn.plotted(s, space)[key] for s in history], marker="braille", label="average σ̄")
            alpha = kuhn.alpha_of(history[-1], space)
            dashes = list(np.linspace(0, xs[-1], DASHES)) if xs[-1] > 0 else [0.0]
            plt.scatter(dashes, [rule(alpha)] * len(dashes), marker="-", label=f"Nash (α = {alpha:.3f})")
            lo, hi = kuhn.target_range(key)
            if lo != hi:
                for bound in (lo, hi):
                    plt.scatter(dashes, [bound] * len(dashes), marker="·", color="gray")
            plt.ylim(0, 1)
            plt.title(f"{key}: P({'bet' if action == 'r' else 'call'}) of the average strategy")
            plt.xlabel("iteration")
        self.refresh()
