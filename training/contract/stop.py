"""Interrupts, the time budget and checkpoint timing of every trainer (the run contract's
policy, :mod:`training.contract.entry`): :class:`StopRequest` for Ctrl-C, SIGTERM and the end of the time
budget (:func:`parse_duration` reads it), :class:`StepAbandoned` when a step runs on past its
grace period, and :class:`CheckpointClock` for checkpoints by count or time."""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from bot.errors import ConfigError, PokerbotError


def parse_duration(text: str | float | int | None, stored: bool = False) -> float | None:
    """Seconds in ``90``, ``90s``, ``10m``, ``2h`` or ``1h30m`` (numbers are seconds already);
    None means no limit. Zero, a negative or a non-finite time is a one-line error (leave the
    budget out for no limit): a ``--time-budget 0`` that silently meant "no limit" surprised
    users. ``stored``: a value read back from a run's own ``config.toml``, where old runs wrote
    0 for no limit (read as None)."""
    if text is None:
        return None
    if stored and isinstance(text, int | float) and not isinstance(text, bool) and text <= 0:
        return None
    if isinstance(text, int | float) and not isinstance(text, bool):
        total = float(text)
    else:
        parts = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", str(text))
        if not parts or not any(parts.groups()):
            raise ConfigError(f"time budget {text!r}: use e.g. 90s, 10m, 2h or 1h30m")
        hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
        total = hours * 3600 + minutes * 60 + seconds
    if not 0 < total < float("inf"):
        raise ConfigError(f"time budget {text!r}: must be more than 0 (leave --time-budget out for no limit)")
    return total


#: Seconds the step in progress may still run after a stop request or the end of the time
#: budget before it is abandoned (a Leduc iteration finishes well within it; a hold'em SGD fit
#: of hours does not, and must not hold the user that long).
STOP_GRACE_SECONDS = 10.0


#: :class:`StepAbandoned`'s reason when the time budget, not a signal, ended the step.
BUDGET_REACHED = "time budget reached"


class StepAbandoned(PokerbotError):
    """The step in progress was abandoned at a stop request or the end of the time budget (it
    would have run on for longer than :data:`STOP_GRACE_SECONDS`): the last checkpoint stands.
    Not a failure: :func:`run_from_cli` says so and exits 0."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StopRequest:
    """SIGINT/SIGTERM and time-budget policy shared by every trainer.

    The first signal sets :attr:`requested` (the loop finishes its step, checkpoints and
    returns) and starts the grace period: a long step that calls :meth:`check` (SGD fits,
    traversal batches) raises :class:`StepAbandoned` once ``grace`` seconds have passed. A
    trainer with a time budget sets its end with :meth:`budget_ends` at each step, with the same
    grace. The second signal restores the default handlers and raises ``KeyboardInterrupt`` (the
    step is abandoned at once). Outside the main thread no handler is installed and Ctrl-C
    behaves as usual."""

    def __init__(self, stream: Any = None, grace: float = STOP_GRACE_SECONDS) -> None:
        self.requested = False
        self.stream = stream
        self.grace = grace
        self._previous: dict[int, Any] = {}
        self._signal_ends = self._budget_ends = float("inf")
        #: Seconds for the grace periods (a test counts calls instead of waiting).
        self.clock: Callable[[], float] = time.monotonic

    def __enter__(self) -> StopRequest:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def request(self) -> None:
        """What the first signal does: stop after the step in progress, or abandon it after
        the grace period."""
        self.requested = True
        self._signal_ends = self.clock() + self.grace

    def budget_ends(self, seconds_left: float) -> None:
        """The time budget ends ``seconds_left`` from now: a step still running ``grace``
        seconds after that is abandoned."""
        self._budget_ends = self.clock() + max(seconds_left, 0.0) + self.grace

    def check(self) -> None:
        """Raise :class:`StepAbandoned` when the step in progress is past its grace period."""
        now = self.clock()
        if now >= self._signal_ends:
            raise StepAbandoned("stop requested")
        if now >= self._budget_ends:
            raise StepAbandoned(BUDGET_REACHED)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            self._restore()
            raise KeyboardInterrupt
        self.request()
        print(f"stopping after the step in progress, then checkpointing (a step still running in {self.grace:.0f} s "
              f"is abandoned; press Ctrl-C again to abandon it now)", file=self.stream or sys.stderr, flush=True)

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def __exit__(self, *exc: object) -> None:
        self._restore()


class CheckpointClock:
    """Checkpoint every ``every_steps`` steps or ``every_seconds`` of wall time, whichever comes
    first (``every_seconds`` 0 = by count only), so a killed run loses at most about a minute
    even when a count of steps takes long."""

    def __init__(self, every_steps: int, every_seconds: float) -> None:
        self.every_steps = every_steps
        self.every_seconds = every_seconds
        self.last = time.monotonic()

    def due(self, step: int) -> bool:
        by_time = self.every_seconds > 0 and time.monotonic() - self.last >= self.every_seconds
        return step % self.every_steps == 0 or by_time

    def saved(self) -> None:
        self.last = time.monotonic()


class RunInterrupted(PokerbotError):
    """A run abandoned mid-step by a second Ctrl-C (the message says how to continue)."""

    exit_code = 130
