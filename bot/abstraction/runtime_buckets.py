"""A hand's abstraction bucket computed from its cards at decision time, as the build computes it.

The built bucket tables of a card abstraction (:mod:`training.abstraction.build`) hold one
bucket per suit-isomorphism class: 1.3M flop, 14M turn and 123M river classes for HULH, hundreds
of megabytes. A shipped bot cannot carry them, but it needs the bucket of only one hand per
decision, and that bucket is a function of a feature of the hand that is cheap to compute for
one hand: E[HS], E[HS^2] or a 50-bin histogram of final-board hand strength (HS: the share of
opponent hands beaten, ties half, with card removal; Zinkevich et al. 2007, Johanson et al.
2013). So the shipped bot stores only what maps a feature to a bucket:

* percentile rounds (``ehs2``; on the river E[HS^2] = HS^2 orders hands as E[HS] does): the
  largest feature value of each bucket (a percentile bucket is a monotone step function of the
  value, :mod:`training.abstraction.buckets`), so the bucket is a binary search;
* ``ke`` rounds: the k-means centres (CDF vectors), the bucket being the nearest centre in L2
  exactly as the build's final assignment picks it, plus the few reassignments the build made to
  fill empty clusters.

**Exactly the build's value.** The build computes a class's feature once, on the canonical
representative of its board (the lexicographically first board of the suit-renaming orbit,
:func:`protocol.isomorphism.canonical_representatives`) with the last hole (in enumeration order)
that lands in the class, summing HS over the runouts in lexicographic order. Floating-point sums
depend on their order, so :func:`build_order_hand` maps a hand to that same (hole, board) pair
and :func:`runout_features` sums in that same order: the float32 feature is bit-identical to the
cached one, and so is the bucket. ``benchmarks/bench_hulh_table.py --agreement`` checks this
against the cached tables.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from protocol.cards import NUM_RANKS, NUM_SUITS

# the evaluator's row kernel and tables, called per hand inside this module's numba loop (its
# public batch API would need a ~1M-row array per flop decision)
from protocol.evaluator import _COLEX, _NF_OFFSETS, _eval_row, _get_tables
from protocol.gamedef import Game
from protocol.isomorphism import all_combinations, round_indexer


def build_order_hand(game: Game, hole: tuple[int, ...], board: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The (hole, board) pair whose features the build computed for ``hole`` + ``board``'s class.

    The board is renamed to its orbit's lexicographically smallest sorted form (the canonical
    representative the build enumerates) and the hole by the same renaming; several renamings
    may fix that board, and the build's feature arrays keep the value written last, i.e. by the
    lexicographically largest renamed hole.
    """
    best_board: tuple[int, ...] | None = None
    best_hole: tuple[int, ...] = ()
    for perm in _renamings(tuple(sorted({c % NUM_SUITS for c in game.deck}))):
        renamed_board = tuple(sorted((c - c % NUM_SUITS) + perm[c % NUM_SUITS] for c in board))
        renamed_hole = tuple(sorted((c - c % NUM_SUITS) + perm[c % NUM_SUITS] for c in hole))
        if best_board is None or renamed_board < best_board or (renamed_board == best_board and renamed_hole > best_hole):
            best_board, best_hole = renamed_board, renamed_hole
    return np.array(best_hole, dtype=np.int64), np.array(best_board, dtype=np.int64)


@cache
def _renamings(suits: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Every renaming among the game's ``suits`` (card codes are rank * 4 + suit): the new suit
    of each of the four suit codes."""
    return tuple(tuple(dict(zip(suits, image, strict=True)).get(s, s) for s in range(NUM_SUITS))
                 for image in itertools.permutations(suits))  # fmt: skip


def runout_features(game: Game, hole: np.ndarray, board: np.ndarray, bins: int) -> tuple[float, float, np.ndarray]:
    """(E[HS], E[HS^2], histogram of final HS over ``bins`` bins) of ``hole`` on ``board`` over
    every runout, as float32 values; pass the pair :func:`build_order_hand` gives to get the
    build's exact values."""
    nonflush, flush = _get_tables()
    offset = int(_NF_OFFSETS[game.num_hole_cards + game.total_board_cards - 1])
    deck = np.array(game.deck, dtype=np.int64)
    hist = np.zeros(max(bins, 1), dtype=np.int64)
    ehs, ehs2 = _runout_features(hole, board, deck, game.total_board_cards - len(board), nonflush, flush, _COLEX, offset, hist)
    return ehs, ehs2, hist[:bins]


@njit(cache=True)
def _runout_features(hole, board, deck, runout_size, nonflush, flush, colex, offset, hist):
    """Sum HS and HS^2 over runouts in the build's order (lexicographic over the deck minus the
    board, skipping those that hit the hole); HS counts opponent holes disjoint from every
    known card by strength below / equal to ours.

    Per final board, the non-flush strength of the board plus each *pair of ranks* is looked up
    once (91 pairs instead of ~1,000 opponent holes); an opponent hole is evaluated in full only
    when the board and its suits could make a flush, so strengths equal the evaluator's."""
    k = hole.shape[0]
    visible = board.shape[0]
    final = visible + runout_size
    cards = k + final
    rest = np.empty(deck.shape[0], dtype=np.int64)
    n_rest = 0
    for c in deck:
        on_board = False
        for j in range(visible):
            if board[j] == c:
                on_board = True
        if not on_board:
            rest[n_rest] = c
            n_rest += 1
    row = np.empty(cards, dtype=np.int64)
    row[:k] = hole
    row[k : k + visible] = board
    synthetic = np.empty(cards, dtype=np.int64)
    opponent = np.empty(cards, dtype=np.int64)
    pair_strength = np.empty((NUM_RANKS, NUM_RANKS), dtype=np.int64)
    used = np.zeros(64, dtype=np.bool_)
    suit_count = np.zeros(4, dtype=np.int64)
    others = np.empty(deck.shape[0], dtype=np.int64)
    bins = hist.shape[0]
    s1 = 0.0
    s2 = 0.0
    count = 0
    runouts = all_combinations(rest[:n_rest], runout_size)  # the build's order (_final_boards)
    for run in range(runouts.shape[0]):
        hits_hole = False
        for j in range(runout_size):
            card = np.int64(runouts[run, j])
            row[k + visible + j] = card
            for a in range(k):
                if hole[a] == card:
                    hits_hole = True
        if not hits_hole:
            ours = _eval_row(row, cards, nonflush, flush, colex, offset)
            used[:] = False
            suit_count[:] = 0
            for j in range(cards):
                used[row[j]] = True
            for j in range(k, cards):
                suit_count[row[j] & 3] += 1
            board_suited = suit_count.max()
            # non-flush strength of the final board plus ranks (x, y): suits i % 4 never flush
            for j in range(final):
                synthetic[j] = (row[k + j] >> 2) * 4 + (j % 4)
            for x in range(NUM_RANKS):
                for y in range(x, NUM_RANKS):
                    synthetic[final] = x * 4 + (final % 4)
                    synthetic[final + 1] = y * 4 + ((final + 1) % 4)
                    pair_strength[x, y] = _eval_row(synthetic, cards, nonflush, flush, colex, offset)
            opponent[k:] = row[k:]
            n_others = 0
            for c in deck:
                if not used[c]:
                    others[n_others] = c
                    n_others += 1
            less = 0
            equal = 0
            total = 0
            for i in range(n_others):
                a = others[i]
                for j in range(i + 1, n_others):
                    b = others[j]
                    sa, sb = a & 3, b & 3
                    if board_suited >= 5 or suit_count[sa] + 1 + (sa == sb) >= 5 or suit_count[sb] + 1 >= 5:
                        opponent[0] = a
                        opponent[1] = b
                        s = _eval_row(opponent, cards, nonflush, flush, colex, offset)
                    else:
                        s = pair_strength[min(a >> 2, b >> 2), max(a >> 2, b >> 2)]
                    total += 1
                    if s < ours:
                        less += 1
                    elif s == ours:
                        equal += 1
            hs = (less + 0.5 * equal) / total
            s1 += hs
            s2 += hs * hs
            count += 1
            hist[min(int(hs * bins), bins - 1)] += 1
    return np.float32(s1 / count), np.float32(s2 / count)


def cdf_vectors(hist: np.ndarray) -> np.ndarray:
    """Rows of a histogram array as normalised CDFs (float32): the points ``ke`` clusters
    (1-D EMD is the L1 distance between CDFs; k-means takes L2 between them)."""
    hist = np.asarray(hist, dtype=np.float32)
    cdf = np.cumsum(hist, axis=1)
    return cdf / np.maximum(cdf[:, -1:], 1.0)


@njit(cache=True, inline="always")
def squared_l2(point, centre) -> float:
    """Squared L2 distance, float32 terms summed in float64 in index order (the k-means
    assignment, :func:`training.abstraction.kmeans._l2_assign`, does exactly this arithmetic in
    a vectorised loop order, so it and the play-time nearest centre agree)."""
    d = 0.0
    for j in range(point.shape[0]):
        x = point[j] - centre[j]
        d += x * x
    return d


@njit(cache=True)
def nearest_centre(point, centres) -> int:
    """Index of the centre nearest ``point`` (the first of equal ones)."""
    best, best_d = 0, np.inf
    for c in range(centres.shape[0]):
        d = squared_l2(point, centres[c])
        if d < best_d:
            best, best_d = c, d
    return best


class RoundBuckets:
    """Maps one round's hand to its bucket; subclasses say from which feature."""

    #: Bins of the final-HS histogram the feature needs (0: E[HS]/E[HS^2] only).
    bins: int = 0

    def bucket_of(self, ehs: float, ehs2: float, hist: np.ndarray) -> int:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class PercentileBuckets(RoundBuckets):
    """Equal-mass percentile buckets of E[HS^2] (``ehs2``): ``upper[b]`` is the largest feature
    value in bucket ``b`` (increasing), so a value's bucket is the first ``b`` with
    ``value <= upper[b]``."""

    upper: np.ndarray  # float32 [buckets]

    def bucket_of(self, ehs: float, ehs2: float, hist: np.ndarray) -> int:
        return int(np.searchsorted(self.upper, np.float32(ehs2), side="left"))


@dataclass(frozen=True, eq=False)
class CentreBuckets(RoundBuckets):
    """k-means buckets of final-HS histograms (``ke``): the nearest centre of the histogram's
    CDF, then the build's empty-cluster moves (:class:`training.abstraction.kmeans.KMeansFit`)
    replayed in order. A two-level fit (thousands of buckets: the build clusters into ~sqrt(k)
    coarse clusters, then each of those apart) also carries the coarse centres and each coarse
    cluster's first bucket: the nearest coarse centre picks the slice of ``centres`` searched."""

    centres: np.ndarray  # float32 [buckets, bins]
    move_source: np.ndarray  # int64 [moves]
    move_point: np.ndarray  # float32 [moves, bins]
    move_target: np.ndarray  # int64 [moves]
    coarse_centres: np.ndarray | None = None  # float32 [coarse, bins] of a two-level fit
    coarse_offsets: np.ndarray | None = None  # int64 [coarse + 1]

    def __post_init__(self) -> None:
        if (self.coarse_centres is None) != (self.coarse_offsets is None):
            raise ValueError("two-level k-means buckets need both the coarse centres and their offsets")
        if self.coarse_offsets is not None:
            offsets = np.asarray(self.coarse_offsets)
            if (len(offsets) != len(self.coarse_centres) + 1 or offsets[0] != 0 or offsets[-1] != len(self.centres)
                    or np.any(np.diff(offsets) < 1)):  # fmt: skip
                raise ValueError(f"coarse offsets {offsets[:4].tolist()}... do not split {len(self.centres)} centres "
                                 f"among {len(self.coarse_centres)} coarse clusters")  # fmt: skip

    #: Array names of :meth:`to_arrays`; the coarse pair only for a two-level fit.
    FIELDS = ("centres", "move_source", "move_point", "move_target")
    COARSE_FIELDS = ("coarse_centres", "coarse_offsets")

    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The arrays that rebuild these buckets (:meth:`from_arrays`), named ``prefix`` + field:
        what a compact bot's ``buckets.npz`` and the build's centre cache store."""
        names = self.FIELDS + (self.COARSE_FIELDS if self.coarse_offsets is not None else ())
        return {prefix + name: getattr(self, name) for name in names}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str = "") -> CentreBuckets:
        """The buckets :meth:`to_arrays` stored; KeyError names a missing array, ValueError an
        inconsistent two-level pair."""
        coarse = [arrays.get(prefix + name) for name in cls.COARSE_FIELDS]
        return cls(*(arrays[prefix + name] for name in cls.FIELDS), *coarse)

    @property
    def bins(self) -> int:  # type: ignore[override]
        return self.centres.shape[1]

    def bucket_of(self, ehs: float, ehs2: float, hist: np.ndarray) -> int:
        point = cdf_vectors(hist[None, :])[0]
        if self.coarse_offsets is None:
            bucket = nearest_centre(point, self.centres)
        else:
            c = nearest_centre(point, self.coarse_centres)
            first = int(self.coarse_offsets[c])
            bucket = first + nearest_centre(point, self.centres[first : int(self.coarse_offsets[c + 1])])
        for source, moved, target in zip(self.move_source, self.move_point, self.move_target, strict=True):
            if bucket == source and np.array_equal(point, moved):
                bucket = int(target)
        return int(bucket)


class HandBucketer:
    """A hand's bucket per round: the preflop class itself (lossless), later rounds by
    :class:`RoundBuckets` from the features computed for the hand. The last hand's buckets are
    remembered, so the several decisions of one round cost one feature computation."""

    def __init__(self, game: Game, rounds: tuple[RoundBuckets | None, ...]) -> None:
        if game.num_hole_cards != 2:
            raise ValueError(f"{game.name}: play-time buckets need two hole cards")
        if len(rounds) != game.num_rounds or any(r is None for r in rounds[1:]) or rounds[0] is not None:
            raise ValueError("play-time buckets: a lossless preflop and a bucketing for every later round")
        self.game = game
        self.rounds = rounds
        self.preflop = round_indexer(game, 0)
        self._memo: dict[tuple, int] = {}

    def forget(self) -> None:
        """Drop remembered buckets (benchmarks time a fresh hand)."""
        self._memo.clear()

    def bucket(self, round_index: int, hole: tuple[int, ...], board: tuple[int, ...]) -> int:
        if round_index == 0:
            return self.preflop.index(tuple(hole))
        key = (round_index, tuple(hole), tuple(board))
        found = self._memo.get(key)
        if found is None:
            buckets = self.rounds[round_index]
            assert buckets is not None
            canonical_hole, canonical_board = build_order_hand(self.game, hole, board)
            ehs, ehs2, hist = runout_features(self.game, canonical_hole, canonical_board, buckets.bins)
            found = buckets.bucket_of(ehs, ehs2, hist)
            if len(self._memo) > 64:
                self._memo.clear()
            self._memo[key] = found
        return found
