"""Exploitability curves as ``exploitability.png`` and strength measurements as ``strength.png``
in a run directory (shared by every trainer)."""

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
    return _save(figure, path, dpi)


def _save(figure, path: Path, dpi: int) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path


def plot_strength(path: Path, records: Sequence[dict], x_key: str, xlabel: str, title: str = "", dpi: int = 110) -> Path | None:
    """``strength.png``: the metrics lines' head-to-head (``h2h_mbb``) and LBR (``lbr_mbb``)
    values with their 95% intervals as error bars (:mod:`training.contract.strength`); None if none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    drawn = 0
    for key, label in (("h2h_mbb", "head-to-head vs {reference} (duplicate)"), ("lbr_mbb", "LBR (lower bound on exploitability)")):
        points = [r for r in records if key in r and x_key in r]
        if points:
            reference = points[-1].get("h2h_reference", "")
            axis.errorbar([r[x_key] for r in points], [r[key] for r in points], yerr=[r[key.replace("_mbb", "_ci_mbb")] for r in points],
                          marker=".", capsize=3, label=label.format(reference=reference))  # fmt: skip
            drawn += 1
    if not drawn:
        plt.close(figure)
        return None
    axis.axhline(0.0, color="gray", linewidth=0.8)
    axis.set_xlabel(xlabel)
    axis.set_ylabel("mbb/g (95% interval)")
    axis.grid(True, alpha=0.3)
    axis.legend()
    if title:
        axis.set_title(title)
    return _save(figure, path, dpi)
