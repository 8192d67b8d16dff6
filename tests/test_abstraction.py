"""Card abstraction: features, buckets, the ES Linear MCCFR solver, the agent and the CLI."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.best_response import exploitability
from bot.cli import main as pokerbot
from bot.registry import AgentNotFound, resolve_agent
from protocol.evaluator import hand_strength
from protocol.gamedef import load_game
from protocol.matchstate import MatchState
from training.abstraction.buckets import percentile_buckets
from training.abstraction.build import Abstraction, build_abstraction
from training.abstraction.features import RoundFeatures, compute_round_features, round_indexer
from training.abstraction.solver import AbstractGame, run_batch
from training.abstraction.spec import SPECS, AbstractionSpec, num_infosets
from training.abstraction.strategy import full_game_strategy


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path / "cache"))


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
    from bot.infosets import space_for

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
    assert bad.exit_code == 2 and "sizes: 3e6, 3e6-ke, 3e7, 3e8" in bad.output


def test_missing_abstraction_names_the_build_command():
    with pytest.raises(AgentNotFound, match=r"pokerbot train --algo abstraction --game holdem --size 3e6"):
        resolve_agent("abstraction_3e6", load_game("holdem"))
    with pytest.raises(AgentNotFound, match="plays fhp"):
        resolve_agent("fhp_abstraction_4e4", load_game("holdem"))


def test_kmeans_recovers_planted_histogram_shapes_and_separates_equal_means():
    from training.abstraction.kmeans import kmeans_buckets

    rng = np.random.default_rng(0)
    # two shapes with the same mean HS bin (a spike at 25 vs humps at 5 and 45) plus three others
    shapes = [[25] * 8, [5] * 4 + [45] * 4, [10] * 8, [40] * 8, [0, 10, 20, 30] * 2]
    labels = rng.integers(0, len(shapes), 5000)
    hist = np.zeros((5000, 50), np.uint16)
    for i, label in enumerate(labels):
        np.add.at(hist[i], shapes[label], 1)
    buckets = kmeans_buckets(hist, rng.integers(1, 25, 5000), len(shapes), batch=1000, steps=40)
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
    spec = AbstractionSpec("leduc_ke_test", "leduc", (2, None), kmeans_rounds=(0,))
    ag, _, average = solve(spec, 20_000)
    table = ag.abstraction.tables[0]
    assert table is not None and sorted(set(np.asarray(table).tolist())) == [0, 1]
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    assert 0 < report.mbb(report.exploitability) < 1186.8  # better than uniform random
