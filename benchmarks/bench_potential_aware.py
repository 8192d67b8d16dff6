"""Pruned greedy-EMD rate of a potential-aware round on its real next-round histograms, the
figure behind ``EMD_DISTANCES_PER_SECOND`` (``bot/abstraction/cost.py``) for each ``pa`` round:

    NUMBA_NUM_THREADS=1 python benchmarks/bench_potential_aware.py abstraction_3e6_pa 1     # flop
    NUMBA_NUM_THREADS=1 python benchmarks/bench_potential_aware.py abstraction_3e6_pa2 2    # turn
    NUMBA_NUM_THREADS=1 python benchmarks/bench_potential_aware.py --lift   # 518^2 lifted distances

It needs the round's histograms (``<name>/pa_hist_r<round>.npy``, written early in the build)
and the next round's bucket table; 2,000 sampled classes are assigned to 518 centres that are
other sampled classes' histograms (point-like centres: fitted ones are more spread and about
half as fast), with the same ground distance the build uses.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_abstraction import emd_rate, machine  # noqa: E402
from bot.abstraction.spec import SPECS  # noqa: E402
from training.abstraction.potential import lift  # noqa: E402


def lift_seconds(k: int = 518) -> None:
    """Time of :func:`lift` on ``k`` dense random mean histograms (a ``pa`` round's centres as
    the round before sees them) over ``k`` next-round buckets with 1-D ground distances."""
    rng = np.random.default_rng(0)
    centres, centroids = rng.dirichlet(np.full(k, 0.05), size=k), np.sort(rng.random(k))[:, None]
    lift(centres[:3], centroids, 1)  # compile
    t = time.perf_counter()
    lift(centres, centroids, 1)
    print(machine())
    print(f"lift: {k}x{k} greedy EMDs between dense mean histograms in {time.perf_counter() - t:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", choices=[n for n, s in SPECS.items() if "pa" in s.round_methods])
    parser.add_argument("round", nargs="?", type=int)
    parser.add_argument("--lift", action="store_true", help="time the lifted ground distances instead")
    args = parser.parse_args()
    if args.lift:
        lift_seconds()
    elif args.name is None or args.round is None:
        parser.error("give an abstraction name and a potential-aware round, or --lift")
    else:
        print(machine())
        try:
            emd_rate(args.name, args.round)
        except FileNotFoundError as missing:
            raise SystemExit(str(missing)) from None


if __name__ == "__main__":
    main()
