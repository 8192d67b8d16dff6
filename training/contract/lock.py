"""One writer per run directory: an OS lock on ``RUN/lock`` that dies with its process.

Two ``pokerbot train --resume RUN`` at once would interleave ``metrics.jsonl`` and swap each
other's checkpoints away. The lock is ``flock(2)`` (exclusive, non-blocking) on a file in the run
directory: the kernel drops it when the holding process exits, however it exits (a SIGKILL or a
power cut included), so there is no stale lock to clean up by hand; the file itself only records
who holds it (pid, host, command, since) for the refusal message.

Within one process the lock is shared: every :class:`~training.contract.rundir.RunDir` of the same folder
uses one :class:`RunLock` (a test that creates a run and resumes it in the same process is one
writer), and the lock is released when the last of them is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
import weakref
from pathlib import Path
from typing import IO

from bot.run_files import LOCK_FILE, RunDirError
from protocol.files import writing

#: The locks this process holds, by resolved run folder (weak: released with their last user).
_HELD: weakref.WeakValueDictionary[Path, RunLock] = weakref.WeakValueDictionary()


class RunLock:
    """This process's hold on one run directory (see the module docstring)."""

    def __init__(self, path: Path, handle: IO[str]) -> None:
        self.path = path
        self._handle: IO[str] | None = handle

    @classmethod
    def acquire(cls, folder: Path) -> RunLock:
        """The run's lock, taken now (or the one this process already holds); a
        :class:`~bot.run_files.RunDirError` naming the holder when another process has it."""
        key = Path(folder).resolve()
        held = _HELD.get(key)
        if held is not None and held._handle is not None:
            return held
        path = Path(folder) / LOCK_FILE
        with writing(path):
            handle = open(path, "a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = describe(handle.read())
            handle.close()
            raise RunDirError(f"{folder} is in use by {holder}: one process writes a run at a time "
                              f"(wait for it to finish, or stop it first)") from None
        with writing(path):
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "command": command_line(), "since": time.time()}) + "\n")
            handle.flush()
        lock = cls(path, handle)
        _HELD[key] = lock
        return lock

    def release(self) -> None:
        """Give the lock up now (the lock file stays: it only says who held it last)."""
        if self._handle is not None:
            self._handle.close()  # closing the descriptor drops the flock
            self._handle = None

    def __del__(self) -> None:
        self.release()


def command_line() -> str:
    """This process's command as a user typed it (``pokerbot train ...``, not the path of
    ``bot/__main__.py``)."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if program in ("__main__.py", "pokerbot"):
        program = "pokerbot"
    return " ".join([program, *sys.argv[1:]])


def describe(text: str) -> str:
    """``pid 123 on host (pokerbot train ...) since 21:04`` from a lock file's text."""
    try:
        data = json.loads(text)
        since = time.strftime("%H:%M:%S", time.localtime(float(data["since"])))
        return f"pid {int(data['pid'])} on {data['host']} ({str(data['command'])[:120]}, since {since})"
    except (ValueError, KeyError, TypeError):
        return "another process"


def is_held(folder: Path) -> bool:
    """Whether some process holds the run's lock now, asked without taking it for longer than
    the probe: a shared ``flock`` that fails at once means a writer holds it. (A trainer that
    starts during the microseconds of a probe is refused as if another writer held the run.)"""
    path = Path(folder) / LOCK_FILE
    try:
        handle = open(path)
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False
