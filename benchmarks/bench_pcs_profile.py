"""Where the CPU time of one PCS iteration goes, kernel part by kernel part (one thread).

For ``--abstractions`` (default abstraction_3e6 and fhp_abstraction_3.6e6) on ``--boards``
sampled boards, times the whole iteration (:func:`training.abstraction.pcs.walk_boards`, both
players' passes) and, separately on the last prepared board, its parts: the showdown
strengths (one vectorised evaluator call per batch of boards), the board preparation
(:func:`~training.abstraction.pcs_kernel.prepare_board` and
:func:`~training.abstraction.pcs_kernel.local_buckets`), and the last-round subtrees
(:func:`~training.abstraction.pcs_last_round.last_round` on every last-round root with random
reach rows: the whole call, and its sweep over the hands alone). The rest is the depth-first
walk of the earlier rounds (reach down, values up, folds, per-bucket sums). Prints CPU
milliseconds per iteration; quote the load average next to them.

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
from training.abstraction.pcs import PCSGame, sample_boards, showdown_strengths, walk_boards
from training.abstraction.pcs_kernel import local_buckets, prepare_board
from training.abstraction.pcs_last_round import _sweep, last_round, last_round_work


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
    return v, live_cards, local, ids, counts, strength


@njit(cache=True)
def _last_rounds(repeats, sweep_only, roots, v, cards, local, ids, nb, strength, tree, lanes, nodes, regrets, average,
                 reach):  # fmt: skip  # pragma: no cover - numba
    """Every last-round subtree of one pass (player 0) on the prepared board, ``repeats`` times;
    with ``sweep_only`` the hand sweep alone (on the lanes the first call set up)."""
    kind, actor, rnd, child, legal, folder, spent, parent, parent_action, end, last, row_offset, stride = tree
    work = last_round_work(nodes, lanes, cards.shape[0])
    out = np.zeros(v)
    check = 0.0
    if sweep_only:  # the lanes of a real subtree
        last_round(0, roots[0], end[roots[0]], v, cards, local, ids, nb, strength, kind, actor, child, legal, folder,
                   spent, parent, parent_action, row_offset, stride, regrets, regrets, average, 1e-3, 1e-3, False, reach, reach,
                   out, work)  # fmt: skip
    for _ in range(repeats):
        for root in roots:
            if sweep_only:
                _sweep(v, cards, local, strength, reach, work[7], work[8], work[9], work[10], work[11], work[12],
                       work[13], nb, out)  # fmt: skip
            else:
                last_round(0, root, end[root], v, cards, local, ids, nb, strength, kind, actor, child, legal, folder,
                           spent, parent, parent_action, row_offset, stride, regrets, regrets, average, 1e-3, 1e-3, False,
                           reach, reach, out, work)  # fmt: skip
            check += out[0]
    return check


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
    v, cards, local, ids, counts, strength = _prepare(boards, strengths, pg.hands, pg.preflop_bucket, *pg.card_args)
    last = int(tree.round.max())
    roots = np.array([n for n in tree.decision_ids if tree.round[n] == last and (n == 0 or tree.round[tree.parent[n]] != last)])
    args = (roots, v, cards, local[last], ids[last], counts[last], strength, pg.tree_args, pg.lanes, pg.last_round_nodes,
            regrets, average, rng.random(v))  # fmt: skip
    repeats = max(1, boards_count // 4)
    subtrees_ms = cpu_ms(lambda k: _last_rounds(k, False, *args), repeats)
    sweeps_ms = cpu_ms(lambda k: _last_rounds(k, True, *args), repeats)
    print(f"{name}: {v} live hands, distinct buckets per round on the last board {counts.tolist()}, "
          f"{len(np.unique(strength[:v]))} distinct showdown strengths")
    print(f"  one iteration (2 passes)                   {total:9.3f} CPU ms")
    print(f"  showdown strengths                         {strengths_ms:9.3f}")
    print(f"  prepare_board + local_buckets              {prepare_ms:9.3f}")
    print(f"  {len(roots):4} last-round subtrees x 2 passes       {2 * subtrees_ms:9.3f}")
    print(f"    of which the sweeps over the hands       {2 * sweeps_ms:9.3f}")
    print(f"    bucket level: strategies, regrets, average {2 * (subtrees_ms - sweeps_ms):7.3f}")
    print(f"  rest: the earlier rounds' walk             {total - strengths_ms - prepare_ms - 2 * subtrees_ms:9.3f}")


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
