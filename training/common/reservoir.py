"""Preallocated sample memories: reservoir sampling (Vitter 1985, "algorithm R") or a sliding window.

Deep CFR keeps per-player advantage memories and a strategy memory this way (Brown et al. 2019,
sec. 4: "samples are added ... using reservoir sampling if capacity is exceeded"); NFSP's
supervised memory is the same structure. Fields are named numpy arrays allocated once at full
capacity with compact dtypes; adding a batch is vectorised and equals adding its rows one by one:
row ``i`` of the stream (0-based, ``seen`` before it) goes to slot ``i`` while there is room,
later to a uniform slot ``j`` in ``0..i`` when ``j < capacity``, else it is dropped. With
duplicate slots in one batch the later row wins, as in the sequential algorithm, so every row
seen so far is kept with probability ``capacity / seen``.

Weighted rows (``add(..., weight=w)``; Efraimidis & Spirakis 2006 give the general scheme): once
the memory is full, a row of weight ``w`` arriving when the weights seen so far (its own
included) total ``W`` replaces a uniform slot with probability ``capacity * w / W``, and is
dropped otherwise. A row kept then survives each later row of weight ``w'`` (total ``W'``) with
probability ``1 - w' / W'`` = ``W'_before / W'``, so the product telescopes: every row is stored
with probability ``capacity * w / W_total``, proportional to its weight. (Rows of the first
fill are all stored at once, so they share the fill's total instead, and a row with
``capacity * w / W`` above 1 is simply kept.) NFSP's linear averaging
gives each row its step number as weight, so an early, poor best response fades as ``s / t``
instead of staying at the uniform ``1 / t``. With unit weights the draws equal algorithm R's.

``mode="window"`` (the paper's sliding-window ablation, fig. 4 right) overwrites the oldest row.

>>> import numpy as np
>>> memory = Reservoir(4, {"x": ((), np.int32)})
>>> memory.add({"x": np.arange(10)}, np.random.default_rng(0))
>>> len(memory), memory.seen
(4, 10)
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from protocol.files import atomic_write

FieldSpec = dict[str, tuple[tuple[int, ...], type | np.dtype]]


class MemoryListener(Protocol):
    """What :attr:`Reservoir.listener` is told about rows entering and leaving the memory."""

    def insert(self, rows: dict[str, np.ndarray]) -> None: ...

    def remove(self, rows: dict[str, np.ndarray]) -> None: ...


class SignedTotals:
    """A :class:`MemoryListener` whose summary is totals over rows: entering rows are counted
    with sign +1 and leaving rows with -1 by the subclass's ``_count(rows, sign)``."""

    def insert(self, rows: dict[str, np.ndarray]) -> None:
        self._count(rows, 1)

    def remove(self, rows: dict[str, np.ndarray]) -> None:
        self._count(rows, -1)

    def _count(self, rows: dict[str, np.ndarray], sign: int) -> None:
        raise NotImplementedError


MODES = ("reservoir", "window")


class Reservoir:
    """Fixed-capacity memory of rows with named fields (see the module docstring)."""

    def __init__(self, capacity: int, fields: FieldSpec, mode: str = "reservoir") -> None:
        if capacity <= 0:
            raise ValueError(f"memory capacity must be positive, got {capacity}")
        if mode not in MODES:
            raise ValueError(f"memory mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.capacity = capacity
        self.mode = mode
        self.fields = fields
        self.data = {name: np.zeros((capacity, *shape), dtype=dtype) for name, (shape, dtype) in fields.items()}
        self.seen = 0
        #: Sum of the weights of every row seen (``seen`` while every weight is 1).
        self.total_weight = 0.0
        #: Slots written since the last :meth:`take_changes` (incremental checkpoints).
        self.changed = np.zeros(capacity, dtype=bool)
        #: Optional summary kept in step with the stored rows (e.g. a merged table): told which
        #: rows leave (``remove``) and enter (``insert``) the memory on every :meth:`add`.
        self.listener: MemoryListener | None = None

    def __len__(self) -> int:
        return min(self.seen, self.capacity)

    @property
    def bytes_per_sample(self) -> int:
        return sum(a.itemsize * int(np.prod(a.shape[1:])) for a in self.data.values())

    def add(self, rows: dict[str, np.ndarray], rng: np.random.Generator, weight: float = 1.0) -> None:
        """Append a batch of rows (each field ``[n, *shape]``), each of weight ``weight``."""
        n = len(next(iter(rows.values())))
        if n == 0:
            return
        if not weight > 0:
            raise ValueError(f"memory row weight must be positive, got {weight}")
        index = self.seen + np.arange(n, dtype=np.int64)
        if self.mode == "window":
            slots = index % self.capacity
            keep = np.arange(n)
            if n > self.capacity:  # only the last `capacity` rows survive
                keep = keep[-self.capacity :]
                slots = slots[-self.capacity :]
        else:
            # the weight seen up to and including each row, in units of this batch's weight:
            # a uniform draw below capacity keeps the row with probability capacity * w / W
            totals = self.total_weight / weight + np.arange(1, n + 1, dtype=np.float64)
            draws = np.floor(rng.random(n) * totals).astype(np.int64)
            slots = np.where(index < self.capacity, index, draws)
            keep = np.flatnonzero(slots < self.capacity)
            slots = slots[keep]
        if self.listener is not None:
            self._notify_removal(slots)
        for name, array in self.data.items():
            array[slots] = rows[name][keep]  # numpy assigns duplicates in order: the last wins
        if self.listener is not None:  # a slot written twice in this batch keeps its last row only
            _, last = np.unique(slots[::-1], return_index=True)
            self.listener.insert({name: rows[name][keep[::-1][last]] for name in self.data})
        self.changed[slots] = True
        self.seen += n
        self.total_weight += n * weight

    def _notify_removal(self, slots: np.ndarray) -> None:
        """Tell the listener which stored rows the coming write replaces (each once)."""
        replaced = np.unique(slots[slots < len(self)])
        if len(replaced):
            self.listener.remove({name: array[replaced] for name, array in self.data.items()})

    def take_changes(self) -> np.ndarray:
        """Slots written since the previous call (sorted), and forget them."""
        slots = np.flatnonzero(self.changed)
        self.changed[slots] = False
        return slots

    def sample(self, size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A uniform minibatch (with replacement) of the stored rows."""
        picks = rng.integers(0, len(self), size=size)
        return {name: array[picks] for name, array in self.data.items()}

    def stored(self) -> dict[str, np.ndarray]:
        """Views of the filled part of every field."""
        return {name: array[: len(self)] for name, array in self.data.items()}

    # -- persistence -------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the filled rows and the counter to ``path`` (an ``.npy``-per-field ``.npz``)."""
        atomic_write(path, lambda handle: np.savez(handle, __seen=np.int64(self.seen),
                                                   __weight=np.float64(self.total_weight), **self.stored()))

    def save_rows(self, path: Path, slots: np.ndarray) -> None:
        """Write the rows at ``slots`` and the counter: a delta that :meth:`apply_rows` replays."""
        atomic_write(path, lambda handle: np.savez(
            handle, __seen=np.int64(self.seen), __weight=np.float64(self.total_weight), __slots=slots.astype(np.int64),
            **{name: array[slots] for name, array in self.data.items()}))

    def apply_rows(self, path: Path) -> None:
        """Replay a file of :meth:`save_rows` (rows into their slots, the counter restored)."""
        with np.load(path, allow_pickle=False) as archive:
            slots = archive["__slots"]
            if len(slots) and (slots.min() < 0 or slots.max() >= self.capacity):
                raise ValueError(f"{path}: slots outside this memory's capacity {self.capacity}")
            for name, array in self.data.items():
                array[slots] = archive[name]
            self._restore_counters(archive)

    def load(self, path: Path) -> None:
        """Restore rows and counter saved by :meth:`save` (same capacity and fields)."""
        with np.load(path, allow_pickle=False) as archive:
            seen = int(archive["__seen"])
            count = min(seen, self.capacity)
            for name, array in self.data.items():
                stored = archive[name]
                if stored.shape != (count, *array.shape[1:]):
                    raise ValueError(f"{path}: field {name} has shape {stored.shape}, expected {(count, *array.shape[1:])}")
                array[:count] = stored
            self._restore_counters(archive)

    def _restore_counters(self, archive: np.lib.npyio.NpzFile) -> None:
        """``seen`` and the weight total from a saved file (files from before weighted rows
        have no total: their rows all weighed 1)."""
        self.seen = int(archive["__seen"])
        self.total_weight = float(archive["__weight"]) if "__weight" in archive.files else float(self.seen)
