"""Statistics: intervals that cover the truth at their stated rate, exact duplicate pairing,
the sample-size formula, and the match summary's rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.evaluation.match_report import HandSeries, summarize
from bot.evaluation.statistics import (
    estimate,
    hands_for_half_width,
    pair_means,
    running_interval,
    variance_reduction,
    z_value,
)


def test_interval_covers_known_mean_about_95_percent() -> None:
    """Skewed synthetic 'poker' results (mean 0.3): the interval covers the mean ~95% of trials."""
    rng = np.random.default_rng(0)
    trials, n, true_mean = 2000, 400, 0.3
    covered = 0
    for _ in range(trials):
        sample = rng.exponential(1.0, n) * rng.choice([-1.0, 2.0], n) + true_mean - 0.5
        e = estimate(sample)
        covered += e.low <= true_mean <= e.high
    assert 0.93 <= covered / trials <= 0.97


def test_estimate_exact_numbers() -> None:
    e = estimate([2.0, 4.0, 6.0])
    assert e.mean == 4.0 and e.std == 2.0
    assert e.stderr == pytest.approx(2 / math.sqrt(3))
    assert e.low == pytest.approx(4 - z_value() * 2 / math.sqrt(3))
    assert e.excludes_zero


def test_sample_size_formula() -> None:
    assert z_value() == pytest.approx(1.959964, abs=1e-6)
    assert hands_for_half_width(50.0, 5.0) == math.ceil((1.959964 * 10) ** 2)
    with pytest.raises(ValueError):
        hands_for_half_width(1.0, 0.0)


def test_pairs_and_variance_reduction() -> None:
    assert pair_means(np.array([4.0, -2.0]), np.array([-4.0, 0.0])).tolist() == [0.0, -1.0]
    assert variance_reduction(
        np.array([1.0, -1.0, 3.0]), np.array([0.5, -0.5, 1.5])
    ) == pytest.approx(4.0)


def test_running_interval_ends_at_the_full_estimate() -> None:
    data = np.random.default_rng(1).normal(size=500)
    mean, half = running_interval(data)
    assert math.isnan(half[0])
    assert mean[-1] == pytest.approx(estimate(data).mean)
    assert half[-1] == pytest.approx(estimate(data).half_width)


def test_summary_rows_and_duplicate_pairing() -> None:
    # 4 deals each played twice; a player who wins exactly the card luck: pairs cancel.
    luck = np.array([10.0, -20.0, 5.0, 30.0])
    series = HandSeries(
        chips=np.concatenate([luck, -luck]),
        position=np.array([0, 1, 0, 1, 1, 0, 1, 0]),
        deal=np.array([0, 1, 2, 3, 0, 1, 2, 3]),
        mirrored=np.array([False] * 4 + [True] * 4),
    )
    summary = summarize(series, big_blind=10, half_width=5.0)
    rows = {r["label"]: r for r in summary["rows"]}
    assert set(rows) == {"all hands", "position 0", "position 1", "duplicate"}
    assert rows["all hands"]["mean"] == 0.0 and rows["all hands"]["hands"] == 8
    assert rows["duplicate"]["std"] == 0.0 and rows["duplicate"]["hands"] == 8
    assert rows["position 0"]["total_chips"] == 10 + 5 + 20 - 30
    assert summary["variance_reduction"]["duplicate"] == math.inf
    assert summary["per_hand"]["chips"] == series.chips.tolist()
    assert rows["all hands"]["hands_needed"] == hands_for_half_width(rows["all hands"]["std"], 5.0)
