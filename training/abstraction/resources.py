"""Refuse, in one line, a solve whose tables do not fit or a build whose files do not fit.

Allocating 7 GB of tables on a machine with 4 GB free ends in the kernel's OOM killer, and a
feature build that fills the disk fails hours in; both are known before anything starts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bot.abstraction.cost import size
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


def free_disk(path: Path) -> int:
    """Free bytes on the file system that holds (or will hold) ``path``."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


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
    """ConfigError unless the build's files (features, buckets, checkpoint, policy) fit on disk."""
    free = free_disk(directory)
    if disk_bytes > free:
        raise ConfigError(f"{name}: building it needs {size(disk_bytes)} of disk; {size(free)} free at {directory}")
