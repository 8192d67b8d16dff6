"""Local best response: its equities by brute force, its exact value never above the exact best
response, independent exact values against card-blind agents, sampled runs inside their
intervals, both seats and the CLI."""

from __future__ import annotations

import itertools
import json
from functools import cache

import numpy as np
import pytest
from click.testing import CliRunner

from bot.agents.base import Agent, CallAgent, RaiseAgent, RandomAgent
from bot.agents.infosets import space_for
from bot.agents.tabular import TabularPolicyAgent
from bot.cli import main as pokerbot
from bot.evaluation.best_response import exploitability
from bot.evaluation.lbr import TIE, LBRConfig, PrivateHands, checkdown_equity, run_lbr
from bot.evaluation.lbr_exact import exact_lbr_value
from bot.evaluation.lbr_workers import run_lbr_workers
from bot.registry import resolve_agent
from protocol.cards import cards_from_str
from protocol.evaluator import hand_strength
from protocol.gamedef import Game, load_game, parse_gamedef
from protocol.state import CALL, FOLD, RAISE, State
from training.tabular.cfr import CFRConfig, TabularCFR

LEDUC = load_game("leduc")
#: FHP's structure (reversed blinds, two hole cards, a three-card flop, 5-card showdowns, three
#: raises a round) on an 8-card deck, so exact best response and exact LBR take seconds.
MINI_FHP = parse_gamedef("""GAMEDEF
limit
numPlayers = 2
numRounds = 2
blind = 2 1
raiseSize = 2 2
firstPlayer = 2 1
maxRaises = 3 3
numSuits = 2
numRanks = 4
numHoleCards = 2
numBoardCards = 0 3
END GAMEDEF
""", name="mini_fhp")


def fixed_strategy(game: Game, kind: str) -> np.ndarray:
    """Always call, or always raise (call where raising is illegal), as an infoset table."""
    legal = space_for(game).legal
    out = np.zeros(legal.shape)
    if kind == CALL:
        out[:, 1] = 1.0
    else:
        out[:, 2] = legal[:, 2]
        out[:, 1] = ~legal[:, 2]
    return out


def cfr_plus(game: Game, iterations: int) -> np.ndarray:
    solver = TabularCFR(game, CFRConfig("cfr+"))
    solver.run(iterations)
    return solver.average_strategy()


@cache
def policies(game: Game) -> dict[str, np.ndarray]:
    space = space_for(game)
    rng = np.random.default_rng(11)
    noise = rng.random(space.legal.shape) * space.legal
    return {
        "uniform": space.uniform_strategy(),
        "always-call": fixed_strategy(game, CALL),
        "always-raise": fixed_strategy(game, RAISE),
        "random": noise / noise.sum(axis=1, keepdims=True),
        "cfr+": cfr_plus(game, 30),
    }


# -- equity ---------------------------------------------------------------------------------


def brute_force_equity(game: Game, hole: tuple[int, ...], board: tuple[int, ...], opponent: tuple[int, ...]) -> float:
    rest = [c for c in game.deck if c not in hole + board + opponent]
    scores = []
    for runout in itertools.combinations(rest, game.total_board_cards - len(board)):
        final = list(board) + list(runout)
        mine, theirs = hand_strength(list(hole) + final), hand_strength(list(opponent) + final)
        scores.append(1.0 if mine > theirs else 0.5 if mine == theirs else 0.0)
    return float(np.mean(scores))


@pytest.mark.parametrize(("game", "hole", "board"), [
    (LEDUC, "Ks", ""), (LEDUC, "Qh", "Qs"), (MINI_FHP, "AsKh", ""), (MINI_FHP, "JhJs", "AhKsQs"),
    (load_game("holdem"), "Ah7d", "Kd9s2c5h"),
])
def test_enumerated_equity_equals_brute_force(game, hole, board):
    hole, board = cards_from_str(hole), cards_from_str(board)
    hands = PrivateHands(game)
    equity = checkdown_equity(game, hands, hole, board, LBRConfig(), np.random.default_rng(0))
    live = hands.disjoint(hole + board)
    assert not equity[~live].any()
    for row in np.flatnonzero(live)[:: max(1, live.sum() // 60)]:
        opponent = tuple(int(c) for c in hands.cards[row])
        assert equity[row] == pytest.approx(brute_force_equity(game, hole, board, opponent), abs=1e-12)


def test_sampled_equity_is_close_and_counted():
    """Above the enumeration budget runouts are sampled (and counted); HULH river-less turn
    equities from 4,000 sampled rivers stay within sampling error of the exact ones."""
    from bot.evaluation.lbr import EquityCounters

    game = load_game("holdem")
    hands = PrivateHands(game)
    hole, board = cards_from_str("Ah7d"), cards_from_str("Kd9s2c")
    exact = checkdown_equity(game, hands, hole, board, LBRConfig(), np.random.default_rng(0))
    counters = EquityCounters()
    sampled = checkdown_equity(game, hands, hole, board, LBRConfig(max_enumeration=0, runout_samples=4000),
                               np.random.default_rng(1), counters)
    assert (counters.sampled, counters.runouts_sampled, counters.enumerated) == (1, 4000, 0)
    live = hands.disjoint(hole + board)
    assert np.abs(sampled - exact)[live].max() < 0.05
    uniform = live / live.sum()
    assert abs(uniform @ sampled - uniform @ exact) < 0.005


# -- exact LBR never beats the exact best response -------------------------------------------


@pytest.mark.parametrize("name", ["uniform", "always-call", "always-raise", "random", "cfr+"])
def test_exact_lbr_is_at_most_the_best_response_on_leduc(name):
    strategy = policies(LEDUC)[name]
    best = exploitability(LEDUC, strategy).best_response_values
    agent = TabularPolicyAgent(LEDUC, strategy)
    for position in (0, 1):
        assert exact_lbr_value(LEDUC, agent, position) <= best[position] + 1e-9


@pytest.mark.parametrize("name", ["uniform", "always-call", "always-raise", "random", "cfr+"])
def test_exact_lbr_is_at_most_the_best_response_on_mini_fhp(name):
    strategy = policies(MINI_FHP)[name]
    best = exploitability(MINI_FHP, strategy).best_response_values
    agent = TabularPolicyAgent(MINI_FHP, strategy)
    values = [exact_lbr_value(MINI_FHP, agent, position) for position in (0, 1)]
    for position in (0, 1):
        assert values[position] <= best[position] + 1e-9
    if name in ("uniform", "always-raise"):  # LBR exploits these heavily: most of the best response
        assert sum(values) > 0.5 * sum(best)


def test_lbr_exploits_uniform_leduc_close_to_the_best_response():
    """Uniform random Leduc: best response 2.0875 / 2.6597 chips per seat; LBR's exact values
    (checked once by the sampled run below) are below and close."""
    agent = TabularPolicyAgent(LEDUC, policies(LEDUC)["uniform"])
    assert exact_lbr_value(LEDUC, agent, 0) == pytest.approx(1.7296296296296, abs=1e-9)
    assert exact_lbr_value(LEDUC, agent, 1) == pytest.approx(2.6268518518518, abs=1e-9)


# -- an independent exact value against card-blind agents ------------------------------------


def scripted_lbr_value(game: Game, raises: bool, responder: int) -> float:
    """LBR against always-call (``raises`` False) or always-raise, computed independently: the
    agent's play ignores its cards, so the range stays uniform and never folds; LBR's utilities
    are call ``S(2e-1)``, raise ``S'(2e-1)``, fold ``-s``, with ``e`` the brute-force equity
    against every unseen hand. Every deal is enumerated and played on the rules engine."""
    equities: dict[tuple, float] = {}

    def equity(hole, board):
        if (hole, board) not in equities:
            rest = [c for c in game.deck if c not in hole + board]
            equities[hole, board] = float(np.mean([brute_force_equity(game, hole, board, opp)
                                                   for opp in itertools.combinations(rest, game.num_hole_cards)]))
        return equities[hole, board]

    k, total, deals = game.num_hole_cards, 0.0, 0
    for mine in itertools.combinations(game.deck, k):
        for theirs in itertools.combinations([c for c in game.deck if c not in mine], k):
            rest = [c for c in game.deck if c not in mine + theirs]
            for board in itertools.combinations(rest, game.total_board_cards):
                state = State(game, (mine, theirs) if responder == 0 else (theirs, mine), board)
                while not state.is_finished:
                    if state.actor != responder:
                        state.apply(RAISE if raises and state.can_raise() else CALL)
                        continue
                    e = equity(mine, state.visible_board())
                    choice, best = CALL, state.max_spent * (2 * e - 1)
                    if state.can_raise() and state.raise_to_amount() * (2 * e - 1) > best + TIE:
                        choice, best = RAISE, state.raise_to_amount() * (2 * e - 1)
                    if state.can_fold() and -state.spent[responder] > best + TIE:
                        choice = FOLD
                    state.apply(choice)
                total += state.payoffs()[responder]
                deals += 1
    return total / deals


@pytest.mark.parametrize("game", [LEDUC, MINI_FHP], ids=["leduc", "mini_fhp"])
@pytest.mark.parametrize("agent_class", [CallAgent, RaiseAgent])
def test_exact_lbr_against_card_blind_agents_equals_an_independent_calculation(game, agent_class):
    for position in (0, 1):
        expected = scripted_lbr_value(game, agent_class is RaiseAgent, position)
        assert exact_lbr_value(game, agent_class(game), position) == pytest.approx(expected, abs=1e-9)


# -- sampled runs -------------------------------------------------------------------------------


@pytest.mark.parametrize(("agent_class", "deals"), [(RandomAgent, 1000), (CallAgent, 600), (RaiseAgent, 600)])
def test_sampled_lbr_agrees_with_the_exact_value(agent_class, deals):
    agent = agent_class(LEDUC)
    result = run_lbr(LEDUC, agent, deals, seed=3)
    scale = 1000.0 / LEDUC.big_blind
    exact = [scale * exact_lbr_value(LEDUC, agent, p) for p in (0, 1)]
    for position in (0, 1):
        seat = result.seat(position)
        assert seat.n == deals and seat.low <= exact[position] <= seat.high
    both = result.overall()
    assert both.low <= sum(exact) / 2 <= both.high


def test_sampled_lbr_against_a_cfr_policy_agrees_with_the_exact_value():
    agent = TabularPolicyAgent(LEDUC, policies(LEDUC)["cfr+"])
    result = run_lbr(LEDUC, agent, 600, seed=5)
    exact = sum(exact_lbr_value(LEDUC, agent, p) for p in (0, 1)) / 2 * 1000.0 / LEDUC.big_blind
    assert result.overall().low <= exact <= result.overall().high


def test_runs_are_reproducible_resumable_and_play_both_seats_on_the_same_cards():
    agent = RandomAgent(LEDUC)
    whole = run_lbr(LEDUC, agent, 40, seed=9)
    part = run_lbr(LEDUC, agent, 15, seed=9)
    resumed = run_lbr(LEDUC, agent, 40, seed=9, result=part)
    assert resumed.chips == whole.chips and len(whole.chips) == 40
    assert run_lbr(LEDUC, agent, 40, seed=10).chips != whole.chips


def test_worker_processes_play_the_same_chips_in_deal_order_and_resume():
    """Two spawned workers (the agent resolved by name in each) give the one-process run's
    chips, counters and query counts, also when continuing a run made in this process."""
    config = LBRConfig(max_enumeration=0, runout_samples=30)  # sampled equities: the seeds matter
    whole = run_lbr(LEDUC, RandomAgent(LEDUC), 13, seed=4, config=config)
    part = run_lbr(LEDUC, RandomAgent(LEDUC), 3, seed=4, config=config)
    parallel = run_lbr_workers(LEDUC, "random", 13, 4, config, 2, resolve_agent, result=part)
    assert parallel.chips == whole.chips and parallel.counters == whole.counters
    assert (parallel.agent_queries, parallel.hands_queried) == (whole.agent_queries, whole.hands_queried)
    assert whole.counters.sampled > 0 and not parallel.interrupted


class CountingAgent(Agent):
    """Raises with a king or better, else calls: card-dependent, through the default loop."""

    name = "counting"

    def action_probabilities(self, view):
        strong = max(view.own_hole_cards) >= cards_from_str("Kh")[0]
        legal = self.legal_actions(view)
        return {RAISE: 1.0} if strong and RAISE in legal else {CALL: 1.0}


def test_the_range_follows_bayes_against_a_card_dependent_agent():
    """A deterministic agent reveals its hand class by acting; LBR's exact value matches the
    sampled one, and stays below the exact best response of the same policy."""
    agent = CountingAgent(LEDUC)
    space = space_for(LEDUC)
    table = np.zeros((space.num_infosets, 3))
    for i in range(space.num_infosets):
        strong = max(space.hole_cards(i)) >= cards_from_str("Kh")[0]
        table[i, 2 if strong and space.legal[i, 2] else 1] = 1.0
    best = exploitability(LEDUC, table).best_response_values
    exact = [exact_lbr_value(LEDUC, agent, p) for p in (0, 1)]
    assert all(exact[p] <= best[p] + 1e-9 for p in (0, 1))
    result = run_lbr(LEDUC, agent, 500, seed=2)
    scale = 1000.0 / LEDUC.big_blind
    assert result.overall().low <= scale * sum(exact) / 2 <= result.overall().high


def test_call_rounds_make_lbr_call_there():
    """With the first round call-only LBR never raises preflop: against always-call no bets go
    in before the flop, so the value is that of playing the flop alone (still below BR)."""
    config = LBRConfig(call_rounds=frozenset({0}))
    agent = CallAgent(LEDUC)
    value = exact_lbr_value(LEDUC, agent, 0, config)
    assert value < exact_lbr_value(LEDUC, agent, 0)
    result = run_lbr(LEDUC, agent, 30, seed=1, config=config)
    assert result.counters.enumerated > 0  # flop equities only


def test_hold_em_runs_with_sampled_preflop_equities():
    game = load_game("holdem")
    result = run_lbr(game, RaiseAgent(game), 2, seed=0, config=LBRConfig(runout_samples=200))
    assert result.deals == 2 and result.counters.sampled >= 1
    assert result.counters.runouts_sampled == 200 * result.counters.sampled


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_reports_saves_resumes_and_rejects_bad_options(tmp_path):
    runner = CliRunner()
    out = tmp_path / "lbr.json"
    first = runner.invoke(pokerbot, ["lbr", "call", "--game", "leduc", "--hands", "20", "--json", str(out), "--exact"])
    assert first.exit_code == 0, first.output
    assert "lower bound" in first.output and "exact LBR value" in first.output
    data = json.loads(out.read_text())
    assert data["deals"] == 20 and data["hands_per_seat"] == 20 and len(data["chips"]) == 20
    assert data["unit"] == "mbb/g" and "lower bound" in data["meaning"]
    more = runner.invoke(pokerbot, ["lbr", "call", "--game", "leduc", "--hands", "35", "--json", str(out), "--resume"])
    assert more.exit_code == 0, more.output
    resumed = json.loads(out.read_text())
    straight = run_lbr(LEDUC, CallAgent(LEDUC), 35, seed=0)
    assert [tuple(c) for c in resumed["chips"]] == straight.chips
    wrong = runner.invoke(pokerbot, ["lbr", "call", "--game", "leduc", "--hands", "40", "--seed", "1", "--json", str(out), "--resume"])
    assert wrong.exit_code == 2 and "seed" in wrong.output and len(wrong.output.strip().splitlines()) == 1
    bad = runner.invoke(pokerbot, ["lbr", "call", "--game", "leduc", "--call-rounds", "5"])
    assert bad.exit_code == 2 and "not a round" in bad.output
    unknown = runner.invoke(pokerbot, ["lbr", "nosuchagent", "--game", "leduc"])
    assert unknown.exit_code == 2 and "unknown agent" in unknown.output
