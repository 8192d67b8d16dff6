"""``pokerbot watch``'s data side: the read-only follower, the exact regret targets, Kuhn's
equilibrium family, and the model behind the advantage table (on a Kuhn run trained here)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.infosets import space_for
from bot.agents.network import DeepCFRNetwork
from bot.evaluation.best_response import exploitability
from protocol.cards import card_from_str
from protocol.gamedef import load_game
from training.tabular.cfr import CFRConfig, TabularCFR
from tui.watch import kuhn
from tui.watch.exact import ExactHistory
from tui.watch.model import WatchModel
from tui.watch.reader import RunReader, WatchError

KUHN = load_game("kuhn")


def make_run(path: Path, config: str = 'algo = "sd-cfr"\ngame = "kuhn"\n') -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.toml").write_text(config)
    return path


# -- the reader -------------------------------------------------------------------------------

def test_partial_last_line_is_kept_for_the_next_poll(tmp_path) -> None:
    run = make_run(tmp_path / "run")
    metrics = run / "metrics.jsonl"
    metrics.write_text('{"iteration": 1, "loss_p0": 0.5}\n{"iteration": 2, "lo')
    reader = RunReader.open(run)
    assert [r["iteration"] for r in reader.poll_metrics()] == [1]
    assert reader.poll_metrics() == []  # the torn line is not read twice, nor half
    with open(metrics, "a") as handle:
        handle.write('ss_p0": 0.25}\nnot json at all\n{"iteration": 3}\n')
    assert reader.poll_metrics() == [{"iteration": 2, "loss_p0": 0.25}, {"iteration": 3}]
    assert reader.bad_lines == [3]
    assert [r["iteration"] for r in reader.records] == [1, 2, 3]


def test_a_rewritten_shorter_metrics_file_is_read_again(tmp_path) -> None:
    """A resume truncates metrics.jsonl by writing a new file and renaming it over the old."""
    run = make_run(tmp_path / "run")
    (run / "metrics.jsonl").write_text("".join(json.dumps({"iteration": i}) + "\n" for i in (1, 2, 3)))
    reader = RunReader.open(run)
    reader.poll_metrics()
    replacement = run / "metrics.jsonl.tmp"
    replacement.write_text(json.dumps({"iteration": 1}) + "\n")
    os.replace(replacement, run / "metrics.jsonl")
    reader.poll_metrics()
    assert [r["iteration"] for r in reader.records] == [1]


def test_not_a_run_is_a_one_line_error(tmp_path) -> None:
    with pytest.raises(WatchError, match="no config.toml"):
        RunReader.open(tmp_path)
    with pytest.raises(WatchError, match="no such run directory"):
        RunReader.open(tmp_path / "missing")
    run = make_run(tmp_path / "odd", 'game = "kuhn"\n')
    with pytest.raises(WatchError, match="names no algorithm"):
        RunReader.open(run).kind  # noqa: B018


def test_checkpoint_mid_swap_keeps_the_last_complete_one(kuhn_run, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(kuhn_run, run)
    reader = RunReader.open(run)
    assert reader.poll_checkpoint() and reader.checkpoint.iteration == 6
    first = reader.checkpoint
    # the trainer's swap, step 1: the previous fallback goes, checkpoint -> checkpoint.old,
    # checkpoint.tmp being written
    shutil.rmtree(run / "checkpoint.old", ignore_errors=True)
    os.replace(run / "checkpoint", run / "checkpoint.old")
    (run / "checkpoint.tmp").mkdir()
    (run / "checkpoint.tmp" / "state.pt").write_bytes(b"half a file")
    assert not reader.poll_checkpoint() and reader.checkpoint is first  # same file, renamed
    # a moment with no complete checkpoint at all
    shutil.rmtree(run / "checkpoint.old")
    assert not reader.poll_checkpoint() and reader.checkpoint is first
    # a complete-looking checkpoint whose file is damaged is not taken either
    os.replace(run / "checkpoint.tmp", run / "checkpoint")
    (run / "checkpoint" / "COMPLETE").write_text("ok\n")
    assert not reader.poll_checkpoint() and reader.checkpoint is first


# -- exact regrets ----------------------------------------------------------------------------

@pytest.mark.parametrize("game_name", ["kuhn", "leduc"])
@pytest.mark.parametrize("algo, linear", [("cfr", False), ("linear-cfr", True)])
def test_exact_regrets_equal_the_tabular_solvers(game_name, algo, linear) -> None:
    """Fed the tabular solver's own strategy sequence, the accumulated regrets are its regrets
    (linear CFR's discounting t/(t+1) leaves sum_t t r^t / (T + 1))."""
    game = load_game(game_name)
    solver = TabularCFR(game, CFRConfig(algo))
    history = ExactHistory(game, linear_weighting=linear)
    history.add_entry(solver.space.uniform_strategy(), 1.0)
    iterations = 4
    for t in range(iterations):
        solver.iterate()
        history.add_entry(solver.current_strategy(), t + 2.0)
    scale = iterations + 1 if linear else 1
    np.testing.assert_allclose(history.regret_sum / scale, solver.regrets, atol=1e-12)
    assert np.abs(solver.regrets).max() > 0.1


def test_reach_of_kuhn_infosets_under_uniform_play() -> None:
    """pi_-i(I): chance 1/3 for one's own card; after one opponent action, half of that."""
    history = ExactHistory(KUHN, linear_weighting=False)
    uniform = history.space.uniform_strategy()
    history.add_entry(uniform, 1.0)
    history.add_entry(uniform, 2.0)
    reach = dict(zip(history.space.keys, history.space.from_dense(history.reach_sum), strict=True))
    assert reach["Ks||"] == pytest.approx(1 / 3)
    assert reach["Ks||c"] == pytest.approx(1 / 6) and reach["Qs||cr"] == pytest.approx(1 / 6)


# -- Kuhn's equilibrium family ------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, 0.1, 1 / 6, 1 / 3])
def test_every_member_of_the_family_is_a_nash_equilibrium(alpha) -> None:
    space = space_for(KUHN)
    report = exploitability(KUHN, kuhn.equilibrium(space, alpha))
    assert report.nash_conv == pytest.approx(0.0, abs=1e-12)
    assert report.game_value == pytest.approx(-1 / 18)


def test_off_family_strategies_are_exploitable() -> None:
    space = space_for(KUHN)
    strategy = kuhn.equilibrium(space, 0.2)
    row = space.index("Ks||cr")
    strategy[row] = [0.2, 0.8, 0.0]  # call the middle card too often for alpha = 0.2
    assert exploitability(KUHN, strategy).nash_conv > 1e-3
    assert kuhn.alpha_of(kuhn.equilibrium(space, 0.25), space) == pytest.approx(0.25)
    assert kuhn.target_range("Ks||cr") == pytest.approx((1 / 3, 2 / 3))


# -- the model on a real run --------------------------------------------------------------------

def loaded_model(run: Path) -> WatchModel:
    model = WatchModel(RunReader.open(run))
    model.poll()
    model.load_stack()
    return model


def test_advantages_equal_the_checkpoint_networks(kuhn_run) -> None:
    """The table's network column: the checkpoint's value networks evaluated here, infoset by
    infoset from its key, times the fit's logged target scale."""
    model = loaded_model(kuhn_run)
    state = torch.load(kuhn_run / "checkpoint" / "state.pt", weights_only=True)
    iteration = int(state["iteration"])
    assert model.iterations[-1] == iteration == 6
    shown, advantages = model.advantages_at(iteration)
    encoder = InfosetEncoder(KUHN)
    record = model.record(iteration)
    for index, key in enumerate(model.batch.space.keys):
        hole, _board, betting = key.split("|")
        node = encoder.tree.history.index(betting)
        player = int(encoder.tree.actor[node])
        net = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, int(model.config["width"]))
        net.load_state_dict(state["nets"][player])
        with torch.no_grad():
            out = net(torch.tensor([[card_from_str(hole)]]), torch.from_numpy(encoder.bets[node][None])).numpy()[0]
        legal = encoder.tree.legal[node]
        np.testing.assert_allclose(advantages.raw[index][legal], out[legal], rtol=1e-5, atol=1e-6)
        infoset = model.infoset(index, iteration)
        assert infoset.scale == record[f"target_scale_p{player}"]
        assert infoset.player == player


def test_the_history_replays_the_trainers_strategies(kuhn_run) -> None:
    """The SD-CFR average the model rebuilds from the stack equals the one the trainer
    accumulated in its checkpoint: the model saw exactly the trainer's sigma^1..sigma^7."""
    model = loaded_model(kuhn_run)
    state = torch.load(kuhn_run / "checkpoint" / "state.pt", weights_only=True)
    np.testing.assert_allclose(model.history.average.numerator, state["average"]["numerator"].numpy(), atol=1e-9)
    assert len(model.history.targets) == 6 and len(model.history.averages) == 7
    exact = model.exact_at(6)
    memory = model.memory_means[1]
    reached = ~np.isnan(exact).any(axis=1)
    assert reached.sum() == 12
    # the memory's mean target is an unbiased sample of the exact one: same signs where large
    for player in (0, 1):
        rows = (model.batch.space.player == player) & reached
        big = np.abs(exact[rows]) > 0.5
        assert (np.sign(memory[player][rows][big]) == np.sign(exact[rows][big])).all()


def test_deep_cfr_and_nfsp_runs_have_no_stack_history(tmp_path) -> None:
    nfsp = make_run(tmp_path / "nfsp", 'game = "kuhn"\neta = 0.1\nrl_capacity = 100\n')
    model = WatchModel(RunReader.open(nfsp))
    assert model.kind == "nfsp" and not model.small and model.history is None
    fhp = make_run(tmp_path / "fhp", 'algo = "sd-cfr"\ngame = "fhp"\n')
    model = WatchModel(RunReader.open(fhp))
    assert model.kind == "sd-cfr" and not model.small
