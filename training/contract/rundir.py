"""A training run's directory: config, metrics, verified atomic checkpoints, one writer at a time.

Layout (algorithm-neutral; every ``pokerbot train`` algorithm uses it)::

    runs/NAME/
      run.json           {"format": 1, "algo": ...}: which algorithm resumes it
      config.toml        the resolved config (preset < --config file < flags), seed included;
                         notes about the resolution (no preset for a gamedef, an option turned
                         off for the device) as comments at the top
      metrics.jsonl      one JSON object per iteration ("iteration" key first)
      status.json        what the trainer is doing now (iteration, phase, since), for ``pokerbot watch``
      checkpoint/        the last complete checkpoint (files written by the algorithm) and
                         COMPLETE: its format number and the sha256 of every file in it
      checkpoint.old/    the previous complete checkpoint: the fallback when the last one is
                         damaged or incomplete (its use is announced)
      policy/            the playable artefact: a policy bundle (:mod:`bot.agents.bundle`)
      lock               who writes the run now (:mod:`training.contract.lock`)

Checkpoints follow Stable-Baselines3's ``save_util`` habit: every file is written to a temporary
name, fsynced and renamed (:func:`protocol.files.atomic_write`); a whole checkpoint is a
directory built as ``checkpoint.tmp`` and swapped in (``checkpoint`` -> ``checkpoint.old``,
``checkpoint.tmp`` -> ``checkpoint``), so a kill at any instant leaves a complete checkpoint to
resume from. A resume never starts a run over silently: with no usable checkpoint but progress
on disk it stops with a one-line error (``--force`` starts over). ``torch.load`` is always
called with ``weights_only=True``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tomli_w

from bot.errors import CorruptFileError
from bot.run_files import (
    CHECKPOINT_DIR,
    COMPLETE_FILE,
    CONFIG_FILE,
    ELAPSED_METRIC,
    METRICS_FILE,
    POLICY_DIR,
    RUN_FILE,
    RUN_FORMAT,
    SOLVE_ALGO,
    STATUS_FILE,
    RunDirError,
    continue_command,
    latest_checkpoint,
    load_torch,
    parse_metrics,
    read_toml,
    run_format_problem,
)
from protocol.files import (
    atomic_write,
    atomic_write_text,
    fsync_dir,
    sha256_file,
    verify_sha256,
    writing,
)
from training.contract.lock import RunLock
from training.contract.progress import Progress

#: The layout's names and readers live in :mod:`bot.run_files` (what ``bot`` and ``tui`` may
#: import); the trainers take them from here with the writers.
__all__ = ["CHECKPOINT_DIR", "CHECKPOINT_FORMAT", "COMPLETE_FILE", "CONFIG_FILE", "METRICS_FILE", "POLICY_DIR",
           "RUN_FILE", "STATUS_FILE", "Progress", "RunDir", "RunDirError", "config_text", "config_to_dict",
           "load_torch", "read_toml", "save_torch", "verify_checkpoint"]

#: Format of run directories and checkpoints written by this pokerbot.
CHECKPOINT_FORMAT = RUN_FORMAT


def save_torch(path: Path, obj: Any) -> None:
    """``torch.save`` atomically (tensors, dicts, lists and plain numbers only)."""
    import torch

    atomic_write(path, lambda handle: torch.save(obj, handle))


def config_to_dict(config: Any) -> dict[str, Any]:
    """A dataclass config as a TOML-ready dict (None values dropped: TOML has no null)."""
    raw = dataclasses.asdict(config) if dataclasses.is_dataclass(config) and not isinstance(config, type) else dict(config)
    return {k: v for k, v in raw.items() if v is not None}


def config_text(config: Any, notes: tuple[str, ...] = ()) -> str:
    """``config.toml``'s text: the notes as comments, then the settings."""
    header = "".join(f"# note: {note}\n" for note in notes)
    return header + tomli_w.dumps(config_to_dict(config))


class RunDir:
    """One run directory; :meth:`create` starts a run, :meth:`open` resumes one.

    One writer at a time: the first write through a :class:`RunDir` (creating it, saving its
    config, a metrics line, a checkpoint) takes the run's lock (:class:`training.contract.lock.RunLock`,
    an OS lock that dies with its process), so a second ``train --resume`` of the same run is a
    one-line error naming the holder instead of interleaved metrics."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock: RunLock | None = None
        #: Whether :meth:`create` started the run (in a folder it made, or found empty):
        #: :meth:`discard` may empty it (and remove it when it made it).
        self._new = self._made = False

    # -- lifecycle -----------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, config: Any, algo: str | None = None, notes: tuple[str, ...] = ()) -> RunDir:
        """A new run in a new or empty folder (a run is never mixed into a folder holding other
        files, ``/`` or a home folder included; use ``--resume`` to continue a run)."""
        run = cls(Path(path))
        if (run.path / CONFIG_FILE).exists():
            raise RunDirError(f"{run.path} already holds a run; use --resume {run.path} to continue it")
        if run.path.exists() and not run.path.is_dir():
            raise RunDirError(f"{run.path} exists and is not a directory")
        with writing(run.path):
            if run.path.is_dir() and any(run.path.iterdir()):
                raise RunDirError(f"{run.path} is not empty: a new run needs a new or empty folder "
                                  f"(e.g. {run.path / 'run'})")
            run._made = not run.path.exists()
            run.path.mkdir(parents=True, exist_ok=True)
        run._new = True
        try:
            run.lock()
            run.save_config(config, algo=algo, notes=notes)
        except Exception:
            run.discard()
            raise
        return run

    @classmethod
    def open(cls, path: str | Path, algo: str | None = None) -> RunDir:
        """An existing run (for resuming, evaluating or loading its policy); with ``algo``, a
        run of another algorithm is a one-line error naming the right ``--algo``. A run whose
        ``run.json`` has another format than this pokerbot writes is refused."""
        run = cls(Path(path))
        if not (run.path / CONFIG_FILE).is_file():
            raise RunDirError(f"{run.path} is not a run directory (no {CONFIG_FILE})")
        problem = run_format_problem(run.path)
        if problem is not None:
            raise RunDirError(problem)
        recorded = run.algo
        if algo is not None and recorded is not None and recorded != algo:
            how = continue_command(run.path, recorded) if recorded == SOLVE_ALGO else f"--algo {recorded}"
            raise RunDirError(f"{run.path} is a {recorded} run; resume it with {how}")
        return run

    def lock(self) -> None:
        """Become the run's one writer (idempotent; kept while this process holds any
        :class:`RunDir` of the run); a one-line error naming the holder when another has it."""
        if self._lock is None:
            self._lock = RunLock.acquire(self.path)

    def discard(self) -> bool:
        """Remove the run :meth:`create` made when it failed before its first checkpoint or
        policy (metrics lines without a checkpoint cannot be resumed), so a retry after a bad
        game or a full disk finds no half-made run; True when it did."""
        if not self._new or any((self.path / name).exists() for name in (CHECKPOINT_DIR, CHECKPOINT_DIR + ".old", POLICY_DIR)):
            return False
        if self._made:
            shutil.rmtree(self.path, ignore_errors=True)
        else:  # the user's empty folder stays, empty again
            for entry in list(self.path.iterdir()):
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        return True

    @property
    def algo(self) -> str | None:
        """The algorithm recorded at creation (None for runs made before ``run.json``)."""
        path = self.path / RUN_FILE
        if not path.is_file():
            return None
        try:
            return str(json.loads(path.read_text())["algo"])
        except (OSError, ValueError, KeyError, TypeError):
            raise CorruptFileError(f"{path}: damaged (expected {{\"format\": 1, \"algo\": ...}})") from None

    def config(self) -> dict[str, Any]:
        return read_toml(self.path / CONFIG_FILE)

    def save_config(self, config: Any, algo: str | None = None, notes: tuple[str, ...] = ()) -> None:
        """Write the resolved config (a dataclass or dict) as ``config.toml``, atomically; with
        ``algo``, record it in ``run.json`` if the run has none yet."""
        self.lock()
        if algo is not None and not (self.path / RUN_FILE).exists():
            atomic_write_text(self.path / RUN_FILE, json.dumps({"format": CHECKPOINT_FORMAT, "algo": algo}) + "\n")
        atomic_write_text(self.path / CONFIG_FILE, config_text(config, notes))

    # -- metrics -------------------------------------------------------------------------------

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one JSON line (flushed and fsynced: a crash loses at most this line)."""
        self.lock()
        with writing(self.metrics_path), open(self.metrics_path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def read_metrics(self) -> list[dict[str, Any]]:
        """Every record of ``metrics.jsonl`` (a torn last line from a kill mid-write is dropped;
        a damaged line before the last is a one-line error: see :func:`bot.run_files.parse_metrics`)."""
        if not self.metrics_path.exists():
            return []
        return parse_metrics(self.metrics_path)

    def truncate_metrics(self, last_iteration: int) -> None:
        """Keep only records up to ``last_iteration`` (those the checkpoint covers)."""
        self.lock()
        kept = [r for r in self.read_metrics() if r.get("iteration", 0) <= last_iteration]
        atomic_write_text(self.metrics_path, "".join(json.dumps(r) + "\n" for r in kept))

    # -- live status ---------------------------------------------------------------------------

    def write_status(self, iteration: int, phase: str) -> None:
        """Replace ``status.json`` with the current phase (a rename, so a reader never sees half
        a file; not fsynced: a status lost in a crash is stale anyway)."""
        self.lock()
        tmp = self.path / (STATUS_FILE + ".tmp")
        with writing(self.path / STATUS_FILE):
            tmp.write_text(json.dumps({"iteration": iteration, "phase": phase, "since": time.time(), "pid": os.getpid()}))
            os.replace(tmp, self.path / STATUS_FILE)

    # -- checkpoints ---------------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path | None:
        """The newest checkpoint directory with its COMPLETE marker, or None before the first
        one (not verified: :meth:`resume_checkpoint` checks the checksums)."""
        return latest_checkpoint(self.path)

    def resume_checkpoint(self, force: bool = False, stream: Any = None) -> Path | None:
        """The checkpoint to resume from, verified: ``checkpoint/`` when it is complete and every
        file matches its sha256, else ``checkpoint.old/`` (announced on ``stream``). None when the
        run has nothing to lose (no checkpoint and no metrics yet) or with ``force``; otherwise a
        one-line error, since starting over would silently discard the run's progress. A
        checkpoint trained on another game than ``config.toml`` now names is refused. What is
        resumed (or that the run starts over) is said on ``stream`` once it is known."""
        self.lock()
        stream = stream or sys.stderr
        problems: list[str] = []
        for name in (CHECKPOINT_DIR, CHECKPOINT_DIR + ".old"):
            candidate = self.path / name
            if not candidate.is_dir():
                continue
            problem = verify_checkpoint(candidate)
            if problem is None:
                self.check_game()
                if problems:
                    print(f"warning: {'; '.join(problems)}; resuming from the previous checkpoint {candidate}",
                          file=stream, flush=True)
                print(self.resume_summary(candidate), file=stream, flush=True)
                return candidate
            problems.append(problem)
        if force:
            what = f" ({'; '.join(problems)})" if problems else ""
            print(f"starting {self.path} over in place (--force){what}", file=stream, flush=True)
            return None
        if problems or self.read_metrics():
            found = "; ".join(problems) if problems else f"{self.path} has metrics but no checkpoint"
            raise RunDirError(f"{found}: nothing to resume from without discarding the run's progress "
                              f"(--force starts it over in place)")
        print(self.resume_summary(None), file=stream, flush=True)
        return None

    def check_game(self) -> None:
        """A one-line error when ``config.toml`` names another game than the run's checkpoints
        were trained on (their markers record it; markers written before that are not checked):
        checked before a resume reads anything else."""
        named = self.config().get("game")
        for name in (CHECKPOINT_DIR, CHECKPOINT_DIR + ".old"):
            trained = checkpoint_game(self.path / name)
            if trained is not None and named is not None and str(named) != trained:
                raise RunDirError(f"{self.path / CONFIG_FILE} names game {named!r} but the checkpoint {self.path / name} "
                                  f"was trained on {trained!r}: a run cannot change its game (put game = "
                                  f'"{trained}" back, or start a new run with --out)')

    @contextmanager
    def writing_checkpoint(self) -> Iterator[Path]:
        """Yield a fresh temporary directory; on normal exit its COMPLETE marker (format, the
        config's game, sha256 of every file) is written and it atomically becomes the
        checkpoint, the previous one becoming ``checkpoint.old``. On any error (a full disk
        included) the temporary directory is removed and the previous checkpoints stand."""
        self.lock()
        tmp = self.path / (CHECKPOINT_DIR + ".tmp")
        try:
            with writing(tmp):
                if tmp.exists():
                    shutil.rmtree(tmp)
                tmp.mkdir()
            yield tmp
            files = {str(p.relative_to(tmp)): sha256_file(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
            marker: dict[str, Any] = {"format": CHECKPOINT_FORMAT, "files": files}
            game = self.config().get("game")
            if game is not None:
                marker["game"] = str(game)
            atomic_write_text(tmp / COMPLETE_FILE, json.dumps(marker, indent=1))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        current, old = self.path / CHECKPOINT_DIR, self.path / (CHECKPOINT_DIR + ".old")
        with writing(current):
            if (current / COMPLETE_FILE).exists():
                if old.exists():
                    shutil.rmtree(old)
                os.replace(current, old)
            elif current.exists():
                shutil.rmtree(current)  # never completed: nothing to keep
            os.replace(tmp, current)
            fsync_dir(self.path)

    @property
    def policy_path(self) -> Path:
        return self.path / POLICY_DIR

    def resume_summary(self, checkpoint: Path | None) -> str:
        """What ``--resume`` continues from, in one line, once :meth:`resume_checkpoint` has
        verified ``checkpoint`` (None: the run has no checkpoint and nothing to lose yet)."""
        config = self.config()
        what = " on ".join(str(config[k]) for k in ("algo", "game") if k in config) or "run"
        if checkpoint is None:
            return f"resuming {self.path} ({what}): no complete checkpoint yet, so it starts over in the same directory"
        records = [r for r in self.read_metrics() if "iteration" in r and not r.get("final")]
        logged = f"iteration {records[-1]['iteration']}" if records else "no iteration"
        seconds = next((r[ELAPSED_METRIC] for r in reversed(records) if ELAPSED_METRIC in r), None)
        spent = f", {seconds / 60:.1f} min of training so far" if isinstance(seconds, int | float) else ""
        age = time.time() - (checkpoint / COMPLETE_FILE).stat().st_mtime
        which = "last complete checkpoint" if checkpoint.name == CHECKPOINT_DIR else f"previous checkpoint {checkpoint.name}"
        return (f"resuming {self.path} ({what}) from its {which} (written {age / 60:.0f} min ago; "
                f"metrics.jsonl reaches {logged}{spent})")


def checkpoint_game(folder: Path) -> str | None:
    """The game the checkpoint's marker records (None for markers written before it did)."""
    try:
        game = json.loads((folder / COMPLETE_FILE).read_text()).get("game")
    except (OSError, ValueError, AttributeError):
        return None
    return game if isinstance(game, str) else None


def verify_checkpoint(folder: Path) -> str | None:
    """None when ``folder`` is a complete checkpoint whose files match their sha256, else what
    is wrong (one line). A marker from before checksums (``COMPLETE`` reading ``ok``) cannot be
    verified, so it is refused like a damaged one (``--force`` starts the run over)."""
    marker = folder / COMPLETE_FILE
    if not marker.is_file():
        return f"{folder}: incomplete ({COMPLETE_FILE} missing)"
    text = marker.read_text(errors="replace").strip()
    if text == "ok":
        return (f"{marker}: a checkpoint from before checksums (its files cannot be verified; this pokerbot "
                f"resumes format {CHECKPOINT_FORMAT} checkpoints only)")
    try:
        data = json.loads(text)
        files, version = data["files"], data["format"]
        if not isinstance(files, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        return f"{marker}: damaged marker"
    if version != CHECKPOINT_FORMAT:
        return f"{folder}: checkpoint format {version!r}, this pokerbot reads {CHECKPOINT_FORMAT}"
    try:
        for name, digest in files.items():
            verify_sha256(folder / name, digest)
    except CorruptFileError as error:
        return str(error)
    return None
