"""The tabular CFR family reaches the known game values and low exploitability."""

import numpy as np
import pytest

from bot.agents.infosets import space_for
from bot.evaluation.best_response import exploitability
from protocol.gamedef import load_game
from training.tabular.cfr import CFRConfig, TabularCFR, regret_matching
from training.tabular.mccfr import ExternalSamplingMCCFR, MCCFRConfig

KUHN, LEDUC = load_game("kuhn"), load_game("leduc")
UNIFORM_LEDUC_MBB = 1186.8


def solved(game, algo, iterations):
    solver = TabularCFR(game, CFRConfig(algo))
    solver.run(iterations)
    return exploitability(game, solver.average_strategy())


def test_regret_matching():
    legal = np.array([False, True, True])
    assert np.allclose(regret_matching(np.array([5.0, 1.0, 3.0]), legal), [0, 0.25, 0.75])
    assert np.allclose(regret_matching(np.array([5.0, -1.0, 0.0]), legal), [0, 0.5, 0.5])


def test_vanilla_cfr_kuhn_value_is_minus_one_eighteenth():
    report = solved(KUHN, "cfr", 1000)
    assert report.game_value == pytest.approx(-1 / 18, abs=1e-3)
    assert report.mbb(report.exploitability) < 2.0


@pytest.fixture(scope="module")
def leduc_cfr_plus():
    return solved(LEDUC, "cfr+", 1200)


def test_cfr_plus_leduc_is_nearly_unexploitable(leduc_cfr_plus):
    assert leduc_cfr_plus.mbb(leduc_cfr_plus.exploitability) < 0.1


def test_cfr_plus_leduc_first_player_value(leduc_cfr_plus):
    assert leduc_cfr_plus.game_value == pytest.approx(-0.0856, abs=2e-4)


@pytest.mark.parametrize(("algo", "bound"), [("cfr", 15.0), ("linear-cfr", 8.0), ("dcfr", 0.5)])
def test_other_variants_converge_on_leduc(algo, bound):
    report = solved(LEDUC, algo, 400)
    assert report.mbb(report.exploitability) < bound
    assert report.game_value == pytest.approx(-0.0856, abs=5e-3)


def test_unknown_variant_is_rejected():
    with pytest.raises(ValueError, match="unknown CFR variant 'cfr-'"):
        CFRConfig("cfr-")


def test_average_is_uniform_where_never_reached():
    solver = TabularCFR(KUHN, CFRConfig("cfr"))
    solver.run(1)
    average = solver.average_strategy()
    space = space_for(KUHN)
    assert np.allclose(average.sum(axis=1), 1) and not (average * ~space.legal).any()


def test_es_mccfr_lowers_leduc_exploitability_by_orders_of_magnitude():
    solver = ExternalSamplingMCCFR(LEDUC, MCCFRConfig(seed=3))
    solver.run(300_000)
    report = exploitability(LEDUC, solver.average_strategy())
    assert report.mbb(report.exploitability) < UNIFORM_LEDUC_MBB / 40


def test_es_mccfr_kuhn_value_and_determinism():
    runs = []
    for _ in range(2):
        solver = ExternalSamplingMCCFR(KUHN, MCCFRConfig(seed=5, linear=False))
        solver.run(50_000)
        runs.append(solver.average_strategy())
    assert np.array_equal(runs[0], runs[1])
    report = exploitability(KUHN, runs[0])
    assert report.game_value == pytest.approx(-1 / 18, abs=5e-3)
    assert report.mbb(report.exploitability) < 15


def test_cfr_updates_do_not_depend_on_board_chunks():
    from bot.evaluation.best_response import PublicTree

    whole, chunked = TabularCFR(LEDUC, CFRConfig("dcfr")), TabularCFR(LEDUC, CFRConfig("dcfr"))
    chunked.public = PublicTree(chunked.space, max_elements=7)  # one Leduc board per chunk
    whole.run(5)
    chunked.run(5)
    assert np.allclose(whole.regrets, chunked.regrets, rtol=0, atol=1e-14)
    assert np.allclose(whole.strategy_sum, chunked.strategy_sum, rtol=0, atol=1e-14)
