"""The strength signal of hold'em training runs (:mod:`training.contract.strength`): NFSP, SD-CFR and
Deep CFR runs log a duplicate head-to-head against the shipped bot (and LBR) in metrics.jsonl
at the configured cadence, with sane values, and the training clock leaves it out (Deep CFR: of
its SD-CFR policy each time, and of its average network whenever that is fitted)."""

from __future__ import annotations

import math
import time

import numba
import pytest
import torch

import training.contract.strength
from bot.errors import ConfigError
from bot.registry import AgentNotFound, resolve_agent
from protocol.gamedef import load_game
from training.abstraction.board_match import NotAbstractionPolicy
from training.contract.rundir import RunDir
from training.contract.strength import StrengthSettings, measure_strength, strength_reference
from training.deep_cfr.config import PRESETS as DEEP_CFR_PRESETS
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.trainer import DeepCFRTrainer
from training.nfsp.config import PRESETS as NFSP_PRESETS
from training.nfsp.config import NFSPConfig
from training.nfsp.trainer import train as train_nfsp

#: HULH chips a hand can move at most (4 bets of 10 on the turn and river, 2 x 2 before): 48 big
#: blinds, so any mbb/g figure lies within +-48,000.
MAX_MBB = 48_000
#: Seconds the fake clock jumps during every strength measurement.
JUMP = 10_000.0


@pytest.fixture
def slow_measurements(monkeypatch):
    """Every strength measurement takes JUMP seconds on time.perf_counter's clock: a trainer
    that counted it as training time would show it in its clock."""
    offset = [0.0]
    real_clock = time.perf_counter
    real_measure = training.contract.strength.measure_strength

    def measure(*args, **kwargs):
        out = real_measure(*args, **kwargs)
        offset[0] += JUMP
        return out | {"strength_s": out["strength_s"] + JUMP}

    monkeypatch.setattr(time, "perf_counter", lambda: real_clock() + offset[0])
    for module in ("training.nfsp.trainer", "training.deep_cfr.trainer"):
        monkeypatch.setattr(f"{module}.measure_strength", measure)
    return offset


def assert_sane_strength(record: dict, hands: int, lbr_hands: int = 0) -> None:
    assert record["h2h_reference"] == "default" and record["h2h_hands"] == 2 * hands
    assert abs(record["h2h_mbb"]) <= MAX_MBB and 0 <= record["h2h_ci_mbb"] < math.inf
    if lbr_hands:
        assert record["lbr_hands"] == 2 * lbr_hands and abs(record["lbr_mbb"]) <= MAX_MBB
    assert record["strength_s"] > 0


def test_nfsp_holdem_logs_head_to_head_off_the_clock(tmp_path, slow_measurements):
    config = NFSPConfig(**(NFSP_PRESETS["holdem"] | dict(
        game="holdem", steps=20, num_envs=4, eval_every=5, strength_every=10, strength_hands=3, rl_capacity=1000,
        sl_capacity=1000, batch_size=8, learn_every=8, checkpoint_every=20)))  # fmt: skip
    run = RunDir.create(tmp_path / "nfsp", config)
    train_nfsp(config, run)
    records = run.read_metrics()
    assert [r["iteration"] for r in records] == [5, 10, 15, 20]
    measured = [r for r in records if "h2h_mbb" in r]
    assert [r["iteration"] for r in measured] == [10, 20]
    for record in measured:
        assert_sane_strength(record, 3)
    assert slow_measurements[0] == 2 * JUMP and records[-1]["elapsed_s"] < JUMP
    assert (run.path / "strength.png").stat().st_size > 0


@pytest.mark.parametrize("algo", ["sd-cfr", "deep-cfr"])
def test_deep_cfr_holdem_logs_head_to_head_and_lbr_off_the_clock(tmp_path, slow_measurements, algo):
    config = DeepCFRConfig(**(DEEP_CFR_PRESETS["holdem"] | dict(
        game="holdem", algo=algo, iterations=2, traversals=4, traversal_batch=4, width=8, sgd_steps=2, batch_size=16,
        average_sgd_steps=2, average_batch_size=16, advantage_memory=1000, strategy_memory=1000, strength_every=1,
        strength_hands=2, strength_boards=0, strength_lbr_hands=1 if algo == "sd-cfr" else 0, threads=1)))  # fmt: skip
    records = DeepCFRTrainer.new(config, tmp_path / algo, progress=False).train()
    iterations = [r for r in records if "iteration" in r]
    assert [r["iteration"] for r in iterations] == [1, 2]
    for record in iterations:
        assert_sane_strength(record, 2, lbr_hands=1 if algo == "sd-cfr" else 0)
        assert record["elapsed_s"] < JUMP
    # Deep CFR also measures its average network once it is fitted (here: the closing fit)
    assert slow_measurements[0] == (3 if algo == "deep-cfr" else 2) * JUMP
    if algo == "deep-cfr":
        final = records[-1]
        assert final["average_h2h_reference"] == "default" and final["average_h2h_hands"] == 4
        assert abs(final["average_h2h_mbb"]) <= MAX_MBB
    assert (tmp_path / algo / "strength.png").stat().st_size > 0


def test_deep_cfr_holdem_measures_over_sampled_boards_as_its_preset_does(tmp_path):
    """The holdem preset measures by sampled boards (exact over hands and actions, both seats):
    every measurement plays the same boards, and the metrics say how many."""
    assert (DEEP_CFR_PRESETS["holdem"]["strength_every"], DEEP_CFR_PRESETS["holdem"]["strength_boards"]) == (5, 8)
    config = DeepCFRConfig(**(DEEP_CFR_PRESETS["holdem"] | dict(
        game="holdem", algo="sd-cfr", iterations=2, traversals=4, traversal_batch=4, width=8, sgd_steps=2, batch_size=16,
        advantage_memory=1000, strategy_memory=1000, strength_every=1, strength_boards=2, threads=1)))  # fmt: skip
    records = [r for r in DeepCFRTrainer.new(config, tmp_path / "run", progress=False).train() if "iteration" in r]
    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        assert record["h2h_boards"] == 2 and "h2h_hands" not in record and record["h2h_reference"] == "default"
        assert abs(record["h2h_mbb"]) <= MAX_MBB and 0 < record["h2h_ci_mbb"] < math.inf
    assert records[0]["h2h_mbb"] != records[1]["h2h_mbb"]  # the same boards, a different policy


def test_a_board_measurement_of_a_policy_against_itself_is_zero_and_repeats():
    """Duplicate over whole boards: a policy against itself wins in one seat what it loses in the
    other, on every board, so the estimate is 0; a second measurement plays the same boards."""
    game = load_game("holdem")
    settings = StrengthSettings(every=1, hands=0, lbr_hands=0, reference="default", seed=5, boards=3)
    reference = strength_reference(settings, game)
    measured = measure_strength(game, reference, reference, settings)
    assert measured["h2h_boards"] == 3 and measured["h2h_mbb"] == pytest.approx(0.0, abs=1e-9)
    network = resolve_agent("holdem_deep_cfr", game)
    numba_threads, torch_threads = numba.get_num_threads(), torch.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    torch.set_num_threads(3)
    try:
        other = measure_strength(game, network, reference, settings)
        # the match's grids set both pools' threads; the training after the measurement gets its own back
        assert (numba.get_num_threads(), torch.get_num_threads()) == (numba.config.NUMBA_NUM_THREADS, 3)
    finally:
        numba.set_num_threads(numba_threads)
        torch.set_num_threads(torch_threads)
    again = measure_strength(game, network, reference, settings)
    assert other["h2h_mbb"] == again["h2h_mbb"] and other["h2h_mbb"] < -50  # the network loses to default by ~240


def test_a_board_measurement_refuses_a_reference_it_cannot_read_before_training():
    game = load_game("holdem")
    settings = StrengthSettings(every=1, hands=0, lbr_hands=0, reference="call", seed=0, boards=2)
    with pytest.raises(NotAbstractionPolicy, match=r"strength_reference \(strength_boards\) 'call'"):
        strength_reference(settings, game)
    assert strength_reference(StrengthSettings(every=1, hands=0, lbr_hands=1, reference="call", seed=0), game) is None


def test_measurement_is_the_duplicate_match_of_the_same_deals():
    """Two measurements of one policy with one seed deal the same cards: equal figures."""
    from bot.agents.base import CallAgent, RaiseAgent

    game = load_game("holdem")
    settings = StrengthSettings(every=1, hands=20, lbr_hands=0, reference="raise", seed=3)
    first = measure_strength(game, CallAgent(game), RaiseAgent(game), settings)
    second = measure_strength(game, CallAgent(game), RaiseAgent(game), settings)
    assert first["h2h_mbb"] == second["h2h_mbb"] and first["h2h_hands"] == 40
    # card-blind agents: a deal and its seat-swapped twin play the same betting with the hands
    # exchanged, so each pair's chips cancel exactly (duplicate poker's point)
    assert first["h2h_mbb"] == 0.0 and first["h2h_ci_mbb"] == 0.0


def test_strength_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="strength_hands"):
        DeepCFRConfig(game="holdem", strength_hands=-1)
    with pytest.raises(ConfigError, match="strength_boards: one board gives no interval"):
        DeepCFRConfig(game="holdem", strength_boards=1)
    with pytest.raises(ConfigError, match="multiple of eval_every"):
        NFSPConfig(game="holdem", eval_every=1000, strength_every=1500)
    with pytest.raises(AgentNotFound, match="no bot ships for leduc"):
        DeepCFRTrainer.new(DeepCFRConfig(game="leduc", strength_every=1), tmp_path / "leduc", progress=False)
    assert not StrengthSettings(every=0, hands=10, lbr_hands=0, reference="default", seed=0).due(5)
    assert StrengthSettings(every=5, hands=10, lbr_hands=0, reference="default", seed=0).due(10)


def test_watch_overview_shows_the_latest_strength_line():
    from types import SimpleNamespace

    from tui.watch.panels.run import strength_line

    records = [{"iteration": 1}, {"iteration": 2, "h2h_mbb": -41.5, "h2h_ci_mbb": 30.2, "h2h_hands": 200, "h2h_reference": "default"},
               {"iteration": 3, "lbr_mbb": 812.0, "lbr_ci_mbb": 95.0, "lbr_hands": 40}]  # fmt: skip
    model = SimpleNamespace(records=records, kind="sd-cfr")
    assert strength_line(model, 1) is None
    assert strength_line(model, 2) == "strength at iteration 2: vs default [b]-42 ± 30[/b] mbb/g (200 hands, duplicate)"
    assert strength_line(model, 3) == "strength at iteration 3: LBR 812 ± 95 mbb/g (40 hands)"
    boards = SimpleNamespace(records=[{"iteration": 5, "h2h_mbb": -260.2, "h2h_ci_mbb": 70.1, "h2h_boards": 8,
                                       "h2h_reference": "default"}], kind="deep-cfr")  # fmt: skip
    assert strength_line(boards, 5) == "strength at iteration 5: vs default [b]-260 ± 70[/b] mbb/g (8 boards, exact over hands)"
