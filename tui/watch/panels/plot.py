"""The plot widget the panels share: textual-plotext's, made unable to crash the app."""

from __future__ import annotations

from textual.app import RenderResult
from textual_plotext import PlotextPlot


class SafePlot(PlotextPlot):
    """A :class:`PlotextPlot` whose drawing errors show as a line instead of ending the app.

    plotext raised IndexError placing a legend once while a live run grew (80x24 pty, not
    reproduced at the same size offline); a watch session must outlive a plot that cannot be
    drawn at one size, and draws it again at the next refresh."""

    def render(self) -> RenderResult:
        try:
            return super().render()
        except (IndexError, ValueError, ZeroDivisionError) as error:
            return f"(plot not drawn at {self.size.width}x{self.size.height}: {type(error).__name__})"
