"""How many distinct buckets an abstraction gives the live hands of one board, per round.

Why: in a public-card game a decision is taken on a known board, so what an imperfect-recall
abstraction can tell apart *within* a board bounds how well its policy can play there; a
bucket budget spent on telling boards apart (their texture) buys nothing at a decision. This
prints, for each agent (a name or a run directory of an abstraction solve), the mean number of
distinct flop, turn and river buckets among a board's 1,081 live hole-card pairs over
``--boards`` seeded random boards (the same boards for every agent):

    python benchmarks/bench_buckets_per_board.py default runs/abstraction_3e6 runs/abstraction_3e7
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_abstraction import machine  # noqa: E402
from bot.abstraction.agent import RowPolicyAgent  # noqa: E402
from bot.registry import resolve_agent  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402

ROUNDS = (1, 2, 3)  # flop, turn, river


def distinct_per_board(spec: str, boards: list[tuple[int, ...]]) -> dict[int, float]:
    """Mean distinct buckets among each board's live hands, per post-flop round, for ``spec``."""
    game = load_game("holdem")
    agent = resolve_agent(spec, game)
    if not isinstance(agent, RowPolicyAgent):
        raise SystemExit(f"{spec}: not a card-abstraction agent (it has no buckets)")
    hands = np.array(list(itertools.combinations(range(52), 2)), dtype=np.int64)
    counts: dict[int, list[int]] = {r: [] for r in ROUNDS}
    for board in boards:
        live = hands[~np.isin(hands, board).any(axis=1)]
        for round_index in ROUNDS:
            visible = board[: game.board_cards_through(round_index)]
            counts[round_index].append(len(np.unique(agent.buckets(round_index, live, visible))))
    return {r: float(np.mean(v)) for r, v in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="+", help="abstraction agents: names or run directories")
    parser.add_argument("--boards", type=int, default=20, help="random boards (five cards each)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    boards = [tuple(int(c) for c in rng.choice(52, 5, replace=False)) for _ in range(args.boards)]
    print(machine())
    print(f"\nmean distinct buckets among a board's 1,081 live hands ({args.boards} boards, seed {args.seed})\n")
    print("| agent | flop | turn | river |")
    print("|---|---|---|---|")
    for spec in args.agents:
        mean = distinct_per_board(spec, boards)
        print(f"| {spec} | {mean[1]:.0f} | {mean[2]:.0f} | {mean[3]:.0f} |")


if __name__ == "__main__":
    main()
