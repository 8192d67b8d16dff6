"""Exact best response checked against brute force over deals with the rules engine."""

import itertools

import numpy as np
import pytest

from bot.agents.infosets import InfosetSpace, space_for
from bot.evaluation.best_response import (
    PublicTree,
    best_response_strategy,
    expected_value,
    exploitability,
    exploitability_of_blocks,
    head_to_head,
    uniform_blocks,
)
from bot.registry import load_strategy, register_strategy_loader
from protocol.gamedef import load_game
from protocol.state import ACTIONS, State

KUHN, LEDUC = load_game("kuhn"), load_game("leduc")


def brute_force_value(game, strategy):
    """Player 0's expected chips: every deal, every betting path, stepped with State."""
    space = space_for(game)
    deck = list(game.deck)
    total, deals = 0.0, 0
    for h0 in itertools.combinations(deck, game.num_hole_cards):
        for h1 in itertools.combinations([c for c in deck if c not in h0], game.num_hole_cards):
            rest = [c for c in deck if c not in h0 + h1]
            for board in itertools.combinations(rest, game.total_board_cards):
                state = State(game, (h0, h1), board)
                total += _walk(space, strategy, state)
                deals += 1
    return total / deals


def _walk(space, strategy, state):
    if state.is_finished:
        return state.payoffs()[0]
    hole = state.hole_cards[state.actor]
    key = InfosetSpace.make_key(hole, (state.visible_board(),), state.betting_string())
    row = strategy[space.index(key)]
    value = 0.0
    for a in state.legal_actions():
        p = row[ACTIONS.index(a)]
        if p > 0:
            child = state.copy()
            child.apply(a)
            value += p * _walk(space, strategy, child)
    return value


def random_strategy(space, rng):
    x = rng.random((space.num_infosets, 3)) * space.legal
    return x / x.sum(axis=1, keepdims=True)


def pure_strategies(space, player, strategy):
    """Every pure strategy of ``player`` (others' rows kept): Kuhn has 2^6 per player."""
    rows = np.flatnonzero(space.player == player)
    choices = [np.flatnonzero(space.legal[i]) for i in rows]
    for picks in itertools.product(*choices):
        profile = strategy.copy()
        profile[rows] = np.eye(3)[list(picks)]
        yield profile


@pytest.mark.parametrize("seed", range(4))
def test_kuhn_best_response_equals_brute_force_over_pure_strategies(seed):
    space = space_for(KUHN)
    strategy = random_strategy(space, np.random.default_rng(seed))
    report = exploitability(KUHN, strategy)
    best0 = max(brute_force_value(KUHN, s) for s in pure_strategies(space, 0, strategy))
    best1 = max(-brute_force_value(KUHN, s) for s in pure_strategies(space, 1, strategy))
    assert report.best_response_values == pytest.approx((best0, best1), abs=1e-12)
    assert report.game_value == pytest.approx(brute_force_value(KUHN, strategy), abs=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_leduc_values_match_brute_force(seed):
    space = space_for(LEDUC)
    strategy = random_strategy(space, np.random.default_rng(seed))
    report = exploitability(LEDUC, strategy)
    assert expected_value(LEDUC, strategy) == pytest.approx(brute_force_value(LEDUC, strategy), abs=1e-12)
    # the pure best response is a real strategy that achieves the reported value
    for player in (0, 1):
        best = best_response_strategy(LEDUC, strategy, player)
        assert set(np.unique(best[space.player == player])) <= {0.0, 1.0}
        assert np.array_equal(best[space.player != player], strategy[space.player != player])
        sign = 1 if player == 0 else -1
        assert sign * brute_force_value(LEDUC, best) == pytest.approx(report.best_response_values[player], abs=1e-12)
    # and no other pure strategy does better (sampled)
    rng = np.random.default_rng(seed + 10)
    for _ in range(5):
        other = random_strategy(space, rng)
        rows = space.player == 0
        strategy_mix = strategy.copy()
        strategy_mix[rows] = np.eye(3)[np.argmax(other * space.legal, axis=1)][rows]
        assert expected_value(LEDUC, strategy_mix) <= report.best_response_values[0] + 1e-12


def test_uniform_leduc_exploitability_is_1186_8_mbb():
    report = exploitability(LEDUC, space_for(LEDUC).uniform_strategy())
    assert round(report.mbb(report.exploitability), 1) == 1186.8
    assert report.mbb(report.exploitability) == pytest.approx(1186.80555555, abs=1e-6)
    assert report.nash_conv == pytest.approx(2 * report.exploitability)


def test_uniform_kuhn_facts():
    report = exploitability(KUHN, space_for(KUHN).uniform_strategy())
    assert report.game_value == pytest.approx(1 / 8)
    assert report.nash_conv == pytest.approx(11 / 12)


def kuhn_equilibrium(alpha):
    """Kuhn (1950): Q, K, A of this deck play the roles of J, Q, K."""
    space = space_for(KUHN)
    probs = {  # key: probability of 'r' (bet/raise) or of 'c' when facing a bet
        "Qs||": ("r", alpha), "Ks||": ("r", 0.0), "As||": ("r", 3 * alpha),
        "Qs||cr": ("c", 0.0), "Ks||cr": ("c", alpha + 1 / 3), "As||cr": ("c", 1.0),
        "Qs||c": ("r", 1 / 3), "Ks||c": ("r", 0.0), "As||c": ("r", 1.0),
        "Qs||r": ("c", 0.0), "Ks||r": ("c", 1 / 3), "As||r": ("c", 1.0),
    }
    strategy = np.zeros((space.num_infosets, 3))
    for key, (letter, p) in probs.items():
        i = space.index(key)
        other = "c" if letter == "r" else "f"
        strategy[i, ACTIONS.index(letter)] = p
        strategy[i, ACTIONS.index(other)] = 1 - p
    return strategy


@pytest.mark.parametrize("alpha", [0.0, 0.2, 1 / 3])
def test_kuhn_equilibria_are_unexploitable_and_worth_minus_one_eighteenth(alpha):
    report = exploitability(KUHN, kuhn_equilibrium(alpha))
    assert report.game_value == pytest.approx(-1 / 18, abs=1e-12)
    assert report.nash_conv == pytest.approx(0.0, abs=1e-12)
    assert report.gains[0] == pytest.approx(0, abs=1e-12) and report.gains[1] == pytest.approx(0, abs=1e-12)


def test_report_is_labelled():
    text = str(exploitability(LEDUC, space_for(LEDUC).uniform_strategy()))
    assert "NashConv/2" in text and "mbb/g" in text and "chips/hand" in text and "1186.8056 mbb/g" in text


def test_rejects_a_non_strategy():
    strategy = space_for(KUHN).uniform_strategy()
    strategy[0] = (0, 2, 0)
    with pytest.raises(ValueError, match="not a distribution"):
        exploitability(KUHN, strategy)


def test_registered_strategy_loader_is_used(tmp_path):
    target = tmp_path / "run"
    target.mkdir()
    uniform = space_for(KUHN).uniform_strategy()
    register_strategy_loader(lambda game, path: (KUHN, uniform) if path == target else None)
    game, strategy = load_strategy(target)
    assert game is KUHN and strategy is uniform
    with pytest.raises(ValueError, match="not a policy file"):
        load_strategy(tmp_path)


TWO_HOLE_GAMEDEF = """GAMEDEF
limit
numPlayers = 2
numRounds = 2
blind = 2 1
raiseSize = 2 4
firstPlayer = 2 1
maxRaises = 2 2
numSuits = 2
numRanks = 3
numHoleCards = 2
numBoardCards = 0 1
END GAMEDEF
"""


@pytest.fixture(scope="module")
def two_hole_game(tmp_path_factory):
    path = tmp_path_factory.mktemp("games") / "twohole.game"
    path.write_text(TWO_HOLE_GAMEDEF)
    return load_game(str(path))


def test_two_hole_card_removal_matches_brute_force(two_hole_game):
    """Blinds, two hole cards and a board card: the fold inclusion-exclusion and the
    showdown sweep with its per-card corrections (and many ties) against the rules engine."""
    game = two_hole_game
    space = space_for(game)
    assert space.num_hands == 15 and "AsAh|Ks|cc/" in space.keys
    strategy = random_strategy(space, np.random.default_rng(7))
    report = exploitability(game, strategy)
    assert report.game_value == pytest.approx(brute_force_value(game, strategy), abs=1e-12)
    for player in (0, 1):
        best = best_response_strategy(game, strategy, player)
        sign = 1 if player == 0 else -1
        assert sign * brute_force_value(game, best) == pytest.approx(report.best_response_values[player], abs=1e-12)


MINI_FHP_GAMEDEF = (
    TWO_HOLE_GAMEDEF.replace("numRanks = 3", "numRanks = 4").replace("numBoardCards = 0 1", "numBoardCards = 0 3")
    .replace("maxRaises = 2 2", "maxRaises = 3 3").replace("raiseSize = 2 4", "raiseSize = 2 2")
)


def test_fhp_shaped_game_is_self_consistent(tmp_path):
    """FHP's structure on an 8-card deck (3-card flop, 5-card showdowns, reversed blinds):
    each pure best response achieves the reported value and beats sampled pure strategies.
    Brute force over all 1,680 deals (7 s, too slow for the suite) was run once on this game and
    strategy: profile value and both best-response values agreed to 1e-14."""
    path = tmp_path / "minifhp.game"
    path.write_text(MINI_FHP_GAMEDEF)
    game = load_game(str(path))
    space = space_for(game)
    assert [len(b) for b in space.boards] == [1, 56] and "KhQs|QhJsJh|rrrc/rrr" in space.keys
    rng = np.random.default_rng(0)
    strategy = random_strategy(space, rng)
    report = exploitability(game, strategy)
    for player in (0, 1):
        best = best_response_strategy(game, strategy, player)
        sign = 1 if player == 0 else -1
        assert sign * expected_value(game, best) == pytest.approx(report.best_response_values[player], abs=1e-12)
        rows = space.player == player
        for _ in range(3):
            other = strategy.copy()
            other[rows] = np.eye(3)[np.argmax(random_strategy(space, rng), axis=1)][rows]
            assert sign * expected_value(game, other) <= report.best_response_values[player] + 1e-12


def test_head_to_head_is_the_seat_average_of_brute_force_values():
    space = space_for(KUHN)
    rng = np.random.default_rng(3)
    a, b = random_strategy(space, rng), random_strategy(space, rng)
    first = space.player == 0
    a_first = np.where(first[:, None], a, b)
    b_first = np.where(first[:, None], b, a)
    expected = (brute_force_value(KUHN, a_first) - brute_force_value(KUHN, b_first)) / 2
    assert head_to_head(KUHN, a, b) == pytest.approx(expected, abs=1e-12)
    assert head_to_head(KUHN, b, a) == pytest.approx(-expected, abs=1e-12)
    assert head_to_head(KUHN, a, a) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("max_elements", [7, 13, 40])
def test_chunked_boards_give_the_same_values(tmp_path, max_elements):
    """New-round boards walked in small chunks (parts of one parent's boards, or several whole
    parents) give the same values as one chunk."""
    path = tmp_path / "minifhp.game"
    path.write_text(MINI_FHP_GAMEDEF)
    for game in (LEDUC, load_game(str(path))):
        space = space_for(game)
        blocks = space.node_blocks(space.to_dense(random_strategy(space, np.random.default_rng(1))))
        whole, chunked = PublicTree(space), PublicTree(space, max_elements=max_elements)
        for player in (0, 1):
            for best in (False, True):
                expected = whole.counterfactual_values(player, blocks, best)
                assert np.allclose(chunked.counterfactual_values(player, blocks, best), expected, rtol=0, atol=1e-15)


def test_lazy_uniform_blocks_match_the_dense_uniform_strategy():
    lazy = exploitability_of_blocks(LEDUC, uniform_blocks(space_for(LEDUC)))
    dense = exploitability(LEDUC, space_for(LEDUC).uniform_strategy())
    assert lazy.best_response_values == pytest.approx(dense.best_response_values, abs=1e-15)
    assert lazy.game_value == pytest.approx(dense.game_value, abs=1e-15)
