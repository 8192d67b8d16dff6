"""Incremental memory checkpoints (training/deep_cfr/memory_log.py): replaying a chain rebuilds the memory
exactly, deltas hold only changed rows, bases are rewritten when deltas pile up, and files no
chain refers to are pruned."""

from __future__ import annotations

import numpy as np
import pytest

from bot.errors import CorruptFileError
from training.common.reservoir import Reservoir
from training.contract.rundir import RunDirError
from training.deep_cfr.memory_log import MemoryLog

FIELDS = {"x": ((), np.int64), "v": ((3,), np.float32)}


def rows(start: int, n: int) -> dict[str, np.ndarray]:
    x = np.arange(start, start + n)
    return {"x": x, "v": np.stack([x, -x, 2 * x], axis=1).astype(np.float32)}


def same(a: Reservoir, b: Reservoir) -> bool:
    return a.seen == b.seen and all(np.array_equal(a.stored()[k], b.stored()[k]) for k in a.data)


@pytest.mark.parametrize("mode", ["reservoir", "window"])
def test_chain_replays_to_the_same_memory_at_every_checkpoint(tmp_path, mode: str) -> None:
    memory, log, rng = Reservoir(500, FIELDS, mode), MemoryLog(tmp_path, "m"), np.random.default_rng(0)
    kinds = []
    for iteration in range(1, 16):
        memory.add(rows(iteration * 1000, 90), rng)  # fills after 6 checkpoints, then replaces
        chain = log.checkpoint(memory, iteration)
        kinds.append(chain[-1].split(".")[-2])
        copy = Reservoir(500, FIELDS, mode)
        MemoryLog(tmp_path, "m").restore(copy, chain)
        assert same(copy, memory), iteration
    assert kinds[0] == "base" and "delta" in kinds
    # a full reservoir replaces ever fewer rows, so its first base lasts; a window rewrites 90
    # rows per checkpoint, and deltas past twice the memory's rows trigger a new base
    assert kinds.count("base") == (1 if mode == "reservoir" else 2)


def test_deltas_hold_only_changed_rows(tmp_path) -> None:
    memory, log = Reservoir(1000, FIELDS), MemoryLog(tmp_path, "m")
    memory.add(rows(0, 400), np.random.default_rng(1))
    log.checkpoint(memory, 1)
    memory.add(rows(400, 30), np.random.default_rng(2))
    chain = log.checkpoint(memory, 2)
    with np.load(tmp_path / chain[-1]) as delta:
        assert delta["__slots"].tolist() == list(range(400, 430))


def test_prune_keeps_only_referenced_files(tmp_path) -> None:
    memory, log = Reservoir(100, FIELDS), MemoryLog(tmp_path, "m")
    rng = np.random.default_rng(3)
    for iteration in range(1, 8):
        memory.add(rows(iteration * 100, 60), rng)
        log.checkpoint(memory, iteration)
    (tmp_path / "m.000099.delta.npz").write_bytes(b"from a killed iteration")
    MemoryLog.prune(tmp_path, [log])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(log.chain)


def test_a_corrupt_row_file_is_a_clear_error(tmp_path) -> None:
    memory, log = Reservoir(100, FIELDS), MemoryLog(tmp_path, "m")
    memory.add(rows(0, 10), np.random.default_rng(4))
    chain = log.checkpoint(memory, 1)
    (tmp_path / chain[0]).write_bytes(b"not an npz")
    with pytest.raises(RunDirError, match="cannot restore memory m"):
        MemoryLog(tmp_path, "m").restore(Reservoir(100, FIELDS), chain)


@pytest.mark.parametrize("damage", [lambda b: b[: len(b) // 2], lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:]])
def test_truncated_or_bit_flipped_delta_is_a_one_line_error(tmp_path, damage) -> None:
    """With the digests a checkpoint records, a truncated or bit-flipped delta is caught by its
    checksum before it is replayed; without them (older checkpoints) by the reader."""
    memory, log = Reservoir(100, FIELDS), MemoryLog(tmp_path, "m")
    rng = np.random.default_rng(5)
    memory.add(rows(0, 10), rng)
    log.checkpoint(memory, 1)
    memory.add(rows(10, 10), rng)
    chain = log.checkpoint(memory, 2)
    delta = tmp_path / chain[-1]
    delta.write_bytes(damage(delta.read_bytes()))
    with pytest.raises(CorruptFileError, match=f"{chain[-1]}: checksum mismatch"):
        MemoryLog(tmp_path, "m").restore(Reservoir(100, FIELDS), chain, log.digests)


def test_truncated_delta_without_digests_is_a_one_line_error(tmp_path) -> None:
    memory, log = Reservoir(100, FIELDS), MemoryLog(tmp_path, "m")
    memory.add(rows(0, 10), np.random.default_rng(6))
    chain = log.checkpoint(memory, 1)
    path = tmp_path / chain[0]
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(RunDirError, match="cannot restore memory m"):
        MemoryLog(tmp_path, "m").restore(Reservoir(100, FIELDS), chain)


def test_prune_keeps_the_previous_checkpoints_files_for_the_fallback(tmp_path) -> None:
    memory, log = Reservoir(20, FIELDS, "window"), MemoryLog(tmp_path, "m")
    rng = np.random.default_rng(7)
    chains = []
    for iteration in range(1, 6):
        memory.add(rows(iteration * 100, 15), rng)
        chains.append(log.checkpoint(memory, iteration))
        MemoryLog.prune(tmp_path, [log])
    assert chains[-1][0] != chains[-2][0], "the last checkpoint should have written a new base"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(chains[-1]) | set(chains[-2]))
