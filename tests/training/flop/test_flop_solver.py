"""The full-width flop solver and the per-flop best response on a reduced-deck FHP.

The game is FHP's betting (2 rounds, blinds 50/100, raise 100, 3 raises a round, 3 flop
cards) on a 10-card deck (2 suits x 5 ranks), small enough that :mod:`bot.evaluation.best_response`
walks every infoset and :mod:`training.tabular.cfr` solves it tabularly.
"""

import numpy as np
import pytest

from bot.agents.infosets import space_for
from bot.evaluation.best_response import exploitability
from bot.flop.best_response import flop_exploitability, flop_game_for, uniform_policy
from bot.flop.game import FlopGameError
from bot.flop.policies import expand_canonical, policy_strategy, strategy_policy
from protocol.gamedef import load_game, parse_gamedef
from training.flop.cfr import FlopCFR, FlopCFRConfig

#: FHP's betting on a 10-card deck (2 suits x 5 ranks): small enough for the dense best response.
TINY_FHP_TEXT = """GAMEDEF
limit
numPlayers = 2
numRounds = 2
blind = 100 50
raiseSize = 100 100
firstPlayer = 2 1
maxRaises = 3 3
numSuits = 2
numRanks = 5
numHoleCards = 2
numBoardCards = 0 3
END GAMEDEF
"""
TINY_FHP = parse_gamedef(TINY_FHP_TEXT, name="tiny_fhp")
#: Seat 0's game value (chips/hand) by tabular CFR+ (training.tabular.cfr, 600 iterations, exploitability
#: 0.255 mbb/g): the solver below must find the same value.
TABULAR_VALUE = -3.3277


def same_report(a, b, tol=1e-6):
    assert a.best_response_values == pytest.approx(b.best_response_values, abs=tol)
    assert a.game_value == pytest.approx(b.game_value, abs=tol)


@pytest.mark.parametrize("canonical", [False, True])
def test_uniform_equals_brute_force(canonical):
    fg = flop_game_for(TINY_FHP, canonical)
    brute = exploitability(TINY_FHP, space_for(TINY_FHP).uniform_strategy())
    same_report(flop_exploitability(fg, uniform_policy(fg), chunk=7), brute)


def test_random_tabular_policy_equals_brute_force():
    space = space_for(TINY_FHP)
    weights = np.random.default_rng(3).random((space.num_infosets, 3)) * space.legal
    strategy = weights / weights.sum(axis=1, keepdims=True)
    fg = flop_game_for(TINY_FHP, False)
    policy = strategy_policy(fg, strategy)
    same_report(flop_exploitability(fg, policy), exploitability(TINY_FHP, strategy))
    assert np.allclose(policy_strategy(fg, policy), strategy, atol=1e-6)


def test_canonical_path_refuses_a_policy_that_is_not_suit_invariant():
    fg = flop_game_for(TINY_FHP, True)
    policy = uniform_policy(fg)
    with pytest.raises(ValueError, match="suit-invariant"):
        flop_exploitability(fg, type(policy)(policy.preflop, policy.flop, False))


@pytest.fixture(scope="module")
def solved():
    solver = FlopCFR(TINY_FHP, FlopCFRConfig("dcfr"))
    for _ in range(150):
        solver.iterate()
    return solver


def test_solver_converges_to_the_tabular_value(solved):
    report = solved.exploitability()
    assert report.mbb(report.exploitability) < 1.5
    assert report.game_value == pytest.approx(TABULAR_VALUE, abs=0.01)


def test_canonical_solution_measured_by_brute_force(solved):
    """The canonical tables read on every raw flop give a full-game strategy whose exact
    exploitability (bot.evaluation.best_response, every infoset) is the canonical path's."""
    raw = flop_game_for(TINY_FHP, False)
    expanded = expand_canonical(solved.fg, solved.average_policy(), raw)
    strategy = policy_strategy(raw, expanded)
    same_report(exploitability(TINY_FHP, strategy), solved.exploitability(), tol=1e-5)


def test_canonical_solve_equals_all_flops_solve():
    """Iterate for iterate, solving 60 canonical flops with weights equals solving all 120.
    (Only the first iterations are compared: later, a regret that is exactly 0 on one path is
    1e-16 on the other, and regret matching turns that into a different strategy.)"""
    canonical, raw = (FlopCFR(TINY_FHP, FlopCFRConfig("dcfr", canonical=c)) for c in (True, False))
    assert canonical.fg.num_flops < raw.fg.num_flops == 120
    for _ in range(3):
        canonical.iterate()
        raw.iterate()
        same_report(canonical.exploitability(), raw.exploitability(), tol=1e-9)


def test_cfr_plus_keeps_regrets_non_negative(solved):
    solver = FlopCFR(TINY_FHP, FlopCFRConfig("cfr+"))
    for _ in range(3):
        solver.iterate()
    assert solver.regrets.min() >= 0 and solver.pre_regrets.min() >= 0
    assert solver.regrets.max() > 0


def test_games_of_another_shape_are_refused():
    with pytest.raises(FlopGameError, match="two rounds"):
        flop_game_for(load_game("holdem"), True)


def test_solve_run_logs_exact_points_nodes_and_resumes_to_the_same_tables(tmp_path):
    """The run loop (training/flop/trainer.py) on the 10-card game: exact exploitability every
    ``eval_every`` iterations, the training clock under the one metric name, nodes touched per
    iteration as every pass's (decision node, live hand) pairs; a run stopped at 6 iterations
    and resumed to 12 ends with the tables of an uninterrupted 12-iteration run, and its
    published policy measures what the run logged."""
    from bot.flop.policies import solve_policy
    from bot.run_files import ELAPSED_METRIC
    from training.contract.rundir import RunDir
    from training.flop.trainer import FlopSolveConfig, solve

    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    config = FlopSolveConfig(game=str(gamedef), iterations=12, eval_every=6, threads=1)
    whole = solve(config, RunDir.create(tmp_path / "whole", config))
    part = RunDir.create(tmp_path / "part", config)
    solve(FlopSolveConfig(game=str(gamedef), iterations=6, eval_every=6, threads=1), part)
    resumed = solve(config, RunDir.open(part.path), resume=True)
    assert np.array_equal(resumed.average, whole.average) and np.array_equal(resumed.pre_average, whole.pre_average)
    records = RunDir.open(part.path).read_metrics()
    assert [r["iteration"] for r in records] == list(range(1, 13))
    fg = whole.fg
    live_pairs = int((fg.valid > 0).sum())  # (flop, hand) pairs with no shared card
    assert live_pairs == 60 * 21  # 10 cards: each 3-card flop leaves C(7, 2) hands
    per_pass = fg.preflop.num_decisions * fg.num_hands + fg.flop.num_decisions * live_pairs
    assert all(r["nodes_touched"] == 2 * per_pass for r in records)
    assert all(r[ELAPSED_METRIC] > 0 for r in records) and records[-1][ELAPSED_METRIC] > records[0][ELAPSED_METRIC]
    measured = [r for r in records if "exploitability_mbb" in r]
    assert [r["iteration"] for r in measured] == [6, 12] and measured[1]["exploitability_mbb"] < measured[0]["exploitability_mbb"]
    report = flop_exploitability(fg, solve_policy(fg, part.path))
    assert report.mbb(report.exploitability) == pytest.approx(measured[1]["exploitability_mbb"], abs=1e-6)


def test_solve_run_is_an_agent_playing_its_canonical_tables_on_every_raw_flop(tmp_path):
    """``--agent RUN`` on a flop solve: its bundle (kind ``flop_solve``) loads, and on every raw
    flop and hand the agent plays the canonical tables read through the suit renaming that
    ``expand_canonical`` (checked against brute force above) uses; legal and suit-invariant."""
    from bot.agents.bundle import read_bundle
    from bot.flop.solve_agent import FlopSolveAgent
    from bot.registry import resolve_agent
    from tests.bot.flop.test_flop_network import check_agent
    from training.contract.rundir import RunDir
    from training.flop.trainer import FlopSolveConfig, solve

    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    game = load_game(str(gamedef))
    config = FlopSolveConfig(game=str(gamedef), iterations=8, eval_every=8, threads=1)
    solver = solve(config, RunDir.create(tmp_path / "run", config))
    assert read_bundle(tmp_path / "run").kind == "flop_solve"
    agent = resolve_agent(str(tmp_path / "run"), game)
    assert isinstance(agent, FlopSolveAgent)
    raw = flop_game_for(game, False)
    tables = expand_canonical(solver.fg, solver.average_policy(), raw).flop(0, raw.num_flops)
    node, d = int(raw.flop.decision_nodes[2]), 2
    checked = 0
    for b, flop in enumerate(raw.flops.tolist()):
        for h in np.flatnonzero(raw.valid[b] > 0):
            hole = tuple(raw.hands[h].tolist())
            played = agent.strategy_sums(node, hole, tuple(flop))
            expected = tables[b, d, h]
            assert played / played.sum() == pytest.approx(expected / expected.sum(), abs=1e-6)
            checked += 1
    assert checked == 120 * 21
    for d, node in enumerate(raw.preflop.decision_nodes.tolist()):
        for h, hole in enumerate(raw.hands.tolist()):
            assert np.array_equal(agent.strategy_sums(node, tuple(hole), ()), solver.pre_average[d, h])
    check_agent(agent, game)


def _stop_during_iteration(monkeypatch, stop, iteration: int) -> None:
    """A Ctrl-C (``stop.request()``) while the solver runs iteration ``iteration + 1``."""
    original = FlopCFR.iterate

    def iterate(self, progress):
        if self.iteration == iteration:
            stop.request()
        return original(self, progress)

    monkeypatch.setattr(FlopCFR, "iterate", iterate)


def test_a_stop_request_finishes_the_iteration_then_checkpoints_and_resumes_exactly(tmp_path, monkeypatch):
    """The run contract's interrupt policy on the FHP solve: a stop request during iteration 3
    lets it finish, checkpoints and publishes at 3 and returns (exit 0, not an error); resumed
    to 8 the tables equal an uninterrupted 8-iteration run's."""
    import io

    from training.contract.rundir import RunDir
    from training.contract.stop import StopRequest
    from training.flop.trainer import FlopSolveConfig, solve

    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    config = FlopSolveConfig(game=str(gamedef), iterations=8, eval_every=8, threads=1)
    whole = solve(config, RunDir.create(tmp_path / "whole", config))
    stop = StopRequest(stream=io.StringIO())
    stop.clock = lambda: 0.0  # the grace period never runs out: the iteration finishes
    _stop_during_iteration(monkeypatch, stop, 2)
    part = RunDir.create(tmp_path / "part", config)
    stopped = solve(config, part, stop=stop)
    assert stopped.iteration == 3 and part.policy_path.is_dir()
    monkeypatch.undo()
    resumed = solve(config, RunDir.open(part.path), resume=True)
    assert np.array_equal(resumed.average, whole.average) and np.array_equal(resumed.regrets, whole.regrets)


def _train(*args: str):
    from click.testing import CliRunner

    from bot.cli import main

    return CliRunner().invoke(main, ["train", *args])


def test_an_iteration_past_the_grace_period_is_abandoned_and_the_last_checkpoint_stands(tmp_path, monkeypatch):
    """Through the run contract's door (``pokerbot train --algo flop-cfr``): when the iteration
    in progress runs past the grace period it is abandoned, nothing of it is saved (no
    checkpoint of half-updated tables), the command says so and exits 0."""
    import training.contract.entry
    from training.contract.rundir import RunDir
    from training.contract.stop import StopRequest

    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    ticks = iter(range(0, 10_000, 100))  # every clock reading is 100 s after the last
    stop = StopRequest()
    stop.clock = lambda: float(next(ticks))
    _stop_during_iteration(monkeypatch, stop, 2)
    monkeypatch.setattr(training.contract.entry, "StopRequest", lambda: stop)
    run = tmp_path / "run"
    result = _train("--algo", "flop-cfr", "--game", str(gamedef), "--iterations", "8", "--threads", "1", "--out", str(run))
    assert result.exit_code == 0, result.output
    assert ("stop requested: the step in progress would have run on for more than 10 s, so it was abandoned; no "
            f"checkpoint was written yet, so a resume starts the run over; continue with: pokerbot train --algo "
            f"flop-cfr --resume {run}") in result.output
    assert RunDir.open(run).checkpoint_path is None  # checkpoint_seconds not reached: none written


def test_sigterm_checkpoints_exits_0_and_the_run_resumes_to_the_uninterrupted_tables(tmp_path, monkeypatch):
    """The one interrupt policy on the full-width solve, by a real signal: SIGTERM during
    iteration 3 lets it finish, checkpoints and publishes at 3, and the command exits 0 naming
    the command that continues; ``--resume --iterations 8`` then ends with the tables of an
    uninterrupted 8-iteration run (and may not change the seed)."""
    import signal

    from bot.agents.bundle import read_bundle
    from tests.conftest import signal_during
    from training.contract.rundir import RunDir
    from training.flop.trainer import FlopSolveConfig, solve

    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    config = FlopSolveConfig(game=str(gamedef), iterations=8, eval_every=8, threads=1)
    whole = solve(config, RunDir.create(tmp_path / "whole", config))
    signal_during(monkeypatch, FlopCFR, "iterate", 2, signal.SIGTERM)
    run = tmp_path / "part"
    args = ["--algo", "flop-cfr", "--game", str(gamedef), "--iterations", "8", "--threads", "1", "--out", str(run)]
    result = _train(*args)
    assert result.exit_code == 0, result.output
    assert f"stopped on request; checkpoint saved; continue with: pokerbot train --algo flop-cfr --resume {run}" in result.output
    assert [r["iteration"] for r in RunDir.open(run).read_metrics()] == [1, 2, 3]
    assert read_bundle(run).provenance["iterations"] == 3
    monkeypatch.undo()
    refused = _train("--algo", "flop-cfr", "--resume", str(run), "--seed", "3")
    assert refused.exit_code == 2 and "--seed cannot change a run on --resume" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    resumed = _train("--algo", "flop-cfr", "--resume", str(run), "--iterations", "8")
    assert resumed.exit_code == 0, resumed.output
    tables = RunDir.open(run).checkpoint_path
    assert np.array_equal(np.load(tables / "average.npy"), whole.average)
    assert np.array_equal(np.load(tables / "regrets.npy"), whole.regrets)


def test_the_lossless_fhp_abstraction_is_the_flop_solve_and_other_shapes_are_refused(tmp_path):
    """``--algo abstraction --game fhp --size lossless`` names FHP itself: the abstraction
    trainer routes it (and a resume of a flop-solve run recorded as ``abstraction`` by an older
    pokerbot) to ``flop-cfr``; Leduc's lossless abstraction stays an abstraction. A game of
    another shape is a one-line error that creates nothing."""
    from training.contract.rundir import RunDir
    from training.flop.trainer import route_lossless

    routed = route_lossless({"algo": "abstraction", "game": "fhp", "size": "lossless", "iterations": 5})
    assert routed == {"algo": "flop-cfr", "game": "fhp", "size": None, "iterations": 5}
    assert route_lossless({"algo": "abstraction", "game": "leduc", "size": "lossless"}) is None
    assert route_lossless({"algo": "abstraction", "game": "fhp", "size": "4e4"}) is None
    wrong = _train("--algo", "flop-cfr", "--game", "leduc", "--out", str(tmp_path / "x"))
    assert wrong.exit_code == 2 and "--algo flop-cfr solves flop hold'em-shaped games" in wrong.output
    assert len(wrong.output.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
    gamedef = tmp_path / "tiny_fhp.game"
    gamedef.write_text(TINY_FHP_TEXT)
    run = tmp_path / "old"
    assert _train("--algo", "flop-cfr", "--game", str(gamedef), "--iterations", "2", "--threads", "1",
                  "--out", str(run)).exit_code == 0
    (run / "run.json").write_text('{"format": 1, "algo": "abstraction"}\n')  # as the older pokerbot wrote it
    assert route_lossless({"algo": "abstraction", "resume": str(run)})["algo"] == "flop-cfr"
    resumed = _train("--algo", "abstraction", "--resume", str(run), "--iterations", "3")
    assert resumed.exit_code == 0, resumed.output
    assert "continue" not in resumed.output and [r["iteration"] for r in RunDir.open(run).read_metrics()] == [1, 2, 3]
