"""Card-abstraction figures: indexer speed, feature/bucket build times, MCCFR speed, table sizes.

    python benchmarks/bench_abstraction.py                 # quick figures (about 2 minutes)
    python benchmarks/bench_abstraction.py --hulh-build    # also time the full abstraction_3e6 build
    NUMBA_NUM_THREADS=1 python benchmarks/bench_abstraction.py --kmeans   # k-means kernel rates, one core

The MCCFR figures need the abstractions built (``pokerbot train --algo abstraction --game
holdem --size 3e6 ...`` builds them first; missing ones are skipped with a message). Builds use
the normal cache (``$POKERBOT_CACHE``). Every figure is printed with the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from bot.abstraction.cost import estimate
from bot.abstraction.spec import SPECS, spec_dir
from bot.abstraction.tables import AbstractGame, Abstraction
from protocol.gamedef import load_game
from protocol.isomorphism import HandIndexer, all_combinations
from training.abstraction.build import build_abstraction, round_features
from training.abstraction.solver import run_batch


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()} {model}, {os.cpu_count()} logical cores, Python {platform.python_version()}"


def bench_indexer() -> None:
    indexer = HandIndexer((2, 5))
    rng = np.random.default_rng(0)
    cards = np.array([rng.choice(52, 7, replace=False) for _ in range(200_000)])
    indexer.index_batch(cards)  # compile
    t = time.perf_counter()
    indexer.index_batch(cards)
    rate = len(cards) / (time.perf_counter() - t)
    print(f"river (2,5) indexer: {rate / 1e6:.2f} M hands/s (all cores)")


def verify_turn_indexer() -> None:
    """Index all 305,377,800 raw (hole, turn board) deals: every class is hit, none beyond."""
    indexer = HandIndexer((2, 4))
    seen = np.zeros(indexer.size, dtype=bool)
    cards = np.arange(52)
    t = time.perf_counter()
    raw = 0
    for hole in all_combinations(cards, 2):
        rest = np.setdiff1d(cards, hole)
        boards = all_combinations(rest, 4)
        rows = np.concatenate([np.broadcast_to(hole, (len(boards), 2)), boards], axis=1)
        seen[indexer.index_batch(rows)] = True
        raw += len(rows)
    print(f"turn indexer: {raw:,} raw deals -> {int(seen.sum()):,} of {indexer.size:,} classes hit "
          f"({'dense' if seen.all() else 'NOT DENSE'}), {time.perf_counter() - t:.0f} s")  # fmt: skip


def bench_features() -> None:
    t = time.perf_counter()
    build_abstraction(SPECS["fhp_abstraction_4e4"], force=True)
    print(f"fhp_abstraction_4e4 build (flop E[HS^2] for 1,286,792 classes + 690 buckets): {time.perf_counter() - t:.1f} s")


def bench_mccfr(name: str, iterations: int) -> None:
    spec = SPECS[name]
    if not (spec_dir(spec) / "meta.json").exists():
        print(f"{name}: not built, MCCFR figures skipped")
        return
    ag = AbstractGame.build(Abstraction.load(spec))
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    run_batch(ag, regrets, average, 0, 1, 1000, 1, 1)  # compile
    run_batch(ag, regrets, average, 0, 1, 1000, 1, 2)
    for threads in (1, os.cpu_count() or 1):
        t = time.perf_counter()
        touched = run_batch(ag, regrets, average, 0, 10_000, iterations, 2, threads)
        seconds = time.perf_counter() - t
        print(f"{name} ES Linear MCCFR, {threads} thread(s): {iterations / seconds:,.0f} iterations/s, "
              f"{touched / seconds / 1e6:.2f} M nodes/s ({touched / iterations:.0f} nodes per iteration)")  # fmt: skip


def bench_kmeans() -> None:
    """Rates of the k-means assignment kernels (the ``L2_TERMS_PER_SECOND`` and
    ``EMD_DISTANCES_PER_SECOND`` of ``bot/abstraction/cost.py``): squared L2 on OCHS-8 and on
    50-bin CDFs, and greedy EMD on synthetic flop-like potential-aware histograms (47 next cards
    spread around a random position over 518 next-round buckets with 1-D ground distances)."""
    from training.abstraction.kmeans import _l2_assign
    from training.abstraction.potential import _emd_assign, ground_distances

    rng = np.random.default_rng(0)
    for dim in (8, 50):
        points = rng.random((100_000, dim), dtype=np.float32)
        centres = rng.random((518, dim), dtype=np.float32)
        _l2_assign(points[:10], centres)  # compile
        t = time.perf_counter()
        _l2_assign(points, centres)
        rate = len(points) * len(centres) * dim / (time.perf_counter() - t)
        print(f"k-means L2 assignment, {dim} dims, 518 centres: {rate / 1e9:.2f} G point-centre terms/s")
    k, cards = 518, 47
    embed = np.sort(rng.random(k))[:, None]
    ground, nearest = ground_distances(embed, 1)
    centre_of = np.clip((rng.random(5_000) * k).astype(int)[:, None] + rng.normal(0, 30, (5_000, cards)).astype(int), 0, k - 1)
    points = np.zeros((5_000, cards, 2), np.float32)
    for i, row in enumerate(centre_of):
        ids, counts = np.unique(row, return_counts=True)
        points[i, : len(ids), 0], points[i, : len(ids), 1] = ids, counts / cards
    centres = np.zeros((k, k), np.float32)
    for c in range(k):
        np.add.at(centres[c], centre_of[rng.integers(0, 5_000, 50)].ravel(), 1.0 / (50 * cards))
    _emd_assign(points[:5], centres, nearest, ground, embed, 1)  # compile
    t = time.perf_counter()
    _emd_assign(points, centres, nearest, ground, embed, 1)
    rate = len(points) * k / (time.perf_counter() - t)
    print(f"greedy EMD assignment, synthetic worst case (47-card histograms, 518 buckets, 1-D ground): {rate / 1e6:.2f} M point-centre pairs/s")
    bench_emd_real()


def bench_emd_real() -> None:
    """Pruned greedy EMD on the real flop histograms of ``abstraction_3e6_pa`` (if built)."""
    try:
        emd_rate("abstraction_3e6_pa", 1)
    except FileNotFoundError as missing:
        print(f"real-data EMD rate skipped: {missing}")


def emd_rate(name: str, round_index: int, points: int = 2_000, centres: int = 518) -> None:
    """Greedy EMD assignment rate of a ``pa`` round: ``points`` real histograms against
    ``centres`` others (raises FileNotFoundError until the build has written them)."""
    from bot.abstraction.spec import bucket_path
    from training.abstraction.build import _next_round_ground
    from training.abstraction.potential import emd_metric

    spec = SPECS[name]
    hist_path = spec_dir(spec) / f"pa_hist_r{round_index}.npy"
    if not hist_path.exists() or not bucket_path(spec, round_index + 1).exists():
        raise FileNotFoundError(f"{hist_path} or the round {round_index + 1} table is missing: start the build of {name} first")
    metric = emd_metric(*_next_round_ground(spec, spec.load_game(), round_index + 1))
    hist = np.load(hist_path, mmap_mode="r")
    rows = np.sort(np.random.default_rng(0).choice(hist.shape[0], points + centres, replace=False))
    sample = metric.prepare(hist[rows])
    fixed = np.stack([metric.as_centre(p, metric.centre_dim) for p in sample[:centres]])
    metric.assign(sample[:5], fixed)  # compile
    t = time.perf_counter()
    metric.assign(sample[centres:], fixed)
    seconds = time.perf_counter() - t
    print(f"{name} round {round_index}: greedy EMD assignment on real histograms ({hist.shape[1]} next cards, "
          f"{metric.centre_dim} next-round buckets): {points * centres / seconds / 1e6:.2f} M point-centre pairs/s "
          f"({points / seconds:,.0f} classes/s)")  # fmt: skip


def table_sizes() -> None:
    print(f"{'abstraction':<24}{'buckets':<28}{'infosets':>14}{'tables (RAM)':>14}  estimate")
    for spec in SPECS.values():
        e = estimate(spec)  # from scratch
        print(f"{spec.name:<24}{str(spec.buckets):<28}{e.infosets:>14,}{e.table_bytes / 1e6:>11.1f} MB  {e.summary()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hulh-build", action="store_true", help="time the full abstraction_3e6 build")
    parser.add_argument("--verify-turn", action="store_true", help="index every raw turn deal (minutes)")
    parser.add_argument("--iterations", type=int, default=100_000, help="MCCFR iterations per timing")
    parser.add_argument("--kmeans", action="store_true", help="only the k-means kernel rates (seconds)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.kmeans:
        bench_kmeans()
        return
    bench_indexer()
    if args.verify_turn:
        verify_turn_indexer()
    if args.hulh_build:
        holdem = load_game("holdem")
        for r in (1, 2, 3):
            t = time.perf_counter()
            round_features(holdem, r)
            print(f"HULH round {r} features: {time.perf_counter() - t:.0f} s (0 s when already cached)")
        t = time.perf_counter()
        build_abstraction(SPECS["abstraction_3e6"])
        print(f"abstraction_3e6 buckets: {time.perf_counter() - t:.0f} s")
    else:
        bench_features()
    bench_mccfr("fhp_abstraction_4e4", args.iterations)
    bench_mccfr("abstraction_3e6", args.iterations)
    table_sizes()


if __name__ == "__main__":
    main()
