"""Suit isomorphism: canonical class counts, density, and invariance under suit renaming."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from protocol.cards import cards_from_str, deck
from protocol.isomorphism import (
    HandIndexer,
    all_combinations,
    canonical_representatives,
)


@pytest.mark.parametrize(
    ("groups", "size"),
    [((2,), 169), ((3,), 1_755), ((5,), 134_459), ((2, 3), 1_286_792), ((2, 4), 13_960_050),
     ((2, 5), 123_156_254), ((2, 3, 1, 1), 2_428_287_420)],
)  # fmt: skip
def test_class_counts_match_waugh(groups, size):
    assert HandIndexer(groups).size == size


def _disjoint_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    rows = np.concatenate([np.repeat(first, len(second), 0), np.tile(second, (len(first), 1))], 1)
    sorted_rows = np.sort(rows, axis=1)
    return rows[(np.diff(sorted_rows, axis=1) != 0).all(axis=1)]


def test_flop_index_is_dense_over_every_raw_hand():
    """All 25,989,600 (hole, flop) deals hit every one of the 1,286,792 classes, none above."""
    indexer = HandIndexer((2, 3))
    cards = np.arange(52)
    rows = _disjoint_pairs(all_combinations(cards, 2), all_combinations(cards, 3))
    assert len(rows) == 1326 * 19600
    idx = indexer.index_batch(rows)
    assert idx.min() == 0 and idx.max() == indexer.size - 1
    assert len(np.unique(idx)) == indexer.size


@pytest.mark.parametrize("groups", [(2,), (2, 3), (2, 4), (2, 5)])
def test_index_is_invariant_under_suit_renaming_and_card_order(groups):
    indexer = HandIndexer(groups)
    rng = np.random.default_rng(1)
    rows = np.array([rng.choice(52, sum(groups), replace=False) for _ in range(2000)])
    base = indexer.index_batch(rows)
    for perm in itertools.permutations(range(4)):
        renamed = (rows // 4) * 4 + np.array(perm)[rows % 4]
        assert (indexer.index_batch(renamed) == base).all()
    shuffled = rows.copy()
    start = 0
    for g in groups:  # order within a group does not matter
        shuffled[:, start : start + g] = shuffled[:, start : start + g][:, ::-1]
        start += g
    assert (indexer.index_batch(shuffled) == base).all()


def test_hands_no_renaming_relates_get_different_indices():
    indexer = HandIndexer((2, 3))
    assert indexer.index(cards_from_str("AhKh2c3c4c")) != indexer.index(cards_from_str("AhKc2c3c4c"))
    # the group split matters: the same five cards as hole+flop differ when the hole changes
    assert indexer.index(cards_from_str("AhKh2c3c4c")) != indexer.index(cards_from_str("2c3cAhKh4c"))


def test_preflop_classes_are_pairs_suited_and_offsuit():
    indexer = HandIndexer((2,))
    holes = all_combinations(np.arange(52), 2)
    counts = np.bincount(indexer.index_batch(holes))
    assert sorted(np.unique(counts, return_counts=True)[1].tolist()) == [13, 78, 78]
    assert set(counts.tolist()) == {4, 6, 12}  # suited, pair, offsuit


def test_reduced_deck_leduc():
    leduc = deck(3, 2)
    assert HandIndexer((1,), 3, 2).size == 3
    indexer = HandIndexer((1, 1), 3, 2)
    assert indexer.size == 15  # 3 pairs + 3*2 rank pairs x (same suit, other suit)
    rows = np.array([(a, b) for a in leduc for b in leduc if a != b])
    assert len(np.unique(indexer.index_batch(rows))) == 15


def test_canonical_representatives_weights_sum_to_raw_count():
    reps, weights = canonical_representatives(HandIndexer((3,)), deck())
    assert reps.shape == (1755, 3) and weights.sum() == 22100
    assert (HandIndexer((3,)).index_batch(reps) == np.arange(1755)).all()
