"""Memory, disk and time estimates of building and solving a named abstraction.

Sizes are exact (counted from the betting tree and the suit-isomorphism indexers). Times scale
rates measured by ``benchmarks/bench_abstraction.py`` on the 2-core development machine: evaluator
rows per second while building features, numba k-means distance throughput on one core (L2 terms
for ``ke``/``ochs``, greedy-EMD distances for ``pa``) times the distances the k-means schedule
computes (:func:`kmeans_distances`), and the solver's speed (:func:`default_solver`): PCS as
(decision node, live hand) pairs per second measured by ``benchmarks/bench_pcs_holdem.py`` and
``benchmarks/bench_pcs_fhp.py``, ES MCCFR as iterations per second; a machine
with more cores scales roughly linearly (every kernel is a parallel numba loop). This module is
play-time code only because a missing agent's message quotes the cost of building it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from math import ceil, comb, isqrt

from bot.abstraction.spec import AbstractionSpec, num_infosets, round_sizes
from protocol.betting_tree import BettingTree
from protocol.isomorphism import HandIndexer, round_indexer

#: Feature build throughput (hole x final-board rows per second), measured building
#: abstraction_3e6 on the 2-core machine while other jobs shared it (3.96e9 rows in ~820 s).
FEATURE_ROWS_PER_SECOND = 4.8e6
#: ES-MCCFR iterations (one traversal per seat) per second on the 2-core machine with both cores
#: free: FHP fhp_abstraction_4e4 and Leduc lossless by the benchmark; hold'em by its solves (AMD
#: EPYC, 2026-11-27/28): abstraction_3e6 67.8M in 600 s on two threads (113k a second),
#: abstraction_1.1e7_ke 277.18M in 5,679 s on one thread beside another job (48.8k a second);
#: 9.4e4 on two stays under both.
ITERATIONS_PER_SECOND = {"holdem": 9.4e4, "fhp": 1.4e5, "leduc": 1.0e5, "kuhn": 2.0e5}
#: Abstractions whose ES solve measured a different rate (their tables do not stay in cache):
#: abstraction_3e7 by its own solve on two threads with the traversal row layout and batches of
#: 165k (2-core Intel Xeon, 2026-11-28: 356.2M iterations in 3,575 s, 100k a second, tests beside
#: it for 8 of the 60 minutes); abstraction_3e8 by an older solve, 39.9M in 50 min of one thread
#: (13.3k a second, before those changes: pessimistic now, not re-measured), twice that on two.
ES_ITERATIONS_PER_SECOND_OF = {"abstraction_3e7": 1.0e5, "abstraction_3e8": 2.66e4}
#: PCS (decision node, live hand) pairs per second on the 2-core machine with both cores free:
#: twice the pairs per CPU second of one thread, measured on the AMD EPYC with the last-round
#: sweep (2026-11-27, load ~3): ``benchmarks/bench_pcs_holdem.py --iterations 30 --threads 1``
#: (abstraction_3e6: 1.81e8 per CPU s, 38.1 CPU ms per pass; 87.4 before the sweep) and
#: ``benchmarks/bench_pcs_fhp.py --threads 1`` (fhp_abstraction_3.6e6: 1.05e8 per CPU s over a
#: 340 CPU-s solve). Other games (Leduc, Kuhn: seconds either way) use the FHP rate.
PCS_PAIRS_PER_SECOND = {"holdem": 3.6e8, "fhp": 2.1e8}
#: PCS iterations per second on the 2-core machine where an abstraction's own solve measured a
#: different rate than the pairs rate predicts (its tables do not stay in cache).
#: abstraction_3e8: its two-thread solve in the traversal row layout, batches of 479 iterations
#: at 15.8-16.9 a second (2-core Intel Xeon, 2026-11-29; 10.4-10.9 in the canonical layout on the
#: same box; the AMD EPYC measured 9.6 a CPU second canonical). abstraction_3e7: its one-hour
#: two-thread solve, 44,201 iterations in 3,580 s (a slower 2-core Intel Xeon, 2026-12-07; the
#: pairs rate above predicted 26 a second, so the estimate said 4.8 h for what takes ~10 h).
PCS_ITERATIONS_PER_SECOND_OF = {"abstraction_3e8": 16.0, "abstraction_3e7": 12.3}
#: A default PCS solve gives every bucket of the finest round this many hand updates per
#: decision node: iterations = this x buckets / live hands per board. FHP (and the small games)
#: calibrated by ``benchmarks/bench_pcs_fhp.py`` on fhp_abstraction_4e4, whose exploitability
#: stops falling (48.5 mbb/g) after ~1,000 iterations (690 flop buckets, 1,176 live hands: ~1,700
#: updates per bucket; 1,000 gives 52-54 there). Hold'em by the convergence check
#: (:mod:`training.abstraction.convergence`) of a one-thread abstraction_3e6 solve: T vs T/2 was
#: +5.9 +- 1.7 mbb/g at 22,746 iterations (2026-11-27), not yet within +-5; 45,000 iterations,
#: two doublings' worth of the gap's fall seen from 16,000 to 22,746, is the default (an
#: extrapolation, checked by the run's own convergence line); a finer abstraction is assumed to
#: need as many updates per bucket.
PCS_UPDATES_PER_BUCKET = {"holdem": 94_000, "fhp": 1000}
#: Default PCS solve lengths where a solve of the abstraction itself measured better than the
#: per-bucket rule above (which asks 4.5M iterations, ~3.3 days here, of abstraction_3e8).
#: abstraction_3e8's convergence checks (2-core Intel Xeon, two threads, 2026-11-29): +19.4 +- 3.4
#: mbb/g at 95,177 vs 42,884 iterations, +8.8 +- 2.0 at 185,528 vs 98,530, +4.9 +- 1.4 at 311,743
#: vs 191,755 (7.4 h), +4.3 +- 1.0 at 525,000 vs 312,222 (11.6 h of training clock, part of it
#: beside other work; ~9.1 h at the idle 16 a second): the mean inside +-5, its interval not.
#: The default is that measured run (an earlier extrapolation, 450,000, was refuted by it).
PCS_ITERATIONS_OF = {"abstraction_3e8": 525_000}
#: The published policy's share of a solve's files, in units of its two tables' bytes (one
#: table): a copy where the cache is on another file system, a hard link (no bytes) on the same.
PUBLISHED_COPY_PER_TABLE_BYTE = 0.5
#: The run directory's files in units of its two tables' bytes: the checkpoint (both tables) and
#: the previous one kept beside it, the half-run snapshot and the policy (one table each, i.e. half).
RUN_DIR_FILES_PER_TABLE_BYTE = 2 + 2 * 0.5
#: A solve's files with its published copy: an abstraction_3e8 run measured ~28 GB at its peak.
RUN_FILES_PER_TABLE_BYTE = RUN_DIR_FILES_PER_TABLE_BYTE + PUBLISHED_COPY_PER_TABLE_BYTE
#: Iterations per abstract infoset that a default ES solve runs (each infoset then sees ~100s of
#: regret updates; exploitability of ES-MCCFR falls roughly as 1/sqrt(iterations)).
DEFAULT_ITERATIONS_PER_INFOSET = 30
#: k-means throughput, point-centre coordinate terms per second on one core, the whole k-means
#: step counted (sampling, reads, empty-cluster repair): abstraction_3e8's river, 2.13e12 terms
#: by :func:`kmeans_distances`, took 14.2 min on two threads (2-core Intel Xeon, 2026-12-07), so
#: 1.25e9 a core. The assignment kernel alone: 2.5-2.7e9 (8 dims) and 4.0-4.6e9 (50 dims) by
#: ``bench_abstraction.py --kmeans`` on one core; 0.7-1.5e9 before it was vectorised over centres.
L2_TERMS_PER_SECOND = 1.25e9
#: Point-centre pairs per second of the pruned greedy-EMD assignment on one core: 1.9M measured
#: on real flop potential-aware histograms (47 turn cards over abstraction_3e6_ke's 518 turn
#: buckets) against point-like centres; halved for fitted (more spread) centres. The turn of
#: abstraction_3e6_pa2 (46 river cards over abstraction_3e6's 518 river buckets) measured 1.55M
#: (``benchmarks/bench_potential_aware.py``) and 0.9-2.3M with fitted centres in its build, so
#: the same rate serves both ``pa`` rounds; the lifted ground distances of a ``pa`` round over a
#: ``pa`` round (518^2 greedy EMDs between dense histograms, 36 s on one core by the same
#: benchmark's ``--lift``) are not counted.
EMD_DISTANCES_PER_SECOND = 1.0e6
#: Above this many clusters k-means runs in two levels (sqrt(k) coarse clusters, then each split
#: further), so a point meets about 2*sqrt(k) centres instead of k (:func:`kmeans_distances`).
TWO_LEVEL_MIN_K = 4096
#: k-means schedule (:mod:`training.abstraction.kmeans`): mini-batch steps and batch size, and
#: passes when a (sub-)problem fits in one batch; the potential-aware rounds use smaller ones.
KMEANS_STEPS, KMEANS_BATCH, WHOLE_PASSES = 200, 20_000, 25
PA_STEPS, PA_BATCH = 50, 4_000
HIST_BINS = 50
"""Bins of the final-HS histograms that ``ke`` clusters (Johanson et al. 2013 use 50)."""
OCHS_CLUSTERS = 8
"""Opponent clusters of ``ochs`` (Johanson et al. 2013 use 8 clusters of the 169 preflop hands)."""


def two_level_split(k: int) -> int:
    """Coarse clusters of a k-means into ``k`` clusters: 1 (one level) below TWO_LEVEL_MIN_K."""
    return 1 if k < TWO_LEVEL_MIN_K else isqrt(k)


def kmeans_distances(n: int, k: int, steps: int = KMEANS_STEPS, batch: int = KMEANS_BATCH) -> float:
    """Point-centre distances a k-means of ``n`` points into ``k`` clusters computes: k-means++
    seeding, mini-batch steps and the final assignment; two levels (equal coarse clusters
    assumed) above TWO_LEVEL_MIN_K."""
    coarse = two_level_split(k)
    if coarse > 1:
        return kmeans_distances(n, coarse, steps, batch) + coarse * kmeans_distances(n // coarse, ceil(k / coarse), steps, batch)
    if n <= batch:
        return (1 + WHOLE_PASSES + 1) * n * k
    return (min(20 * k, 100_000) + batch + steps * batch + n) * k


@dataclass(frozen=True)
class Estimate:
    infosets: int
    table_bytes: int  # regrets + average, float32 [rows, 3] each
    disk_bytes: int  # features + bucket tables + the solve's files (:data:`RUN_FILES_PER_TABLE_BYTE`)
    feature_seconds: float
    cluster_seconds: float  # k-means of ke/ochs/pa rounds, one core
    iterations: int  # default solve length
    solve_seconds: float

    def summary(self) -> str:
        features = f"features ~{duration(self.feature_seconds)}" if self.feature_seconds else "features/tables cached"
        clusters = f"; k-means ~{duration(self.cluster_seconds)} on one core" if self.cluster_seconds else ""
        return (f"{self.infosets:,} abstract infosets; tables {size(self.table_bytes)} RAM; disk {size(self.disk_bytes)}; "
                f"{features}{clusters}; {self.iterations:,} iterations ~{duration(self.solve_seconds)} "
                "at the 2-core rate measured here")  # fmt: skip


#: The solver ``--algo abstraction`` uses per game where no config names one: the one that
#: measured stronger there. FHP: PCS reached ES MCCFR's best fhp_abstraction_3.6e6 figure >10x
#: sooner (``benchmarks/bench_pcs_fhp.py``). Hold'em: at equal CPU ES led on abstraction_3e6
#: (by 10.4 +- 2.6 mbb/g after 40 min of one core each) and tied on abstraction_3e7 (-1.4 +- 4.4
#: after 30 min), by ``pokerbot match --boards 200`` (docs/algorithms/abstraction.md).
DEFAULT_SOLVERS = {"holdem": "es-mccfr"}
#: Abstractions whose measured winner differs from their game's. abstraction_3e8: PCS beat ES by
#: +91.1 +- 3.6 mbb/g after 50 min of one core each (17,110 PCS iterations, 39.9M ES; 2-core AMD
#: EPYC, 2026-11-28): ES's 39.9M deals are 0.12 per abstract infoset, while one PCS board
#: updates every bucket its 1,081 hands fall into at every node (3e8: ~600 flop, ~260 turn and
#: ~60 river buckets a board).
DEFAULT_SOLVER_OF = {"abstraction_3e8": "pcs"}


def default_solver(spec: AbstractionSpec) -> str:
    """``spec``'s default solver (:data:`DEFAULT_SOLVER_OF`, else its game's :data:`DEFAULT_SOLVERS`,
    else ``pcs``)."""
    if spec.name in DEFAULT_SOLVER_OF:
        return DEFAULT_SOLVER_OF[spec.name]
    return DEFAULT_SOLVERS.get(spec.load_game().name.split(".")[0], "pcs")


def estimate(spec: AbstractionSpec, iterations: int | None = None, cached_rounds: Collection[int] = (),
             built: bool = False, solver: str | None = None) -> Estimate:  # fmt: skip
    """Cost of building and solving ``spec`` with ``solver`` (``pcs`` or ``es-mccfr``; None: the
    game's :func:`default_solver`); ``cached_rounds`` have their features on disk, and a ``built``
    abstraction costs only its solve."""
    solver = solver or default_solver(spec)
    game = spec.load_game()
    tree = BettingTree.build(game)
    infosets = num_infosets(spec, tree)
    table = infosets * 3 * 4 * 2
    deck = len(game.deck)
    last = game.num_rounds - 1
    feature_bytes, rows, cluster = 0, 0, 0.0
    for r, (buckets, method) in enumerate(zip(spec.buckets, spec.round_methods, strict=True)):
        if buckets is None:
            continue
        size = round_indexer(game, r).size
        feature_bytes += size * (4 + 4 + 1) + size * (2 if buckets <= 65536 else 4)
        if method == "ke":
            feature_bytes += size * HIST_BINS * 2
            cluster += kmeans_distances(size, buckets) * HIST_BINS / L2_TERMS_PER_SECOND
        elif method == "ochs":
            feature_bytes += size * OCHS_CLUSTERS * 2
            cluster += kmeans_distances(size, buckets) * OCHS_CLUSTERS / L2_TERMS_PER_SECOND
        elif method == "pa":
            next_cards = deck - game.num_hole_cards - game.board_cards_through(r)
            feature_bytes += size * next_cards * 4
            cluster += kmeans_distances(size, buckets, PA_STEPS, PA_BATCH) / EMD_DISTANCES_PER_SECOND
            rows += size * next_cards  # index lookups, counted like evaluator rows
        if r in cached_rounds:
            continue
        visible = game.board_cards_through(r)
        boards = HandIndexer((visible,), game.num_ranks, game.num_suits).size if visible else 1
        runouts = comb(deck - visible, game.total_board_cards - visible)
        rows += boards * runouts * comb(deck, game.num_hole_cards)
        if method == "ochs" and r == last:  # plus the preflop clusters, from sampled boards
            rows += min(runouts, 50_000) * comb(deck, game.num_hole_cards)
    stem = game.name.split(".")[0]
    if solver == "pcs":
        live = comb(deck - game.total_board_cards, game.num_hole_cards)
        finest = max(round_sizes(spec)[1:] or round_sizes(spec))
        per_bucket = PCS_UPDATES_PER_BUCKET.get(stem, PCS_UPDATES_PER_BUCKET["fhp"])
        iterations = iterations or PCS_ITERATIONS_OF.get(spec.name) or max(1000, ceil(per_bucket * finest / live))
        pairs = 2 * len(tree.decision_ids) * live
        rate = PCS_ITERATIONS_PER_SECOND_OF.get(spec.name) or PCS_PAIRS_PER_SECOND.get(stem, PCS_PAIRS_PER_SECOND["fhp"]) / pairs
    else:
        iterations = iterations or DEFAULT_ITERATIONS_PER_INFOSET * infosets
        rate = ES_ITERATIONS_PER_SECOND_OF.get(spec.name) or ITERATIONS_PER_SECOND.get(stem, ITERATIONS_PER_SECOND["holdem"])
    build = 0.0 if built else 1.0
    return Estimate(infosets, table, feature_bytes + int(RUN_FILES_PER_TABLE_BYTE * table), build * rows / FEATURE_ROWS_PER_SECOND,
                    build * cluster, iterations, iterations / rate)  # fmt: skip


def size(n: float) -> str:
    """Bytes in B/KB/MB/GB/TB/PB (decimal units)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def duration(seconds: float) -> str:
    """Seconds as s, min, h or days, whichever reads best."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
