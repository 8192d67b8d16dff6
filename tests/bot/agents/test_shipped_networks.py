"""Network policies shipped under their own names (bot/shipped/named.py, scripts/ship_network.py):
a shipped copy plays exactly as its run, is verified on load, refuses another game and an
oversized source in one line, and is listed with its figures; the hold'em one plays legally."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bot.shipped.named as named
from bot.agents.bundle import BundleError
from bot.catalogue import agent_infos
from bot.errors import AgentNotFound, CorruptFileError
from bot.evaluation.match import run_in_process, run_wire
from bot.registry import load_plugins, load_strategy, resolve_agent, shipped_network_factory
from protocol.gamedef import load_game
from training.deep_cfr.config import PRESETS, DeepCFRConfig
from training.deep_cfr.trainer import DeepCFRTrainer

ROOT = Path(__file__).resolve().parents[3]
KUHN = load_game("kuhn")


@pytest.fixture(scope="module")
def kuhn_run(tmp_path_factory) -> Path:
    config = DeepCFRConfig(**{**PRESETS["kuhn"], "game": "kuhn", "algo": "deep-cfr", "iterations": 3, "sgd_steps": 20,
                              "average_sgd_steps": 50, "seed": 4})
    run = tmp_path_factory.mktemp("ship") / "run"
    DeepCFRTrainer.new(config, run, progress=False).train()
    return run


@pytest.fixture()
def shipped_root(tmp_path, monkeypatch) -> Path:
    """An empty folder of shipped networks for the test; the registry is filled first (from the
    real folder), so no name the test ships leaks into it."""
    load_plugins()
    root = tmp_path / "named"
    monkeypatch.setattr(named, "NAMED_ROOT", root)
    return root


def test_a_shipped_copy_plays_exactly_as_its_run(kuhn_run, shipped_root) -> None:
    folder = named.ship_network(kuhn_run, "kuhn_deep_cfr", "Deep CFR on Kuhn, 3 iterations", {"exploitability": "x"})
    assert sorted(p.name for p in folder.iterdir()) == ["average.pt", "bundle.json"]  # not the unlisted stack
    assert named.shipped_network_names() == ["kuhn_deep_cfr"]
    assert np.array_equal(load_strategy(folder)[1], load_strategy(kuhn_run)[1])
    agent = shipped_network_factory("kuhn_deep_cfr")(KUHN)
    assert agent.name == "kuhn_deep_cfr"
    original = resolve_agent(str(kuhn_run), KUHN)
    ours, theirs = (run_in_process(KUHN, (a, resolve_agent("random", KUHN)), ("a", "r"), 200, seed=3) for a in (agent, original))
    assert np.array_equal(ours.chips, theirs.chips)  # the same policy, the same common random numbers
    listed = {info.name: info for info in agent_infos("kuhn")}
    assert listed["kuhn_deep_cfr"].strength == "exploitability x" and listed["kuhn_deep_cfr"].status == "shipped"
    assert "kuhn_deep_cfr" not in {info.name for info in agent_infos("leduc")}


def test_a_shipped_copy_is_verified_and_plays_only_its_game(kuhn_run, shipped_root) -> None:
    folder = named.ship_network(kuhn_run, "kuhn_deep_cfr", "d", {})
    with pytest.raises(AgentNotFound, match="trained for kuhn.limit.2p, not leduc"):
        shipped_network_factory("kuhn_deep_cfr")(load_game("leduc"))
    weights = folder / "average.pt"
    weights.write_bytes(weights.read_bytes()[:-3] + b"xyz")
    with pytest.raises(CorruptFileError, match="average.pt: checksum mismatch"):
        shipped_network_factory("kuhn_deep_cfr")(KUHN)


def test_oversized_or_badly_named_sources_are_refused(kuhn_run, shipped_root, monkeypatch) -> None:
    with pytest.raises(BundleError, match="agent name"):
        named.ship_network(kuhn_run, "../x", "d", {})
    monkeypatch.setattr(named, "MAX_SHIPPED_BYTES", 100)
    with pytest.raises(BundleError, match="MB of policy files"):
        named.ship_network(kuhn_run, "kuhn_deep_cfr", "d", {})
    assert named.shipped_network_names() == []


def test_the_script_writes_the_figures(kuhn_run, tmp_path) -> None:
    """The script's one-line error on a malformed figure (its writing path is the function above)."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "ship_network.py"), str(kuhn_run), "--name", "k",
                           "--description", "d", "--strength", "no figure"], capture_output=True, text=True)
    assert done.returncode != 0 and "expected KEY=FIGURE" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("name", named.shipped_network_names())
def test_every_shipped_network_loads_and_plays_legally(name) -> None:
    """Each shipped name plays a short duplicate match against ``random`` in its game (the engine
    refuses an illegal action), in process and as an ACPC client of our dealer over loopback TCP
    (what ``pokerbot connect --agent NAME`` runs) with the same results, and stays within the
    package's size limit."""
    folder = named.shipped_network_folder(name)
    assert sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) <= named.MAX_SHIPPED_BYTES
    game = load_game(named.shipped_network_info(name)["game_name"])
    agent = resolve_agent(name, game)
    result = run_in_process(game, (agent, resolve_agent("random", game)), (name, "random"), 10, seed=1, duplicate=True)
    assert len(result.chips) == 20
    wire = run_wire(game, (lambda: resolve_agent(name, game), lambda: resolve_agent("random", game)), (name, "random"),
                    10, seed=1, duplicate=True)
    assert np.array_equal(wire.chips, result.chips)
