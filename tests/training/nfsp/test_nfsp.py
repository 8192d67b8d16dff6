"""NFSP: the DQN target math, the transitions self-play stores, learning on Kuhn, resume, the
agent and the CLI."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import tomllib
import torch
from click.testing import CliRunner

from bot.agents.infosets import space_for
from bot.cli import main
from bot.evaluation.best_response import exploitability
from bot.registry import AgentNotFound, resolve_agent
from protocol.betting_tree import FOLD_END
from protocol.gamedef import load_game
from protocol.matchstate import parse_matchstate
from training.contract.entry import config_of, preset
from training.contract.rundir import RunDir
from training.nfsp.config import LEDUC_PAPER, NFSPConfig
from training.nfsp.diagnostics import best_response_quality, mixture_bias, window_q_strategy
from training.nfsp.learner import NFSP
from training.nfsp.steps import anticipatory, dqn_targets, q_learning_rate
from training.nfsp.trainer import train

KUHN = config_of("nfsp", preset("nfsp", "kuhn"))


def test_dqn_targets_hand_checked() -> None:
    """Three transitions: a terminal one (target = reward), and two where the online and target
    networks disagree on the best legal action at s' (fold is illegal in the first)."""
    reward = torch.tensor([1.5, 0.0, -1.0])
    done = torch.tensor([True, False, False])
    online = torch.tensor([[9.0, 9.0, 9.0], [5.0, 1.0, 2.0], [0.0, 3.0, 1.0]])
    target = torch.tensor([[7.0, 7.0, 7.0], [0.5, 4.0, 3.0], [2.0, -1.0, 6.0]])
    legal = torch.tensor([[False, False, False], [False, True, True], [True, True, True]])
    # double DQN: a* = argmax online over legal -> row 1: raise (2 > 1), row 2: call (3)
    double = dqn_targets(reward, done, online, target, legal, double=True)
    assert double.tolist() == [1.5, 0.0 + 3.0, -1.0 + -1.0]
    # plain DQN: max of the target net over legal -> row 1: call 4.0, row 2: raise 6.0
    plain = dqn_targets(reward, done, online, target, legal, double=False)
    assert plain.tolist() == [1.5, 4.0, 5.0]


def _descends(tree, node: int, ancestor: int) -> bool:
    while node > ancestor:
        node = int(tree.parent[node])
    return node == ancestor


@pytest.mark.parametrize("name", ["kuhn", "leduc"])
def test_stored_transitions_follow_the_game(name: str) -> None:
    """Every M_RL row is (s, a, r, s'): s' is the same player's next decision below s·a with
    reward 0, or the hand's end below s·a with the player's payoff in big blinds; M_SL holds
    only best-response decisions of the player."""
    config = dataclasses.replace(config_of("nfsp", preset("nfsp", name)), steps=40, num_envs=32, eta=0.5)
    learner = NFSP(config)
    for _ in range(40):
        learner.step()
    tree, bb = learner.env.tree, learner.game.big_blind
    for player, p in enumerate(learner.players):
        rows = {k: v[: len(p.replay)] for k, v in p.replay.data.items()}
        assert len(p.replay) > 100
        for node, action, reward, done, nxt in zip(rows["node"], rows["action"], rows["reward"], rows["done"],
                                                   rows["next_node"], strict=True):
            assert tree.actor[node] == player and tree.legal[node, action]
            child = int(tree.child[node, action])
            assert _descends(tree, int(nxt), child)
            if done:
                assert tree.is_terminal[nxt]
                spent = tree.spent[nxt] / bb
                if tree.kind[nxt] == FOLD_END:
                    expected = {-spent[player] if tree.folder[nxt] == player else spent[1 - player]}
                else:
                    expected = {-spent.min(), 0.0, spent.min()}
                assert any(math.isclose(reward, e) for e in expected)
            else:
                assert reward == 0 and tree.actor[nxt] == player
        sl = p.supervised.stored()
        assert len(sl["node"]) > 0 and (tree.actor[sl["node"]] == player).all()
        assert tree.legal[sl["node"], sl["action"]].all()


@pytest.mark.parametrize("eta", [0.0, 1.0])
def test_anticipatory_parameter_decides_who_feeds_the_average_policy(eta: float) -> None:
    """eta = 1: every decision is a best-response one and enters M_SL (closed transitions and
    the still-open ones); eta = 0: only the average policy acts and M_SL stays empty."""
    learner = NFSP(dataclasses.replace(KUHN, eta=eta, num_envs=16))
    for _ in range(10):
        learner.step()
    for player, p in enumerate(learner.players):
        opened = int(learner.pending[:, player].sum())
        expected = 0 if eta == 0.0 else int(learner.transitions[player]) + opened
        assert len(p.supervised) == expected


def test_eta_anneal_and_opponent_filter() -> None:
    """eta_final: eta moves linearly to eta_final over eta_anneal_steps steps, then stays, and
    decides each new hand's policies; rl_vs_average: a seat's M_RL keeps only the transitions of
    hands where the other seat followed Pi (none at eta = 1), while the learning rhythm still
    counts every transition."""
    config = dataclasses.replace(KUHN, eta=0.5, eta_final=0.1, eta_anneal_steps=100)
    assert [anticipatory(config, s) for s in (0, 50, 100, 10**6)] == pytest.approx([0.5, 0.3, 0.1, 0.1])
    assert anticipatory(KUHN, 10**6) == KUHN.eta
    learner = NFSP(dataclasses.replace(config, eta=1.0, eta_final=0.0, eta_anneal_steps=1, num_envs=16))
    learner.step()  # hands dealt after step 1 never use the best response
    for _ in range(30):
        learner.step()
    assert not learner.use_best_response.any()
    for eta in (0.0, 1.0):
        learner = NFSP(dataclasses.replace(KUHN, eta=eta, rl_vs_average=True, num_envs=16))
        for _ in range(30):
            learner.step()
        closed = learner.transitions
        assert closed.min() > 100
        stored = [len(p.replay) for p in learner.players]
        assert stored == ([0, 0] if eta == 1.0 else closed.tolist())
        assert (learner.since_learn == closed % KUHN.learn_every).all()  # rounds ran on every closed one


def test_linear_averaging_weighs_supervised_rows_by_their_step() -> None:
    """sl_averaging = linear: the rows a step adds to M_SL each weigh the step's number (1 for
    the first step), so the memory keeps them in proportion to it (tests/training/common/test_reservoir.py);
    uniform: every row weighs 1."""
    for averaging in ("linear", "uniform"):
        learner = NFSP(dataclasses.replace(KUHN, eta=0.5, num_envs=16, sl_capacity=50, sl_averaging=averaging))
        for _ in range(40):
            memories = [p.supervised for p in learner.players]
            before = [(m.seen, m.total_weight) for m in memories]
            learner.step()
            for memory, (seen, weight) in zip(memories, before, strict=True):
                step_weight = learner.step_count if averaging == "linear" else 1
                assert memory.total_weight - weight == (memory.seen - seen) * step_weight
        assert all(m.seen > m.capacity for m in memories)


def test_greedy_q_diagnostic_is_zero_for_exact_best_responses(monkeypatch) -> None:
    """best_response_quality measures the greedy Q policies against exact best responses: with
    Q replaced by each seat's exact best response to Pi the gap is 0 and the share 1, and the
    untrained greedy Q of a fresh learner falls short in both seats; mixture_bias is 0 at eta = 0."""
    from bot.evaluation.best_response import best_response_strategy

    learner = NFSP(dataclasses.replace(config_of("nfsp", preset("nfsp", "leduc")), num_envs=16))
    game, average = learner.game, learner.policy.strategy()
    report = exploitability(game, average)
    untrained = best_response_quality(learner, report)
    assert min(untrained["q_gap_mbb_0"], untrained["q_gap_mbb_1"]) > 10
    player = learner.policy.infosets.player
    exact = np.where((player == 0)[:, None], best_response_strategy(game, average, 0),
                     best_response_strategy(game, average, 1))
    monkeypatch.setattr("training.nfsp.diagnostics.greedy_q_strategy", lambda _: exact)
    quality = best_response_quality(learner, report)
    assert [quality[k] for k in ("q_gap_mbb_0", "q_gap_mbb_1")] == pytest.approx([0.0, 0.0], abs=1e-9)
    assert [quality[k] for k in ("q_share_0", "q_share_1")] == pytest.approx([1.0, 1.0])
    assert mixture_bias(learner, 0.0) == pytest.approx((0.0, 0.0), abs=1e-9)  # eta 0: the mixture is Pi
    assert min(mixture_bias(learner, 1.0)) > 10  # a best response to the (exact) greedy Q is not one to Pi


def test_tabular_q_on_a_large_window_is_a_best_response() -> None:
    """window_q_strategy, the benchmark's noise diagnostic: with Pi frozen (no learning) and eta
    0, both seats play the untrained Pi, which mixes over every action, so fitted-Q iteration on
    a 60k-transition window is a best response to the other seat's Pi up to the window's noise
    (at least 95% of the exact best response's gain), while the untrained Q network's greedy
    policy is far from one."""
    config = dataclasses.replace(KUHN, eta=0.0, rl_full_batch=True, rl_capacity=60_000, learn_every=10**9,
                                 num_envs=256)
    learner = NFSP(config)
    while min(len(p.replay) for p in learner.players) < config.rl_capacity:
        learner.step()
    report = exploitability(learner.game, learner.policy.strategy())
    tabular = best_response_quality(learner, report, window_q_strategy(learner))
    untrained = best_response_quality(learner, report)
    assert min(tabular["q_share_0"], tabular["q_share_1"]) > 0.95, tabular
    assert min(untrained["q_share_0"], untrained["q_share_1"]) < 0.5, untrained


def test_kuhn_learns_far_below_uniform(tmp_path) -> None:
    """A 1,000-step Kuhn run (about 27,000 hands) ends well under half the uniform policy's
    exploitability, and the metrics and plot are written."""
    game = load_game("kuhn")
    uniform = exploitability(game, space_for(game).uniform_strategy())
    config = dataclasses.replace(KUHN, steps=1000, eval_every=250, seed=3)
    run = RunDir.create(tmp_path / "run", config)
    train(config, run)
    records = run.read_metrics()
    assert [r["iteration"] for r in records] == [250, 500, 750, 1000]
    final = records[-1]["exploitability_mbb"]
    assert final < 0.5 * uniform.mbb(uniform.exploitability), (final, uniform)
    assert (run.path / "exploitability.png").stat().st_size > 1000


def _weights(learner: NFSP) -> list[torch.Tensor]:
    return [t.clone() for p in learner.players for m in (p.q, p.q_target, p.pi) for t in m.state_dict().values()]


@pytest.mark.parametrize("changes", [
    {},
    {"rl_full_batch": True, "rl_lr_decay_steps": 50},
    {"rl_full_batch": True, "fused": True, "optimizer": "sgd", "rl_lr": 0.1, "sl_lr": 0.05, "eta_final": 0.2,
     "eta_anneal_steps": 150, "sl_averaging": "linear", "sl_capacity": 400},
])
def test_resume_continues_exactly(tmp_path, changes: dict) -> None:
    """Stopping after 120 steps (checkpoint) and resuming to 240 gives the same networks,
    memories and metrics as one uninterrupted 240-step run (also with the exact Q step and a
    decaying Q learning rate, and with the compiled steps, whose weight buffer the checkpoint
    load must fill, an eta anneal and a full, linearly weighted M_SL)."""
    config = dataclasses.replace(KUHN, steps=240, eval_every=40, checkpoint_every=60, num_envs=32, seed=5, **changes)
    straight = train(config, RunDir.create(tmp_path / "a", config))
    half = dataclasses.replace(config, steps=120)
    run = RunDir.create(tmp_path / "b", half)
    train(half, run)
    resumed = train(config, RunDir.open(tmp_path / "b"), resume=True)
    assert resumed.step_count == straight.step_count == 240
    assert resumed.hands == straight.hands
    for a, b in zip(_weights(straight), _weights(resumed), strict=True):
        assert torch.equal(a, b)
    for p, q in zip(straight.players, resumed.players, strict=True):
        for name in p.replay.data:
            assert np.array_equal(p.replay.data[name], q.replay.data[name])
        assert np.array_equal(p.supervised.data["node"], q.supervised.data["node"])

    def strip(records: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in records]

    assert strip(RunDir.open(tmp_path / "a").read_metrics()) == strip(RunDir.open(tmp_path / "b").read_metrics())


def test_agent_plays_the_trained_average_policy(tmp_path, monkeypatch) -> None:
    """``nfsp`` resolves to $POKERBOT_RUNS/nfsp-<game>; its probabilities are the strategy
    table's; a missing run says how to train one."""
    game = load_game("kuhn")
    monkeypatch.setenv("POKERBOT_RUNS", str(tmp_path))
    with pytest.raises(AgentNotFound, match="pokerbot train --algo nfsp --game kuhn --out"):
        resolve_agent("nfsp", game)
    config = dataclasses.replace(KUHN, steps=60, eval_every=30, num_envs=16)
    learner = train(config, RunDir.create(tmp_path / "nfsp-kuhn", config))
    agent = resolve_agent("nfsp", game)
    space = space_for(game)
    table = learner.policy.strategy()
    view = parse_matchstate("MATCHSTATE:1:0:r:|Ks")
    probabilities = agent.action_probabilities(view)
    row = table[space.index("Ks||r")]
    assert list(probabilities) == ["f", "c"]
    assert probabilities["f"] == pytest.approx(row[0]) and probabilities["c"] == pytest.approx(row[1])
    by_path = resolve_agent(str(tmp_path / "nfsp-kuhn"), game)
    assert by_path.action_probabilities(view) == probabilities
    with pytest.raises(AgentNotFound, match="trained for kuhn.limit.2p, not leduc"):
        resolve_agent(str(tmp_path / "nfsp-kuhn"), load_game("leduc"))


def test_cli_trains_resumes_and_rejects_bad_input(tmp_path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(main, ["train", "--algo", "nfsp", "--game", "kuhn", "--iterations", "30",
                                  "--seed", "7", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "policy" / "nfsp_policy.pt").exists()
    result = runner.invoke(main, ["train", "--algo", "nfsp", "--iterations", "50", "--resume", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1]["iteration"] == 50 and lines[-1]["step"] == 50
    assert RunDir.open(out).config()["steps"] == 50 and RunDir.open(out).config()["seed"] == 7
    result = runner.invoke(main, ["train", "--algo", "nfsp", "--game", "kuhn", "--traversals", "3",
                                  "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "error: --traversals does not apply to --algo nfsp" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text("etaa = 0.2\n")
    result = runner.invoke(main, ["train", "--algo", "nfsp", "--game", "kuhn", "--config", str(bad),
                                  "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "unknown nfsp config key(s) etaa" in result.output
    other = tmp_path / "other.toml"
    other.write_text('game = "kuhn"\nsteps = 2\n')
    result = runner.invoke(main, ["train", "--algo", "nfsp", "--game", "leduc", "--config", str(other),
                                  "--out", str(tmp_path / "z")])
    assert result.exit_code == 2 and "is for game 'kuhn' but --game is 'leduc'" in result.output
    result = runner.invoke(main, ["train", "--algo", "nfsp", "--config", str(other), "--out", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output  # without --game the file's game is the run's game
    assert RunDir.open(tmp_path / "w").config()["game"] == "kuhn"


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="eta must be in"):
        NFSPConfig(eta=1.5)
    with pytest.raises(ValueError, match="num_envs must be positive"):
        NFSPConfig(num_envs=0)
    with pytest.raises(ValueError, match="q_loss must be mse or huber"):
        NFSPConfig(q_loss="l1")
    with pytest.raises(ValueError, match="q_loss = huber needs minibatch Q steps"):
        NFSPConfig(q_loss="huber", rl_full_batch=True)
    with pytest.raises(ValueError, match="rl_lr_decay_steps must be >= 0"):
        NFSPConfig(rl_lr_decay_steps=-1)
    with pytest.raises(ValueError, match="eta_final must be in"):
        NFSPConfig(eta_final=2.0, eta_anneal_steps=10)
    with pytest.raises(ValueError, match="eta_final needs eta_anneal_steps"):
        NFSPConfig(eta_final=0.1)
    with pytest.raises(ValueError, match="sl_averaging must be uniform or linear"):
        NFSPConfig(sl_averaging="exponential")


def test_q_learning_rate_decays_as_configured() -> None:
    """rl_lr / sqrt(1 + steps / rl_lr_decay_steps), applied to the Q optimizers at each learning
    round (every step here, so the last one ran at step 30); constant when the decay is 0."""
    config = dataclasses.replace(KUHN, rl_lr=0.2, rl_lr_decay_steps=10, num_envs=16, learn_every=1)
    assert q_learning_rate(config, 30) == pytest.approx(0.1)
    assert q_learning_rate(dataclasses.replace(config, rl_lr_decay_steps=0), 10**6) == 0.2
    learner = NFSP(config)
    for _ in range(31):
        learner.step()
    for p in learner.players:
        assert p.q_optimizer.param_groups[0]["lr"] == pytest.approx(0.1)
        assert p.pi_optimizer.param_groups[0]["lr"] == config.sl_lr


def test_interrupt_checkpoints_the_step_in_progress(tmp_path) -> None:
    """Ctrl-C (SIGINT) mid-run: the step in progress finishes, a checkpoint of exactly that step
    is written with its metrics line, and --resume continues from it."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    quick = tmp_path / "quick.toml"
    quick.write_text("eval_every = 20\nnum_envs = 16\ncheckpoint_every = 100000\n")
    command = [sys.executable, "-c", "from bot.cli import main; main()", "train", "--algo", "nfsp", "--game", "kuhn",
               "--config", str(quick), "--iterations", "100000", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    metrics = out / "metrics.jsonl"
    while not (metrics.exists() and metrics.read_text().strip()):
        assert process.poll() is None, process.communicate()[0]
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=120)[0]
    assert process.returncode == 0, output
    run = RunDir.open(out)
    last = run.read_metrics()[-1]["iteration"]
    state = torch.load(run.checkpoint_path / "state.pt", weights_only=True)
    assert state["step"] == last and last < 100000
    config = dataclasses.replace(config_of("nfsp", run.config()), steps=last + 10)
    resumed = train(config, run, resume=True)
    assert resumed.step_count == last + 10


def test_documented_paper_config_gives_the_paper_settings() -> None:
    """The ``nfsp-leduc-paper.toml`` of docs/algorithms/nfsp.md on top of the tuned Leduc preset
    is exactly the NFSP paper's Leduc configuration (``LEDUC_PAPER``)."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "algorithms" / "nfsp.md").read_text()
    block = page.split("# nfsp-leduc-paper.toml")[1].split("```")[0]
    from_file = tomllib.loads(block.split("\n", 1)[1])
    assert config_of("nfsp", preset("nfsp", "leduc") | from_file) == config_of("nfsp", LEDUC_PAPER | {"game": "leduc"})
    assert config_of("nfsp", preset("nfsp", "leduc")) != config_of("nfsp", LEDUC_PAPER | {"game": "leduc"})


def test_a_killed_run_plays_as_of_its_last_checkpoint(tmp_path) -> None:
    """Every checkpoint writes the policy bundle too, so a run killed outright (no Ctrl-C, no
    final save) still plays, as of that checkpoint."""
    import signal
    import subprocess
    import sys
    import time

    from bot.agents.bundle import read_bundle

    out = tmp_path / "run"
    quick = tmp_path / "quick.toml"
    quick.write_text("eval_every = 20\nnum_envs = 16\ncheckpoint_every = 40\ncheckpoint_seconds = 0\n")
    command = [sys.executable, "-c", "from bot.cli import main; main()", "train", "--algo", "nfsp", "--game", "kuhn",
               "--config", str(quick), "--iterations", "100000", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not (out / "policy" / "bundle.json").exists():
            assert process.poll() is None
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    bundle = read_bundle(out)
    assert bundle.kind == "nfsp" and bundle.provenance["iterations"] > 0 and bundle.provenance["iterations"] % 40 == 0
    kuhn = load_game("kuhn")
    probabilities = resolve_agent(str(out), kuhn).action_probabilities(parse_matchstate("MATCHSTATE:0:0::Kd|"))
    assert set(probabilities) == {"c", "r"} and sum(probabilities.values()) == pytest.approx(1.0)
