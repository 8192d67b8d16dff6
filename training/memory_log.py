"""Incremental checkpoints of large sample memories: a base snapshot plus per-checkpoint deltas.

Deep CFR checkpoints after every iteration so that a killed run loses at most the iteration in
progress, but its memories are large (the paper's are 40M rows each; a Leduc run's 10M rows are
220 MB) while an iteration changes few rows (new rows appended, or a fraction
``capacity / seen`` of them replacing old ones once a reservoir is full). So each memory is
persisted under ``runs/NAME/memories/`` as a chain of files written by
:meth:`~training.reservoir.Reservoir.save_rows`: a base with every filled row, then deltas
with only the rows written since the previous checkpoint. Replaying the chain in order rebuilds
the memory exactly. When the chain's rows exceed twice the memory's, the next checkpoint writes a
fresh base instead, so writing costs at most a constant factor over the rows actually changed
and a resume never reads more than about three memories' worth.

The chain itself (file names) is stored in the checkpoint's state, so it switches atomically
with the checkpoint directory; files no checkpoint refers to (a killed iteration's delta, bases
and deltas superseded by a newer base) are deleted by :meth:`MemoryLog.prune` once the new
checkpoint is complete or when a run is resumed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from training.reservoir import Reservoir
from training.rundir import RunDirError

MEMORY_DIR = "memories"


class MemoryLog:
    """The chain of row files of one named memory (see the module docstring)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.chain: list[str] = []
        self.chain_rows = 0

    def checkpoint(self, memory: Reservoir, iteration: int) -> list[str]:
        """Write the rows changed since the last checkpoint (or a new base); return the chain."""
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
        self.chain.append(file)
        self.chain_rows += len(slots)
        return list(self.chain)

    def restore(self, memory: Reservoir, chain: list[str]) -> None:
        """Rebuild ``memory`` from a checkpoint's chain (base first, then deltas in order)."""
        for file in chain:
            try:
                memory.apply_rows(self.folder / file)
            except (OSError, ValueError, KeyError) as error:
                raise RunDirError(f"{self.folder / file}: cannot restore memory {self.name} ({error})") from None
        memory.take_changes()
        self.chain = list(chain)
        self.chain_rows = sum(_rows_in(self.folder / file) for file in chain)

    @staticmethod
    def prune(folder: Path, logs: list[MemoryLog]) -> None:
        """Delete row files that no log's current chain refers to."""
        keep = {file for log in logs for file in log.chain}
        if folder.is_dir():
            for path in folder.iterdir():
                if path.name not in keep:
                    path.unlink()


def _rows_in(path: Path) -> int:
    with np.load(path, allow_pickle=False) as archive:
        return len(archive["__slots"])
