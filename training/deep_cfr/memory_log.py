"""Incremental checkpoints of large sample memories: a base snapshot plus per-checkpoint deltas.

Deep CFR checkpoints after every iteration so that a killed run loses at most the iteration in
progress, but its memories are large (the paper's are 40M rows each; a Leduc run's 10M rows are
220 MB) while an iteration changes few rows (new rows appended, or a fraction
``capacity / seen`` of them replacing old ones once a reservoir is full). So each memory is
persisted under ``runs/NAME/memories/`` as a chain of files written by
:meth:`~training.common.reservoir.Reservoir.save_rows`: a base with every filled row, then deltas
with only the rows written since the previous checkpoint. Replaying the chain in order rebuilds
the memory exactly. When the chain's rows exceed twice the memory's, the next checkpoint writes a
fresh base instead, so writing costs at most a constant factor over the rows actually changed
and a resume never reads more than about three memories' worth.

The chain itself (file names) is stored in the checkpoint's state, so it switches atomically
with the checkpoint directory; files no checkpoint refers to (a killed iteration's delta, bases
and deltas superseded by a newer base) are deleted by :meth:`MemoryLog.prune` once the new
checkpoint is complete or when a run is resumed; the previous checkpoint's files are kept too,
since ``checkpoint.old`` is the fallback of a damaged last checkpoint. Each file's sha256 is
recorded beside its name and verified before it is replayed, and a damaged file is a one-line
error naming it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from protocol.files import sha256_file, verify_sha256
from training.common.reservoir import Reservoir
from training.contract.rundir import RunDirError

MEMORY_DIR = "memories"


class MemoryLog:
    """The chain of row files of one named memory (see the module docstring)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.chain: list[str] = []
        self.chain_rows = 0
        #: The chain of the checkpoint before the last one (its files are kept for the fallback).
        self.previous: list[str] = []
        #: sha256 of every file of the chain, by name.
        self.digests: dict[str, str] = {}

    def checkpoint(self, memory: Reservoir, iteration: int) -> list[str]:
        """Write the rows changed since the last checkpoint (or a new base); return the chain."""
        self.previous = list(self.chain)
        changed = memory.take_changes()
        if not self.chain or self.chain_rows + len(changed) > 2 * len(memory):
            self.chain, self.chain_rows = [], 0
            slots = np.arange(len(memory), dtype=np.int64)
            kind = "base"
        else:
            slots, kind = changed, "delta"
        self.folder.mkdir(parents=True, exist_ok=True)
        file = f"{self.name}.{iteration:06d}.{kind}.npz"
        memory.save_rows(self.folder / file, slots)
        self.digests[file] = sha256_file(self.folder / file)
        self.chain.append(file)
        self.chain_rows += len(slots)
        return list(self.chain)

    def restore(self, memory: Reservoir, chain: list[str], digests: dict[str, str] | None = None) -> None:
        """Rebuild ``memory`` from a checkpoint's chain (base first, then deltas in order),
        checking each file against its sha256 first (checkpoints from before checksums have no
        ``digests``)."""
        digests = digests or {}
        rows = 0
        for file in chain:
            path = self.folder / file
            if file in digests:
                verify_sha256(path, digests[file])
            try:
                memory.apply_rows(path)
                rows += _rows_in(path)
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
                raise RunDirError(f"{path}: cannot restore memory {self.name} ({str(error).splitlines()[0]})") from None
        memory.take_changes()
        self.chain = list(chain)
        self.previous = list(chain)
        self.chain_rows = rows
        self.digests = {file: digests[file] for file in chain if file in digests}

    @staticmethod
    def prune(folder: Path, logs: list[MemoryLog]) -> None:
        """Delete row files that neither the last checkpoint's chains nor the previous one's
        (the fallback) refer to."""
        keep = {file for log in logs for file in (*log.chain, *log.previous)}
        if folder.is_dir():
            for path in folder.iterdir():
                if path.name not in keep:
                    path.unlink()


def _rows_in(path: Path) -> int:
    with np.load(path, allow_pickle=False) as archive:
        return len(archive["__slots"])
