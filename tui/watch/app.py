"""``WatchApp``: a run directory, live (the seed explainer of Deep CFR on Kuhn, for any run).

The app polls the run (:class:`~tui.watch.reader.RunReader`, read-only) every
``poll_seconds``; loading new SD-CFR stack networks and their exact regrets runs in a worker
thread. By default the view follows the newest iteration; the arrow keys step through the
logged iterations (then the view stays put while new ones arrive) and ``end`` follows again.
Panels that do not apply to a run (the networks of NFSP, the exact tables of FHP and hold'em,
Kuhn's equilibrium for Leduc) are left out of its tabs.
"""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer, Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from tui.watch import kuhn
from tui.watch.model import WatchModel
from tui.watch.panels.advantages import AdvantageTable
from tui.watch.panels.convergence import ConvergencePlot, ConvergenceTable
from tui.watch.panels.exploitability import ExploitabilityPlot
from tui.watch.panels.memory import MemoryPanel
from tui.watch.panels.run import RunPanel
from tui.watch.panels.traversal import TraversalPanel
from tui.watch.panels.walkthrough import Walkthrough
from tui.watch.reader import RunReader

KEYS_HELP = """[b]pokerbot watch[/b] keys

  ← / →       previous / next logged iteration (stops following)
  home        first iteration
  end         newest iteration, and follow new ones
  1 2 3 4     overview · networks · strategy (Kuhn) · traversal
  ↑ / ↓       move in a table (the walkthrough and plot follow the row)
  t           traversal: show the other traverser
  x           exploitability plot: against iterations / training seconds
  ?           this help
  q           quit (a run started with train --watch stops; --resume continues it)

Nothing here writes into the run directory."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        yield Static(KEYS_HELP, id="help")


class WatchApp(App[None]):
    """Follows one run directory (see the module docstring)."""

    CSS_PATH = "watch.tcss"
    TITLE = "pokerbot watch"
    BINDINGS = [
        Binding("left", "step(-1)", "◀ iter", priority=True),
        Binding("right", "step(1)", "iter ▶", priority=True),
        Binding("home", "first", "first", show=False, priority=True),
        Binding("end", "follow", "follow", priority=True),
        Binding("1", "tab('overview')", "overview", show=False),
        Binding("2", "tab('networks')", "networks", show=False),
        Binding("3", "tab('strategy')", "strategy", show=False),
        Binding("4", "tab('traversal')", "traversal", show=False),
        Binding("t", "traverser", "traverser", show=False),
        Binding("x", "axis", "x axis", show=False),
        Binding("question_mark", "help", "keys"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, run: str | Path, poll_seconds: float = 1.0) -> None:
        super().__init__()
        self.reader = RunReader.open(run)
        self.model = WatchModel(self.reader)
        self.poll_seconds = poll_seconds
        #: The iteration shown; None follows the newest.
        self.selected: int | None = None
        self.traverser = 0
        self._shown: tuple | None = None
        space = self.model.batch.space if self.model.small else None
        self.kuhn = space is not None and kuhn.is_kuhn(space)

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with TabbedContent(id="tabs"):
            with TabPane("1 overview", id="overview"):
                yield RunPanel(id="run")
                yield ExploitabilityPlot(id="plot")
                yield Static("no exact exploitability in this run: it is computed on Kuhn and Leduc "
                             "(use pokerbot match / report against baselines on larger games)", id="no-plot")
                yield MemoryPanel(id="memory")
            if self.model.small:
                with TabPane("2 networks", id="networks"):
                    yield AdvantageTable(id="advantages")
                    yield Walkthrough(id="walkthrough")
            if self.kuhn and self.model.history is not None:
                with TabPane("3 strategy", id="strategy"):
                    with Vertical():
                        yield ConvergenceTable(id="convergence")
                        yield ConvergencePlot(id="convergence-plot")
            if self.model.kind != "nfsp":
                with TabPane("4 traversal", id="traversal"):
                    with ScrollableContainer():  # long trees scroll instead of wrapping
                        yield TraversalPanel(id="traversal-tree")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(self.poll_seconds, self.poll)
        self.poll()

    # -- polling --------------------------------------------------------------------------------

    def poll(self) -> None:
        self.model.poll()
        loading = any(w.group == "stack" and not w.is_finished for w in self.workers)
        if not loading and self.model.pending_entries():
            self.load_stack()  # one loader at a time: entries are taken in order
        self.refresh_views()

    @work(thread=True, group="stack")
    def load_stack(self) -> None:
        """Networks and exact regrets of new stack entries (slow on Leduc: a worker thread)."""
        if self.model.load_stack():
            self.call_from_thread(self.refresh_views)

    # -- iteration selection --------------------------------------------------------------------

    @property
    def iteration(self) -> int:
        """The iteration shown (0 before the first metrics line)."""
        iterations = self.model.iterations
        if not iterations:
            return 0
        return iterations[-1] if self.selected is None else self.selected

    def action_step(self, delta: int) -> None:
        iterations = self.model.iterations
        if not iterations:
            return
        position = iterations.index(self.iteration) + delta
        self.selected = iterations[min(max(position, 0), len(iterations) - 1)]
        self.refresh_views()

    def action_first(self) -> None:
        if self.model.iterations:
            self.selected = self.model.iterations[0]
            self.refresh_views()

    def action_follow(self) -> None:
        self.selected = None
        self.refresh_views()

    def action_tab(self, name: str) -> None:
        tabs = self.main.query_one(TabbedContent)
        if tabs.query(f"#{name}"):
            tabs.active = name

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Draw the new tab and give its table (or scrolling tree) the keys ↑/↓."""
        self.refresh_views(force=True)
        scrolling = event.pane.query("DataTable, ScrollableContainer")
        if scrolling:
            scrolling.first().focus()

    def action_traverser(self) -> None:
        self.traverser = 1 - self.traverser
        self.refresh_views(force=True)

    def action_axis(self) -> None:
        plot = self.main.query_one(ExploitabilityPlot)
        plot.axis = "seconds" if plot.axis == "iterations" else "iterations"
        self.refresh_views(force=True)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # -- drawing --------------------------------------------------------------------------------

    @property
    def main(self):
        """The panels' screen (queries on the app itself would search a help screen on top)."""
        return self.screen_stack[0]

    def title_text(self) -> str:
        iterations = self.model.iterations
        latest = iterations[-1] if iterations else 0
        mode = "following" if self.selected is None else "stepping (end: follow)"
        title = f" pokerbot watch · {self.reader.path.name} · iteration {self.iteration} of {latest} · {mode}"
        history = self.model.history
        if history is not None and history.entries < self.model.listed_entries:
            title += f" · reading networks {history.entries}/{self.model.listed_entries}"
        return title

    def refresh_views(self, force: bool = False) -> None:
        """Redraw what changed (the phase line and title every poll; panels on new data)."""
        if not self.main.query("#title"):
            return  # the screen is not (or no longer) composed: a timer tick at start or exit
        self.main.query_one("#title", Static).update(self.title_text())
        key = (self.model.version(), self.iteration, self.main.query_one(TabbedContent).active)
        if key == self._shown and not force:
            run = self.main.query_one(RunPanel)
            run.show(self.model, self.iteration)  # the phase's age moves on
            return
        self._shown = key
        iteration = self.iteration
        self.main.query_one(RunPanel).show(self.model, iteration)
        plot = self.main.query_one(ExploitabilityPlot)
        plot.display = plot.has_data(self.model)
        self.main.query_one("#no-plot", Static).display = not plot.display
        plot.show(self.model, iteration)
        self.main.query_one(MemoryPanel).show(self.model, iteration)
        if self.model.small:
            self.main.query_one(AdvantageTable).show(self.model, iteration)
            self.show_walkthrough()
        if self.main.query(ConvergenceTable):
            self.main.query_one(ConvergenceTable).show(self.model, iteration)
            self.show_convergence_plot()
        if self.main.query(TraversalPanel):
            example = self.model.record(iteration).get(f"traversal_p{self.traverser}")
            tree = self.model.tree if example is not None else None
            self.main.query_one(TraversalPanel).show_example(example, tree, iteration, self.traverser)

    def show_walkthrough(self) -> None:
        table = self.main.query_one(AdvantageTable)
        if not table.row_count:
            return
        infoset = self.model.infoset(table.cursor_row, self.iteration)
        self.main.query_one(Walkthrough).show_infoset(infoset, bool(self.model.config.get("argmax_fallback", True)))

    def show_convergence_plot(self) -> None:
        table = self.main.query_one(ConvergenceTable)
        if table.row_count:
            key = list(kuhn.TARGETS)[table.cursor_row]
            self.main.query_one(ConvergencePlot).show(self.model, self.iteration, key)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if isinstance(event.data_table, AdvantageTable):
            self.show_walkthrough()
        elif isinstance(event.data_table, ConvergenceTable):
            self.show_convergence_plot()

