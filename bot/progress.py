"""Progress for every long command: a rich bar on a terminal, plain lines elsewhere.

* :func:`progress_bar` is the one rich ``Progress`` every long command uses (solve, match,
  report, exploit, train, abstraction builds): description, bar, done/total, elapsed and ETA,
  plus any extra columns a command shows. When its console is not a terminal (a pipe, a log
  file, ``nohup``, CI) nothing animates; instead each task prints a plain line when it starts,
  then one every :func:`plain_interval` seconds (60 by default, ``POKERBOT_PROGRESS_SECONDS``
  overrides it) and one when it finishes, so a log shows signs of life without a terminal.
* :func:`report` lets library code (a stack of networks being averaged, a feature table being
  built) say how far a loop is without knowing who listens; a command shows those reports with
  :func:`shown`. Without a listener a report costs one context-variable lookup.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

#: Seconds between plain progress lines when not on a terminal (environment override).
PLAIN_INTERVAL_ENV = "POKERBOT_PROGRESS_SECONDS"
DEFAULT_PLAIN_INTERVAL = 60.0


def plain_interval() -> float:
    """Seconds between plain progress lines: ``$POKERBOT_PROGRESS_SECONDS`` or 60."""
    text = os.environ.get(PLAIN_INTERVAL_ENV)
    if not text:
        return DEFAULT_PLAIN_INTERVAL
    try:
        return max(0.0, float(text))
    except ValueError:
        return DEFAULT_PLAIN_INTERVAL


def clock(seconds: float | None) -> str:
    """``0:01:05`` (h:mm:ss), or ``-:--:--`` when unknown."""
    if seconds is None:
        return "-:--:--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def plain_line(description: str, done: float, total: float | None, elapsed: float, remaining: float | None) -> str:
    """One plain progress line: ``hands 1,200/5,000 (24%)  elapsed 0:01:00  eta 0:03:10``."""
    if total:
        count = f"{done:,.0f}/{total:,.0f} ({100 * done / total:.0f}%)"
        return f"{description} {count}  elapsed {clock(elapsed)}  eta {clock(remaining)}"
    return f"{description} {done:,.0f}  elapsed {clock(elapsed)}"


class PlainTicker:
    """Says when the next plain line is due: the first call, then every ``interval`` seconds."""

    def __init__(self, interval: float | None = None, now: Callable[[], float] = time.monotonic) -> None:
        self.interval = plain_interval() if interval is None else interval
        self.now = now
        self.last: float | None = None

    def due(self) -> bool:
        current = self.now()
        if self.last is not None and current - self.last < self.interval:
            return False
        self.last = current
        return True


def time_remaining(task: Task) -> float | None:
    """Seconds until ``task`` ends: rich's estimate from its speed, but never past the task's
    ``deadline`` field (rich's clock, e.g. when a run's ``--time-budget`` runs out), so a solve
    whose iteration target is days away and whose budget ends in an hour says an hour.

    rich measures speed only over its last 30 s of updates, so a task that advances in steps
    further apart (a board match's chunks of boards on a busy machine, a minute each) has no
    speed and would show no ETA at all; it then gets the rate since the task started (counted
    from the ``first_completed`` field :class:`TickingProgress` records, so a resumed run's
    earlier iterations do not pass for this sitting's)."""
    remaining = task.time_remaining if task.total is not None else None
    done_here = task.completed - task.fields.get("first_completed", 0)
    if remaining is None and task.total is not None and done_here > 0 and task.elapsed:
        remaining = max(0.0, task.total - task.completed) * task.elapsed / done_here
    deadline = task.fields.get("deadline")
    if deadline is not None:
        left = max(0.0, deadline - task.get_time())
        remaining = left if remaining is None else min(remaining, left)
    return remaining


def budget_deadline(time_budget: float | None, trained_seconds: float, started: float) -> float | None:
    """The ``deadline`` field of a run's task: when its ``--time-budget`` (the run's whole
    training clock) runs out, for a sitting that started at ``started`` (``time.monotonic()``)
    after earlier sittings trained ``trained_seconds``; None without a budget."""
    return None if time_budget is None else started + max(0.0, time_budget - trained_seconds)


class RemainingColumn(ProgressColumn):
    """The ETA column: :func:`time_remaining` as ``h:mm:ss``."""

    max_refresh = 0.5

    def render(self, task: Task) -> Text:
        return Text(clock(time_remaining(task)), style="progress.remaining")


class TickingProgress(Progress):
    """A rich ``Progress`` that, off a terminal, prints plain lines instead of animating
    (see the module docstring). The lines go to standard error, so a command's own output on
    standard output (a table, JSON) stays clean when redirected."""

    def __init__(self, *columns: ProgressColumn | str, console: Console | None = None, **kwargs) -> None:
        console = console or Console(stderr=True)
        self.plain = not console.is_terminal
        super().__init__(*columns, console=console, disable=self.plain, **kwargs)
        self._tickers: dict[TaskID, PlainTicker] = {}
        self._finished: set[TaskID] = set()

    def add_task(self, description: str, *args, **kwargs) -> TaskID:
        kwargs.setdefault("first_completed", kwargs.get("completed", 0))  # for time_remaining's rate
        task_id = super().add_task(description, *args, **kwargs)
        if self.plain:
            self._tickers[task_id] = PlainTicker()
            self._tick(task_id)
        return task_id

    def update(self, task_id: TaskID, *args, **kwargs) -> None:
        super().update(task_id, *args, **kwargs)
        self._tick(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._tick(task_id)

    def reset(self, task_id: TaskID, *args, **kwargs) -> None:
        super().reset(task_id, *args, **kwargs)
        self._finished.discard(task_id)

    def stop(self) -> None:
        super().stop()
        if self.plain:
            for task in self.tasks:
                if task.id not in self._finished:
                    self._print(task)

    def _tick(self, task_id: TaskID) -> None:
        if not self.plain or task_id not in self._tickers:
            return
        task = self._tasks[task_id]
        if task.total is not None and task.completed >= task.total:
            if task_id not in self._finished:
                self._finished.add(task_id)
                self._print(task)
        elif self._tickers[task_id].due():
            self._print(task)

    def _print(self, task: Task) -> None:
        elapsed = task.finished_time if task.finished_time is not None else (task.elapsed or 0.0)
        remaining = time_remaining(task)
        if task.total is not None and task.completed >= task.total:
            remaining = 0.0
        line = plain_line(task.description, task.completed, task.total, elapsed, remaining)
        print(line, file=sys.stderr, flush=True)


def progress_bar(
    console: Console | None = None, *extra: ProgressColumn, transient: bool = False
) -> TickingProgress:
    """A progress display with the project's standard columns; ``extra`` columns (e.g. the
    current exploitability) go between the count and the clocks. A task added with a
    ``deadline`` field (``time.monotonic()`` seconds) shows an ETA no later than it."""
    return TickingProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
        TextColumn("eta"),
        RemainingColumn(),
        console=console,
        transient=transient,
    )


# -- reports from library code ------------------------------------------------------------------

Reporter = Callable[[str, float, "float | None"], None]
_REPORTER: ContextVar[Reporter | None] = ContextVar("pokerbot_progress_reporter", default=None)


def report(description: str, done: float, total: float | None = None) -> None:
    """Library code: ``description`` is ``done`` of ``total`` (None: unknown) through its loop.
    Shown by the command that wrapped the call in :func:`shown`; a no-op otherwise."""
    reporter = _REPORTER.get()
    if reporter is not None:
        reporter(description, done, total)


@contextmanager
def shown(console: Console | None = None, transient: bool = True) -> Iterator[TickingProgress]:
    """Show every :func:`report` made inside the block: one task per description."""
    with progress_bar(console, transient=transient) as progress:
        tasks: dict[str, TaskID] = {}

        def reporter(description: str, done: float, total: float | None) -> None:
            if description not in tasks:
                tasks[description] = progress.add_task(description, total=total, completed=done)
            else:
                progress.update(tasks[description], completed=done, total=total)

        token = _REPORTER.set(reporter)
        try:
            yield progress
        finally:
            _REPORTER.reset(token)
