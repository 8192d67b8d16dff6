"""Public Chance Sampling over card abstractions (training.abstraction.pcs).

The reference is written here, independent of the PCS kernels: full-width alternating CFR on
the imperfect-recall abstract game, board by board, with a ``[V, V]`` matrix of the updating
player's payoffs over every pair of live hands (card removal by an explicit disjointness mask,
showdowns by comparing the two hands' strengths), recursed over the betting tree. With every
board enumerated (weight 1), one PCS iteration must give the same regrets and averages.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bot.abstraction.policy import full_game_strategy
from bot.abstraction.spec import SPECS, AbstractionSpec
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.evaluation.best_response import exploitability
from protocol.betting_tree import DECISION, FOLD_END
from protocol.evaluator import hand_strength
from protocol.isomorphism import HandIndexer, round_indexer
from training.abstraction.build import build_abstraction
from training.abstraction.pcs import (
    PCSGame,
    batch_weights,
    discount,
    first_board_strata,
    run_iterations,
    sample_boards,
    walk_boards,
)
from training.abstraction.pcs_kernel import NUM_CARDS, _fold, local_buckets
from training.abstraction.pcs_last_round import LANE_BLOCK, _sweep, last_round_work


def all_boards(game) -> np.ndarray:
    """Every full board: each round's cards as a sorted set, rounds in dealing order."""
    boards = [()]
    for r in range(game.num_rounds):
        k = int(game.num_board_cards[r])
        boards = [b + c for b in boards for c in itertools.combinations([x for x in game.deck if x not in b], k)]
    return np.array(boards, dtype=np.int8).reshape(len(boards), game.total_board_cards)


def regret_matching(rows: np.ndarray, legal: np.ndarray) -> np.ndarray:
    positive = np.where(legal, np.maximum(rows, 0.0), 0.0)
    total = positive.sum(axis=1, keepdims=True)
    uniform = np.broadcast_to(legal / legal.sum(), positive.shape)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def reference_pass(ag: AbstractGame, regrets: np.ndarray, average: np.ndarray, player: int) -> np.ndarray:
    """Player ``player``'s regret increments of one full CFR iteration; adds own reach x sigma
    to ``average``."""
    delta = np.zeros_like(regrets, dtype=np.float64)
    for board in all_boards(ag.abstraction.game).tolist():
        reference_board(ag, board, regrets, average, delta, player)
    return delta


def reference_board(ag: AbstractGame, board: list[int], regrets: np.ndarray, average: np.ndarray, delta: np.ndarray,
                    player: int) -> None:  # fmt: skip
    """One board's share of :func:`reference_pass`, by pairs of live hands."""
    game, tree = ag.abstraction.game, ag.tree
    other = 1 - player
    live = [h for h in itertools.combinations(sorted(game.deck), game.num_hole_cards) if not set(h) & set(board)]
    disjoint = np.array([[not set(a) & set(b) for b in live] for a in live], dtype=np.float64)
    strength = np.array([hand_strength(list(h) + board) for h in live])
    buckets = [np.array([ag.abstraction.bucket(r, h, tuple(board[: game.board_cards_through(r)])) for h in live])
               for r in range(game.num_rounds)]  # fmt: skip

    def visit(n: int, own: np.ndarray, opp: np.ndarray) -> np.ndarray:
        """[V (player's hand), V (opponent's)]: the player's payoff of the subtree."""
        if tree.kind[n] == FOLD_END:
            won = -tree.spent[n, player] if tree.folder[n] == player else tree.spent[n, other]
            return won * disjoint
        if tree.kind[n] != DECISION:
            win = (strength[:, None] > strength[None, :]) * tree.spent[n, other]
            lose = (strength[:, None] < strength[None, :]) * tree.spent[n, player]
            return (win - lose) * disjoint
        row = ag.row_offset[n] + buckets[int(tree.round[n])]
        sigma = regret_matching(regrets[row].astype(np.float64), tree.legal[n])
        actions = np.flatnonzero(tree.legal[n])
        if tree.actor[n] == player:
            children = {a: visit(tree.child[n, a], own * sigma[:, a], opp) for a in actions}
            cfv = {a: children[a] @ opp for a in actions}
            expected = sum(sigma[:, a] * cfv[a] for a in actions)
            for a in actions:
                np.add.at(delta[:, a], row, cfv[a] - expected)
                np.add.at(average[:, a], row, own * sigma[:, a])
            return sum(sigma[:, a][:, None] * children[a] for a in actions)
        return sum(sigma[:, a][None, :] * visit(tree.child[n, a], own, opp * sigma[:, a]) for a in actions)

    visit(0, np.ones(len(live)), np.ones(len(live)))


def random_abstraction(game, buckets: tuple[int | None, ...], seed: int) -> AbstractGame:
    """An in-memory abstraction merging suit classes into buckets at random (imperfect recall,
    no monotone structure to hide a wrong row)."""
    rng = np.random.default_rng(seed)
    indexers = tuple(round_indexer(game, r) for r in range(game.num_rounds))
    tables = tuple(None if b is None else rng.integers(0, b, ix.size).astype(np.uint16)
                   for ix, b in zip(indexers, buckets, strict=True))  # fmt: skip
    sizes = tuple(ix.size if b is None else b for ix, b in zip(indexers, buckets, strict=True))
    spec = AbstractionSpec("random_test", game.name, buckets)
    return AbstractGame.build(Abstraction(spec, game, indexers, tables, sizes))


def named(name: str) -> AbstractGame:
    build_abstraction(SPECS[name])
    return AbstractGame.build(Abstraction.load(SPECS[name]))


def tiny_fhp() -> AbstractGame:
    from tests.training.flop.test_flop_solver import TINY_FHP

    return random_abstraction(TINY_FHP, (3, 7), seed=1)


@pytest.mark.parametrize(("make", "iterations"), [(lambda: named("leduc_lossless"), 2), (lambda: named("leduc_merged"), 2),
                                                (tiny_fhp, 1)], ids=["leduc_lossless", "leduc_merged", "tiny_fhp"])  # fmt: skip
def test_enumerated_pcs_iteration_is_a_full_cfr_iteration(make, iterations):
    ag = make()
    pg = PCSGame.build(ag)
    boards = all_boards(ag.abstraction.game)
    rng = np.random.default_rng(0)
    start = (rng.normal(size=(ag.num_rows, 3)) * 5).astype(np.float32)  # mixed strategies everywhere
    regrets, average = start.copy(), np.zeros_like(start)
    ref_regrets, ref_average = start.astype(np.float64), np.zeros((ag.num_rows, 3))
    for _ in range(iterations):  # player 1's pass already reads player 0's updated regrets
        for player in (0, 1):
            delta = np.zeros_like(regrets)
            touched = walk_boards(pg, regrets, delta, average, boards, (player,), 1.0, 1.0, False, threads=1)
            regrets += delta
            ref_regrets += reference_pass(ag, ref_regrets, ref_average, player)
    scale = np.abs(ref_regrets).max()
    assert np.allclose(regrets, ref_regrets, rtol=1e-5, atol=1e-5 * scale)
    assert np.allclose(average, ref_average, rtol=1e-4, atol=1e-6 * np.abs(ref_average).max())  # float32 sums
    live = sum(len([h for h in itertools.combinations(ag.abstraction.game.deck, ag.abstraction.game.num_hole_cards)
                    if not set(h) & set(b)]) for b in boards.tolist())  # fmt: skip
    assert touched == live * len(ag.tree.decision_ids)  # every (decision node, live hand) once per pass


def solve(ag: AbstractGame, scheme: str, iterations: int, batch: int, seed: int = 0, threads: int = 1):
    pg = PCSGame.build(ag)
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    for k, first in enumerate(range(1, iterations + 1, batch), start=1):
        weights = batch_weights(scheme, k)
        discount(regrets, average, weights)
        run_iterations(pg, regrets, average, seed, first, min(batch, iterations + 1 - first), weights, threads)
    return regrets, average


def leduc_mbb(ag: AbstractGame, average: np.ndarray) -> float:
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    return report.mbb(report.exploitability)


@pytest.mark.parametrize("scheme", ["dcfr", "linear", "cfr+"])
def test_sampled_pcs_converges_on_leduc(scheme):
    ag = named("leduc_lossless")
    early = leduc_mbb(ag, solve(ag, scheme, 100, 20)[1])
    late = leduc_mbb(ag, solve(ag, scheme, 3000, 100)[1])
    assert late < early / 4 and late < 30.0  # uniform random play: 1186.8 mbb/g


def test_one_thread_is_reproducible_and_batches_split_freely():
    ag = named("leduc_merged")
    a = solve(ag, "dcfr", 600, 100, seed=3)
    b = solve(ag, "dcfr", 600, 100, seed=3)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[1], solve(ag, "dcfr", 600, 100, seed=4)[1])
    # the iterations of one batch in two calls: the same boards, the same tables
    pg = PCSGame.build(ag)
    regrets, average = np.zeros_like(a[0]), np.zeros_like(a[1])
    for k in range(1, 7):
        weights = batch_weights("dcfr", k)
        discount(regrets, average, weights)
        first = 1 + (k - 1) * 100
        run_iterations(pg, regrets, average, 3, first, 30, weights, 1)
        run_iterations(pg, regrets, average, 3, first + 30, 70, weights, 1)
    assert np.array_equal(regrets, a[0]) and np.array_equal(average, a[1])


def test_two_threads_update_the_shared_tables_and_converge():
    ag = named("leduc_lossless")
    _, average = solve(ag, "dcfr", 3000, 100, threads=2)
    assert leduc_mbb(ag, average) < 30.0


def test_kuhn_without_board_cards_reaches_the_game_value():
    """No public chance at all: every iteration is a full CFR iteration of Kuhn poker."""
    spec = AbstractionSpec("kuhn_test", "kuhn", (None,))
    build_abstraction(spec)
    ag = AbstractGame.build(Abstraction.load(spec))
    _, average = solve(ag, "dcfr", 2000, 10)
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert report.exploitability < 0.002 and report.game_value == pytest.approx(-1 / 18, abs=0.002)


def test_local_buckets_number_each_rounds_distinct_buckets_in_order():
    bucket = np.array([[7, 3, 7, 9, 3, 0], [5, 5, 5, 5, 5, 1]], dtype=np.int64)
    local, ids = np.full((2, 6), -1, dtype=np.int64), np.full((2, 6), -1, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    local_buckets(bucket, 5, local, ids, counts)  # the sixth hand is not live
    assert counts.tolist() == [3, 1]
    assert ids[0, :3].tolist() == [3, 7, 9] and local[0, :5].tolist() == [1, 0, 1, 2, 0]
    assert ids[1, :1].tolist() == [5] and local[1, :5].tolist() == [0, 0, 0, 0, 0]


def test_fold_sweep_matches_the_pairwise_sums():
    """A fold's value against the [V, V] sum it replaces, with shared cards."""
    rng = np.random.default_rng(2)
    board = [0, 13, 26]
    hands = [h for h in itertools.combinations(range(20), 2) if not set(h) & set(board)]
    cards = np.array(hands, dtype=np.int64)
    reach = rng.random(len(hands))
    disjoint = np.array([[not set(a) & set(b) for b in hands] for a in hands], dtype=np.float64)
    per_card, out = np.zeros(NUM_CARDS), np.zeros(len(hands))
    _fold(-3.0, reach, cards, len(hands), per_card, out)
    assert np.allclose(out, -3.0 * disjoint @ reach)


@pytest.mark.parametrize("hole", [1, 2])
def test_last_round_sweep_matches_the_pairwise_sums(hole):
    """The lane sweep against [V, V] sums per lane: W (disjoint and strictly weaker), E (at most
    as strong, the hand itself excluded), D (disjoint), with many ties and shared cards; each
    hand's value and each bucket's sums of (W, E, D)."""
    rng = np.random.default_rng(3)
    hands = [h for h in itertools.combinations(range(3, 23), hole)]
    v, nb, lanes = len(hands), 5, LANE_BLOCK
    cards = np.array(hands, dtype=np.int64)
    strength = np.sort(rng.integers(0, 12, v))  # many ties
    local = rng.integers(0, nb, v)
    reach = rng.random(v)
    opp_lane = rng.random((v, lanes)).astype(np.float32)
    weight = rng.normal(size=(3, v, lanes)).astype(np.float32)
    work = last_round_work(1, lanes, v)
    sums, weaker, at_most, per_card, total = work[9:14]
    out = np.zeros(v)
    _sweep(v, cards, local, strength, reach, opp_lane, weight, sums, weaker, at_most, per_card, total, nb, out)
    disjoint = np.array([[not set(a) & set(b) for b in hands] for a in hands], dtype=np.float64)
    opponent = reach[:, None] * opp_lane[local].astype(np.float64)  # [V, lanes]
    w = (disjoint * (strength[:, None] > strength[None, :])) @ opponent
    e = (disjoint * (strength[:, None] >= strength[None, :])) @ opponent
    d = disjoint @ opponent
    parts = np.stack([w, e, d])  # [3, V, lanes]
    value = (weight[:, local].astype(np.float64) * parts).sum(axis=(0, 2))
    assert np.allclose(out[:v], value, rtol=1e-4, atol=1e-4 * np.abs(value).max())
    expected = np.stack([np.stack([parts[k, local == b].sum(axis=0) for b in range(nb)]) for k in range(3)])
    assert np.allclose(sums[:, :nb], expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_stratified_flops_follow_the_class_sizes_each_epoch():
    from protocol.gamedef import load_game

    game = load_game("holdem")
    strata = first_board_strata(game)
    assert strata.shape == (5525, 3)  # 1,755 flop classes of 4, 12 or 24 flops (22,100 / 4)
    deck = np.array(game.deck, dtype=np.int8)
    boards = sample_boards(deck, 5, strata, 7, 1, 2 * len(strata) + 10)
    assert all(len(set(b)) == 5 for b in boards.tolist())
    flop_index = HandIndexer((3,))
    for epoch in (0, 1):  # each epoch draws every class exactly (class size / 4) times
        drawn = np.bincount(flop_index.index_batch(boards[epoch * 5525:(epoch + 1) * 5525, :3].astype(np.int64)),
                            minlength=flop_index.size)  # fmt: skip
        assert np.array_equal(drawn, np.bincount(flop_index.index_batch(strata.astype(np.int64)), minlength=flop_index.size))
    assert not np.array_equal(boards[:5525, :3], boards[5525:11050, :3])  # a new permutation per epoch
    split = np.concatenate([sample_boards(deck, 5, strata, 7, 1, 5520), sample_boards(deck, 5, strata, 7, 5521, 5535)])
    assert np.array_equal(split, boards[:11055])  # any split of the iterations draws the same boards
