"""File helpers every package shares: atomic writes, checksums, the cache directory, and
confining a manifest's relative paths to its folder.

Atomic write follows Stable-Baselines3's ``save_util`` habit (and POSIX ``rename(2)``'s
guarantee): write a temporary file beside the target, ``fsync`` it, rename it onto the target,
then ``fsync`` the directory, so a reader (or a resume after a kill) sees the old file or the new
one, never half of one. Temporary names carry the process and thread id, so concurrent writers
of the same cache file (the evaluator tables, abstraction features) do not collide.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, cast

from protocol.errors import CorruptFileError, PokerbotError


class OutputPathError(PokerbotError, OSError):
    """A file or folder that cannot be written (missing folder, no permission, read-only file
    system, disk full); the message names the path and the system's reason."""


#: The ``errno`` values that are the machine's state, not a bug: disk full or over quota, no
#: permission, a read-only or immutable file system. :func:`output_error` turns them into one
#: line wherever they surface; the CLI shows them so when they escape a writer.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EFBIG})


#: ``os.link``'s answers that mean "make a copy instead": another file system, or one (or a
#: mount) without hard links.
LINK_REFUSALS = frozenset({errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})
#: Bytes per read when copying a file (1 MiB blocks, as :func:`sha256_file` reads).
COPY_BLOCK = 1 << 20


def output_error(path: object, error: OSError) -> OutputPathError:
    """The one-line error for an ``OSError`` raised while writing ``path`` (its ``errno`` kept)."""
    translated = OutputPathError(f"{path}: cannot write ({error.strerror or error})")
    translated.errno = error.errno
    return translated


@contextmanager
def writing(path: object) -> Iterator[None]:
    """Turn an ``OSError`` from the block into :func:`output_error` naming ``path`` (the file
    boundary of every writer: a full disk or a read-only folder is one line, not a traceback)."""
    try:
        yield
    except PokerbotError:  # already one line (some are OSErrors too)
        raise
    except OSError as error:
        raise output_error(path, error) from None


def cache_dir() -> Path:
    """Where cached tables live: ``$POKERBOT_CACHE`` or ``~/.cache/pokerbot``."""
    env = os.environ.get("POKERBOT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "pokerbot"


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary_name(path: Path) -> Path:
    """A temporary file beside ``path``, unique to this process and thread."""
    return path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


class _Recording:
    """A binary file that remembers the ``OSError`` of a failed ``write``: torch's writer turns
    a full disk into ``RuntimeError: unexpected pos``, so :func:`atomic_write` raises the
    recorded error instead, which names the cause."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self.raw.write(data)
        except OSError as error:
            self.error = error
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(handle)`` on a temporary binary file beside ``path`` (its folder is created),
    fsync it and rename it onto ``path``; on any error the temporary file is removed and the
    old ``path`` is untouched. An ``OSError`` (disk full, no permission, read-only file system)
    is :class:`OutputPathError` naming ``path``."""
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_name(path)
        try:
            with open(tmp, "wb") as raw:
                handle = _Recording(raw)
                try:
                    write(cast(BinaryIO, handle))
                except Exception as error:
                    if handle.error is not None and not isinstance(error, OSError):
                        raise handle.error from None  # the disk error behind a library's own error
                    raise
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(path.parent)


def atomic_link_or_copy(source: Path, path: Path) -> None:
    """Make ``path`` hold ``source``'s bytes, atomically: a hard link where both are on one file
    system (a published multi-GB policy table then costs no second write and no second copy on
    disk; the names stay independent, since every writer here replaces a file by renaming onto
    it, never in place), else a copy through :func:`atomic_write`."""
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_name(path)
        try:
            os.link(source, tmp)
        except OSError as error:
            if error.errno not in LINK_REFUSALS:
                raise
        else:
            try:
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            fsync_dir(path.parent)
            return

    def copy(handle: BinaryIO) -> None:
        with open(source, "rb") as raw:
            shutil.copyfileobj(raw, handle, COPY_BLOCK)

    atomic_write(path, copy)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda handle: handle.write(text.encode()))


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def confined(root: Path, relative: str) -> Path:
    """``root / relative`` for a path a manifest names, refused (one-line error) when it is
    absolute or climbs out of ``root`` (``../``, or a symlink pointing outside)."""
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute() or "\\" in relative:
        raise CorruptFileError(f"{root}: file path {relative!r} must be relative to the bundle folder")
    target = (root / relative).resolve()
    if not target.is_relative_to(root.resolve()):
        raise CorruptFileError(f"{root}: file path {relative!r} leaves the bundle folder")
    return root / relative


def verify_sha256(path: Path, expected: str) -> None:
    """One-line :class:`CorruptFileError` naming ``path`` when it is missing or its sha256
    differs from ``expected`` (a truncated, bit-flipped or replaced file)."""
    if not path.is_file():
        raise CorruptFileError(f"{path}: missing (the manifest lists it)")
    if sha256_file(path) != expected:
        raise CorruptFileError(f"{path}: checksum mismatch (the file is damaged or was changed after it was written)")
