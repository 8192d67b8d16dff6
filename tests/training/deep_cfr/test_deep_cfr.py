"""Deep CFR / SD-CFR end to end: convergence on Kuhn and Leduc, the policy bundle, the CLI,
ablation switches, and resuming a killed run exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from bot.agents.deep_cfr import DeepCFRAgent, DeepCFRBundle, bundle_strategy
from bot.agents.tabular import load_policy
from bot.cli import main
from bot.evaluation.best_response import exploitability
from bot.registry import load_strategy, resolve_agent
from protocol.gamedef import load_game
from protocol.matchstate import parse_matchstate
from training.contract.entry import resolve_new
from training.deep_cfr.config import PRESETS, DeepCFRConfig
from training.deep_cfr.trainer import TRAINERS, DeepCFRTrainer

KUHN_UNIFORM_MBB = 458.333
LEDUC_UNIFORM_MBB = 1186.806
FAST_KUHN = dict(PRESETS["kuhn"], game="kuhn", sgd_steps=100, batch_size=256, average_sgd_steps=600)


def kuhn_config(**overrides) -> DeepCFRConfig:
    return DeepCFRConfig(**{**FAST_KUHN, **overrides})


def mbb(game_name: str, strategy: np.ndarray) -> float:
    report = exploitability(load_game(game_name), strategy)
    return report.mbb(report.exploitability)


@pytest.fixture(scope="module")
def kuhn_sdcfr(tmp_path_factory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("runs") / "kuhn-sd"
    trainer = DeepCFRTrainer.new(kuhn_config(algo="sd-cfr", iterations=15, seed=1), out, progress=False)
    return out, trainer.train()


def test_sdcfr_converges_on_kuhn(kuhn_sdcfr) -> None:
    _, records = kuhn_sdcfr
    curve = [r["sdcfr_exploitability_mbb"] for r in records]
    assert len(curve) == 15
    assert curve[-1] < 60.0, curve  # uniform play: 458.3 mbb/g
    assert curve[-1] < curve[0] / 3


def test_sdcfr_bundle_strategy_agent_and_export(kuhn_sdcfr, tmp_path) -> None:
    out, records = kuhn_sdcfr
    bundle = DeepCFRBundle.load(out)
    assert bundle.kind == "sd-cfr" and len(bundle.stack) == 16  # uniform sigma^1 + 15 iterations
    assert bundle.weights.tolist() == list(range(1, 17))  # linear CFR: weight = iteration
    # the exact average recomputed from the files equals the one tracked during training
    strategy = bundle_strategy(bundle)
    assert mbb("kuhn", strategy) == pytest.approx(records[-1]["sdcfr_exploitability_mbb"], rel=1e-9)
    game, loaded = load_strategy(out)  # what `pokerbot exploit RUN` evaluates
    assert np.allclose(loaded, strategy)
    # export-policy writes the same strategy as tabular JSON
    result = CliRunner().invoke(main, ["export-policy", str(out), "--out", str(tmp_path / "k.json")])
    assert result.exit_code == 0, result.output
    _, exported = load_policy(tmp_path / "k.json")
    assert np.allclose(exported, strategy, atol=1e-9)
    result = CliRunner().invoke(main, ["exploit", str(out)])
    assert result.exit_code == 0 and "mbb/g" in result.output
    # the agent: one stack entry per hand, probabilities over legal actions only
    agent = resolve_agent(str(out), load_game("kuhn"))
    assert isinstance(agent, DeepCFRAgent)
    view = parse_matchstate("MATCHSTATE:1:0:r:|Ks")
    draws = set()
    for hand in range(40):
        hand_view = parse_matchstate(f"MATCHSTATE:1:{hand}:r:|Ks")
        agent.begin_hand(hand_view)
        probs = agent.action_probabilities(view)
        assert set(probs) == {"f", "c"} and sum(probs.values()) == pytest.approx(1.0)
        draws.add(json.dumps(agent._entry, sort_keys=True))
        agent.end_hand(hand_view)
    assert len(draws) > 5  # different hands play different iterations' networks


def test_sdcfr_play_frequencies_match_the_exact_average(kuhn_sdcfr) -> None:
    """Sampling one network per hand (prob. proportional to weight) plays the average policy:
    at the first decision (own reach 1) the empirical action frequency equals the average."""
    out, _ = kuhn_sdcfr
    game = load_game("kuhn")
    agent = resolve_agent(str(out), game)
    space_strategy = bundle_strategy(agent.bundle)
    from bot.agents.infosets import space_for

    expected = space_strategy[space_for(game).index("Ks||")]
    counts = np.zeros(3)
    for hand in range(1500):
        view = parse_matchstate(f"MATCHSTATE:0:{hand}::Ks|")
        agent.begin_hand(view)
        probs = agent.action_probabilities(view)
        counts += [probs.get("f", 0.0), probs.get("c", 0.0), probs.get("r", 0.0)]
        agent.end_hand(view)
    assert np.allclose(counts / 1500, expected, atol=0.04)


def test_deep_cfr_average_network_converges_on_kuhn(tmp_path) -> None:
    trainer = DeepCFRTrainer.new(kuhn_config(algo="deep-cfr", iterations=12, seed=2), tmp_path / "r", progress=False)
    records = trainer.train()
    final = records[-1]
    assert final["average_exploitability_mbb"] < 100.0, final  # uniform: 458.3
    bundle = DeepCFRBundle.load(tmp_path / "r")
    assert bundle.kind == "deep-cfr" and bundle.average == "average.pt"
    assert mbb("kuhn", bundle_strategy(bundle)) == pytest.approx(final["average_exploitability_mbb"], rel=1e-6)
    assert (tmp_path / "r" / "exploitability.png").stat().st_size > 0
    # the run's value networks are its SD-CFR policy: a bundle of their own at policy/stack, whose
    # exact exploitability is the SD-CFR average the run logged, and an agent that plays
    stack = DeepCFRBundle.load(tmp_path / "r" / "policy" / "stack")
    assert stack.kind == "sd-cfr" and [e["weight"] for e in stack.stack] == list(range(1, 14))
    logged = [r["sdcfr_exploitability_mbb"] for r in records if "sdcfr_exploitability_mbb" in r][-1]
    assert mbb("kuhn", bundle_strategy(stack)) == pytest.approx(logged, rel=1e-9)
    agent = resolve_agent(str(tmp_path / "r" / "policy" / "stack"), load_game("kuhn"))
    assert isinstance(agent, DeepCFRAgent) and agent.name == "sd-cfr"


@pytest.mark.parametrize("fit_backend", ["auto", "torch"])
def test_leduc_small_budget_is_far_below_uniform(tmp_path, fit_backend: str) -> None:
    """Both training backends of merged batches converge (``auto`` is the fused kernels on the CPU)."""
    config = DeepCFRConfig(**{**PRESETS["leduc"], "game": "leduc", "algo": "sd-cfr", "iterations": 8,
                              "traversals": 1000, "sgd_steps": 150, "batch_size": 512, "seed": 0,
                              "fit_backend": fit_backend})
    records = DeepCFRTrainer.new(config, tmp_path / "r", progress=False).train()
    assert {r["fit_backend"] for r in records} == {"fused" if fit_backend == "auto" else "torch"}
    final = records[-1]["sdcfr_exploitability_mbb"]
    assert final < LEDUC_UNIFORM_MBB / 2, [r["sdcfr_exploitability_mbb"] for r in records]


def test_ablation_switches_are_honoured(tmp_path) -> None:
    config = kuhn_config(algo="sd-cfr", iterations=2, sgd_steps=5, from_scratch=False, argmax_fallback=False,
                         memory_mode="window", linear_weighting=False, advantage_memory=50)
    trainer = DeepCFRTrainer.new(config, tmp_path / "r", progress=False)
    first_net = None
    trainer.run_iteration(_NoProgress())
    first_net = trainer.nets[0]
    trainer.run_iteration(_NoProgress())
    assert trainer.nets[0] is first_net  # fine-tuned, not re-created
    assert trainer.advantage[0].mode == "window" and len(trainer.advantage[0]) == 50
    assert [e["weight"] for e in trainer.stack] == [1, 1, 1]  # no linear weighting
    trainer.save_checkpoint()
    state = torch.load(trainer.run.checkpoint_path / "state.pt", weights_only=True)
    assert state["optimizers"][0] is not None  # fine-tuning keeps Adam's state across iterations


class _NoProgress:
    def advance_iteration(self, *args) -> None: ...


def test_config_precedence_and_saved_config(tmp_path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text('traversals = 77\nwidth = 24\nseed = 5\n')
    config = resolve_new(TRAINERS["sd-cfr"], {"game": "kuhn", "config_path": str(toml), "seed": 9, "iterations": 3}).config
    assert (config.traversals, config.width, config.seed, config.iterations) == (77, 24, 9, 3)  # flags win
    assert config.sgd_steps == PRESETS["kuhn"]["sgd_steps"]  # the preset fills the rest
    toml.write_text("widht = 3\n")
    with pytest.raises(ValueError, match="unknown sd-cfr config key"):
        resolve_new(TRAINERS["sd-cfr"], {"game": "kuhn", "config_path": str(toml)})


def test_cli_errors_are_one_line(tmp_path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["train", "--game", "kuhn", "--algo", "sd-cfr", "--traversals", "0", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and result.output.strip().splitlines() == ["error: --traversals 0: must be at least 1"]
    result = runner.invoke(main, ["train", "--algo", "sd-cfr", "--resume", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "not a run directory" in result.output
    result = runner.invoke(main, ["export-policy", str(tmp_path), "--out", str(tmp_path / "p.json")])
    assert result.exit_code == 2 and "no bundle.json" in result.output


RESUME_TOML = """
game = "kuhn"
algo = "sd-cfr"
iterations = 25
traversals = 200
sgd_steps = 30
batch_size = 128
width = 16
threads = 1
advantage_memory = 3000
strategy_memory = 3000
seed = 4
"""
TIMING_KEYS = {"traversal_s", "training_s", "evaluation_s", "elapsed_s", "infosets_per_s"}


def _comparable(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


def test_killed_run_resumes_exactly(tmp_path) -> None:
    """SIGKILL a CLI run mid-way, resume it, and compare with an uninterrupted run: metrics,
    reservoir memories (full: reservoir replacement is active) and the SD-CFR stack match."""
    (tmp_path / "run.toml").write_text(RESUME_TOML)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    killed = tmp_path / "killed"
    process = subprocess.Popen(
        [sys.executable, "-c", "from bot.cli import main; main()", "train", "--algo", "sd-cfr",
         "--config", str(tmp_path / "run.toml"), "--out", str(killed)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    metrics = killed / "metrics.jsonl"
    while process.poll() is None and (not metrics.exists() or len(metrics.read_text().splitlines()) < 4):
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    done_at_kill = len(metrics.read_text().splitlines())
    assert done_at_kill < 25, "the run finished before it could be killed"

    resumed = DeepCFRTrainer.resume(killed, progress=False)
    assert resumed.iteration >= done_at_kill - 1  # at most the iteration in progress is lost
    resumed.train()

    config = resolve_new(TRAINERS["sd-cfr"], {"config_path": str(tmp_path / "run.toml")}).config
    reference = DeepCFRTrainer.new(config, tmp_path / "reference", progress=False)
    reference.train()

    assert _comparable(resumed.run.read_metrics()) == _comparable(reference.run.read_metrics())
    assert [r["iteration"] for r in resumed.run.read_metrics()] == list(range(1, 26))
    assert resumed.strategy_memory.seen == 0  # SD-CFR keeps no strategy memory
    for a, b in [(resumed.advantage[0], reference.advantage[0]), (resumed.advantage[1], reference.advantage[1])]:
        assert a.seen == b.seen and a.seen > a.capacity
        for name in a.data:
            assert np.array_equal(a.stored()[name], b.stored()[name]), name
    assert np.allclose(bundle_strategy(DeepCFRBundle.load(killed)), bundle_strategy(DeepCFRBundle.load(tmp_path / "reference")))


def test_deep_cfr_checkpoint_restores_every_memory(tmp_path) -> None:
    """Deep CFR also checkpoints its strategy memory (incremental row files, restored exactly)."""
    trainer = DeepCFRTrainer.new(kuhn_config(algo="deep-cfr", iterations=4, sgd_steps=10, average_sgd_steps=10,
                                             strategy_memory=300), tmp_path / "r", progress=False)
    trainer.train()
    assert trainer.strategy_memory.seen > trainer.strategy_memory.capacity  # replacement happened
    resumed = DeepCFRTrainer.resume(tmp_path / "r", progress=False)
    assert resumed.iteration == 4
    for a, b in zip(resumed.memories, trainer.memories, strict=True):
        assert a.seen == b.seen and all(np.array_equal(a.stored()[k], b.stored()[k]) for k in a.data)
    assert len(resumed.memories) == 3


def test_traversal_strategy_table_equals_the_networks(tmp_path) -> None:
    """Small games look sigma^t up per infoset; the table must be regret matching on the current
    networks' outputs at every input a traversal can reach (and uniform before a network)."""
    from bot.agents.network import regret_matching

    config = DeepCFRConfig(**{**PRESETS["leduc"], "game": "leduc", "iterations": 2, "traversals": 200, "sgd_steps": 20})
    trainer = DeepCFRTrainer.new(config, tmp_path / "r", progress=False)
    space, cards = trainer.batch.space, trainer.batch.cards.numpy()
    before = trainer.strategy_fn(0, space.node, cards)
    np.testing.assert_allclose(before, space.legal / space.legal.sum(1, keepdims=True))
    trainer.train()
    for player in (0, 1):
        rows = np.flatnonzero(trainer.batch.player == player)
        node = torch.from_numpy(space.node[rows].astype(np.int64))
        with torch.no_grad():
            advantages = trainer.nets[player](torch.from_numpy(cards[rows]), trainer.bets[node])
        expected = regret_matching(advantages, trainer.legal[node]).numpy()
        np.testing.assert_allclose(trainer.strategy_fn(player, space.node[rows], cards[rows]), expected, atol=1e-6)
    with pytest.raises(RuntimeError, match="not an infoset"):
        trainer.strategy_fn(0, space.node[:1], np.full((1, cards.shape[1]), 5))  # hole card 5 twice: impossible


def test_average_exponent_reweights_the_stack_and_nothing_else(kuhn_sdcfr, tmp_path) -> None:
    """``average_exponent = 2`` trains the same value networks as the linear run of the same
    seed (the weights only average them), writes weights t^2, and its logged exact
    exploitability is that of the linear run's strategies averaged with squared weights."""
    linear_out, _ = kuhn_sdcfr
    out = tmp_path / "kuhn-sd-t2"
    records = DeepCFRTrainer.new(kuhn_config(algo="sd-cfr", iterations=15, seed=1, average_exponent=2.0), out,
                                 progress=False).train()
    linear, squared = DeepCFRBundle.load(linear_out), DeepCFRBundle.load(out)
    assert squared.weights.tolist() == [float(t) ** 2 for t in range(1, 17)]
    for a, b in zip(linear.stack[1:], squared.stack[1:], strict=True):
        for file_a, file_b in zip(a["files"], b["files"], strict=True):
            state_a, state_b = (torch.load(root / name, weights_only=True)
                                for root, name in ((linear.root, file_a), (squared.root, file_b)))
            assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)
    reweighted = DeepCFRBundle.load(linear_out)
    for entry in reweighted.stack:
        entry["weight"] = float(entry["weight"]) ** 2
    assert mbb("kuhn", bundle_strategy(reweighted)) == pytest.approx(records[-1]["sdcfr_exploitability_mbb"], rel=1e-9)
    assert mbb("kuhn", bundle_strategy(squared)) != pytest.approx(mbb("kuhn", bundle_strategy(linear)), rel=1e-6)
    for bad in (-1.0, 4.5):
        with pytest.raises(ValueError, match="average_exponent must be from 0 to 4"):
            kuhn_config(average_exponent=bad)


def test_sgd_epochs_grows_each_fit_with_its_memory(tmp_path) -> None:
    """With ``sgd_epochs`` a value fit takes max(sgd_steps, ceil(epochs x rows / batch)) Adam steps,
    rows being the player's memory at that fit: the floor while the memory is small, then more
    steps as it fills, and the count each fit ran is in ``metrics.jsonl``."""
    config = kuhn_config(algo="sd-cfr", iterations=4, sgd_steps=3, sgd_epochs=0.5, batch_size=16, traversals=40)
    trainer = DeepCFRTrainer.new(config, tmp_path / "r", progress=False)
    ran: list[tuple[int, int]] = []
    fit = trainer.fit.fit

    def counting_fit(net, optimizer, memory, steps, *args, **kwargs):
        ran.append((len(memory), steps))
        return fit(net, optimizer, memory, steps, *args, **kwargs)

    trainer.fit.fit = counting_fit
    records = trainer.train()
    assert len(ran) == 8
    for player in (0, 1):
        rows = [r for r, _ in ran[player::2]]
        assert rows == sorted(rows) and rows[0] < rows[-1]  # each player's memory grows
    for rows, steps in ran:
        assert steps == max(3, -(-rows // 32))  # ceil(0.5 * rows / 16)
    assert ran[-1][1] > 3  # the memory outgrew the floor
    assert [r[f"sgd_steps_p{p}"] for r in records for p in (0, 1)] == [steps for _, steps in ran]
    with pytest.raises(ValueError, match="sgd_epochs must be 0 or positive"):
        kuhn_config(sgd_epochs=-1.0)
