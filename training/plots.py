"""Exploitability curves as ``exploitability.png`` in a run directory (shared by every trainer)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: One panel: its x-axis label and {curve label: (x values, exploitability in mbb/g)}.
Panel = tuple[str, dict[str, tuple[Sequence[float], Sequence[float]]]]


def plot_exploitability(path: Path, panels: Sequence[Panel], title: str = "", dpi: int = 110, xlog: bool = False) -> Path:
    """Draw side-by-side log-scale panels of exact exploitability (mbb/g, NashConv / 2); ``xlog``:
    log-scale x axes too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels) + 1, 4), squeeze=False)
    for axis, (xlabel, curves) in zip(axes[0], panels, strict=True):
        for label, (xs, ys) in curves.items():
            axis.plot(xs, ys, marker="." if len(xs) < 50 else None, label=label)
        axis.set_xlabel(xlabel)
        axis.set_ylabel("exploitability, mbb/g (NashConv / 2)")
        axis.set_yscale("log")
        if xlog:
            axis.set_xscale("log")
            axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axis.grid(True, which="both", alpha=0.3)
        if len(curves) > 1:
            axis.legend()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path
