"""Potential-aware buckets on two rounds (turn over river, flop over those turn buckets), checked
on a small four-round hold'em-like game (2 suits x 6 ranks: 9TJQKA x hs, one hole card, board 0-2-1-1) whose
rounds can be enumerated by brute force."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from bot.abstraction.cost import estimate
from bot.abstraction.spec import SPECS, AbstractionSpec, bucket_path, resolve_size, spec_dir
from protocol.cards import cards_from_str
from protocol.gamedef import load_game
from protocol.isomorphism import round_indexer
from training.abstraction.build import build_abstraction
from training.abstraction.potential import (
    greedy_emd,
    ground_distances,
    lift,
    mean_histograms,
    next_round_histograms,
    unpack,
)

MINI = """GAMEDEF
limit
numPlayers = 2
numRounds = 4
blind = 2 1
raiseSize = 2 2 4 4
firstPlayer = 2 1 1 1
maxRaises = 2 2 2 2
numSuits = 2
numRanks = 6
numHoleCards = 1
numBoardCards = 0 2 1 1
END GAMEDEF
"""


@pytest.fixture
def mini(tmp_path):
    path = tmp_path / "mini.limit.2p.game"
    path.write_text(MINI)
    return str(path)


def test_turn_histogram_over_river_buckets_equals_a_brute_force_count(mini):
    """River table: 1 when the hole card pairs the board (the deck is 9TJQKA x hs). Hole Ah, turn
    board 9h Ts As leaves 8 river cards (9s Th Jh Js Qh Qs Kh Ks): the hole already pairs, so all
    8 land in bucket 1; hole Jh on the same board pairs only with Js: {0: 7, 1: 1}. Every turn class is also checked
    against a direct count over its river cards through the river indexer."""
    game = load_game(mini)
    river, turn = round_indexer(game, 3), round_indexer(game, 2)
    table = np.zeros(river.size, np.int64)
    for cards in itertools.combinations(game.deck, 5):
        for hole in cards:
            board = [c for c in cards if c != hole]
            table[river.index([hole, *board])] = any(c // 4 == hole // 4 for c in board)
    hist = next_round_histograms(game, 2, table)
    assert hist.shape == (turn.size, 8)

    def count(hole, board):
        buckets = [int(table[river.index([hole, *board, c])]) for c in game.deck if c != hole and c not in board]
        return {b: buckets.count(b) for b in set(buckets)}

    def row(hole, board):
        return {int(b): round(m * 8) for b, m in unpack(hist[[turn.index([hole, *board])]])[0] if m > 0}

    board = list(cards_from_str("9hTsAs"))
    assert row(*cards_from_str("Ah"), board) == {1: 8}
    assert row(*cards_from_str("Jh"), board) == {0: 7, 1: 1}
    for cards in itertools.combinations(game.deck, 4):
        for hole in cards:
            board = [x for x in cards if x != hole]
            assert row(hole, board) == count(hole, board)


def test_greedy_emd_and_lifted_ground_distance_by_hand():
    """Next-round buckets at 0, 1, 3 on a line. Two round-r buckets with mean histograms
    (1/2, 0, 1/2) and (0, 1, 0): moving half from 0 to 1 and half from 3 to 1 costs 1.5 both
    ways; their embeddings are the mean positions 1.5 and 1, at distance 0.5 <= 1.5."""
    centroids = np.array([[0.0], [1.0], [3.0]])
    ground, _ = ground_distances(centroids, 1)
    point = np.array([[0, 0.5], [2, 0.5]], np.float32)
    assert greedy_emd(point, np.array([0, 1, 0], np.float32), ground) == pytest.approx(1.5)
    embed, lifted = lift(np.array([[0.5, 0, 0.5], [0, 1, 0], [0.5, 0, 0.5]]), centroids, 1)
    assert embed[:, 0] == pytest.approx([1.5, 1.0, 1.5])
    assert lifted == pytest.approx(np.array([[0, 1.5, 0], [1.5, 0, 1.5], [0, 1.5, 0]]))
    # a further level: the lifted matrix as ground distance, one-hot centres reproduce it
    _, again = lift(np.eye(3), embed, 1, lifted)
    assert again == pytest.approx(lifted)


def test_mean_histograms_weight_classes_by_their_deals():
    packed = np.array([[0 << 8 | 1, 2 << 8 | 1], [1 << 8 | 2, 0]], np.uint32)  # {0: 1/2, 2: 1/2}, {1: 1}
    centres = mean_histograms(packed, np.array([0, 0]), np.array([1, 3]), 2, 3, chunk=1)
    assert centres[0] == pytest.approx([0.125, 0.75, 0.125]) and centres[1] == pytest.approx([0, 0, 0])


def test_two_level_potential_aware_build_has_exactly_k_buckets_per_round(mini):
    spec = AbstractionSpec("mini_pa2_test", mini, (None, 4, 5, 6), ("lossless", "pa", "pa", "ehs2"))
    build_abstraction(spec)
    game = load_game(mini)
    for r, k in ((1, 4), (2, 5), (3, 6)):
        table = np.load(bucket_path(spec, r))
        assert len(table) == round_indexer(game, r).size
        assert np.count_nonzero(np.bincount(table, minlength=k)) == k and table.max() == k - 1
    meta = json.loads((spec_dir(spec) / "meta.json").read_text())
    assert meta["non_empty_buckets"][1:] == [4, 5, 6] and meta["methods"] == ["lossless", "pa", "pa", "ehs2"]
    # the turn was clustered on its river-bucket histograms: hands with equal histograms share a bucket
    hist, turn = np.load(spec_dir(spec) / "pa_hist_r2.npy"), np.load(bucket_path(spec, 2))
    same = {}
    for h, b in zip(map(bytes, hist), turn, strict=True):
        assert same.setdefault(h, b) == b


def test_pa2_is_named_estimated_and_rejects_bad_recipes():
    spec = resolve_size("holdem", "3e6-pa2")
    assert spec is SPECS["abstraction_3e6_pa2"] and spec.round_methods == ("lossless", "pa", "pa", "ehs2")
    # a greedy-EMD turn (13.96M classes) instead of _pa's L2 one: about 2 h more on one core
    extra = estimate(spec).cluster_seconds - estimate(SPECS["abstraction_3e6_pa"]).cluster_seconds
    assert 3600 < extra < 3 * 3600
    with pytest.raises(ValueError, match="pa cannot bucket round 3"):
        AbstractionSpec("bad", "holdem", (None, 5, 5, 5), ("lossless", "pa", "pa", "pa"))


def test_pruned_assignment_over_lifted_ground_finds_the_nearest_centre(mini):
    """The flop's EMD over potential-aware turn buckets prunes with the embedding bound; the
    labels must equal an exhaustive search over every centre."""
    from training.abstraction.build import _next_round_ground, _pa_histograms
    from training.abstraction.potential import emd_metric

    spec = AbstractionSpec("mini_pa2_test", mini, (None, 4, 5, 6), ("lossless", "pa", "pa", "ehs2"))
    build_abstraction(spec)
    game = load_game(mini)
    embed, norm, ground = _next_round_ground(spec, game, 2)
    assert ground is not None and ground.shape == (5, 5)
    assert np.all(ground + 1e-5 >= np.abs(embed[:, None, 0] - embed[None, :, 0]))  # the bound holds
    points = unpack(_pa_histograms(spec, game, 1, None))
    metric = emd_metric(embed, norm, ground)
    rng = np.random.default_rng(0)
    centres = np.stack([metric.as_centre(points[i], 5) for i in rng.choice(len(points), 4, replace=False)])
    centres = 0.5 * centres + 0.5 * rng.dirichlet(np.ones(5), size=4).astype(np.float32)
    labels, dist = metric.assign(points, centres)
    exhaustive = np.array([[greedy_emd(p, c, ground) for c in centres] for p in points])
    assert dist == pytest.approx(exhaustive.min(axis=1), abs=1e-5)
    assert np.all(exhaustive[np.arange(len(points)), labels] <= exhaustive.min(axis=1) + 1e-5)


def test_two_level_potential_aware_abstraction_solves_below_uniform(tmp_path):
    """Built and solved like a named size (``solve`` builds first): the mapped average strategy
    is far less exploitable in the real game than uniform play. The mini game with 4 ranks
    instead of 6 keeps its exact best response to ~2 s (6 ranks: ~40 s)."""
    from bot.abstraction.policy import full_game_strategy
    from bot.agents.infosets import space_for
    from bot.evaluation.best_response import exploitability
    from protocol.gamedef import load_game
    from tests.training.abstraction.test_abstraction import solve

    path = tmp_path / "mini4.limit.2p.game"
    path.write_text(MINI.replace("numRanks = 6", "numRanks = 4"))
    spec = AbstractionSpec("mini4_pa2_test", str(path), (None, 4, 5, 6), ("lossless", "pa", "pa", "ehs2"))
    ag, _, average = solve(spec, 20_000)
    game = load_game(str(path))
    uniform = exploitability(game, space_for(game).uniform_strategy())
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert 0 < report.mbb(report.exploitability) < uniform.mbb(uniform.exploitability) / 2  # 819.5 vs 2552.8
