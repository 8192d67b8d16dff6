"""Memory, disk and time estimates of building and solving a named abstraction.

Sizes are exact (counted from the betting tree and the suit-isomorphism indexers). Times scale
two rates measured by ``benchmarks/bench_abstraction.py`` on the 2-core development machine
(both cores): evaluator rows per second while building features, and MCCFR iterations per
second on HULH; a machine with more cores scales roughly linearly.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

from protocol.betting_tree import BettingTree
from training.abstraction.build import HIST_BINS, features_paths
from training.abstraction.features import round_indexer
from training.abstraction.isomorphism import HandIndexer
from training.abstraction.spec import AbstractionSpec, num_infosets

#: Feature build throughput (hole x final-board rows per second), measured building
#: abstraction_3e6 on the 2-core machine while other jobs shared it (3.96e9 rows in ~820 s).
FEATURE_ROWS_PER_SECOND = 4.8e6
#: ES-MCCFR iterations (one traversal per seat) per second, measured by the benchmark on the
#: same (shared) machine: HULH abstraction_3e6, FHP fhp_abstraction_4e4, Leduc lossless.
ITERATIONS_PER_SECOND = {"holdem": 1.45e4, "fhp": 1.4e5, "leduc": 1.0e5, "kuhn": 2.0e5}
#: Iterations per abstract infoset that a default solve runs (each infoset then sees ~100s of
#: regret updates; exploitability of ES-MCCFR falls roughly as 1/sqrt(iterations)).
DEFAULT_ITERATIONS_PER_INFOSET = 30


@dataclass(frozen=True)
class Estimate:
    infosets: int
    table_bytes: int  # regrets + average, float32 [rows, 3] each
    disk_bytes: int  # features + bucket tables + one checkpoint + published policy
    feature_seconds: float
    iterations: int  # default solve length
    solve_seconds: float

    def summary(self) -> str:
        features = f"features ~{_duration(self.feature_seconds)}" if self.feature_seconds else "features cached"
        return (f"{self.infosets:,} abstract infosets; tables {_size(self.table_bytes)} RAM; disk {_size(self.disk_bytes)}; "
                f"{features}; {self.iterations:,} iterations ~{_duration(self.solve_seconds)} "
                "at the 2-core rate measured here")  # fmt: skip


def estimate(spec: AbstractionSpec, iterations: int | None = None) -> Estimate:
    game = spec.load_game()
    tree = BettingTree.build(game)
    infosets = num_infosets(spec, tree)
    table = infosets * 3 * 4 * 2
    deck = len(game.deck)
    feature_bytes, rows = 0, 0
    for r, buckets in enumerate(spec.buckets):
        if buckets is None:
            continue
        size = round_indexer(game, r).size
        feature_bytes += size * (4 + 4 + 1) + size * (2 if buckets <= 65536 else 4)
        if r in spec.kmeans_rounds:
            feature_bytes += size * HIST_BINS * 2
        visible = game.board_cards_through(r)
        bins = HIST_BINS if r in spec.kmeans_rounds else 0
        if all(p.exists() for p in features_paths(game, r, bins).values()):
            continue  # cached (shared by every size of the game)
        boards = HandIndexer((visible,), game.num_ranks, game.num_suits).size if visible else 1
        rows += boards * comb(deck - visible, game.total_board_cards - visible) * comb(deck, game.num_hole_cards)
    stem = game.name.split(".")[0]
    iterations = iterations or DEFAULT_ITERATIONS_PER_INFOSET * infosets
    rate = ITERATIONS_PER_SECOND.get(stem, ITERATIONS_PER_SECOND["holdem"])
    return Estimate(infosets, table, feature_bytes + table + table // 2, rows / FEATURE_ROWS_PER_SECOND,
                    iterations, iterations / rate)  # fmt: skip


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
