"""Is an abstraction solve converged? Its final average strategy against itself at half the run.

Hold'em has no exact exploitability, so "converged" is measured the way the Deep CFR paper's
baselines are compared: head to head. A solve keeps a copy of its average strategy from the
moment it passes half its target (half the ``--iterations``, or half the ``--time-budget`` of
the run's training clock, whichever comes first: with a steady rate both are T/2), and at the
end plays the final average T against it by sampled boards (:mod:`training.abstraction.board_match`:
exact over hole cards and actions, both seats). The solve is *converged* when that interval
lies inside +-:data:`TOLERANCE_MBB` mbb/g: another doubling of the work would no longer change
the policy's strength measurably. The result goes to ``metrics.jsonl`` (``vs_half_mbb``,
``vs_half_ci95``, ``half_iteration``, ``converged``) and to the console.

The snapshot lives in ``<run>/half/`` (``average.npy`` and ``half.json`` with its iteration); a
``--resume`` with a larger target takes a new one when the run passes half of that target, and
the check always names the iteration it compared against. A run stopped well short of its
target (Ctrl-C at 80 % of an 8-hour budget) holds a snapshot from most of what it did: T against
0.8 T says nothing about another doubling, so such a run is not checked (the line says from how
far into the run its snapshot is, and that a ``--resume`` to the target checks it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from bot.abstraction.agent import AbstractionAgent
from bot.abstraction.policy import AVERAGE_FILE
from bot.abstraction.spec import AbstractionSpec
from bot.evaluation.statistics import estimate
from bot.progress import progress_bar
from protocol.files import atomic_write, atomic_write_text
from training.abstraction.board_match import BoardMatch, run
from training.contract.rundir import RunDir

#: The T vs T/2 interval must lie inside +- this many mbb/g (the issue's definition of converged).
TOLERANCE_MBB = 5.0
#: The snapshot must come from at most this share of the run (of its iterations or of its
#: training clock, whichever is smaller: the half mark is passed by either) for a check: about
#: half, with room for the batch that carries a run past its mark.
HALF_SHARE_LIMIT = 0.6
HALF_DIR = "half"


@dataclass(frozen=True)
class HalfMark:
    """When a solve passes half of its target (either limit may be absent)."""

    iterations: int | None
    seconds: float | None

    def describe(self) -> str:
        """The mark in words, e.g. "iteration 1,000 or 3,600 s of solving"."""
        parts = ([] if self.iterations is None else [f"iteration {self.iterations:,}"]) + (
            [] if self.seconds is None else [f"{self.seconds:,.0f} s of solving"])  # fmt: skip
        return " or ".join(parts)

    def passed(self, iterations: int, seconds: float) -> bool:
        return (self.iterations is not None and iterations >= self.iterations) or (
            self.seconds is not None and seconds >= self.seconds)  # fmt: skip


def half_mark(target_iterations: int | None, time_budget: float | None) -> HalfMark:
    """Half of each limit the run has."""
    return HalfMark(None if target_iterations is None else max(1, target_iterations // 2),
                    None if time_budget is None else time_budget / 2)  # fmt: skip


def snapshot(run_path: Path) -> tuple[int, float] | None:
    """(iteration, training seconds) of the run's half snapshot, or None."""
    try:
        stored = json.loads((run_path / HALF_DIR / "half.json").read_text())
        return int(stored["iteration"]), float(stored["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def due(taken: tuple[int, float] | None, mark: HalfMark, iteration: int, seconds: float) -> bool:
    """True when the run has passed ``mark`` and its snapshot (``taken``, from :func:`snapshot`
    or :func:`take_snapshot`) was taken before it: a resume with a larger target snapshots
    again, one with the same target keeps the one it has."""
    return mark.passed(iteration, seconds) and (taken is None or not mark.passed(*taken))


def refused_ahead(taken: tuple[int, float] | None, mark: HalfMark, iteration: int, seconds: float,
                  target_iterations: int, time_budget: float | None) -> str | None:  # fmt: skip
    """The warning a resumed run prints at its start when, at its rate so far, its final check
    will be refused, or None. A resume to a new target keeps a snapshot taken past the new half
    mark and otherwise snapshots at its first batch end, and either may be over
    :data:`HALF_SHARE_LIMIT` of the new target (the 3e8 run at 537,452 iterations, resumed to
    875,000, would have snapshotted at 61 %); telling it now saves the hours before the refusal.
    The end of the run is projected from ``seconds`` per ``iteration`` so far: the run stops at
    its iteration target or its time budget, whichever that rate reaches first."""
    if due(taken, mark, iteration, seconds):
        at, kept = (iteration, seconds), False  # the run loop snapshots at this sitting's first batch end
    elif taken is not None and mark.passed(*taken):
        at, kept = taken, True  # kept: no later snapshot is taken
    else:
        return None  # the snapshot comes at the mark itself
    per_iteration = seconds / max(iteration, 1)
    final = target_iterations
    if time_budget is not None and per_iteration > 0:
        final = min(final, int(time_budget / per_iteration))
    share = snapshot_share(at, max(final, 1), final * per_iteration)  # the rule final_check applies
    if share <= HALF_SHARE_LIMIT:
        return None
    needed = iterations_to_check(at[0])
    budget = "" if time_budget is None or time_budget >= needed * per_iteration else " and a --time-budget that covers them"
    return (f"convergence: at the rate so far, the check at the end will be refused: the half snapshot (iteration "
            f"{at[0]:,}{'' if kept else ' or later'}) will be {share:.0%} of the run, over the "
            f"{HALF_SHARE_LIMIT:.0%} a check allows; --iterations {needed:,}{budget} (about "
            f"{needed * per_iteration / 3600:,.1f} h of training in all) gets a check")  # fmt: skip


def iterations_to_check(snapshot_iteration: int) -> int:
    """The smallest target whose check a snapshot at ``snapshot_iteration`` is close enough to
    half of (:data:`HALF_SHARE_LIMIT`)."""
    return math.ceil(snapshot_iteration / HALF_SHARE_LIMIT)


def take_snapshot(run_path: Path, average: np.ndarray, iteration: int, seconds: float) -> tuple[int, float]:
    """Copy the average strategy at ``iteration`` into ``<run>/half/`` (table first, then the
    json that names it, so a crash in between leaves no snapshot claiming the wrong table);
    returns what :func:`snapshot` will read back."""
    folder = run_path / HALF_DIR
    folder.mkdir(exist_ok=True)
    (folder / "half.json").unlink(missing_ok=True)
    atomic_write(folder / "average.npy", lambda handle: np.save(handle, average))
    taken = (iteration, round(seconds, 3))
    atomic_write_text(folder / "half.json", json.dumps({"iteration": taken[0], "seconds": taken[1]}))
    return taken


@dataclass(frozen=True)
class Convergence:
    """The final average against the half snapshot, in mbb/g (95% interval half-width)."""

    half_iteration: int
    iteration: int
    boards: int
    mbb: float
    ci95: float

    @property
    def converged(self) -> bool:
        return abs(self.mbb) + self.ci95 <= TOLERANCE_MBB

    def metrics(self) -> dict:
        # three decimals: `pokerbot agents` prints these to one, and two could land on a tie the
        # console's line broke the other way (a 1.1549 interval stored as 1.15 read back "1.1")
        return {"vs_half_mbb": round(self.mbb, 3), "vs_half_ci95": round(self.ci95, 3), "vs_half_boards": self.boards,
                "half_iteration": self.half_iteration, "converged": self.converged}  # fmt: skip

    def line(self) -> str:
        verdict = "converged" if self.converged else "not converged"
        return (f"convergence: iteration {self.iteration:,} vs {self.half_iteration:,}: {self.mbb:+.1f} ± {self.ci95:.1f} "
                f"mbb/g over {self.boards} boards: {verdict} (the target: within ±{TOLERANCE_MBB:g})")  # fmt: skip


class CheckInterrupted(Exception):
    """The check was stopped (Ctrl-C) before two boards gave an interval; the message says so."""


def check(spec: AbstractionSpec, final: Path, run_path: Path, iteration: int, boards: int, seed: int, threads: int,
          bar: Progress | None = None) -> Convergence | None:  # fmt: skip
    """Play the average table at ``final`` against the run's half snapshot on ``boards`` sampled
    boards (stream ``seed``); None without a snapshot older than ``iteration``. A Ctrl-C before
    two boards raises :class:`CheckInterrupted` (after more, the boards played so far count)."""
    taken = snapshot(run_path)
    if taken is None or taken[0] >= iteration or boards < 2:
        return None
    half = taken[0]
    game = spec.load_game()
    match = BoardMatch(game, AbstractionAgent(game, spec.name, final),
                       AbstractionAgent(game, spec.name, run_path / HALF_DIR / "average.npy"))  # fmt: skip
    task = None if bar is None else bar.add_task(f"convergence check: iteration {iteration:,} vs {half:,}", total=boards)
    values, _ = run(match, seed, boards, threads, 4 * threads,
                    lambda n: None if bar is None else bar.advance(task, n))  # fmt: skip
    if len(values.duplicate) < 2:  # boards >= 2, so only a Ctrl-C stops it this early
        raise CheckInterrupted(f"convergence: the check of iteration {iteration:,} against {half:,} was interrupted "
                               f"after {len(values.duplicate)} of {boards} boards")  # fmt: skip
    result = estimate(values.duplicate * 1000.0 / game.big_blind)
    return Convergence(half, iteration, result.n, result.mean, (result.high - result.low) / 2)


def snapshot_share(taken: tuple[int, float], iteration: int, seconds: float) -> float:
    """How far into the run the snapshot ``taken`` (iteration, training seconds) is: the smaller
    of its share of the run's iterations (``iteration``) and of its training clock (``seconds``);
    a snapshot of the final iteration itself (or a later one) is the whole run."""
    if taken[0] >= iteration:
        return taken[0] / iteration
    return min(taken[0] / iteration, taken[1] / seconds if seconds > 0 else 1.0)


def final_check(spec: AbstractionSpec, run_dir: RunDir, iteration: int, seconds: float, half: HalfMark, boards: int,
                seed: int, threads: int, console: Console, interrupted: bool) -> None:  # fmt: skip
    """The check a solve ends with (the run's average at ``iteration`` after ``seconds`` of
    training against its half snapshot), its line on ``console`` and its ``metrics.jsonl``
    record; where there is nothing to compare yet, the line says why and what gets a check
    (``interrupted``: the run stopped short of its target)."""
    taken = snapshot(run_dir.path)
    if taken is None or snapshot_share(taken, iteration, seconds) > HALF_SHARE_LIMIT:
        console.print(_why_not_checked(taken, iteration, seconds, half, run_dir.path, interrupted))
        return
    try:
        with progress_bar(console, transient=True) as bar:
            checked = check(spec, run_dir.policy_path / AVERAGE_FILE, run_dir.path, iteration, boards, seed, threads, bar)
    except CheckInterrupted as interrupted:
        console.print(f"{interrupted}; `pokerbot train --resume {run_dir.path}` checks it again")
        return
    if checked is not None:  # None only for fewer than two boards, which the config refuses
        run_dir.append_metrics({"iteration": iteration, "final": True} | checked.metrics())
        console.print(checked.line())


def _why_not_checked(taken: tuple[int, float] | None, iteration: int, seconds: float, half: HalfMark,
                     run_path: Path, interrupted: bool) -> str:  # fmt: skip
    """The line of a run with no snapshot from about half of it (:func:`final_check`)."""
    if not half.passed(iteration, seconds):
        return f"convergence: checked once the run passes half its target ({half.describe()}); `--resume` it to get there"
    if taken is None:
        return ("convergence: no snapshot from half the run to compare with (it passed half its target in no sitting "
                "that saved one)")  # fmt: skip
    share = (f"convergence: not checked: the snapshot (iteration {taken[0]:,}) is from {taken[0] / iteration:.0%} of "
             f"this run's iterations and {taken[1] / seconds:.0%} of its training clock, not half of it")  # fmt: skip
    if interrupted:
        return f"{share} (the run stopped short of its target); `pokerbot train --resume {run_path}` to the target checks it"
    return (f"{share} (a resume took it past half of a target too near); `pokerbot train --resume {run_path} "
            f"--iterations {iterations_to_check(taken[0]):,}` or more checks it")  # fmt: skip
