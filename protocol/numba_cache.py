"""Numba's on-disk cache of compiled kernels, in a folder keyed by this checkout's source files.

Numba's ``cache=True`` checks only the source file of the function it loads: a kernel that calls
a kernel of another module (``training.abstraction.pcs_kernel.walk`` calls
``pcs_last_round.last_round``; every kernel reads ``protocol`` constants) keeps the callee's old
machine code after that other file changes (numba issue #1833, open since 2016; the limitation
is in numba's documentation under "Cache Notes"). With an editable install, a ``git pull`` that
changes only the callee's file would silently run the old code. So every process points numba
at ``~/.cache/pokerbot/numba/<key>`` (``$NUMBA_CACHE_DIR/<key>`` if that is set), the key a hash of
every ``.py`` file's path, size and modification time under ``protocol``, ``bot``, ``training``
and ``tui``: any change to the source starts a fresh cache (kernels compile again on first
use, tens of seconds for a large one), and an unchanged install reuses its cache. Stat-ing the
~300 files costs about a millisecond. Folders of other keys are removed once they are a week
old and :data:`KEEP` newer ones exist.

It must run before the first ``@njit(cache=True)`` decorator (numba picks a function's cache
folder when the decorator runs), so each of the four packages calls it in its ``__init__``.

**Concurrent writers.** Numba saves a new signature of a kernel by reading the kernel's index,
taking the first free data-file number, rewriting the index and then the data file, with no
lock (``numba.core.caching.IndexDataCacheFile.save``; numba issues #4807 and #10128). Two
processes that compile *different* signatures of one kernel at the same moment (two matches
started together: a quantised ``uint8`` policy table in one, a ``float32`` one in the other)
can take the same number: the index keeps one process's signature and the data file the other
process's machine code, and every later process that loads that signature runs code compiled
for other argument types. On 2026-11-28 that made the shipped bot lose 220 mbb/g to
``abstraction_3e6`` instead of winning by 34, with no error. :func:`serialise_cache_writes`
holds an exclusive lock on ``<index>.lock`` around that whole read-pick-write, so each number
goes to one signature.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import IO

import numba
from numba.core.caching import IndexDataCacheFile

if sys.platform == "win32":
    import msvcrt

    def _lock_exclusive(handle: IO[str]) -> None:
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # released when the handle closes
else:
    import fcntl

    def _lock_exclusive(handle: IO[str]) -> None:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes

#: The top-level packages whose source keys the cache.
PACKAGES = ("protocol", "bot", "training", "tui")
#: Cache folders of other keys kept however old they are (other checkouts, older installs).
KEEP = 4
#: Older folders of other keys are removed after this many seconds unused.
MAX_AGE = 7 * 24 * 3600


def source_key(root: Path, packages: tuple[str, ...] = PACKAGES) -> str:
    """16 hex digits of a hash over every ``.py`` file under ``root / package``: path, size and
    modification time (a changed file changes at least one of them)."""
    digest = hashlib.sha1()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(root).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def cache_base() -> Path:
    """The folder that holds one cache folder per key: ``$NUMBA_CACHE_DIR`` if set, else
    ``~/.cache/pokerbot/numba``. Not under ``$POKERBOT_CACHE``: tests and scripts point that at
    scratch folders for their tables, and the kernels would then compile again in each."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    return Path.home() / ".cache" / "pokerbot" / "numba"


def key_numba_cache(root: Path | None = None, packages: tuple[str, ...] = PACKAGES) -> Path:
    """Point numba's cache at the folder of this source's key (once per process for the default
    ``root``, the folder holding the packages); returns it."""
    serialise_cache_writes()
    key = _own_key() if root is None and packages == PACKAGES else source_key(root or _own_root(), packages)
    folder = cache_base() / key
    if numba.config.CACHE_DIR != str(folder):  # type: ignore[attr-defined]  # set from the environment at import
        numba.config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]
        _prune(folder)
    return folder


def serialise_cache_writes() -> None:
    """Make numba's index update and data write of a new signature one step under a file lock
    (module docstring, "Concurrent writers"); idempotent."""
    if not hasattr(IndexDataCacheFile.save, "__wrapped__"):
        IndexDataCacheFile.save = _locked(IndexDataCacheFile.save)  # type: ignore[method-assign]


Save = Callable[[IndexDataCacheFile, object, object], None]


def _locked(save: Save) -> Save:
    @functools.wraps(save)
    def locked_save(self: IndexDataCacheFile, key: object, data: object) -> None:
        os.makedirs(self._cache_path, exist_ok=True)
        with open(self._index_path + ".lock", "a") as handle:
            _lock_exclusive(handle)
            save(self, key, data)

    return locked_save


def _own_root() -> Path:
    """The folder holding this checkout's (or install's) packages."""
    return Path(__file__).resolve().parent.parent


@cache
def _own_key() -> str:
    """This source's key, computed once: every package's ``__init__`` asks for it."""
    return source_key(_own_root())


def _prune(current: Path) -> None:
    """Remove other keys' folders unused for :data:`MAX_AGE` beyond the :data:`KEEP` newest
    (best effort: a folder another process is using is at worst compiled again)."""
    try:
        others = sorted((p for p in current.parent.iterdir() if p.is_dir() and p != current),
                        key=lambda p: p.stat().st_mtime, reverse=True)  # fmt: skip
    except OSError:
        return
    now = time.time()
    for folder in others[KEEP:]:
        try:
            if now - folder.stat().st_mtime > MAX_AGE:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue
