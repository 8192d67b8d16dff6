"""Card abstraction: features, buckets, the ES Linear MCCFR solver, the agent and the CLI."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.abstraction.policy import full_game_strategy
from bot.abstraction.spec import SPECS, AbstractionSpec, bucket_path, num_infosets
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.cli import main as pokerbot
from bot.evaluation.best_response import exploitability
from bot.flop.best_response import flop_exploitability, flop_game_for, uniform_policy
from bot.registry import AgentNotFound, resolve_agent
from protocol.evaluator import hand_strength
from protocol.gamedef import load_game
from protocol.isomorphism import round_indexer
from protocol.matchstate import MatchState
from training.abstraction.buckets import percentile_buckets
from training.abstraction.build import build_abstraction
from training.abstraction.features import RoundFeatures, compute_round_features
from training.abstraction.solver import run_batch


def brute_force_ehs(game, hole, board):
    """E[HS], E[HS^2] by enumerating every runout and every opponent hand."""
    rest = [c for c in game.deck if c not in hole and c not in board]
    s1 = s2 = n = 0.0
    for runout in itertools.combinations(rest, game.total_board_cards - len(board)):
        final = list(board) + list(runout)
        mine = hand_strength(list(hole) + final)
        wins = total = 0.0
        for opp in itertools.combinations([c for c in rest if c not in runout], game.num_hole_cards):
            theirs = hand_strength(list(opp) + final)
            wins += (theirs < mine) + 0.5 * (theirs == mine)
            total += 1
        s1, s2, n = s1 + wins / total, s2 + (wins / total) ** 2, n + 1
    return s1 / n, s2 / n


def features(game, r):
    size = round_indexer(game, r).size
    out = RoundFeatures(np.zeros(size, np.float32), np.zeros(size, np.float32), np.zeros(size, np.uint8))
    compute_round_features(game, r, out)
    return out


@pytest.mark.parametrize(("name", "r", "samples"), [("leduc", 0, 6), ("leduc", 1, 30), ("fhp", 1, 4)])
def test_features_equal_brute_force(name, r, samples):
    game = load_game(name)
    feats, indexer = features(game, r), round_indexer(game, r)
    rng = np.random.default_rng(0)
    k, v = game.num_hole_cards, game.board_cards_through(r)
    for _ in range(samples):
        cards = rng.choice(np.array(game.deck), k + v, replace=False)
        i = indexer.index(cards)
        ehs, ehs2 = brute_force_ehs(game, list(cards[:k]), list(cards[k:]))
        assert feats.ehs[i] == pytest.approx(ehs, abs=1e-6)
        assert feats.ehs2[i] == pytest.approx(ehs2, abs=1e-6)


def test_feature_weights_count_every_raw_deal():
    fhp = load_game("fhp")
    assert int(features(fhp, 1).weight.sum(dtype=np.int64)) == 1326 * 19600
    leduc = load_game("leduc")
    assert features(leduc, 1).weight.sum() == 6 * 5 and features(leduc, 0).weight.sum() == 6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=200), st.integers(1, 40), st.integers(0, 10))
def test_percentile_buckets_are_monotone_tie_consistent_and_use_every_bucket(values, b, seed):
    feature = np.array(values, dtype=np.float32)
    weight = np.random.default_rng(seed).integers(1, 25, len(values))
    buckets = percentile_buckets(feature, weight, b).astype(int)
    order = np.argsort(feature, kind="stable")
    assert (np.diff(buckets[order]) >= 0).all()  # monotone in the feature
    for value in np.unique(feature):  # equal features share a bucket
        assert len(set(buckets[feature == value])) == 1
    assert set(buckets.tolist()) == set(range(min(b, len(np.unique(feature)))))


def test_percentile_buckets_have_equal_mass_on_a_continuous_feature():
    rng = np.random.default_rng(3)
    feature, weight = rng.random(100_000), rng.integers(1, 25, 100_000)
    mass = np.bincount(percentile_buckets(feature, weight, 10), weights=weight)
    assert mass.min() / mass.max() > 0.99


def test_named_abstraction_sizes():
    assert num_infosets(SPECS["abstraction_3e6"]) == 8 * 169 + (70 + 630 + 5670) * 518
    assert num_infosets(SPECS["abstraction_3e8"]) == 8 * 169 + (70 + 630 + 5670) * 51800
    assert num_infosets(SPECS["fhp_abstraction_4e4"]) == 8 * 169 + 56 * 690
    assert num_infosets(SPECS["fhp_lossless"]) == 8 * 169 + 56 * 1_286_792


def solve(spec, iterations, seed=0, threads=1, batch=2000):
    build_abstraction(spec)
    ag = AbstractGame.build(Abstraction.load(spec))
    regrets = np.zeros((ag.num_rows, 3), np.float32)
    average = np.zeros_like(regrets)
    for k, first in enumerate(range(1, iterations + 1, batch), start=1):
        run_batch(ag, regrets, average, seed, first, min(batch, iterations + 1 - first), k, threads)
    return ag, regrets, average


def test_kuhn_lossless_solve_reaches_the_game_value():
    """Kuhn's value for the first player is -1/18; a lossless abstraction is the real game."""
    spec = AbstractionSpec("kuhn_test", "kuhn", (None,))
    ag, _, average = solve(spec, 200_000)
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert report.exploitability < 0.005  # chips per hand
    assert report.game_value == pytest.approx(-1 / 18, abs=0.005)


def test_leduc_lossless_is_near_unexploitable_and_merging_cards_costs():
    game = load_game("leduc")
    ag, _, average = solve(SPECS["leduc_lossless"], 400_000)
    lossless = exploitability(game, full_game_strategy(ag, average))
    ag_m, _, average_m = solve(SPECS["leduc_merged"], 400_000)
    merged = exploitability(game, full_game_strategy(ag_m, average_m))
    assert lossless.mbb(lossless.exploitability) < 20.0  # uniform random play: 1186.8
    assert merged.mbb(merged.exploitability) > 5 * lossless.mbb(lossless.exploitability)


def test_one_thread_solve_is_reproducible_and_seed_dependent():
    spec = SPECS["leduc_lossless"]
    a = solve(spec, 20_000, seed=5)[2]
    assert np.array_equal(a, solve(spec, 20_000, seed=5)[2])
    assert not np.array_equal(a, solve(spec, 20_000, seed=6)[2])


def test_two_threads_converge_too():
    ag, _, average = solve(SPECS["leduc_lossless"], 200_000, threads=2)
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert report.mbb(report.exploitability) < 40.0


def test_agent_plays_the_mapped_average_strategy(tmp_path):
    runner = CliRunner()
    result = runner.invoke(pokerbot, ["train", "--algo", "abstraction", "--game", "leduc", "--size", "lossless",
                                      "--iterations", "40000", "--threads", "1", "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 0, result.output
    game = load_game("leduc")
    agent = resolve_agent("leduc_lossless", game)
    ag = agent.abstract_game
    strategy = full_game_strategy(ag, np.load(tmp_path / "run" / "policy" / "average.npy"))
    from bot.agents.infosets import space_for

    space = space_for(game)
    for i in range(0, space.num_infosets, 37):
        node, hole = int(space.node[i]), tuple(int(c) for c in space.hands[space.hand[i]])
        board = tuple(int(c) for c in space.boards[int(ag.tree.round[node])][space.board[i]])
        position = int(space.player[i])
        holes = tuple(hole if p == position else () for p in range(2))
        view = MatchState(position, 0, ag.tree.history[node], holes, (board,) if board else ())
        probs = agent.action_probabilities(view)
        expected = {kind: strategy[i, j] for j, kind in enumerate("fcr") if space.legal[i, j]}
        assert probs == pytest.approx(expected)


def test_cli_resume_extends_a_run_and_errors_are_one_line(tmp_path):
    runner = CliRunner()
    out = str(tmp_path / "run")
    base = ["train", "--algo", "abstraction", "--threads", "1"]
    (tmp_path / "small.toml").write_text("batch = 2000\n")
    first = ["--game", "leduc", "--size", "lossless", "--iterations", "4000", "--config", str(tmp_path / "small.toml")]
    assert runner.invoke(pokerbot, base + first + ["--out", out]).exit_code == 0
    result = runner.invoke(pokerbot, base + ["--resume", out, "--iterations", "8000"])
    assert result.exit_code == 0, result.output
    import json

    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert max(r["iteration"] for r in lines) == 8000
    assert lines[-1]["final"] and lines[-1]["exploitability_mbb"] > 0
    # resuming gives exactly the uninterrupted run (one thread), also with memory-mapped tables
    (tmp_path / "mm.toml").write_text("mmap_tables = true\nbatch = 2000\n")
    once = str(tmp_path / "once")
    args = ["--game", "leduc", "--size", "lossless", "--iterations", "8000", "--config", str(tmp_path / "mm.toml"), "--out", once]
    assert runner.invoke(pokerbot, base + args).exit_code == 0
    policy = "policy/average.npy"
    assert np.array_equal(np.load(tmp_path / "run" / policy), np.load(tmp_path / "once" / policy))
    bad = runner.invoke(pokerbot, base + ["--game", "holdem", "--size", "9e9", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "sizes: 3e6, 3e6-ke, 3e6-pa, 3e6-pa2, 1.1e7-ke, 1.4e7-ke, 3e7, 3e8" in bad.output


def test_missing_abstraction_names_the_build_command():
    with pytest.raises(AgentNotFound, match=r"pokerbot train --algo abstraction --game holdem --size 3e6"):
        resolve_agent("abstraction_3e6", load_game("holdem"))
    with pytest.raises(AgentNotFound, match="plays fhp"):
        resolve_agent("fhp_abstraction_4e4", load_game("holdem"))


def test_kmeans_recovers_planted_histogram_shapes_and_separates_equal_means():
    from training.abstraction.kmeans import cdf_vectors, kmeans_buckets, l2_metric

    rng = np.random.default_rng(0)
    # two shapes with the same mean HS bin (a spike at 25 vs humps at 5 and 45) plus three others
    shapes = [[25] * 8, [5] * 4 + [45] * 4, [10] * 8, [40] * 8, [0, 10, 20, 30] * 2]
    labels = rng.integers(0, len(shapes), 5000)
    hist = np.zeros((5000, 50), np.uint16)
    for i, label in enumerate(labels):
        np.add.at(hist[i], shapes[label], 1)
    buckets = kmeans_buckets(hist, rng.integers(1, 25, 5000), len(shapes), l2_metric(50, cdf_vectors), batch=1000, steps=40)
    assert all(len(set(buckets[labels == c].tolist())) == 1 for c in range(len(shapes)))
    assert len(set(buckets.tolist())) == len(shapes)


def test_histogram_features_count_every_runout():
    leduc = load_game("leduc")  # preflop: 5 runouts (board cards) per hole card
    size = round_indexer(leduc, 0).size
    out = RoundFeatures(np.zeros(size, np.float32), np.zeros(size, np.float32), np.zeros(size, np.uint8),
                        np.zeros((size, 10), np.uint16))  # fmt: skip
    compute_round_features(leduc, 0, out)
    assert (out.hist.sum(axis=1) == 5).all()
    centres = (np.arange(10) + 0.5) / 10
    assert np.allclose((out.hist * centres).sum(axis=1) / 5, out.ehs, atol=0.05)


def test_kmeans_abstraction_builds_and_solves():
    spec = AbstractionSpec("leduc_ke_test", "leduc", (2, None), ("ke", "lossless"))
    ag, _, average = solve(spec, 20_000)
    table = ag.abstraction.tables[0]
    assert table is not None and sorted(set(np.asarray(table).tolist())) == [0, 1]
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert 0 < report.mbb(report.exploitability) < 1186.8  # better than uniform random


def test_fhp_shaped_abstraction_run_measures_its_average_exactly_over_canonical_flops(tmp_path, monkeypatch):
    """The trainer's exploitability of an FHP-shaped abstraction (the per-flop passes over the
    canonical flops, suit-invariant rows) equals the dense best response of the same average."""
    import training.abstraction.exploitability as abstraction_exploitability
    from tests.training.flop.test_flop_solver import TINY_FHP_TEXT

    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    spec = AbstractionSpec("tiny_fhp_test", str(gamedef), (None, 6))
    ag, _, average = solve(spec, 6_000)
    dense = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    monkeypatch.setattr(abstraction_exploitability, "is_small", lambda game: False)  # take the FHP path
    measured = abstraction_exploitability.exact_exploitability_report(ag, average)
    assert measured["exploitability_mbb"] == pytest.approx(dense.mbb(dense.exploitability), abs=1e-3)
    assert measured["nash_conv_mbb"] == pytest.approx(dense.mbb(dense.nash_conv), abs=1e-3)
    fg = flop_game_for(ag.abstraction.game, True)
    uniform = flop_exploitability(fg, uniform_policy(fg))
    assert 0 < measured["exploitability_mbb"] < uniform.mbb(uniform.exploitability) / 2  # it learned


# ---- named sizes, OCHS, scalable k-means, potential-aware buckets, the play-time dependency arrow ----


def test_named_specs_have_the_size_in_their_name_and_features_that_reach_it():
    """abstraction_3eN has about 3.3eN infosets (Deep CFR Table 1); a scalar final-round feature
    (E[HS^2] = HS^2 there) never buckets the last round beyond its distinct values."""
    distinct_final_hs = {"holdem": 1950, "fhp": 1390}
    for name, spec in SPECS.items():
        stated = name.split("_")[-1] if name.split("_")[-1][0].isdigit() else name.split("_")[-2]
        if stated[0].isdigit():
            assert 0.99 <= num_infosets(spec) / float(stated) < 1.15, name
        last = len(spec.buckets) - 1
        if spec.round_methods[last] == "ehs2":
            assert spec.buckets[last] <= distinct_final_hs.get(spec.game, 10**9), name
    assert SPECS["abstraction_3e8"].buckets == (None, 51800, 51800, 51800)
    assert SPECS["abstraction_3e8"].round_methods[3] == "ochs"
    assert SPECS["fhp_abstraction_3.6e6"].round_methods == ("lossless", "ochs")


def brute_force_ochs(game, hole, board, labels_of):
    """Per label: wins + ties/2 over opponents of that label on a final board, divided by their count."""
    rest = [c for c in game.deck if c not in hole and c not in board]
    mine = hand_strength(list(hole) + list(board))
    wins, total = {}, {}
    for opp in itertools.combinations(rest, game.num_hole_cards):
        theirs = hand_strength(list(opp) + list(board))
        label = labels_of[tuple(sorted(opp))]
        wins[label] = wins.get(label, 0.0) + (theirs < mine) + 0.5 * (theirs == mine)
        total[label] = total.get(label, 0) + 1
    return wins, total


@pytest.mark.parametrize(("name", "num_labels", "samples"), [("fhp", 4, 6), ("leduc", 2, 15)])
def test_ochs_equals_brute_force(name, num_labels, samples):
    """OCHS of final-round hands against brute force, with opponent labels given per preflop
    class (so they respect suit symmetry, as the real opponent clusters do)."""
    from training.abstraction.features import OCHS_SCALE, hole_combinations

    game = load_game(name)
    r = game.num_rounds - 1
    holes = hole_combinations(game)
    preflop = round_indexer(game, 0)
    class_labels = np.random.default_rng(1).integers(0, num_labels, preflop.size)
    labels = class_labels[preflop.index_batch(holes)]
    labels_of = {tuple(sorted(int(c) for c in h)): int(lab) for h, lab in zip(holes, labels, strict=True)}
    size = round_indexer(game, r).size
    out = RoundFeatures(np.zeros(size, np.float32), np.zeros(size, np.float32), np.zeros(size, np.uint8),
                        ochs=np.zeros((size, num_labels), np.uint16))  # fmt: skip
    compute_round_features(game, r, out, hole_labels=labels)
    rng = np.random.default_rng(0)
    k = game.num_hole_cards
    for _ in range(samples):
        cards = [int(c) for c in rng.choice(np.array(game.deck), k + game.total_board_cards, replace=False)]
        wins, total = brute_force_ochs(game, cards[:k], cards[k:], labels_of)
        hs = sum(wins.values()) / sum(total.values())
        expected = [wins[lab] / total[lab] if total.get(lab) else hs for lab in range(num_labels)]
        index = round_indexer(game, r).index(cards)
        assert out.ochs[index] / OCHS_SCALE == pytest.approx(expected, abs=1 / OCHS_SCALE)
        assert out.ehs[index] == pytest.approx(hs, abs=1e-6)


def test_leduc_opponent_clusters_are_the_three_ranks():
    from training.abstraction.build import opponent_clusters
    from training.abstraction.features import hole_combinations

    game = load_game("leduc")
    labels = opponent_clusters(game)
    ranks = hole_combinations(game)[:, 0] // 4
    assert len(set(labels.tolist())) == 3
    assert all(len(set(labels[ranks == rank].tolist())) == 1 for rank in set(ranks.tolist()))


def test_ochs_abstraction_build_has_exactly_k_buckets_or_says_why_not():
    from training.abstraction.build import round_features

    game = load_game("leduc")
    distinct = len(np.unique(np.asarray(round_features(game, 1, ochs=True).ochs), axis=0))
    assert 6 <= distinct <= 15
    spec = AbstractionSpec("leduc_ochs_test", "leduc", (None, distinct), ("lossless", "ochs"))
    build_abstraction(spec)
    table = np.load(bucket_path(spec, 1))
    assert len(np.unique(table)) == distinct
    too_many = AbstractionSpec("leduc_ochs_too_many", "leduc", (None, distinct + 1), ("lossless", "ochs"))
    with pytest.raises(ValueError, match="distinct"):
        build_abstraction(too_many)


def test_kmeans_two_level_fills_every_cluster_when_points_allow():
    from bot.abstraction.cost import TWO_LEVEL_MIN_K
    from training.abstraction.kmeans import kmeans_buckets, l2_metric

    rng = np.random.default_rng(4)
    k = TWO_LEVEL_MIN_K + 10
    distinct = rng.random((k + 40, 3)).astype(np.float32)
    points = distinct[rng.integers(0, len(distinct), 3 * k)]  # duplicates force the repair step
    points[: len(distinct)] = distinct
    metric = l2_metric(3, lambda rows: np.asarray(rows, np.float32))
    buckets = kmeans_buckets(points, np.ones(len(points)), k, metric, steps=5)
    assert buckets.dtype == np.uint16 and len(np.unique(buckets)) == k
    _, first = np.unique(points, axis=0, return_inverse=True)
    assert all(len(set(buckets[first.ravel() == v].tolist())) == 1 for v in range(0, len(distinct), 97))  # equal points, one bucket
    twice = np.repeat(distinct[:100], 2, axis=0)  # 200 rows, 100 distinct
    assert len(np.unique(kmeans_buckets(twice, np.ones(200), 100, metric))) == 100
    with pytest.raises(ValueError, match="distinct"):
        kmeans_buckets(twice, np.ones(200), 101, metric)


def test_two_level_kmeans_reports_its_first_level_on_its_own_count():
    """The first level's steps and the refined coarse clusters are counted apart (one shared
    count showed an ETA of hours after the first level), and reporting changes no bucket."""
    from bot.abstraction.cost import TWO_LEVEL_MIN_K, two_level_split
    from training.abstraction.kmeans import kmeans_fit, l2_metric

    rng = np.random.default_rng(5)
    k = TWO_LEVEL_MIN_K + 10
    points = rng.random((4 * k, 3)).astype(np.float32)
    metric = l2_metric(3, lambda rows: np.asarray(rows, np.float32))
    calls: list[tuple[str, int, int]] = []
    fit = kmeans_fit(points, np.ones(len(points)), k, metric, steps=5, chunk=300,
                     progress=lambda d, t: calls.append(("fine", d, t)),
                     coarse_progress=lambda d, t: calls.append(("first", d, t)))  # fmt: skip
    first = [(d, t) for level, d, t in calls if level == "first"]
    fine = [(d, t) for level, d, t in calls if level == "fine"]
    assert calls.index(("fine", *fine[0])) == len(first)  # the first level ends before refining starts
    assert [d for d, _ in first] == list(range(1, len(first) + 1)) and {t for _, t in first} == {len(first)}
    coarse = two_level_split(k)
    assert fine == [(c, coarse) for c in range(1, coarse + 1)]
    assert np.array_equal(fit.buckets, kmeans_fit(points, np.ones(len(points)), k, metric, steps=5, chunk=300).buckets)


@pytest.mark.parametrize(("dim", "k", "n"), [(8, 227, 700), (50, 72, 300), (3, 5, 9)])
def test_kmeans_assignment_is_the_play_time_nearest_centre(dim, k, n):
    """The build's vectorised assignment returns, point for point, the centre and distance of
    the per-point kernel the shipped bots use at play time, ties (repeated centres, points on a
    centre) going to the first centre."""
    from bot.abstraction.runtime_buckets import nearest_centre, squared_l2
    from training.abstraction.kmeans import _l2_assign

    rng = np.random.default_rng(dim)
    centres = rng.random((k, dim)).astype(np.float32)
    centres[-1] = centres[1]
    points = np.concatenate([centres, rng.random((n, dim)).astype(np.float32)])
    labels, dist = _l2_assign(points, centres)
    expected = [nearest_centre(p, centres) for p in points]
    assert labels.tolist() == expected and labels[k - 1] == labels[1] == 1
    assert dist.tolist() == [float(np.sqrt(squared_l2(p, centres[c]))) for p, c in zip(points, expected, strict=True)]


@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.lists(st.floats(-1, 120), max_size=60))
def test_sorted_search_is_searchsorted_right(steps, keys):
    """Weighted sampling's galloping search equals numpy's for ascending keys, equal cumulative
    weights (zero-weight rows) and keys past either end included."""
    from training.abstraction.kmeans import _sorted_search

    cumulative = np.cumsum(np.asarray(steps, dtype=np.float64))
    keys = np.sort(np.asarray(keys, dtype=np.float64))
    assert _sorted_search(cumulative, keys).tolist() == np.searchsorted(cumulative, keys, side="right").tolist()


def test_potential_aware_histograms_by_hand():
    """Leduc preflop over a flop table that says 'paired': a J sees 5 flop cards, one of them the
    other J, so its histogram is {unpaired: 4, paired: 1}, whatever the hole card."""
    from training.abstraction.potential import next_round_histograms, unpack

    game = load_game("leduc")
    flop = round_indexer(game, 1)
    paired = np.zeros(flop.size, np.uint16)
    for hole in game.deck:
        for board in game.deck:
            if board != hole:
                paired[flop.index([hole, board])] = hole // 4 == board // 4
    hist = next_round_histograms(game, 0, paired)
    assert hist.shape == (3, 5)
    for row in unpack(hist):
        masses = {int(b): m for b, m in row if m > 0}
        assert masses == pytest.approx({0: 0.8, 1: 0.2})


def test_greedy_emd_on_known_cases():
    from training.abstraction.potential import greedy_emd, ground_distances

    ground, nearest = ground_distances(np.array([[0.0], [1.0], [3.0]]), 1)
    assert nearest.tolist() == [[0, 1, 2], [1, 0, 2], [2, 1, 0]]
    point = np.array([[0, 0.5], [2, 0.5]], np.float32)
    assert greedy_emd(point, np.array([0.5, 0, 0.5], np.float32), ground) == 0.0
    assert greedy_emd(point, np.array([0, 1, 0], np.float32), ground) == pytest.approx(0.5 * 1 + 0.5 * 2)
    assert greedy_emd(point, np.array([1, 0, 0], np.float32), ground) == pytest.approx(1.5)


def test_potential_aware_abstraction_builds_and_solves():
    spec = AbstractionSpec("leduc_pa_test", "leduc", (2, 3), ("pa", "ehs2"))
    ag, _, average = solve(spec, 20_000)
    assert sorted(set(np.asarray(ag.abstraction.tables[0]).tolist())) == [0, 1]
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert 0 < report.mbb(report.exploitability) < 1186.8  # better than uniform random


def test_playing_imports_no_training_code():
    import subprocess
    import sys

    code = ("import sys, bot.abstraction.agent, bot.registry; "
            "bad = [m for m in sys.modules if m.startswith('training')]; assert not bad, bad")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_interrupted_build_keeps_the_rounds_it_finished(monkeypatch):
    """A build stopped after its last round's table (built first) redoes only the rest when it
    is run again, and ends with the tables a build in one go writes; a recorded round of another
    recipe or format is rebuilt."""
    import training.abstraction.build as build

    spec = SPECS["leduc_merged"]

    def stop_at_round_0(phase: str, done: int, total: int) -> None:
        if "round 0" in phase:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_abstraction(spec, stop_at_round_0)
    assert bucket_path(spec, 1).exists() and not bucket_path(spec, 0).exists()
    first = np.load(bucket_path(spec, 1))
    rounds_built: list[int] = []
    bucket_round = build._bucket_round
    monkeypatch.setattr(build, "_bucket_round", lambda s, g, r, p: rounds_built.append(r) or bucket_round(s, g, r, p))
    build_abstraction(spec)
    assert rounds_built == [0] and np.array_equal(np.load(bucket_path(spec, 1)), first)
    build_abstraction(spec, force=True)  # force rebuilds every round whatever is recorded
    assert rounds_built == [0, 1, 0]
    meta = bucket_path(spec, 0).parent / "meta.json"
    meta.unlink()  # an unfinished build again, whose round 1 was recorded by an older format
    record = bucket_path(spec, 1).with_suffix(".json")
    record.write_text(record.read_text().replace('"format": 1', '"format": 0'))
    build_abstraction(spec)
    assert rounds_built == [0, 1, 0, 1] and meta.exists()
