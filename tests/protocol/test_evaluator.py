"""Tests of protocol.evaluator against treys, and of the ACPC rankings of fewer than five cards.

treys evaluates ~70k 7-card hands/s, too slow for millions of rows in a unit test. Its ranking is
nothing but two lookup tables keyed by the product of the card ranks' primes (Cactus Kev), so
``_treys_vectorized`` looks treys' *own* tables up with numpy, five cards at a time, and takes
the best of the C(k, 5) subsets exactly like ``Evaluator._six`` / ``_seven``. That reference
covers every 5-card hand and millions of 6- and 7-card hands; the real ``Evaluator.evaluate``
checks a smaller random sample of each size as well, so the vectorized copy is itself checked.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import numba
import numpy as np
import pytest
from treys import Card, Evaluator
from treys.lookup import LookupTable

from protocol import evaluator as ev
from protocol.cards import RANKS, SUITS, cards_from_str, deck

# --------------------------------------------------------------------------------------------
# Fixtures and references
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Build the tables into a private cache, so tests neither depend on nor touch ~/.cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("POKERBOT_CACHE", str(tmp_path_factory.mktemp("pokerbot-cache")))
    patch.setattr(ev, "_tables", None)
    ev.build_tables()
    yield
    patch.undo()


def random_hands(n: int, k: int, seed: int) -> np.ndarray:
    """``n`` uniformly random rows of ``k`` distinct cards (rejection sampling), int64."""
    rng = np.random.default_rng(seed)
    parts, have = [], 0
    while have < n:
        draw = rng.integers(0, 52, size=(n, k))
        ordered = np.sort(draw, axis=1)
        draw = draw[(np.diff(ordered, axis=1) != 0).all(axis=1)]
        parts.append(draw)
        have += len(draw)
    return np.concatenate(parts)[:n]


def all_five_card_hands() -> np.ndarray:
    """All 2,598,960 five-card hands, (n, 5) int8."""
    flat = itertools.chain.from_iterable(itertools.combinations(range(52), 5))
    return np.fromiter(flat, dtype=np.int8, count=2_598_960 * 5).reshape(-1, 5)


_PRIMES = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41], dtype=np.int64)


class TreysTables:
    """treys' flush and unsuited lookup tables as sorted numpy arrays (vectorized ``_five``)."""

    def __init__(self) -> None:
        table = LookupTable()
        self.flush_keys, self.flush_vals = self._sorted(table.flush_lookup)
        self.other_keys, self.other_vals = self._sorted(table.unsuited_lookup)

    @staticmethod
    def _sorted(lookup: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
        keys = np.array(sorted(lookup), dtype=np.int64)
        return keys, np.array([lookup[k] for k in keys], dtype=np.int64)

    @staticmethod
    def _find(keys: np.ndarray, vals: np.ndarray, query: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
        assert (keys[pos] == query).all(), "prime product missing from treys' table"
        return vals[pos]

    def five(self, cards: np.ndarray) -> np.ndarray:
        """treys rank (1 = royal flush) of each 5-card row."""
        cards = cards.astype(np.int64)
        product = np.prod(_PRIMES[cards // 4], axis=1)
        suits = cards % 4
        flush = (suits == suits[:, :1]).all(axis=1)
        out = np.empty(len(cards), dtype=np.int64)
        out[flush] = self._find(self.flush_keys, self.flush_vals, product[flush])
        out[~flush] = self._find(self.other_keys, self.other_vals, product[~flush])
        return out

    def best(self, cards: np.ndarray) -> np.ndarray:
        """treys rank of the best five cards of each row (5..7 cards), like ``_seven``."""
        subsets = itertools.combinations(range(cards.shape[1]), 5)
        return np.min([self.five(cards[:, list(cols)]) for cols in subsets], axis=0)


@pytest.fixture(scope="module")
def treys_tables() -> TreysTables:
    return TreysTables()


def treys_strengths(cards: np.ndarray) -> np.ndarray:
    """``7463 - Evaluator.evaluate`` row by row: the real, slow treys."""
    evaluator = Evaluator()
    lookup = [Card.new(RANKS[c // 4] + SUITS[c % 4]) for c in range(52)]
    rows = [[lookup[c] for c in row] for row in cards.tolist()]
    return 7463 - np.array([evaluator.evaluate(r[:2], r[2:]) for r in rows], dtype=np.int64)


def h(text: str) -> int:
    return ev.hand_strength(cards_from_str(text))


# --------------------------------------------------------------------------------------------
# Agreement with treys (5..7 cards)
# --------------------------------------------------------------------------------------------


def test_vectorized_treys_matches_real_treys(treys_tables: TreysTables) -> None:
    for k, seed in ((5, 1), (6, 2), (7, 3)):
        cards = random_hands(20_000, k, seed)
        np.testing.assert_array_equal(7463 - treys_tables.best(cards), treys_strengths(cards))


def test_every_five_card_hand_matches_treys(treys_tables: TreysTables) -> None:
    cards = all_five_card_hands()
    strengths = ev.hand_strength_batch(cards)
    np.testing.assert_array_equal(strengths, 7463 - treys_tables.five(cards))
    assert len(np.unique(strengths)) == 7462


def test_random_five_card_hands_match_real_treys() -> None:
    cards = random_hands(200_000, 5, seed=5)
    np.testing.assert_array_equal(ev.hand_strength_batch(cards), treys_strengths(cards))


@pytest.mark.parametrize("k", [6, 7])
def test_million_hands_match_treys(k: int, treys_tables: TreysTables) -> None:
    cards = random_hands(1_000_000, k, seed=10 + k)
    np.testing.assert_array_equal(ev.hand_strength_batch(cards), 7463 - treys_tables.best(cards))


@pytest.mark.parametrize("k", [6, 7])
def test_random_hands_match_real_treys(k: int) -> None:
    cards = random_hands(100_000, k, seed=20 + k)
    np.testing.assert_array_equal(ev.hand_strength_batch(cards), treys_strengths(cards))


def test_flush_rich_seven_card_hands_match_treys(treys_tables: TreysTables) -> None:
    """Random hands rarely hold flushes; these all have 5..7 cards of one suit."""
    rng = np.random.default_rng(7)
    spades = np.array([c for c in range(52) if c % 4 == 3])
    others = np.array([c for c in range(52) if c % 4 != 3])
    rows = []
    for suited in (5, 6, 7):
        for _ in range(20_000):
            row = np.concatenate([rng.choice(spades, suited, replace=False),
                                  rng.choice(others, 7 - suited, replace=False)])  # fmt: skip
            rows.append(rng.permutation(row))
    cards = np.array(rows)
    np.testing.assert_array_equal(ev.hand_strength_batch(cards), 7463 - treys_tables.best(cards))


def test_exact_values_of_known_hands() -> None:
    assert h("AsKsQsJsTs") == 7462  # royal flush
    assert h("5d4d3d2dAd") == 7453  # steel wheel, the lowest straight flush
    assert h("7c5d4h3s2c") == 1  # the worst hand
    assert h("AhAdAcAsKh") == 7452  # best quads
    assert h("AhKdQcJsTh") == 7463 - 1600  # best straight
    assert h("5h4d3c2sAh") == 7463 - 1609  # wheel
    assert h("AhAd7s7c2d9h9c") == h("AhAd9s9c7d")  # best two pair of three pairs
    flush = "2h3h4h5h7h8h9d"
    assert h(flush) == treys_strengths(np.array([cards_from_str(flush)]))[0] == 5876


# --------------------------------------------------------------------------------------------
# Fewer than five cards: ACPC rank combinations
# --------------------------------------------------------------------------------------------


def test_kuhn_ranking() -> None:
    assert (h("Qs"), h("Ks"), h("As")) == (11, 12, 13)


def test_leduc_ranking() -> None:
    assert h("QsQh") > h("AhKs")  # a pair beats any unpaired hand
    assert h("AhKs") == h("AsKs")  # suits never matter
    assert h("AhQs") < h("AhKs") < h("QsQh") < h("KsKh") < h("AsAh")
    assert h("AsAh") == 91 and h("AhKs") == 78  # 91 two-card classes, 13 of them pairs
    leduc = deck(3, 2)
    pairs = [ev.hand_strength(p) for p in itertools.combinations(leduc, 2)]
    assert sorted(set(pairs)) == [66, 77, 78, 89, 90, 91]  # KQ is the best of C(12, 2) K-highs


def reference_small_key(ranks: list[int]) -> tuple[int, list[int]]:
    """Independent ACPC key: counts pattern decides the category, then ranks by group size."""
    counts = Counter(ranks)
    order = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    shape = sorted(counts.values(), reverse=True)
    category = {(4,): 4, (3,): 3, (3, 1): 3, (2, 2): 2}.get(tuple(shape), 1 if shape[0] == 2 else 0)
    return category, order


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_small_hands_order_like_reference(k: int) -> None:
    hands = list(itertools.combinations(range(52), k))
    if k == 4:
        hands = hands[::7]
    strengths = ev.hand_strength_batch(np.array(hands))
    keys = [reference_small_key([c // 4 for c in hand]) for hand in hands]
    by_key: dict[tuple, int] = {}
    for key, strength in zip(keys, strengths.tolist(), strict=True):
        assert by_key.setdefault((key[0], tuple(key[1])), strength) == strength
    ordered = sorted(by_key.items())
    values = [s for _, s in ordered]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert values[0] == 1


def test_four_card_categories() -> None:
    assert h("2c2d2h2s") > h("AcAdAhKs") > h("AcAdKhKs") > h("AcAdKhQs") > h("AcKdQhJs")
    assert h("3c3d2h2s") > h("AcAdKhQs")  # two pair beats one pair
    assert h("AcKdQhJs") == h("AsKhQdJc")


# --------------------------------------------------------------------------------------------
# Scalar vs batch, dtypes, threads, errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", range(1, 8))
def test_scalar_equals_batch(k: int) -> None:
    cards = random_hands(5_000, k, seed=30 + k)
    scalar = [ev.hand_strength(row) for row in cards.tolist()]
    assert ev.hand_strength_batch(cards).tolist() == scalar


def test_dtypes_and_parallel_agree() -> None:
    cards = random_hands(50_000, 7, seed=40)
    expected = ev.hand_strength_batch(cards)
    assert expected.dtype == np.int32 and expected.shape == (50_000,)
    for dtype in (np.int8, np.uint8, np.int32, np.uint64):
        np.testing.assert_array_equal(ev.hand_strength_batch(cards.astype(dtype)), expected)
    serial = [ev.hand_strength_batch(cards[i : i + 1000]) for i in range(0, 50_000, 1000)]
    np.testing.assert_array_equal(np.concatenate(serial), expected)  # below the parallel cutoff
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        np.testing.assert_array_equal(ev.hand_strength_batch(cards), expected)
    finally:
        numba.set_num_threads(threads)


def test_empty_batch() -> None:
    assert ev.hand_strength_batch(np.zeros((0, 7), dtype=np.int64)).shape == (0,)


@pytest.mark.parametrize(
    "bad",
    [np.zeros((3,), dtype=int), np.zeros((2, 8), dtype=int), np.zeros((2, 0), dtype=int),
     np.zeros((2, 5)), np.array([[0, 1, 2, 3, 52]]), np.array([[0, 1, 2, 3, -1]])],
)  # fmt: skip
def test_batch_rejects_bad_input(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        ev.hand_strength_batch(bad)


@pytest.mark.parametrize("bad", [[], [0] * 8, [0, 0], [52], [-1, 3]])
def test_scalar_rejects_bad_input(bad: list[int]) -> None:
    with pytest.raises(ValueError):
        ev.hand_strength(bad)


def test_sorting_network_sorts_all_zero_one_inputs() -> None:
    for bits in itertools.product((0, 1), repeat=7):
        assert list(ev._sort7(*bits)) == sorted(bits)


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("AsKsQsJsTs9s", "Royal Flush"),
        ("5d4d3d2dAdAc", "Straight Flush, Five high"),
        ("7h7d7c7s2d", "Four of a Kind, Sevens"),
        ("KhKdKc7s7c2d", "Full House, Kings full of Sevens"),
        ("6h6d6c7s7c7d2h", "Full House, Sevens full of Sixes"),
        ("Ah9h7h4h2hKs", "Flush, Ace high"),
        ("Th9d8c7s6hAd", "Straight, Ten high"),
        ("5h4d3c2sAh", "Straight, Five high"),
        ("QhQdQc7s2d", "Three of a Kind, Queens"),
        ("KhKd7s7c2d9h", "Two Pair, Kings and Sevens"),
        ("QhQd7s5c2d", "Pair of Queens"),
        ("Ah9d7s5c2d", "High Card, Ace"),
        ("As", "High Card, Ace"),
        ("QsQh", "Pair of Queens"),
        ("KsKh2c", "Pair of Kings"),
        ("KsKhKc", "Three of a Kind, Kings"),
        ("KsKh2c2d", "Two Pair, Kings and Twos"),
        ("9s9h9c9d", "Four of a Kind, Nines"),
    ],
)
def test_hand_name(text: str, name: str) -> None:
    assert ev.hand_name(cards_from_str(text)) == name


def test_class_count_and_categories() -> None:
    classes = ev.five_card_classes()
    assert len(classes) == 7462
    sizes = Counter(category for category, _ in classes)
    assert [sizes[c] for c in range(9)] == [1277, 2860, 858, 858, 10, 1277, 156, 156, 10]


# --------------------------------------------------------------------------------------------
# Disk cache
# --------------------------------------------------------------------------------------------


def test_cache_reload_gives_identical_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    built = [t.copy() for t in ev.build_tables(force=True)]
    assert ev.last_build_seconds is not None and ev.last_load_seconds is None
    assert all(p.exists() for p in ev._table_paths())
    monkeypatch.setattr(ev, "_tables", None)
    loaded = ev.build_tables()
    assert ev.last_load_seconds is not None and ev.last_build_seconds is None
    for a, b, fresh in zip(built, loaded, ev._compute_tables(), strict=True):
        assert a.dtype == b.dtype == np.int16
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, fresh)  # deterministic build
    assert ev.table_bytes() == sum(t.nbytes for t in built) + ev._COLEX.nbytes


def test_corrupt_cache_is_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    nonflush_path, _ = ev._table_paths()
    nonflush_path.write_bytes(b"not a numpy file")
    monkeypatch.setattr(ev, "_tables", None)
    ev.build_tables()
    assert ev.last_build_seconds is not None
    assert h("AsKsQsJsTs") == 7462
