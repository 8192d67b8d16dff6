"""Follow a run directory while its trainer writes it, read-only.

A trainer appends ``metrics.jsonl`` line by line, replaces ``status.json`` by a rename, swaps
``checkpoint/`` atomically (``checkpoint`` -> ``checkpoint.old``, ``checkpoint.tmp`` ->
``checkpoint``, see :mod:`training.contract.rundir`; the names and readers are :mod:`bot.run_files`) and rewrites ``policy/bundle.json`` by a rename.
A reader polling at any instant can therefore see a last metrics line without its newline (the
writer is mid-line), or find a checkpoint directory gone between listing it and opening its file.
:class:`RunReader` keeps the bytes after the last newline for the next poll, and when a
checkpoint vanishes under it keeps the last complete one it read: it shows the last complete
state and never raises for a file that is merely being written. It opens every file read-only
and creates nothing: watching a run never changes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.errors import PokerbotError
from bot.run_files import (
    CONFIG_FILE,
    METRICS_FILE,
    STATUS_FILE,
    RunDirError,
    canonical_metrics,
    latest_checkpoint,
    load_torch,
    read_toml,
)

#: Algorithms whose run directories hold value networks and a ``traversal_p*`` per metrics line.
CFR_KINDS = ("sd-cfr", "deep-cfr", "dream")


class WatchError(PokerbotError):
    """A path that is not a run directory ``pokerbot watch`` can show."""


def run_kind(config: dict) -> str:
    """``sd-cfr``, ``deep-cfr``, ``dream`` or ``nfsp`` from a run's ``config.toml``."""
    if "algo" in config:
        return str(config["algo"])
    if "eta" in config and "rl_capacity" in config:
        return "nfsp"
    raise WatchError("config.toml names no algorithm this viewer knows (Deep CFR, SD-CFR, DREAM or NFSP)")


@dataclass
class Checkpoint:
    """The last complete checkpoint read: its iteration, the file's identity and content."""

    iteration: int
    identity: tuple[int, int, int]
    state: dict[str, Any]


@dataclass
class RunReader:
    """Polls one run directory; every ``poll_*`` returns what is new and complete."""

    path: Path
    records: list[dict] = field(default_factory=list)
    #: Complete metrics lines that were not JSON (their line numbers): shown, never fatal.
    bad_lines: list[int] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    _offset: int = 0
    _inode: int | None = None
    _lines_read: int = 0
    _config: dict | None = None

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    @classmethod
    def open(cls, path: str | Path) -> RunReader:
        """A reader on an existing run (its ``config.toml`` must be there)."""
        reader = cls(Path(path))
        if not reader.path.is_dir():
            raise WatchError(f"{reader.path}: no such run directory")
        if not (reader.path / CONFIG_FILE).is_file():
            raise WatchError(f"{reader.path} is not a run directory (no {CONFIG_FILE})")
        reader.config  # noqa: B018 - fail now on an unreadable config, naming the file
        return reader

    @property
    def config(self) -> dict:
        """``config.toml`` (read once: a resume may extend iterations, nothing the view needs live)."""
        if self._config is None:
            try:
                self._config = read_toml(self.path / CONFIG_FILE)
            except RunDirError as error:
                raise WatchError(str(error)) from None
        return self._config

    @property
    def kind(self) -> str:
        return run_kind(self.config)

    # -- metrics --------------------------------------------------------------------------------

    def poll_metrics(self) -> list[dict]:
        """The metrics lines completed since the last poll (all of them after a rewrite).

        A resume rewrites the file shorter by a rename (:meth:`RunDir.truncate_metrics`): a new
        inode or a file shorter than what was read means reading again from the start."""
        file = self.path / METRICS_FILE
        try:
            stat = file.stat()
        except FileNotFoundError:
            return []
        if stat.st_ino != self._inode or stat.st_size < self._offset:
            self._inode, self._offset, self._lines_read = stat.st_ino, 0, 0
            self.records, self.bad_lines = [], []
        if stat.st_size == self._offset:
            return []
        with open(file, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read(stat.st_size - self._offset)
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line without its newline is still being written
        self._offset += len(complete)
        new = []
        for line in complete.decode("utf-8", errors="replace").splitlines():
            self._lines_read += 1
            if not line.strip():
                continue
            try:
                record = canonical_metrics(json.loads(line))
            except json.JSONDecodeError:
                self.bad_lines.append(self._lines_read)
                continue
            if isinstance(record, dict) and "iteration" in record:
                new.append(record)
        self.records.extend(new)
        return new

    # -- status ---------------------------------------------------------------------------------

    def status(self) -> dict | None:
        """``status.json`` (phase, iteration, since, pid), or None when absent or unreadable."""
        try:
            status = json.loads((self.path / STATUS_FILE).read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return status if isinstance(status, dict) else None

    # -- checkpoints ----------------------------------------------------------------------------

    def poll_checkpoint(self) -> bool:
        """Load the checkpoint's ``state.pt`` if it changed; True when a new one was read.

        The folder can be renamed or deleted between finding it and reading it (the trainer is
        swapping in the next one): that keeps the previous checkpoint, the next poll sees the new
        one. A checkpoint whose file cannot be parsed is kept out the same way."""
        folder = latest_checkpoint(self.path)
        if folder is None:
            return False
        file = folder / "state.pt"
        try:
            stat = file.stat()
            identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            if self.checkpoint is not None and identity == self.checkpoint.identity:
                return False
            state = load_torch(file)  # once open, the file survives its folder's rename
        except (FileNotFoundError, RunDirError):
            return False
        if not isinstance(state, dict) or "iteration" not in state:
            return False
        self.checkpoint = Checkpoint(int(state["iteration"]), identity, state)
        return True

    # -- policy bundle --------------------------------------------------------------------------

    def bundle_stack(self) -> list[dict]:
        """The SD-CFR stack listed in ``policy/bundle.json`` (entries whose files exist)."""
        file = self.path / "policy" / "bundle.json"
        try:
            data = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError):
            return []
        stack = data.get("stack", []) if isinstance(data, dict) else []
        root = file.parent
        return [e for e in stack if e.get("uniform") or all((root / f).is_file() for f in e.get("files", []))]

    def process_alive(self) -> bool | None:
        """Whether the trainer named in ``status.json`` still runs (None: unknown)."""
        status = self.status()
        if not status or "pid" not in status:
            return None
        try:
            os.kill(int(status["pid"]), 0)
        except ProcessLookupError:
            return False
        except (PermissionError, OSError, ValueError):
            return None
        return True

