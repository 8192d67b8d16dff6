"""CPU cost of exact full-board targets on HULH (training/deep_cfr/runout_targets.py).

Prints, per board, the CPU seconds of both seats' network grids (every decision node x every
live hand), of the range pass over the whole betting tree, and of thinning the rows into the
memories, with networks of the ``holdem`` preset's shape (width 64, suit-canonical inputs,
random weights: the cost does not depend on them).

    python benchmarks/bench_hulh_runout_targets.py --boards 4 --batch 2 --threads 2
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from protocol.gamedef import load_game
from training.deep_cfr.board_targets import RowSink
from training.deep_cfr.runout_targets import RunoutTargets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=4)
    parser.add_argument("--batch", type=int, default=2, help="boards per parallel pass")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--rows-per-board", type=int, default=8000)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    game = load_game("holdem")
    encoder = InfosetEncoder(game)
    torch.manual_seed(0)
    nets = tuple(DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, args.width, True).eval() for _ in range(2))
    sampler = RunoutTargets(game, encoder, args.rows_per_board, argmax_fallback=True)
    rng = np.random.default_rng(0)
    sampler.tables(nets, 0, sampler.draw(rng, 1))  # compile the kernels off the clock
    clocks = {"grids + pass": 0.0, "thinning": 0.0}
    wall = time.perf_counter()
    rows = 0
    for _ in range(0, args.boards, args.batch):
        start = time.process_time()
        tables = sampler.tables(nets, 0, sampler.draw(rng, args.batch))
        clocks["grids + pass"] += time.process_time() - start
        start = time.process_time()
        advantage, strategy = RowSink(encoder), RowSink(encoder)
        for k in range(args.batch):
            sampler.keep(tables, k, 0, rng, advantage, strategy)
        rows += len(advantage.rows()["node"])
        clocks["thinning"] += time.process_time() - start
    wall = time.perf_counter() - wall
    boards = (args.boards + args.batch - 1) // args.batch * args.batch
    for name, seconds in clocks.items():
        print(f"{name}: {seconds / boards:.2f} CPU-s per board")
    print(f"wall: {wall / boards:.2f} s per board on {args.threads} threads; advantage rows kept per board: {rows / boards:.0f}")


if __name__ == "__main__":
    main()
