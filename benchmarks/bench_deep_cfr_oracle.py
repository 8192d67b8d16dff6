"""Deep CFR's sampling floor on Leduc: the same batched external-sampling traversals and linear
CFR weighting, but the value "network" is an exact table of the summed sampled regrets (a perfect
function approximator). Its exploitability after T iterations of K traversals is what Deep CFR /
SD-CFR could reach with perfectly trained networks, so it separates sampling noise from network
error in ``bench_deep_cfr_leduc.py``'s curve.

    python benchmarks/bench_deep_cfr_oracle.py [--traversals 1000 10000] [--iterations 80] [--simultaneous]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from bot.agents.deep_cfr import InfosetBatch, StackAverage  # noqa: E402
from bot.agents.encoding import InfosetEncoder  # noqa: E402
from bot.evaluation.best_response import exploitability  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402
from training.deep_cfr.traversal import deal_batch, traverse  # noqa: E402


class RegretTable:
    """Linear-CFR-weighted sums of sampled regrets per (player, node, hole card, board card)."""

    def __init__(self, encoder: InfosetEncoder) -> None:
        self.encoder = encoder
        self.sums = np.zeros((2, encoder.tree.num_nodes, 52, 53, 3))

    def _keys(self, nodes: np.ndarray, cards: np.ndarray) -> tuple:
        return nodes.astype(np.int64), cards[:, 0].astype(np.int64), cards[:, 1].astype(np.int64) + 1

    def add(self, player: int, rows: dict[str, np.ndarray], weight: float) -> None:
        np.add.at(self.sums[player], self._keys(rows["node"], rows["cards"]), weight * rows["target"])

    def strategy(self, player: int, nodes: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """Regret matching, highest-regret legal action when none is positive (as Deep CFR)."""
        regrets, legal = self.sums[player][self._keys(nodes, cards)], self.encoder.legal[nodes]
        positive = np.where(legal, np.maximum(regrets, 0.0), 0.0)
        total = positive.sum(axis=1, keepdims=True)
        best = np.eye(3)[np.where(legal, regrets, -np.inf).argmax(axis=1)]
        return np.where(total > 0, positive / np.where(total > 0, total, 1.0), best)


def run(traversals: int, iterations: int, marks: tuple[int, ...], simultaneous: bool = False) -> list[tuple[int, float, float]]:
    """Alternating updates as the paper (player 1 traverses against player 0's iteration-t
    regrets), or ``simultaneous``: both traverse against iteration t-1 (vanilla CFR's order,
    which lets the two players' networks train in parallel)."""
    game = load_game("leduc")
    encoder, batch = InfosetEncoder(game), InfosetBatch(game)
    table, average = RegretTable(encoder), StackAverage(game)
    average.add(batch.strategy(None), 1.0)
    rng = np.random.default_rng(0)
    nodes, cards = batch.space.node, batch.cards.numpy()
    out, start = [], time.perf_counter()
    for t in range(1, iterations + 1):
        pending = []
        for player in (0, 1):
            result = traverse(encoder, deal_batch(encoder, traversals, rng), player, table.strategy, rng)
            pending.append((player, result.advantage))
            if not simultaneous:
                table.add(*pending.pop(), float(t))
        for player, rows in pending:
            table.add(player, rows, float(t))
        strategy = np.zeros((len(nodes), 3))
        for player in (0, 1):
            rows = batch.player == player
            strategy[rows] = table.strategy(player, nodes[rows], cards[rows])
        average.add(strategy, float(t + 1))
        if t in marks:
            report = exploitability(game, average.strategy())
            out.append((t, report.mbb(report.exploitability), time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traversals", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--iterations", type=int, default=80)
    parser.add_argument("--simultaneous", action="store_true", help="both players traverse against iteration t-1")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    marks = (10, 20, 40, 80, 160, 320, 480, 640, 800)
    print("K traversals/iteration | iteration | SD-CFR-style average exploitability (mbb/g) | seconds")
    for k in args.traversals:
        for t, mbb, seconds in run(k, args.iterations, marks, args.simultaneous):
            print(f"{k:22,d} | {t:9d} | {mbb:10.1f} | {seconds:7.1f}")


if __name__ == "__main__":
    main()
