"""The progress display of a training run: a rich bar with ETA on a terminal, plain lines
otherwise (:mod:`training.contract.rundir` re-exports it with the run directory it reports on)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Overall and per-iteration progress: a rich bar with ETA on a terminal, else plain lines.

    ``start_iteration(i)`` / ``advance_iteration(done, total, phase)`` / ``end_iteration(summary)``;
    the overall bar counts iterations (or the time budget, whichever ends first), the step bar
    the current phase (traversals, SGD steps). Without a terminal, a line per finished
    iteration, and within a long iteration a line per :func:`bot.progress.plain_interval`
    (a minute) saying the phase, how far it is and its ETA.
    """

    def __init__(self, total_iterations: int, first_iteration: int = 1, time_budget: float | None = None,
                 stream: TextIO | None = None, trained_seconds: float = 0.0) -> None:
        """``time_budget`` is the run's whole training clock and ``trained_seconds`` what earlier
        sittings used of it, so the overall ETA stops at the budget's end when that comes first."""
        from bot.progress import PlainTicker

        self.stream = stream or sys.stderr
        self.total = total_iterations
        self.live = self.stream.isatty()
        self.started = time.monotonic()
        self._rich = None
        self._ticker = PlainTicker()
        self._ticker.due()  # the first plain line comes a full interval after the start
        self._phase, self._phase_started = "", self.started
        if self.live:
            from rich.console import Console

            from bot.progress import budget_deadline, progress_bar

            self._rich = progress_bar(Console(file=self.stream))
            self._rich.start()
            self._overall = self._rich.add_task("iterations", total=total_iterations, completed=first_iteration - 1,
                                                deadline=budget_deadline(time_budget, trained_seconds, self.started))  # fmt: skip
            self._step = self._rich.add_task("iteration", total=1)

    def start_iteration(self, iteration: int, phase: str = "") -> None:
        self._phase, self._phase_started = f"iteration {iteration} {phase}".strip(), time.monotonic()
        if self._rich is not None:
            self._rich.reset(self._step, total=1, description=self._phase)

    def advance_iteration(self, done: float, total: float, phase: str | None = None) -> None:
        new_phase = bool(phase) and phase != self._phase
        if phase and new_phase:
            self._phase, self._phase_started = phase, time.monotonic()
        if self._rich is not None:
            if new_phase:  # a new phase restarts the step bar, so its ETA is the phase's own
                self._rich.reset(self._step, total=total, completed=done, description=phase)
            else:
                self._rich.update(self._step, completed=done, total=total)
        elif self._ticker.due():
            from bot.progress import plain_line

            elapsed = time.monotonic() - self._phase_started
            remaining = elapsed * (total - done) / done if done else None
            print(plain_line(self._phase, done, total, elapsed, remaining), file=self.stream, flush=True)

    def end_iteration(self, iteration: int, summary: str) -> None:
        if self._rich is not None:
            self._rich.advance(self._overall)
            self._rich.console.print(f"iteration {iteration}: {summary}")
        else:
            print(f"iteration {iteration}/{self.total}: {summary}", file=self.stream, flush=True)
        self._ticker.due()  # the next plain line a full interval after this one

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
