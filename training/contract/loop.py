"""The loop shape the trainers share: step until the count, the time budget or a stop request;
checkpoint on the :class:`~training.contract.stop.CheckpointClock` and once more at the end
when the last step is not saved yet.

What a step is (a Deep CFR iteration, an NFSP self-play step, an abstraction batch, a chunk of
tabular CFR iterations, one full-width flop iteration), what it measures and what a checkpoint
holds stay each trainer's own; this is the bookkeeping around them that every loop had a copy
of (the three stopping rules, the clock, the step of the last checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable

from training.contract.stop import CheckpointClock, StopRequest


class StepLoop:
    """The stopping rules and checkpoint bookkeeping of one run's loop.

    ``target``: the step count to reach; ``time_budget``: seconds of the run's own training
    clock (the caller passes it to :meth:`running`; evaluations are off it), None for no limit;
    ``saved_at``: the step of the checkpoint the run resumed from (None: nothing saved yet)."""

    def __init__(self, stop: StopRequest, target: int, time_budget: float | None, clock: CheckpointClock,
                 saved_at: int | None = None) -> None:
        self.stop = stop
        self.target = target
        self.time_budget = time_budget
        self.clock = clock
        self.saved_at = saved_at

    def running(self, done: int, elapsed: float) -> bool:
        """Whether to take another step: the count not reached, the budget not spent, no stop
        request."""
        in_budget = self.time_budget is None or elapsed < self.time_budget
        return done < self.target and in_budget and not self.stop.requested

    def checkpoint(self, done: int, save: Callable[[], None]) -> None:
        """Save now (``save`` writes the checkpoint) and restart the clock."""
        save()
        self.clock.saved()
        self.saved_at = done

    def checkpoint_if_due(self, done: int, save: Callable[[], None]) -> bool:
        """Save when the clock says so (by count or by time); True when it did."""
        if self.clock.due(done):
            self.checkpoint(done, save)
            return True
        return False

    def unsaved(self, done: int) -> bool:
        """Whether steps were taken since the last checkpoint."""
        return done != self.saved_at

    def finish(self, done: int, save: Callable[[], None]) -> None:
        """The end of the loop (the count, the budget or a stop request): save the last steps
        unless the last checkpoint already holds them."""
        if self.unsaved(done):
            self.checkpoint(done, save)
