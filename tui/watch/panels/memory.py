"""Memory fill and the last fit losses (with their recent history as sparklines), one line per
kind of memory or loss and both players side by side."""

from __future__ import annotations

from textual.widgets import Static

from tui.watch.model import WatchModel
from tui.watch.text import bar, sparkline

#: per algorithm family: (label, the key of each player's value; "{p}" is the player).
CFR_MEMORIES = (("advantage", "advantage_fill_p{p}"), ("strategy", "strategy_fill"))
NFSP_MEMORIES = (("M_RL", "rl_fill_{p}"), ("M_SL", "sl_fill_{p}"))
CFR_LOSSES = (("fit loss", "loss_p{p}"), ("average net", "average_loss"))
NFSP_LOSSES = (("Q loss", "q_loss_{p}"), ("Π loss", "pi_loss_{p}"))
SPARK_POINTS = 12


def per_player(key: str) -> list[tuple[str, str]]:
    """(label, key) per player, or one unlabelled key when the value is shared."""
    return [(f"p{p} ", key.format(p=p)) for p in (0, 1)] if "{p}" in key else [("", key)]


class MemoryPanel(Static):
    """Fill bars of every memory and the loss of each fit at the selected iteration."""

    def show(self, model: WatchModel, iteration: int) -> None:
        record = model.record(iteration)
        nfsp = model.kind == "nfsp"
        upto = [model.record(i) for i in model.iterations if i <= iteration][-SPARK_POINTS:]
        lines = []
        for label, pattern in NFSP_MEMORIES if nfsp else CFR_MEMORIES:
            cells = [f"{who}{bar(record[key], 10)} {100 * record[key]:5.1f}%"
                     for who, key in per_player(pattern) if key in record]
            if cells:
                lines.append(f"{label:<12}" + "   ".join(cells))
        for label, pattern in NFSP_LOSSES if nfsp else CFR_LOSSES:
            cells = [f"{who}{record[key]:<9.3g}{sparkline([r[key] for r in upto if key in r])}"
                     for who, key in per_player(pattern) if key in record]
            if cells:
                lines.append(f"{label:<12}" + "   ".join(cells))
        self.update("\n".join(lines) or "no memory or loss logged at this iteration")
