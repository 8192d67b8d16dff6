"""Refuse, in one line, a solve whose tables do not fit or a build whose files do not fit.

Allocating 7 GB of tables on a machine with 4 GB free ends in the kernel's OOM killer, and a
feature build or a solve that fills the disk fails hours in (seen: two abstraction_3e8 solves
side by side filled 34 GB and the second's final policy write failed); all are known before
anything starts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bot.abstraction.cost import PUBLISHED_COPY_PER_TABLE_BYTE, RUN_DIR_FILES_PER_TABLE_BYTE, size
from bot.errors import ConfigError


def available_memory() -> int:
    """Bytes the kernel can hand out without swapping (``MemAvailable``; free pages elsewhere)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (where a file not yet written will live)."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    return path


def free_disk(path: Path) -> int:
    """Free bytes on the file system that holds (or will hold) ``path``."""
    return shutil.disk_usage(_existing(path)).free


def same_file_system(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` (or where they will be written) share a file system, so that one can
    be a hard link to the other (:func:`protocol.files.atomic_link_or_copy`)."""
    return _existing(a).stat().st_dev == _existing(b).stat().st_dev


def check_tables_fit(name: str, table_bytes: int, mmap_dir: Path | None) -> None:
    """ConfigError unless both tables fit in RAM (or, memory-mapped, on ``mmap_dir``'s disk)."""
    if mmap_dir is not None:
        free = free_disk(mmap_dir)
        if table_bytes > free:
            raise ConfigError(f"{name}: its memory-mapped tables need {size(table_bytes)} of disk; {size(free)} free at {mmap_dir}")
        return
    available = available_memory()
    if table_bytes > available:
        raise ConfigError(f"{name}: its regret and average tables need {size(table_bytes)} of RAM; {size(available)} "
                          "available (free memory, or set mmap_tables = true in a --config TOML to keep them on disk)")  # fmt: skip


def check_build_fits(name: str, disk_bytes: int, directory: Path) -> None:
    """ConfigError unless the build's files (features, buckets) and the solve's after it fit on disk."""
    free = free_disk(directory)
    if disk_bytes > free:
        raise ConfigError(f"{name}: building it needs {size(disk_bytes)} of disk; {size(free)} free at {directory}")


def _bytes_under(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def check_run_fits(name: str, table_bytes: int, run_dir: Path, published: Path) -> None:
    """ConfigError unless the run directory's files (:data:`RUN_DIR_FILES_PER_TABLE_BYTE`) fit, less what they
    already hold (a resume replaces them one at a time).

    The published policy is a hard link to the run's where the cache shares ``run_dir``'s file
    system, and costs no bytes (one that refuses hard links gets a copy this check does not
    count); elsewhere it is a copy, checked against the cache's own disk (the old published
    file stays until the new one replaces it, so it is not counted as free)."""
    run_files = int(RUN_DIR_FILES_PER_TABLE_BYTE * table_bytes)
    need = run_files - _bytes_under(run_dir)
    free = free_disk(run_dir)
    if need > free:
        raise ConfigError(f"{name}: this solve's files (checkpoint and the previous one, half-run snapshot, policy) "
                          f"need {size(need)} more of disk; {size(free)} free at {run_dir}")  # fmt: skip
    if same_file_system(run_dir, published):
        return
    copy = int(PUBLISHED_COPY_PER_TABLE_BYTE * table_bytes)
    free = free_disk(published)
    if copy > free:
        raise ConfigError(f"{name}: its published policy needs {size(copy)} of disk; {size(free)} free at {published.parent}")
