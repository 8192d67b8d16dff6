"""Batched play-time buckets (:mod:`bot.abstraction.range_buckets`): the features of every hand of a board
are the per-hand path's bits, and the compact bot's ``range_probabilities`` equals asking it
hand by hand, for percentile and k-means rounds, on HULH and on built FHP-like abstractions."""

from __future__ import annotations

import numpy as np
import pytest

from bot.abstraction.compact import CompactAbstractionAgent, write_compact
from bot.abstraction.range_buckets import board_features, buckets_of, canonical_board_and_holes
from bot.abstraction.range_counts import board_histograms
from bot.abstraction.runtime_buckets import (
    CentreBuckets,
    HandBucketer,
    PercentileBuckets,
    build_order_hand,
    cdf_vectors,
    runout_features,
)
from bot.abstraction.spec import SPECS, AbstractionSpec
from bot.abstraction.tables import row_layout
from bot.agents.base import Agent
from bot.shipped import read_manifest
from protocol.betting_tree import BettingTree
from protocol.cards import cards_from_str
from protocol.gamedef import Game, load_game
from protocol.matchstate import MatchState
from protocol.state import State
from training.abstraction.build import build_abstraction
from training.abstraction.compact import compact_rounds

HOLDEM = load_game("holdem")
SUITS = (0, 1, 2, 3)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path / "cache"))


def live_hands(game: Game, board: tuple[int, ...]) -> np.ndarray:
    live = [c for c in game.deck if c not in board]
    return np.array([(a, b) for i, a in enumerate(live) for b in live[i + 1 :]], dtype=np.int64)


def random_board(rng: np.random.Generator, game: Game, cards: int) -> tuple[int, ...]:
    return tuple(int(c) for c in rng.choice(np.array(game.deck), cards, replace=False))


@pytest.mark.parametrize(("round_index", "sampled"), [(3, None), (2, None), (1, 25)])
def test_board_features_equal_the_per_hand_features_bit_for_bit(round_index, sampled):
    """Every hand (flop: a sample) of two random HULH boards: the canonical (hole, board) pair
    is build_order_hand's, and E[HS], E[HS^2] and the histogram are the same float32 bits."""
    rng = np.random.default_rng(round_index)
    bins = 50 if round_index < 3 else 0
    for _ in range(2):
        board = random_board(rng, HOLDEM, HOLDEM.board_cards_through(round_index))
        hands = live_hands(HOLDEM, board)
        if sampled:
            hands = hands[rng.choice(len(hands), sampled, replace=False)]
        canonical_board, holes = canonical_board_and_holes(SUITS, board, hands)
        index, ehs, ehs2, hist = board_features(HOLDEM, canonical_board, bins)
        assert (index >= 0).sum() == 2 * len(live_hands(HOLDEM, board))  # both orders of every live hand
        for hand, hole in zip(hands, holes, strict=True):
            one_hole, one_board = build_order_hand(HOLDEM, tuple(hand), board)
            assert tuple(one_board) == canonical_board and tuple(one_hole) == tuple(hole)
            one = runout_features(HOLDEM, one_hole, one_board, bins)
            row = index[hole[0], hole[1]]
            assert (one[0], one[1]) == (ehs[row], ehs2[row])
            assert np.array_equal(one[2], hist[row])


@pytest.mark.parametrize("board", ["2c3d9h", "2c5c9h", "AsKsQs", "2c2d2h", "7h8h9hTh", "2c2d9h9c", "Js3sQd5s"])
def test_board_histograms_equal_the_features_histograms(board):
    """The rank-aggregated counts of k-means rounds give the features' histogram of every hand:
    rainbow, two-tone, monotone and paired flops, turns with four, three and two of a suit."""
    canonical, _ = canonical_board_and_holes(SUITS, tuple(cards_from_str(board)), np.zeros((0, 2), np.int64))
    _, _, _, hist = board_features(HOLDEM, canonical, 50)
    assert np.array_equal(board_histograms(HOLDEM, canonical, 50), hist)


def test_batched_centre_buckets_replay_moves_like_one_hand():
    rng = np.random.default_rng(0)
    hist = rng.integers(0, 5, size=(40, 6))
    centres = np.sort(rng.random((4, 6)), axis=1).astype(np.float32)
    plain = CentreBuckets(centres, np.zeros(0, np.int64), np.zeros((0, 6), np.float32), np.zeros(0, np.int64))
    first = plain.bucket_of(0, 0, hist[0])
    point = cdf_vectors(hist[:1])[0]
    buckets = CentreBuckets(centres, np.array([first, 9]), np.stack([point, point]), np.array([9, 2]))
    batched = buckets_of(buckets, np.zeros(40, np.float32), hist)
    assert batched.tolist() == [buckets.bucket_of(0, 0, h) for h in hist]
    assert batched[0] == 2  # moved twice, in order


def fabricated_rounds(rng: np.random.Generator, flop_kind: str) -> tuple:
    """HULH bucketings with made-up bounds and centres (what is tested is that batch and single
    hand agree, whatever the numbers): one k-means round and the others percentile."""
    percentile = PercentileBuckets(np.array([0.05, 0.2, 0.4, 0.6, 0.8, 1.0], dtype=np.float32))
    centres = np.sort(rng.random((7, 50)), axis=1).astype(np.float32)
    centres[:, -1] = 1.0
    kmeans = CentreBuckets(centres, np.zeros(0, np.int64), np.zeros((0, 50), np.float32), np.zeros(0, np.int64))
    return (None, kmeans, percentile, percentile) if flop_kind == "ke" else (None, percentile, kmeans, percentile)


def compact_agent(tmp_path, game: Game, rounds: tuple, methods: tuple[str, ...], seed: int) -> CompactAbstractionAgent:
    """A compact folder written with a random policy (a tenth of the rows never reached)."""
    tree = BettingTree.build(game)
    num_buckets = (HandBucketer(game, rounds).preflop.size,) + tuple(
        len(r.upper) if isinstance(r, PercentileBuckets) else len(r.centres) for r in rounds[1:])
    _, rows = row_layout(tree, num_buckets)
    rng = np.random.default_rng(seed)
    average = (rng.random((rows, 3)) ** 3).astype(np.float32)
    average[rng.random(rows) < 0.1] = 0
    folder = tmp_path / f"bot{seed}"
    write_compact(folder, game, rounds, methods, average, {"name": "tiny", "description": "test", "strength": {}})
    return CompactAbstractionAgent(game, folder, read_manifest(folder))


def decision_views(game: Game, rng: np.random.Generator, count: int) -> list[MatchState]:
    """Views at every decision of hands played at random without folding."""
    views = []
    while len(views) < count:
        cards = rng.choice(np.array(game.deck), 2 * game.num_hole_cards + game.total_board_cards, replace=False)
        holes = (tuple(int(c) for c in cards[:2]), tuple(int(c) for c in cards[2:4]))
        board = tuple(int(c) for c in cards[4:])
        state = State(game, holes, board)
        while not state.is_finished:
            seat = state.actor
            shown = board[: game.board_cards_through(state.round)]
            views.append(MatchState(seat, 0, state.betting_string(), tuple(holes[p] if p == seat else () for p in range(2)),
                                    (shown,) if shown else ()))  # fmt: skip
            unfolded = [a for a in state.legal_actions() if a != "f"]  # reach the later rounds
            state.apply(unfolded[rng.integers(len(unfolded))])
    return views


def assert_batched_equals_one_by_one(agent: CompactAbstractionAgent, game: Game, views: list[MatchState],
                                     rng: np.random.Generator, per_round: dict[int, int]) -> set[int]:  # fmt: skip
    rounds_seen = set()
    for view in views:
        round_index = agent.decision(view)[1]
        hands = live_hands(game, view.board_flat)
        hands = hands[rng.choice(len(hands), min(len(hands), per_round[round_index]), replace=False)]
        batched = agent.range_probabilities(view, hands)
        assert np.array_equal(batched, Agent.range_probabilities(agent, view, hands))
        assert np.allclose(batched.sum(axis=1), 1.0)
        rounds_seen.add(round_index)
    return rounds_seen


@pytest.mark.parametrize("flop_kind", ["ke", "ehs2"])
def test_compact_holdem_range_probabilities_equal_one_by_one(tmp_path, flop_kind):
    """A HULH compact bot (k-means flop or turn, percentile elsewhere): exactly the same arrays
    batched and hand by hand, on every round."""
    rng = np.random.default_rng(7 if flop_kind == "ke" else 8)
    rounds = fabricated_rounds(rng, flop_kind)
    methods = ("lossless", "ke", "ehs2", "ehs2") if flop_kind == "ke" else ("lossless", "ehs2", "ke", "ehs2")
    agent = compact_agent(tmp_path, HOLDEM, rounds, methods, seed=1)
    views = decision_views(HOLDEM, rng, 30)
    seen = assert_batched_equals_one_by_one(agent, HOLDEM, views, rng, {0: 200, 1: 12, 2: 150, 3: 300})
    assert seen == {0, 1, 2, 3}


@pytest.mark.parametrize("spec_name", ["fhp_abstraction_4e4", "small_ke", "small_ke_two_level"])
def test_compact_built_abstraction_range_probabilities_equal_one_by_one(tmp_path, monkeypatch, spec_name):
    """Compact bots of built abstractions (FHP E[HS^2] percentiles; k-means on a 5-rank FHP-like
    game, as tests/bot/abstraction/test_compact_abstraction.py builds them, in one level and in
    two): batched = hand by hand."""
    if spec_name.startswith("small_ke"):
        from bot.abstraction import cost

        two_level = spec_name.endswith("two_level")
        if two_level:
            monkeypatch.setattr(cost, "TWO_LEVEL_MIN_K", 16)
        path = tmp_path / "small.game"
        path.write_text(load_game("fhp").to_text().replace("numRanks = 13", "numRanks = 5"))
        buckets = 40 if two_level else 8
        monkeypatch.setitem(SPECS, spec_name, AbstractionSpec(spec_name, str(path), (None, buckets), ("lossless", "ke")))
    spec = SPECS[spec_name]
    game = spec.load_game()
    build_abstraction(spec)
    agent = compact_agent(tmp_path, game, compact_rounds(spec, log=lambda line: None), spec.round_methods, seed=2)
    rng = np.random.default_rng(9)
    seen = assert_batched_equals_one_by_one(agent, game, decision_views(game, rng, 40), rng, {0: 300, 1: 300})
    assert seen == {0, 1}


def test_range_buckets_refuse_hands_on_the_board(tmp_path):
    agent = compact_agent(tmp_path, HOLDEM, fabricated_rounds(np.random.default_rng(0), "ke"), ("lossless", "ke", "ehs2", "ehs2"), seed=3)
    with pytest.raises(ValueError, match="shares a card with the board"):
        agent.range_bucketer.buckets(3, np.array([[0, 1], [2, 3]]), (3, 8, 12, 16, 20))
