"""Reservoir memory: every seen row kept with equal probability; window mode; persistence."""

from __future__ import annotations

import numpy as np
import pytest

from training.common.reservoir import Reservoir

FIELDS = {"x": ((), np.int64), "v": ((3,), np.float32)}


def _rows(start: int, n: int) -> dict[str, np.ndarray]:
    x = np.arange(start, start + n)
    return {"x": x, "v": np.repeat(x[:, None], 3, axis=1).astype(np.float32)}


def test_every_seen_row_is_kept_with_equal_probability() -> None:
    """Stream 60 rows in uneven batches (one larger than the capacity) into a capacity-12
    memory, 3000 times: each row's survival count is Binomial(3000, 12/60); a chi-square test
    over the 60 rows must not reject uniformity (fixed seed: deterministic)."""
    capacity, stream, trials = 12, 60, 3000
    batches = [5, 7, 1, 20, 9, 18]
    assert sum(batches) == stream
    rng = np.random.default_rng(123)
    counts = np.zeros(stream)
    for _ in range(trials):
        memory = Reservoir(capacity, FIELDS)
        start = 0
        for n in batches:
            memory.add(_rows(start, n), rng)
            start += n
        kept = memory.stored()["x"]
        assert len(np.unique(kept)) == capacity  # no row stored twice
        assert np.array_equal(memory.stored()["v"][:, 0], kept)  # fields stay aligned
        counts[kept] += 1
    expected = trials * capacity / stream
    chi2 = float((((counts - expected) ** 2) / expected).sum())
    # 59 degrees of freedom: the 99.9% quantile is 98.3
    assert chi2 < 98.3, (chi2, counts)
    # and early rows (stored directly) are not favoured over late ones (stored by replacement)
    assert abs(counts[:12].mean() - counts[-18:].mean()) < 0.1 * expected


def test_weighted_rows_are_kept_in_proportion_to_their_weight() -> None:
    """Batches of 5 rows into a capacity-10 memory, 3000 times: eight batches of weight 1,
    then weights 2, 3, ..., 10 (each small enough that capacity * w / W stays below 1). Every
    row is stored with probability 10 * w / W (W = 310; the first fill's rows weigh 1, as the
    rest of their stream, so they are no exception here): a chi-square test over the 85 rows
    must not reject it, and the last batch is kept about 10 times as often as a unit batch."""
    capacity, per_batch, trials = 10, 5, 3000
    weights = np.array([1.0] * 8 + list(range(2, 11)))
    total = per_batch * weights.sum()
    assert total == 310
    expected = np.repeat(capacity * weights / total, per_batch) * trials
    rng = np.random.default_rng(7)
    counts = np.zeros(len(expected))
    for _ in range(trials):
        memory = Reservoir(capacity, FIELDS)
        for batch, weight in enumerate(weights):
            memory.add(_rows(batch * per_batch, per_batch), rng, weight=weight)
        counts[memory.stored()["x"]] += 1
    chi2 = float((((counts - expected) ** 2) / (expected * (1 - expected / trials))).sum())
    assert chi2 < 129.8, (chi2, counts)  # 99.9% quantile of chi-square with 84 degrees of freedom
    late = counts[-per_batch:].mean() / counts[: 8 * per_batch].mean()
    assert 7.0 < late < 14.0, late


def test_unit_weights_draw_exactly_as_algorithm_r() -> None:
    """Passing weight 1 draws the same slots as the unweighted algorithm R."""
    plain, weighted = Reservoir(7, FIELDS), Reservoir(7, FIELDS)
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for start in range(0, 200, 9):
        plain.add(_rows(start, 9), rng_a)
        weighted.add(_rows(start, 9), rng_b, weight=1.0)
    assert np.array_equal(plain.stored()["x"], weighted.stored()["x"])
    assert weighted.total_weight == weighted.seen


def test_weight_must_be_positive() -> None:
    with pytest.raises(ValueError, match="weight must be positive"):
        Reservoir(3, FIELDS).add(_rows(0, 2), np.random.default_rng(0), weight=0.0)


def test_fills_in_order_until_full() -> None:
    memory = Reservoir(5, FIELDS)
    memory.add(_rows(0, 3), np.random.default_rng(0))
    assert len(memory) == 3 and memory.seen == 3
    assert memory.stored()["x"].tolist() == [0, 1, 2]


def test_window_mode_keeps_the_latest_rows() -> None:
    memory = Reservoir(4, FIELDS, mode="window")
    rng = np.random.default_rng(0)
    memory.add(_rows(0, 3), rng)
    memory.add(_rows(3, 3), rng)
    assert sorted(memory.stored()["x"].tolist()) == [2, 3, 4, 5]
    memory.add(_rows(6, 9), rng)  # a batch larger than the window
    assert sorted(memory.stored()["x"].tolist()) == [11, 12, 13, 14]


def test_save_load_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(1)
    memory = Reservoir(6, FIELDS)
    memory.add(_rows(0, 10), rng, weight=2.5)
    memory.save(tmp_path / "m.npz")
    copy = Reservoir(6, FIELDS)
    copy.load(tmp_path / "m.npz")
    assert copy.seen == 10 and copy.total_weight == 25.0
    for name in FIELDS:
        assert np.array_equal(copy.stored()[name], memory.stored()[name])
    # continuing both with the same generator state stays identical
    memory.add(_rows(10, 5), np.random.default_rng(2), weight=4.0)
    copy.add(_rows(10, 5), np.random.default_rng(2), weight=4.0)
    assert np.array_equal(copy.stored()["x"], memory.stored()["x"])


def test_load_rejects_a_different_layout(tmp_path) -> None:
    memory = Reservoir(6, FIELDS)
    memory.add(_rows(0, 4), np.random.default_rng(0))
    memory.save(tmp_path / "m.npz")
    other = Reservoir(6, {"x": ((), np.int64), "v": ((2,), np.float32)})
    with pytest.raises(ValueError, match="field v"):
        other.load(tmp_path / "m.npz")


def test_bad_settings_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="capacity"):
        Reservoir(0, FIELDS)
    with pytest.raises(ValueError, match="mode"):
        Reservoir(3, FIELDS, mode="fifo")
