"""Where the CPU time of one PCS iteration goes, kernel part by kernel part (one thread).

For ``--abstraction`` (default abstraction_3e6 and fhp_abstraction_3.6e6) on ``--boards``
sampled boards, times the whole iteration (:func:`training.abstraction.pcs.walk_boards`, both
players' passes) and, separately on the same prepared boards, its parts: the showdown
strengths (one vectorised evaluator call per batch of boards), the board preparation
(:func:`~training.abstraction.pcs_kernel.prepare_board` and
:func:`~training.abstraction.pcs_kernel.local_buckets`), the fold and showdown sweeps (one per
terminal of the tree: an upper bound, the walk reuses a fold's sums where a showdown shares its
reach row), and the regret matching and table writes (once per (node, bucket of the board)).
The rest of the pass is the per-hand vector work (reach down, values up, per-bucket sums).
Prints CPU milliseconds per iteration; quote the load average next to them.

    PYTHONPATH=. nice python benchmarks/bench_pcs_profile.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from numba import njit

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from protocol.betting_tree import DECISION, FOLD_END
from training.abstraction.pcs import PCSGame, sample_boards, showdown_strengths, walk_boards
from training.abstraction.pcs_kernel import (
    NUM_CARDS,
    _fold,
    _match,
    _showdown,
    local_buckets,
    prepare_board,
)


@njit(cache=True)
def _prepare(boards, strengths, hands, preflop_bucket, board_through, groups, binom, suit_size, class_keys, class_offsets,
             num_ranks, num_suits, tables, lossless):  # fmt: skip  # pragma: no cover - numba
    """Prepares every board; returns the last one's arrays (the parts below run on it)."""
    rounds, (num_hands, num_hole) = board_through.shape[0], hands.shape
    live_cards = np.empty((num_hands, num_hole), dtype=np.int64)
    bucket = np.empty((rounds, num_hands), dtype=np.int64)
    local = np.empty((rounds, num_hands), dtype=np.int64)
    ids = np.empty((rounds, num_hands), dtype=np.int64)
    counts = np.empty(rounds, dtype=np.int64)
    strength = np.empty(num_hands, dtype=np.int64)
    v = 0
    for i in range(boards.shape[0]):
        v = prepare_board(boards[i], hands, strengths[i], preflop_bucket, board_through, groups, binom, suit_size,
                          class_keys, class_offsets, num_ranks, num_suits, tables, lossless, live_cards, bucket, strength)  # fmt: skip
        local_buckets(bucket, v, local, ids, counts)
    return v, live_cards, ids, counts, strength


@njit(cache=True)
def _terminals(repeats, folds, showdowns, reach, cards, v, strength):  # pragma: no cover - numba
    per_card = np.zeros(NUM_CARDS)
    out = np.zeros(v)
    check = 0.0
    for _ in range(repeats):
        for _ in range(folds):
            _fold(1.0, reach, cards, v, per_card, out)
            check += out[0]
        for _ in range(showdowns):
            _showdown(1.0, 2.0, reach, cards, v, strength, per_card, out)
            check += out[0]
    return check


@njit(cache=True)
def _tables(repeats, kind, actor, rnd, legal, row_offset, ids, counts, regrets, average):  # pragma: no cover - numba
    """Regret matching at every decision node and one player's writes, per bucket of the board."""
    sigma = np.zeros((3, ids.shape[1]))
    for _ in range(repeats):
        for n in range(kind.shape[0]):
            if kind[n] != DECISION:
                continue
            r = rnd[n]
            for b in range(counts[r]):
                row = row_offset[n] + ids[r, b]
                _match(regrets, row, legal, n, sigma, b)
                if actor[n] == 0:
                    for x in range(3):
                        if legal[n, x]:
                            regrets[row, x] += np.float32(1e-3) * sigma[x, b]
                            average[row, x] += np.float32(1e-3) * sigma[x, b]


def cpu_ms(call, repeats: int) -> float:
    call(1)  # warm-up: compile or load from numba's cache
    start = time.process_time()
    call(repeats)
    return (time.process_time() - start) * 1000 / repeats


def profile(name: str, boards_count: int) -> None:
    ag = AbstractGame.build(Abstraction.load(SPECS[name]))
    pg, tree = PCSGame.build(ag), ag.tree
    deck = np.array(ag.abstraction.game.deck, dtype=np.int8)
    boards = sample_boards(deck, pg.board_cards, pg.strata, 0, 1, boards_count)
    rng = np.random.default_rng(0)
    regrets = rng.normal(size=(ag.num_rows, 3)).astype(np.float32)
    average = np.zeros_like(regrets)
    total = cpu_ms(lambda k: walk_boards(pg, regrets, regrets, average, boards, (0, 1), 1.0, 1.0, False, 1), 1) / boards_count
    strengths_ms = cpu_ms(lambda k: showdown_strengths(pg, boards), 1) / boards_count
    strengths = showdown_strengths(pg, boards)
    prepare_ms = cpu_ms(lambda k: _prepare(boards, strengths, pg.hands, pg.preflop_bucket, *pg.card_args), 1) / boards_count
    v, cards, ids, counts, strength = _prepare(boards, strengths, pg.hands, pg.preflop_bucket, *pg.card_args)
    folds, showdowns = int((tree.kind == FOLD_END).sum()), int(((tree.kind != DECISION) & (tree.kind != FOLD_END)).sum())
    reach = rng.random(v)
    repeats = max(1, boards_count // 4)
    fold_ms = cpu_ms(lambda k: _terminals(k, folds, 0, reach, cards, v, strength), repeats)
    showdown_ms = cpu_ms(lambda k: _terminals(k, 0, showdowns, reach, cards, v, strength), repeats)
    legal = tree.legal.astype(np.int64)
    tables_ms = cpu_ms(lambda k: _tables(k, tree.kind, tree.actor, tree.round.astype(np.int64), legal, ag.row_offset, ids, counts,
                                         regrets, average), repeats)  # fmt: skip
    passes = 2 * (fold_ms + showdown_ms + tables_ms)
    print(f"{name}: {v} live hands, distinct buckets per round on the last board {counts.tolist()}")
    print(f"  one iteration (2 passes)          {total:9.3f} CPU ms")
    print(f"  showdown strengths                {strengths_ms:9.3f}")
    print(f"  prepare_board + local_buckets     {prepare_ms:9.3f}")
    print(f"  {folds:5} fold sweeps x 2 passes       {2 * fold_ms:9.3f} (upper bound: the walk reuses some)")
    print(f"  {showdowns:5} showdown sweeps x 2 passes   {2 * showdown_ms:9.3f}")
    print(f"  regret matching + table writes    {2 * tables_ms:9.3f}")
    print(f"  rest: per-hand vector work        {total - strengths_ms - prepare_ms - passes:9.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abstractions", nargs="+", default=["abstraction_3e6", "fhp_abstraction_3.6e6"])
    parser.add_argument("--boards", type=int, default=0, help="boards per measurement (0: 8 on hold'em, 400 on FHP)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    for name in args.abstractions:
        profile(name, args.boards or (8 if SPECS[name].game == "holdem" else 400))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
