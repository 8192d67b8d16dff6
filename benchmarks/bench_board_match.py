"""Benchmark of the board-sampled head to head (``pokerbot match --boards``) against a played
duplicate match with AIVAT, on hold'em between two abstraction policies of the 3e6 size.

Run from the repository root::

    python benchmarks/bench_board_match.py                                   # abstraction_3e6 vs default
    python benchmarks/bench_board_match.py --agent runs/a --opponent runs/b --boards 400 --hands 2000

Prints, for the board method: boards/s (wall), CPU-s per board (this process, every thread),
the per-board standard deviation and the 95% half-width after ``--boards`` boards; for the
played match (``--hands`` deals, each played twice with the seats swapped, AIVAT's pot x equity
correction averaged over each pair): hands per CPU-s and its half-width. Then the gain as a
measured figure: the CPU-seconds each method needs for the same interval (variance per
observation x CPU per observation), and the played hands that the board run's interval is
worth. The machine line and the load average are printed with the timings.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runnable as a plain script without `pip install -e .`

from benchmarks.bench_cfr_leduc import machine  # noqa: E402  (one machine line for every benchmark)
from bot.evaluation.aivat import aivat_values  # noqa: E402
from bot.evaluation.match import run_in_process  # noqa: E402
from bot.evaluation.match_report import HandSeries, duplicate_pairs  # noqa: E402
from bot.evaluation.statistics import estimate, pair_means, z_value  # noqa: E402
from bot.registry import resolve_agent  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402
from training.abstraction.board_match import BoardMatch, run  # noqa: E402


def cpu_timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="abstraction_3e6")
    parser.add_argument("--opponent", default="default")
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--hands", type=int, default=1000, help="deals of the played match (each played twice)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(machine())
    game = load_game("holdem")
    scale = 1000.0 / game.big_blind
    agents = (resolve_agent(args.agent, game), resolve_agent(args.opponent, game))
    match = BoardMatch(game, *agents)
    run(match, args.seed + 1, 2, 1, 2)  # warm-up: numba kernels (cached after the first run), bucket data
    print(f"board method, {args.agent} vs {args.opponent}, {args.threads} thread(s), {load()}")
    wall, cpu, (values, _) = cpu_timed(lambda: run(match, args.seed, args.boards, args.threads, 4 * args.threads))
    board = estimate(values.duplicate * scale)
    cpu_board = cpu / args.boards
    print(f"  {args.boards:,} boards: {args.boards / wall:.2f} boards/s wall, {cpu_board:.3f} CPU-s/board; "
          f"{board.mean:+.1f} mbb/g, sd {board.std:.1f} per board, 95% half-width {board.half_width:.2f} mbb/g")  # fmt: skip

    warm = run_in_process(game, agents, ("A", "B"), 4, args.seed + 1, duplicate=True)  # warm-up, as above
    aivat_values([(h.record, h.position) for h in warm.hands], agents, game)
    print(f"played duplicate match with AIVAT, {args.hands:,} deals x 2 seats, {load()}")
    wall, cpu, result = cpu_timed(lambda: run_in_process(game, agents, ("A", "B"), args.hands, args.seed, duplicate=True))
    records = [(h.record, h.position) for h in result.hands]
    a_wall, a_cpu, corrected = cpu_timed(lambda: aivat_values(records, agents, game))
    series = HandSeries(np.asarray(corrected) * scale, np.array([h.position for h in result.hands]),
                        np.array([h.deal for h in result.hands]), np.array([h.mirrored for h in result.hands]))  # fmt: skip
    first, second = duplicate_pairs(series)
    pairs = pair_means(series.chips[first], series.chips[second])
    played = estimate(pairs)
    cpu_pair = (cpu + a_cpu) / len(pairs)
    print(f"  {2 * len(pairs):,} hands: {2 * len(pairs) / (wall + a_wall):.1f} hands/s wall, {2 / cpu_pair:.1f} hands/CPU-s "
          f"(play + AIVAT); {played.mean:+.1f} mbb/g, sd {played.std:.1f} per pair, 95% half-width {played.half_width:.2f} mbb/g")  # fmt: skip

    z = z_value()
    for target in (5.0, 2.5):
        board_cpu = (z * board.std / target) ** 2 * cpu_board
        played_cpu = (z * played.std / target) ** 2 * cpu_pair
        print(f"  +-{target:g} mbb/g: board method {board_cpu / 60:,.1f} CPU-min ({math.ceil((z * board.std / target) ** 2):,} boards), "
              f"played + AIVAT {played_cpu / 3600:,.1f} CPU-h ({2 * math.ceil((z * played.std / target) ** 2):,} hands): "
              f"{played_cpu / board_cpu:,.0f}x less CPU")  # fmt: skip
    equivalent = 2 * (played.std / board.stderr) ** 2
    print(f"  the {args.boards:,} boards' interval is worth {equivalent:,.0f} played hands (AIVAT + duplicate), "
          f"{equivalent / (args.boards * cpu_board):,.0f} hands per board-method CPU-s vs {2 / cpu_pair:.1f} played")  # fmt: skip


if __name__ == "__main__":
    main()
