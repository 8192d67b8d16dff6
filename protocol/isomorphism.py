"""Suit isomorphism: a dense index over the canonical classes of (hole, board) card groups.

Two hands that differ only by a renaming of suits play identically, so features and bucket
tables are stored once per *class*. The indexer follows the algorithm of Waugh, *A Fast and
Optimal Hand Isomorphism Algorithm* (AAAI workshop 2013), implemented here from the paper's
description:

1. the cards are split into groups (rounds), e.g. ``(2, 3)`` = hole cards, then the flop;
2. each suit gets a *configuration*: how many of its cards fall in each group;
3. each suit's ranks are colex-indexed group by group, ranks used by earlier groups of that
   suit removed, giving a per-suit index below the configuration's size
   ``prod_r C(N - used_before_r, c_r)``;
4. suits are sorted by configuration; suits sharing one configuration are combined as a
   *multiset* of their per-suit indices (``sum_i C(x_i + i, i + 1)`` over sorted ``x``);
5. the configuration class (the sorted multiset of suit configurations) adds its offset.

The result is dense (0 .. size-1), identical for every suit renaming of a hand and different
for hands that no renaming relates. Groups are sets: the order of cards within a group does not
matter, which is what imperfect-recall abstractions want (the board is one group ``(2, 5)``).

>>> from protocol.cards import cards_from_str
>>> flop = HandIndexer((2, 3))
>>> flop.size
1286792
>>> flop.index(cards_from_str("AhKh2c3c4c")) == flop.index(cards_from_str("AsKs2d3d4d"))
True
>>> HandIndexer((2,)).size
169
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cached_property
from math import comb
from typing import Any

import numpy as np
from numba import njit, prange

from protocol.cards import NUM_RANKS, NUM_SUITS
from protocol.gamedef import Game

MAX_GROUPS = 4
_PARALLEL_ROWS = 4096
"""Below this many rows, starting threads costs more than it saves (an agent indexes one hand)."""
_KEY_BASE = 8
"""Per-group card counts are below 8, so a suit configuration is a base-8 number."""


def _binomials(n: int) -> np.ndarray:
    table = np.zeros((n + 1, n + 1), dtype=np.int64)
    for i in range(n + 1):
        for j in range(i + 1):
            table[i, j] = comb(i, j)
    return table


class HandIndexer:
    """Index of card groups of sizes ``groups`` under suit renaming, for a deck of ``num_ranks``
    top ranks and ``num_suits`` last suits (card codes as in :mod:`protocol.cards`)."""

    def __init__(self, groups: tuple[int, ...], num_ranks: int = NUM_RANKS, num_suits: int = NUM_SUITS) -> None:
        if not 1 <= len(groups) <= MAX_GROUPS or any(not 0 < g < _KEY_BASE for g in groups):
            raise ValueError(f"groups must be 1..{MAX_GROUPS} sizes in 1..{_KEY_BASE - 1}: {groups}")
        if sum(groups) > num_ranks * num_suits:
            raise ValueError(f"{sum(groups)} cards do not fit a {num_ranks}x{num_suits} deck")
        self.groups = tuple(groups)
        self.num_ranks = num_ranks
        self.num_suits = num_suits
        self.binom = _binomials(max(num_ranks, 2 * num_suits + 8) + 8)
        self._build_classes()

    # ---- configuration classes (pure Python, runs once) ----------------------------------

    def _suit_configs(self) -> list[tuple[int, ...]]:
        ranges = [range(min(g, self.num_ranks) + 1) for g in self.groups]
        return [c for c in itertools.product(*ranges) if sum(c) <= self.num_ranks]

    def _suit_size(self, config: tuple[int, ...]) -> int:
        size, used = 1, 0
        for c in config:
            size *= comb(self.num_ranks - used, c)
            used += c
        return size

    @staticmethod
    def _key(config: tuple[int, ...]) -> int:
        return sum(c * _KEY_BASE**r for r, c in enumerate(config))

    def _build_classes(self) -> None:
        """Enumerate every sorted multiset of suit configurations whose group sums match."""
        configs = self._suit_configs()
        suit_size = np.zeros(_KEY_BASE ** len(self.groups), dtype=np.int64)
        for c in configs:
            suit_size[self._key(c)] = self._suit_size(c)
        base = _KEY_BASE ** len(self.groups)
        classes: dict[int, int] = {}
        for combo in itertools.combinations_with_replacement(sorted(configs, key=self._key, reverse=True), self.num_suits):
            if any(sum(c[r] for c in combo) != g for r, g in enumerate(self.groups)):
                continue
            keys = [self._key(c) for c in combo]  # already descending
            size = 1
            for key, run in itertools.groupby(keys):
                k = len(list(run))
                size *= comb(int(suit_size[key]) + k - 1, k)
            class_key = sum(key * base**i for i, key in enumerate(keys))
            classes[class_key] = size
        order = sorted(classes)
        self.class_keys = np.array(order, dtype=np.int64)
        sizes = np.array([classes[k] for k in order], dtype=np.int64)
        self.class_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.suit_size = suit_size
        self.size = int(sizes.sum())

    @cached_property
    def _tables(self) -> tuple[Any, ...]:
        return (np.array(self.groups, dtype=np.int64), self.binom, self.suit_size,
                self.class_keys, self.class_offsets, self.num_ranks, self.num_suits)  # fmt: skip

    # ---- indexing -------------------------------------------------------------------------

    def index(self, cards: Sequence[int] | np.ndarray) -> int:
        """The class index of ``cards`` (concatenated groups, e.g. hole then board)."""
        row = np.asarray(cards, dtype=np.int64).reshape(1, -1)
        return int(self.index_batch(row)[0])

    def index_batch(self, cards: np.ndarray) -> np.ndarray:
        """Indices (int64) of the rows of ``cards`` (shape ``(n, sum(groups))``)."""
        cards = np.ascontiguousarray(cards, dtype=np.int64)
        if cards.ndim != 2 or cards.shape[1] != sum(self.groups):
            raise ValueError(f"cards must have shape (n, {sum(self.groups)}): {cards.shape}")
        out = np.empty(cards.shape[0], dtype=np.int64)
        kernel: Any = index_rows if len(cards) >= _PARALLEL_ROWS else _index_rows_serial
        kernel(cards, *self._tables, out)
        return out


#: Length of the int64 scratch array of :func:`index_into`.
SCRATCH = NUM_SUITS * MAX_GROUPS + 2 * NUM_SUITS


@njit(cache=True, inline="always")
def index_one(cards: np.ndarray, groups: np.ndarray, binom: np.ndarray, suit_size: np.ndarray, class_keys: np.ndarray,
              class_offsets: np.ndarray, num_ranks: int, num_suits: int) -> Any:
    """Waugh's index of one hand; ``cards`` are the groups' cards concatenated (see module doc)."""
    scratch = np.empty(SCRATCH, dtype=np.int64)
    return index_into(cards, groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits, scratch)


@njit(cache=True, inline="always")
def index_into(cards: np.ndarray, groups: np.ndarray, binom: np.ndarray, suit_size: np.ndarray, class_keys: np.ndarray,
               class_offsets: np.ndarray, num_ranks: int, num_suits: int, scratch: np.ndarray) -> Any:
    """:func:`index_one` with its working arrays in ``scratch`` (:data:`SCRATCH` int64s), for
    kernels that index several hands per sample and would otherwise allocate three arrays each
    time (the ES solver: eight per hold'em deal)."""
    rank_low = NUM_RANKS - num_ranks
    suit_low = NUM_SUITS - num_suits
    ngroups = groups.shape[0]
    masks = scratch[: NUM_SUITS * MAX_GROUPS].reshape((NUM_SUITS, MAX_GROUPS))
    masks[:] = 0
    pos = 0
    for g in range(ngroups):
        for _ in range(groups[g]):
            card = cards[pos]
            masks[card % NUM_SUITS - suit_low, g] |= np.int64(1) << (card // NUM_SUITS - rank_low)
            pos += 1
    # per-suit configuration key and index (colex of each group's ranks among unused ranks)
    keys = scratch[NUM_SUITS * MAX_GROUPS : NUM_SUITS * MAX_GROUPS + NUM_SUITS]
    idxs = scratch[NUM_SUITS * MAX_GROUPS + NUM_SUITS :]
    for s in range(num_suits):
        used = np.int64(0)
        nused = 0
        key = 0
        mult = 1
        weight = 1
        idx = 0
        for g in range(ngroups):
            m = masks[s, g]
            part = 0
            k = 0
            rest = m
            while rest:  # the group's ranks in this suit, lowest first (set bits, not all 13 ranks)
                low = rest & -rest
                x = _popcount(low - 1) - _popcount(used & (low - 1))  # rank among the unused ranks
                k += 1
                part += binom[x, k]
                rest ^= low
            idx += part * mult
            mult *= binom[num_ranks - nused, k]
            key += k * weight
            weight *= _KEY_BASE
            used |= m
            nused += k
        keys[s] = key
        idxs[s] = idx
    # sort suits by configuration (descending), indices ascending within a configuration
    for i in range(1, num_suits):
        j = i
        while j > 0 and (keys[j - 1] < keys[j] or (keys[j - 1] == keys[j] and idxs[j - 1] > idxs[j])):
            keys[j - 1], keys[j] = keys[j], keys[j - 1]
            idxs[j - 1], idxs[j] = idxs[j], idxs[j - 1]
            j -= 1
    base = 1
    for _ in range(ngroups):
        base *= _KEY_BASE
    class_key = 0
    scale = 1
    for s in range(num_suits):
        class_key += keys[s] * scale
        scale *= base
    # multiset index per run of equal configurations, combined in mixed radix
    index = 0
    mult = 1
    s = 0
    while s < num_suits:
        e = s
        while e < num_suits and keys[e] == keys[s]:
            e += 1
        part = 0
        for i in range(e - s):
            part += _comb(idxs[s + i] + i, i + 1)
        size = suit_size[keys[s]]
        index += part * mult
        mult *= _comb(size + e - s - 1, e - s)
        s = e
    c = np.searchsorted(class_keys, class_key)
    return class_offsets[c] + index


@njit(cache=True, inline="always")
def _popcount(x: Any) -> int:
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


@njit(cache=True, inline="always")
def _comb(n: int, k: int) -> int:
    """C(n, k) for the multiset step, where n can exceed any precomputed table."""
    if k < 0 or k > n:
        return 0
    result = 1
    for i in range(k):
        result = result * (n - i) // (i + 1)
    return result


@njit(cache=True)
def _index_rows_serial(cards: np.ndarray, groups: np.ndarray, binom: np.ndarray, suit_size: np.ndarray,
                       class_keys: np.ndarray, class_offsets: np.ndarray, num_ranks: int, num_suits: int,
                       out: np.ndarray) -> None:
    for i in range(cards.shape[0]):
        out[i] = index_one(cards[i], groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits)


@njit(cache=True, parallel=True)
def index_rows(cards: np.ndarray, groups: np.ndarray, binom: np.ndarray, suit_size: np.ndarray, class_keys: np.ndarray,
               class_offsets: np.ndarray, num_ranks: int, num_suits: int, out: np.ndarray) -> None:
    for i in prange(cards.shape[0]):
        out[i] = index_one(cards[i], groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits)


@njit(cache=True)
def all_combinations(cards: np.ndarray, k: int) -> np.ndarray:
    """Every k-subset of ``cards`` (ascending positions), one per row, in lexicographic order."""
    n = cards.shape[0]
    total = 1
    for i in range(k):
        total = total * (n - i) // (i + 1)
    out = np.empty((total, k), dtype=np.int8)
    pos = np.arange(k)
    for row in range(total):
        for j in range(k):
            out[row, j] = cards[pos[j]]
        j = k - 1
        while j >= 0 and pos[j] == n - k + j:
            j -= 1
        if j < 0:
            break
        pos[j] += 1
        for i in range(j + 1, k):
            pos[i] = pos[i - 1] + 1
    return out


def round_indexer(game: Game, round_index: int) -> HandIndexer:
    """Imperfect-recall indexer of a round: hole cards, then the whole visible board as one set."""
    visible = game.board_cards_through(round_index)
    groups = (game.num_hole_cards, visible) if visible else (game.num_hole_cards,)
    return HandIndexer(groups, game.num_ranks, game.num_suits)


def canonical_representatives(indexer: HandIndexer, deck: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """One representative per class of a single-group indexer and its orbit size (raw count).

    Found by indexing every raw subset (2.6M for five cards of 52: well under a second), so no
    ``unindex`` is needed: the first subset met in lexicographic order represents its class.
    """
    if len(indexer.groups) != 1:
        raise ValueError("canonical_representatives takes a one-group indexer")
    subsets = all_combinations(np.array(deck, dtype=np.int64), indexer.groups[0])
    idx = indexer.index_batch(subsets)
    counts = np.bincount(idx, minlength=indexer.size)
    first = np.full(indexer.size, -1, dtype=np.int64)
    order = np.argsort(idx, kind="stable")
    starts = np.searchsorted(idx[order], np.arange(indexer.size))
    first[:] = order[starts]
    return subsets[first], counts.astype(np.int64)
