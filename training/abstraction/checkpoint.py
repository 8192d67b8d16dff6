"""An abstraction run's checkpoint: both tables in the canonical row layout and the run's
counters (``state.json``: iterations, batches, solve seconds). Written by the run loop
(:mod:`training.abstraction.run`), read back by ``--resume`` and by a warm start
(:mod:`training.abstraction.warm_start`), so the format has one writer and one reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bot.errors import CorruptFileError
from protocol.files import atomic_write_text
from training.abstraction.row_layout import RowLayout
from training.contract.rundir import RunDir

STATE_FILE = "state.json"


def write(run: RunDir, layout: RowLayout, regrets: np.ndarray, average: np.ndarray, state: dict) -> None:
    """Both tables in the canonical layout (converted one at a time) and the run's counters."""
    with run.writing_checkpoint() as directory:
        np.save(directory / "regrets.npy", layout.canonical(regrets))
        np.save(directory / "average.npy", layout.canonical(average))
        atomic_write_text(directory / STATE_FILE, json.dumps(state))


def read(checkpoint: Path, who: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """(regrets, average, state) of a verified checkpoint, the tables memory-mapped read-only; a
    one-line error naming ``who`` (the reader) when a file is unreadable or the counters are
    missing."""
    try:
        state = json.loads((checkpoint / STATE_FILE).read_text())
        state["iterations"], state["batches"] = int(state["iterations"]), int(state["batches"])
        regrets = np.load(checkpoint / "regrets.npy", mmap_mode="r")
        average = np.load(checkpoint / "average.npy", mmap_mode="r")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CorruptFileError(f"{who}: {checkpoint} is unreadable ({error})") from None
    if regrets.shape != average.shape:
        raise CorruptFileError(f"{who}: {checkpoint} holds tables of two shapes ({regrets.shape}, {average.shape})")
    return regrets, average, state
