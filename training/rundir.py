"""A training run's directory: config, metrics, atomic checkpoints, progress display.

Layout (algorithm-neutral; Deep CFR, SD-CFR and NFSP all use it)::

    runs/NAME/
      config.toml        the resolved config (preset < --config file < flags), seed included
      metrics.jsonl      one JSON object per iteration ("iteration" key first)
      status.json        what the trainer is doing now (iteration, phase, since), for ``pokerbot watch``
      checkpoint/        the last complete checkpoint (files written by the algorithm)
      policy/            the playable artefact (bundle format owned by the algorithm's agent)

Checkpoints follow Stable-Baselines3's ``save_util`` habit: every file is written to a temporary
name, fsynced and renamed; a whole checkpoint is a directory built as ``checkpoint.tmp`` and swapped
in (``checkpoint`` -> ``checkpoint.old``, ``checkpoint.tmp`` -> ``checkpoint``, then the old one is
removed), so a kill at any instant leaves one complete checkpoint to resume from. ``torch.load``
is always called with ``weights_only=True``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
import sys
import time

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tomli_w

from bot.errors import PokerbotError

CONFIG_FILE = "config.toml"
METRICS_FILE = "metrics.jsonl"
STATUS_FILE = "status.json"
CHECKPOINT_DIR = "checkpoint"
POLICY_DIR = "policy"


class RunDirError(PokerbotError):
    """A run directory that cannot be created or resumed (the message names the path)."""


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[Any], None], binary: bool = True) -> None:
    """Call ``write(handle)`` on a temporary file next to ``path``, fsync, then rename onto it."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb" if binary else "w") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def save_torch(path: Path, obj: Any) -> None:
    """``torch.save`` atomically (tensors, dicts, lists and plain numbers only)."""
    import torch

    atomic_write(path, lambda handle: torch.save(obj, handle))


def load_torch(path: Path) -> Any:
    """``torch.load(weights_only=True)`` on CPU; a damaged file is a one-line error."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, pickle.UnpicklingError) as error:  # KeyError: a damaged pickle memo
        raise RunDirError(f"{path}: cannot load checkpoint file ({str(error).splitlines()[0]})") from None


def read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise RunDirError(f"{path}: invalid TOML ({error})") from None


def config_to_dict(config: Any) -> dict:
    """A dataclass config as a TOML-ready dict (None values dropped: TOML has no null)."""
    raw = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config)
    return {k: v for k, v in raw.items() if v is not None}


class RunDir:
    """One run directory; :meth:`create` starts a run, :meth:`open` resumes one."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    # -- lifecycle -----------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, config: Any) -> RunDir:
        """A new run: the directory must not already hold a run (use ``--resume`` for that)."""
        run = cls(Path(path))
        if (run.path / CONFIG_FILE).exists():
            raise RunDirError(f"{run.path} already holds a run; use --resume {run.path} to continue it")
        if run.path.exists() and not run.path.is_dir():
            raise RunDirError(f"{run.path} exists and is not a directory")
        run.path.mkdir(parents=True, exist_ok=True)
        run.save_config(config)
        return run

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """An existing run (for resuming, evaluating or loading its policy)."""
        run = cls(Path(path))
        if not (run.path / CONFIG_FILE).is_file():
            raise RunDirError(f"{run.path} is not a run directory (no {CONFIG_FILE})")
        return run

    def config(self) -> dict:
        return read_toml(self.path / CONFIG_FILE)

    def save_config(self, config: Any) -> None:
        """Write the resolved config (a dataclass or dict) as ``config.toml``, atomically."""
        atomic_write(self.path / CONFIG_FILE, lambda h: h.write(tomli_w.dumps(config_to_dict(config)).encode()))

    # -- metrics -------------------------------------------------------------------------------

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    def append_metrics(self, record: dict) -> None:
        """Append one JSON line (flushed and fsynced: a crash loses at most this line)."""
        with open(self.metrics_path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        records = []
        for line in self.metrics_path.read_text().splitlines():
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # a torn last line from a kill mid-write
        return records

    def truncate_metrics(self, last_iteration: int) -> None:
        """Keep only records up to ``last_iteration`` (those the checkpoint covers)."""
        kept = [r for r in self.read_metrics() if r.get("iteration", 0) <= last_iteration]
        atomic_write(self.metrics_path, lambda h: h.write("".join(json.dumps(r) + "\n" for r in kept).encode()))

    # -- live status ---------------------------------------------------------------------------

    def write_status(self, iteration: int, phase: str) -> None:
        """Replace ``status.json`` with the current phase (a rename, so a reader never sees half
        a file; not fsynced: a status lost in a crash is stale anyway)."""
        tmp = self.path / (STATUS_FILE + ".tmp")
        tmp.write_text(json.dumps({"iteration": iteration, "phase": phase, "since": time.time(), "pid": os.getpid()}))
        os.replace(tmp, self.path / STATUS_FILE)

    # -- checkpoints ---------------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path | None:
        """The complete checkpoint directory, or None before the first one."""
        for name in (CHECKPOINT_DIR, CHECKPOINT_DIR + ".old"):
            candidate = self.path / name
            if (candidate / "COMPLETE").exists():
                return candidate
        return None

    @contextmanager
    def writing_checkpoint(self) -> Iterator[Path]:
        """Yield a fresh temporary directory; on normal exit it atomically becomes the checkpoint."""
        tmp = self.path / (CHECKPOINT_DIR + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        yield tmp
        atomic_write(tmp / "COMPLETE", lambda h: h.write(b"ok\n"))
        current, old = self.path / CHECKPOINT_DIR, self.path / (CHECKPOINT_DIR + ".old")
        if old.exists():
            shutil.rmtree(old)
        if current.exists():
            os.replace(current, old)
        os.replace(tmp, current)
        fsync_dir(self.path)
        if old.exists():
            shutil.rmtree(old)

    @property
    def policy_path(self) -> Path:
        return self.path / POLICY_DIR

    def resume_summary(self) -> str:
        """What ``--resume`` continues from, in one line (printed with or without a terminal)."""
        config = self.config()
        what = " on ".join(str(config[k]) for k in ("algo", "game") if k in config) or "run"
        checkpoint = self.checkpoint_path
        if checkpoint is None:
            return f"resuming {self.path} ({what}): no complete checkpoint yet, so it starts over in the same directory"
        records = [r for r in self.read_metrics() if "iteration" in r and not r.get("final")]
        logged = f"iteration {records[-1]['iteration']}" if records else "no iteration"
        seconds = next((r[k] for r in reversed(records) for k in ("elapsed_s", "wall_s", "train_seconds") if k in r), None)
        spent = f", {seconds / 60:.1f} min of training so far" if isinstance(seconds, int | float) else ""
        age = time.time() - (checkpoint / "COMPLETE").stat().st_mtime
        return (f"resuming {self.path} ({what}) from its last complete checkpoint (written {age / 60:.0f} min ago; "
                f"metrics.jsonl reaches {logged}{spent})")


def parse_duration(text: str | None) -> float | None:
    """Seconds in ``90``, ``90s``, ``10m``, ``2h`` or ``1h30m``; None stays None."""
    if text is None:
        return None
    import re

    parts = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", str(text))
    if not parts or not any(parts.groups()):
        raise ValueError(f"time budget {text!r}: use e.g. 90s, 10m, 2h or 1h30m")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    return hours * 3600 + minutes * 60 + seconds


class Progress:
    """Overall and per-iteration progress: a rich bar with ETA on a terminal, else plain lines.

    ``start_iteration(i)`` / ``advance_iteration(done, total, phase)`` / ``end_iteration(summary)``;
    the overall bar counts iterations (or the time budget, whichever ends first), the step bar
    the current phase (traversals, SGD steps). Without a terminal, a line per finished
    iteration, and within a long iteration a line per :func:`bot.progress.plain_interval`
    (a minute) saying the phase, how far it is and its ETA.
    """

    def __init__(self, total_iterations: int, first_iteration: int = 1, time_budget: float | None = None, stream=None) -> None:
        from bot.progress import PlainTicker

        self.stream = stream or sys.stderr
        self.total = total_iterations
        self.budget = time_budget
        self.live = self.stream.isatty()
        self.started = time.monotonic()
        self._rich = None
        self._ticker = PlainTicker()
        self._ticker.due()  # the first plain line comes a full interval after the start
        self._phase, self._phase_started = "", self.started
        if self.live:
            from rich.console import Console

            from bot.progress import progress_bar

            self._rich = progress_bar(Console(file=self.stream))
            self._rich.start()
            self._overall = self._rich.add_task("iterations", total=total_iterations, completed=first_iteration - 1)
            self._step = self._rich.add_task("iteration", total=1)

    def start_iteration(self, iteration: int, phase: str = "") -> None:
        self._phase, self._phase_started = f"iteration {iteration} {phase}".strip(), time.monotonic()
        if self._rich is not None:
            self._rich.reset(self._step, total=1, description=self._phase)

    def advance_iteration(self, done: float, total: float, phase: str | None = None) -> None:
        new_phase = bool(phase) and phase != self._phase
        if new_phase:
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
