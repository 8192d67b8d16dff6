"""The compact abstraction bot: play-time buckets equal the build's, the quantised policy plays
like the full agent, and the shipped hold'em bot plays at a dealer given its gamedef file."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from bot.abstraction.agent import AbstractionAgent
from bot.abstraction.compact import (
    UNITS,
    CompactAbstractionAgent,
    pack_policy,
    quantise_policy,
    unpack_policy,
    write_compact,
)
from bot.abstraction.runtime_buckets import (
    CentreBuckets,
    HandBucketer,
    build_order_hand,
    cdf_vectors,
    runout_features,
)
from bot.abstraction.spec import SPECS, AbstractionSpec, bucket_path, policy_path
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.shipped import SHIPPED_ROOT, read_manifest
from protocol.betting_tree import BettingTree
from protocol.gamedef import load_game
from protocol.isomorphism import HandIndexer, canonical_representatives, round_indexer
from protocol.matchstate import MatchState
from training.abstraction.build import build_abstraction
from training.abstraction.compact import compact_rounds, percentile_upper
from training.abstraction.features import RoundFeatures, compute_round_features, hole_combinations

HOLDEM = load_game("holdem")
SHIPPED_HOLDEM = SHIPPED_ROOT / "holdem"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path / "cache"))


def renamed(cards, perm, suits=4):
    return tuple((c // suits) * suits + perm[c % suits] for c in cards)


def random_hand(rng, game, visible):
    cards = rng.choice(np.array(game.deck), game.num_hole_cards + visible, replace=False)
    return tuple(int(c) for c in cards[:2]), tuple(int(c) for c in cards[2:])


def assert_flop_buckets_match_the_table(spec, rounds, seed, hands=300):
    """Play-time flop buckets of random hands equal the built table's; returns the bucketer."""
    game = spec.load_game()
    bucketer = HandBucketer(game, rounds)
    table = np.load(bucket_path(spec, 1))
    indexer = round_indexer(game, 1)
    rng = np.random.default_rng(seed)
    for _ in range(hands):
        hole, board = random_hand(rng, game, 3)
        assert bucketer.bucket(1, hole, board) == table[indexer.index(hole + board)]
    return bucketer


def test_build_order_hand_is_the_canonical_board_and_the_last_hole_written():
    """The build visits a class on its board's canonical representative, and the last hole (in
    enumeration order) landing in the class writes its features."""
    game = HOLDEM
    board_indexer = HandIndexer((3,))
    reps, _ = canonical_representatives(board_indexer, game.deck)
    flop = round_indexer(game, 1)
    holes = hole_combinations(game)
    rng = np.random.default_rng(0)
    boards = [(0, 4, 8), (0, 1, 2), (0, 1, 4), (48, 49, 51)] + [random_hand(rng, game, 3)[1] for _ in range(4)]
    for board in boards:
        rep = reps[board_indexer.index(board)]
        rep_classes = flop.index_batch(np.concatenate([holes, np.repeat(rep[None], len(holes), 0)], axis=1))
        for hole in [tuple(h) for h in holes[rng.choice(len(holes), 30)] if not set(h) & set(board)]:
            canonical_hole, canonical_board = build_order_hand(game, hole, board)
            assert tuple(canonical_board) == tuple(rep)
            target = flop.index(hole + board)
            last = holes[np.flatnonzero(rep_classes == target)[-1]]
            assert tuple(canonical_hole) == tuple(last)


@pytest.mark.parametrize("round_index", [1, 2, 3])
def test_runtime_features_equal_the_build_bit_for_bit(tmp_path, round_index):
    """On a few HULH boards, E[HS], E[HS^2] and the 50-bin histogram computed for one hand at
    play time equal what the build's own feature pass stores for its class."""
    game = HOLDEM
    visible = game.board_cards_through(round_index)
    indexer = round_indexer(game, round_index)
    reps, _ = canonical_representatives(HandIndexer((visible,)), game.deck)
    positions = np.array([0, len(reps) // 3, len(reps) - 1])
    bins = 50 if round_index < 3 else 0
    arrays = {name: np.lib.format.open_memmap(tmp_path / f"{name}.npy", mode="w+", dtype=dtype, shape=shape)
              for name, dtype, shape in (("ehs", np.float32, (indexer.size,)), ("ehs2", np.float32, (indexer.size,)),
                                         ("weight", np.uint8, (indexer.size,)), ("hist", np.uint16, (indexer.size, max(bins, 1))))}  # fmt: skip
    out = RoundFeatures(arrays["ehs"], arrays["ehs2"], arrays["weight"], arrays["hist"] if bins else None)
    compute_round_features(game, round_index, out, boards=positions)
    rng = np.random.default_rng(round_index)
    holes = hole_combinations(game)
    checked = 0
    for rep in reps[positions]:
        for hole in holes[rng.choice(len(holes), 6 if round_index == 1 else 20, replace=False)]:
            if set(hole) & set(rep):
                continue
            perm = tuple(rng.permutation(4))  # any suit renaming of the hand is the same class
            raw_hole, raw_board = renamed(hole, perm), renamed(rep, perm)
            index = indexer.index(raw_hole + raw_board)
            ehs, ehs2, hist = runout_features(game, *build_order_hand(game, raw_hole, raw_board), bins)
            assert (ehs, ehs2) == (out.ehs[index], out.ehs2[index])
            if bins:
                assert np.array_equal(hist, out.hist[index])
            checked += 1
    assert checked >= 10


def test_percentile_buckets_reproduce_the_built_table():
    """fhp_abstraction_4e4 (E[HS^2] percentiles on the FHP flop): the bucket found from one
    hand's feature and the extracted upper bounds equals the built table's, on every hand tried."""
    spec = SPECS["fhp_abstraction_4e4"]
    game = spec.load_game()
    build_abstraction(spec)
    rounds = compact_rounds(spec, log=lambda line: None)
    bucketer = assert_flop_buckets_match_the_table(spec, rounds, seed=3)
    assert bucketer.bucket(0, (0, 1), ()) == round_indexer(game, 0).index((0, 1))


def test_percentile_upper_refuses_overlapping_buckets():
    values = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    assert percentile_upper(values, np.array([0, 0, 1, 1]), 2).tolist() == pytest.approx([0.2, 0.4])
    with pytest.raises(ValueError, match="overlap"):
        percentile_upper(values, np.array([0, 1, 0, 1]), 2)
    with pytest.raises(ValueError, match="empty"):
        percentile_upper(values, np.array([0, 0, 0, 0]), 2)




def test_kmeans_centres_reproduce_the_built_table(tmp_path, monkeypatch):
    """A ``ke`` round (on a 20-card flop game, 7,760 classes): the refitted centres (the
    build's seeded k-means run again) reproduce the built table on all classes (checked inside
    compact_rounds), and play-time buckets of hands equal the table's."""
    fhp_text = load_game("fhp").to_text()
    assert "numRanks = 13" in fhp_text
    path = tmp_path / "small.game"
    path.write_text(fhp_text.replace("numRanks = 13", "numRanks = 5"))
    spec = AbstractionSpec("small_ke", str(path), (None, 8), ("lossless", "ke"))
    monkeypatch.setitem(SPECS, spec.name, spec)
    build_abstraction(spec)
    rounds = compact_rounds(spec, log=lambda line: None)
    assert isinstance(rounds[1], CentreBuckets) and rounds[1].centres.shape == (8, 50)
    assert_flop_buckets_match_the_table(spec, rounds, seed=4)


def test_two_level_kmeans_centres_reproduce_the_built_table(tmp_path, monkeypatch):
    """Thousands of buckets are clustered in two levels (abstraction_1.4e7_ke's 5,180): here
    forced at 40 buckets on the 5-rank flop game (6 coarse clusters). The refit's coarse centres
    and per-coarse slices reproduce the built table on every class, and play-time buckets of
    hands equal the table's, from the fit and from the cached centres alike."""
    from bot.abstraction import cost

    monkeypatch.setattr(cost, "TWO_LEVEL_MIN_K", 16)
    path = tmp_path / "small.game"
    path.write_text(load_game("fhp").to_text().replace("numRanks = 13", "numRanks = 5"))
    spec = AbstractionSpec("small_ke_two_level", str(path), (None, 40), ("lossless", "ke"))
    monkeypatch.setitem(SPECS, spec.name, spec)
    build_abstraction(spec)
    for source in ("refit", "cache"):
        rounds = compact_rounds(spec, log=lambda line: None)
        kmeans = rounds[1]
        assert isinstance(kmeans, CentreBuckets) and kmeans.centres.shape == (40, 50), source
        assert kmeans.coarse_centres.shape == (6, 50) and kmeans.coarse_offsets.tolist()[::6] == [0, 40]
        assert_flop_buckets_match_the_table(spec, rounds, seed=5)


def test_two_level_centre_buckets_search_the_nearest_coarse_clusters_slice():
    """The bucket is the nearest fine centre *within* the nearest coarse cluster, even when a
    fine centre of another coarse cluster is nearer."""
    hist = np.array([0, 0, 3, 1])
    assert cdf_vectors(hist[None])[0].tolist() == [0, 0, 0.75, 1]
    centres = np.array([[0, 0, 0.7, 1], [0, 0, 0.2, 1], [0, 0, 0.75, 1]], dtype=np.float32)
    coarse = np.array([[0, 0, 0.55, 1], [0, 0, 1.0, 1]], dtype=np.float32)
    none = (np.zeros(0, np.int64), np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    assert CentreBuckets(centres, *none).bucket_of(0, 0, hist) == 2
    two_level = CentreBuckets(centres, *none, coarse, np.array([0, 2, 3]))
    assert two_level.bucket_of(0, 0, hist) == 0  # coarse 0 ([0, 2)) is nearer than coarse 1
    with pytest.raises(ValueError, match="do not split 3 centres"):
        CentreBuckets(centres, *none, coarse, np.array([0, 3, 3]))
    with pytest.raises(ValueError, match="both"):
        CentreBuckets(centres, *none, coarse, None)


def test_centre_buckets_replay_empty_cluster_moves_in_order():
    hist = np.zeros(4, dtype=np.int64)
    hist[1] = 3
    point = cdf_vectors(hist[None])[0]
    centres = np.array([[0, 1, 1, 1], [0, 0, 0, 1]], dtype=np.float32)
    plain = CentreBuckets(centres, np.zeros(0, np.int64), np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    assert plain.bucket_of(0, 0, hist) == 0
    moves = CentreBuckets(centres, np.array([0, 2, 1]), np.stack([point, point, point + 1]), np.array([2, 3, 0]))
    assert moves.bucket_of(0, 0, hist) == 3  # 0 -> 2 -> 3; the third move's point differs
    other = hist.copy()
    other[3] = 1
    assert moves.bucket_of(0, 0, other) == 0


def test_quantised_policy_round_trips_and_rounds_within_one_unit():
    game = load_game("fhp")
    tree = BettingTree.build(game)
    num_buckets = (169, 30)
    rows = sum(n * b for n, b in zip(tree.decision_nodes_per_round, num_buckets, strict=True))
    rng = np.random.default_rng(5)
    average = rng.random((rows, 3)).astype(np.float32) ** 4 * 1000
    average[::7] = 0  # never reached: uniform
    shares = quantise_policy(tree, num_buckets, average)
    assert np.array_equal(unpack_policy(tree, num_buckets, pack_policy(tree, num_buckets, shares)), shares)
    legal = np.repeat(tree.legal[tree.decision_ids], [num_buckets[tree.round[n]] for n in tree.decision_ids], axis=0)
    assert (shares.sum(axis=1) == UNITS).all() and (shares[~legal] == 0).all()
    exact = np.where(legal, average, 0.0)
    exact = np.where(exact.sum(axis=1, keepdims=True) > 0, exact, legal)
    exact = exact / exact.sum(axis=1, keepdims=True)
    assert np.abs(shares / UNITS - exact).max() < 1 / UNITS
    with pytest.raises(ValueError, match="needs"):
        unpack_policy(tree, (169, 31), pack_policy(tree, num_buckets, shares))


def test_compact_agent_plays_like_the_full_abstraction_agent(tmp_path):
    spec = SPECS["fhp_abstraction_4e4"]
    game = spec.load_game()
    build_abstraction(spec)
    ag = AbstractGame.build(Abstraction.load(spec))
    rng = np.random.default_rng(6)
    average = (rng.random((ag.num_rows, 3)) ** 3).astype(np.float32)
    average[rng.random(ag.num_rows) < 0.1] = 0
    np.save(policy_path(spec), average)
    folder = tmp_path / "bot"
    write_compact(folder, game, compact_rounds(spec, log=lambda line: None), spec.round_methods, average,
                  {"name": "tiny", "description": "test", "strength": {}})  # fmt: skip
    manifest = read_manifest(folder)
    compact, full = CompactAbstractionAgent(game, folder, manifest), AbstractionAgent(game, spec.name)
    assert compact.name == "tiny"
    tree = ag.tree
    for _ in range(300):
        node = int(rng.choice(tree.decision_ids))
        hole, board = random_hand(rng, game, 3)
        shown = board[: game.board_cards_through(int(tree.round[node]))]
        seat = int(tree.actor[node])
        holes = tuple(hole if p == seat else () for p in range(2))
        view = MatchState(seat, 0, tree.history[node], holes, (shown,) if shown else ())
        a, b = compact.action_probabilities(view), full.action_probabilities(view)
        assert a.keys() == b.keys()
        assert max(abs(a[k] - b[k]) for k in a) < 1 / UNITS


def test_compact_agent_names_a_damaged_folder(tmp_path):
    from bot.shipped import ShippedBotError

    folder = tmp_path / "bot"
    spec = SPECS["fhp_abstraction_4e4"]
    game = spec.load_game()
    build_abstraction(spec)
    ag = AbstractGame.build(Abstraction.load(spec))
    write_compact(folder, game, compact_rounds(spec, log=lambda line: None), spec.round_methods,
                  np.ones((ag.num_rows, 3), np.float32), {"name": "tiny", "description": "", "strength": {}})  # fmt: skip
    manifest = read_manifest(folder)
    manifest["abstraction"]["buckets"] = [169, 691]
    with pytest.raises(ShippedBotError, match="691"):
        CompactAbstractionAgent(game, folder, manifest)




def test_connect_plays_the_shipped_bot_given_the_reference_gamedef_file(tmp_path):
    """`pokerbot connect HOST PORT --game PATH/holdem.limit.2p.reverse_blinds.game --agent
    default` over loopback TCP against our dealer: the game is matched by its rules, the shipped
    bot plays every hand, and every action it sent has positive probability under its policy."""
    import asyncio
    import io
    import threading

    from click.testing import CliRunner

    from bot.agents.base import CallAgent
    from bot.cli import main
    from bot.evaluation.match import run_as_client
    from bot.registry import resolve_agent
    from bot.shipped import shipped_alias
    from protocol.dealer import Dealer, DealerOptions
    from protocol.match_log import read_match_log
    from protocol.state import State

    gamedef = tmp_path / "acpc" / "holdem.limit.2p.reverse_blinds.game"
    gamedef.parent.mkdir()
    # the reference dealer's own file (protocol/games holds a verbatim copy), outside the package
    gamedef.write_text((resources.files("protocol") / "games" / gamedef.name).read_text())
    game = load_game(str(gamedef))
    assert shipped_alias(game) == "holdem"
    hands = 24
    options = DealerOptions(str(tmp_path / "m"), str(gamedef), game, hands, 3, ("shipped", "caller"), os_ports=True, quiet=True)
    dealer = Dealer(options, io.StringIO(), io.StringIO())
    ports = dealer.listen()
    status: list[int] = []
    server = threading.Thread(target=lambda: status.append(asyncio.run(dealer.serve())))
    server.start()
    caller = threading.Thread(target=run_as_client, args=(game, CallAgent(game), "127.0.0.1", ports[1], 0), daemon=True)
    caller.start()
    result = CliRunner().invoke(main, ["connect", "127.0.0.1", str(ports[0]), "--game", str(gamedef), "--agent", "default"])
    server.join(120)
    assert result.exit_code == 0, result.output
    assert status == [0] and "match over" in result.output
    log = read_match_log(tmp_path / "m.log")
    assert len(log.hands) == hands
    bot = resolve_agent("default", game)
    assert bot.name == read_manifest(SHIPPED_HOLDEM)["name"]
    raises = 0
    for record in log.hands:
        seat = record.names.index("shipped")
        state = State(game)
        for letter in record.betting.replace("/", ""):
            if state.actor == seat:
                board = tuple(record.board[: state.round])
                holes = tuple(record.hole_cards[p] if p == seat else () for p in range(2))
                view = MatchState(seat, record.hand_number, state.betting_string(), holes, board)
                assert bot.action_probabilities(view).get(letter, 0.0) > 0
                raises += letter == "r"
            state.apply(letter)
    assert raises > 0  # not the calling station: it bets its strong hands


def test_shipped_holdem_bot_is_the_default_agent_and_small():
    from bot.registry import resolve_agent

    manifest = read_manifest(SHIPPED_HOLDEM)
    assert manifest["kind"] == "compact-abstraction" and manifest["game"] == HOLDEM.name
    assert sum(p.stat().st_size for p in SHIPPED_HOLDEM.iterdir()) < 30_000_000  # the package bound (issue 25)
    bot = resolve_agent("default", HOLDEM)
    assert isinstance(bot, CompactAbstractionAgent)
    # pocket aces open-raise (or call) far more often than they fold preflop
    view = MatchState(1, 0, "", ((), (48, 49)), ())
    assert bot.action_probabilities(view).get("f", 0.0) < 0.05


def test_missing_big_abstractions_say_what_is_missing_the_cost_and_the_command():
    from click.testing import CliRunner

    from bot.cli import main

    for size, name in (("3e8", "abstraction_3e8"), ("3e7", "abstraction_3e7")):
        result = CliRunner().invoke(main, ["match", "--game", "holdem", "--agent", "call", "--opponent", name, "--hands", "2"])
        assert result.exit_code == 2
        line = result.output.strip()
        assert "\n" not in line and line.startswith(f"error: agent '{name}' is not built: no bucket tables")
        assert f"`pokerbot train --algo abstraction --game holdem --size {size} --out runs/{name}`" in line
        assert "iterations ~" in line and "--threads 64" in line and "mmap_tables = true" in line and "--time-budget 2h" in line
    spec = SPECS["fhp_abstraction_4e4"]
    build_abstraction(spec)
    result = CliRunner().invoke(main, ["match", "--game", "fhp", "--agent", "call", "--opponent", spec.name, "--hands", "2"])
    assert result.exit_code == 2 and "is built (bucket tables in" in result.output and "policy.npy is missing" in result.output
    ag = AbstractGame.build(Abstraction.load(spec))
    np.save(policy_path(spec), np.ones((ag.num_rows, 3), np.float32))
    result = CliRunner().invoke(main, ["match", "--game", "fhp", "--agent", "call", "--opponent", spec.name, "--hands", "2", "--no-aivat"])
    assert result.exit_code == 0, result.output
