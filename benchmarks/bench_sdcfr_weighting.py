"""How much the weighting of an SD-CFR average matters, exactly, on a small game's run.

    pokerbot train --game leduc --algo sd-cfr --time-budget 2m --seed 0 --out runs/leduc
    python benchmarks/bench_sdcfr_weighting.py --run runs/leduc --exponents 1,1.5,2,3 --every 20

The SD-CFR average (Steinberger 2019) weights the policy of iteration t by ``t`` (linear CFR);
any weighting of the same iterates is an average strategy of the same run, and DCFR's is
``t^2`` (Brown & Sandholm 2019). This reads a finished Kuhn or Leduc run's stack once (each
entry's exact strategy at every infoset), keeps one exact average per exponent, and prints the
exploitability (NashConv/2, mbb/g) of each every ``--every`` iterations: the same networks, so
the columns differ only by the weights. FHP runs are measured by ``pokerbot exploit RUN --follow
--average-exponent E`` instead (``bench_fhp_sdcfr_long.py`` prints those columns).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from bot.agents.bundle import stack_root  # noqa: E402
from bot.agents.deep_cfr import DeepCFRBundle, InfosetBatch, StackAverage  # noqa: E402
from bot.agents.stack_weights import MAX_AVERAGE_EXPONENT  # noqa: E402
from bot.evaluation.best_response import exploitability  # noqa: E402


def exponents_of(text: str) -> list[float]:
    values = [float(part) for part in text.split(",") if part.strip()]
    if not values or any(not 0 <= v <= MAX_AVERAGE_EXPONENT for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated exponents from 0 to {MAX_AVERAGE_EXPONENT:g}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, type=Path, help="a Kuhn or Leduc sd-cfr (or deep-cfr) run")
    parser.add_argument("--exponents", type=exponents_of, default=[1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--every", type=int, default=20, help="iterations between measurements")
    args = parser.parse_args()
    root = stack_root(args.run)
    if root is None:
        parser.error(f"{args.run}: no policy bundle (a run directory of the SD-CFR family, or its policy/)")
    bundle = DeepCFRBundle.load(root)
    if bundle.kind != "sd-cfr":
        parser.error(f"{args.run}: a {bundle.kind} policy has no SD-CFR stack")
    game = bundle.game
    batch = InfosetBatch(game)
    averages = [StackAverage(game) for _ in args.exponents]
    print(f"machine: {machine()}")
    print(f"{args.run}: {game.name}, {len(bundle.stack) - 1} iterations; the stack's own weights raised to each exponent")
    print(f"{'iteration':>9s} " + " ".join(f"{'t^' + format(e, 'g'):>9s}" for e in args.exponents))
    last = len(bundle.stack) - 1
    for index, entry in enumerate(bundle.stack):
        nets = None if entry.get("uniform") else tuple(bundle.network(f) for f in entry["files"])
        strategy = batch.strategy(nets, argmax_fallback=bundle.argmax_fallback)
        for average, exponent in zip(averages, args.exponents, strict=True):
            average.add(strategy, float(entry["weight"]) ** exponent)
        if index and (index % args.every == 0 or index == last):
            figures = []
            for average in averages:
                report = exploitability(game, average.strategy())
                figures.append(report.mbb(report.exploitability))
            print(f"{index:9d} " + " ".join(f"{f:9.2f}" for f in figures), flush=True)


if __name__ == "__main__":
    main()
