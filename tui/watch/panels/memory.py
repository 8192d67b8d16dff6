"""Memory fill and the last fit losses, with the losses' history as sparklines."""

from __future__ import annotations

from textual.widgets import Static

from tui.watch.model import WatchModel
from tui.watch.text import bar, sparkline

#: per algorithm family: (label, fill key, samples key or None).
CFR_MEMORIES = (("advantage p0", "advantage_fill_p0", "advantage_samples_p0"),
                ("advantage p1", "advantage_fill_p1", "advantage_samples_p1"),
                ("strategy", "strategy_fill", "strategy_samples"))
NFSP_MEMORIES = (("M_RL seat 0", "rl_fill_0", None), ("M_RL seat 1", "rl_fill_1", None),
                 ("M_SL seat 0", "sl_fill_0", None), ("M_SL seat 1", "sl_fill_1", None))
#: per algorithm family: (label, loss key, key of the fit's batch form or None).
CFR_LOSSES = (("fit loss p0", "loss_p0", "batch_form_p0"), ("fit loss p1", "loss_p1", "batch_form_p1"),
              ("average net", "average_loss", "average_batch_form"))
NFSP_LOSSES = (("Q loss 0", "q_loss_0", None), ("Q loss 1", "q_loss_1", None),
               ("Π loss 0", "pi_loss_0", None), ("Π loss 1", "pi_loss_1", None))
SPARK_POINTS = 24


class MemoryPanel(Static):
    """Fill bars of every memory and the loss of each fit at the selected iteration."""

    def show(self, model: WatchModel, iteration: int) -> None:
        record = model.record(iteration)
        nfsp = model.kind == "nfsp"
        lines = []
        for label, fill_key, samples_key in NFSP_MEMORIES if nfsp else CFR_MEMORIES:
            if fill_key in record:
                samples = f" · {record[samples_key]:,} samples seen" if samples_key in record else ""
                lines.append(f"{label:<13}{bar(record[fill_key], 16)} {100 * record[fill_key]:5.1f}%{samples}")
        upto = [model.record(i) for i in model.iterations if i <= iteration][-SPARK_POINTS:]
        for label, key, form_key in NFSP_LOSSES if nfsp else CFR_LOSSES:
            if key in record:
                history = [r[key] for r in upto if key in r]
                form = f"({record[form_key]} batch)" if form_key in record else ""
                lines.append(f"{label:<13}{record[key]:<10.3g} {sparkline(history)} {form}".rstrip())
        self.update("\n".join(lines) or "no memory or loss logged at this iteration")
