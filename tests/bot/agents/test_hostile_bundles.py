"""Hostile policy bundles: a manifest that is not an object, a game that is not a gamedef, JSON
nested 100,000 deep, stack weights that are negative or overflow, an implausibly long stack,
files the manifest does not list (so never hashed), an old format without checksums, and a
3-player game named like the 2-player one. ``pokerbot exploit`` (and every loader, which reads
files only through :meth:`bot.agents.bundle.Bundle.path`) answers each with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bot.agents.bundle import BUNDLE_FILE, BundleError, read_bundle
from bot.agents.deep_cfr import MAX_STACK_ENTRIES
from bot.agents.tabular import save_policy_bundle
from bot.cli import main
from protocol.gamedef import load_game

#: Kuhn for three players (four ranks), to be named like the two-player game.
KUHN_3P = (load_game("kuhn").to_text().replace("numPlayers = 2", "numPlayers = 3").replace("blind = 1 1", "blind = 1 1 1")
           .replace("numRanks = 3", "numRanks = 4"))


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def one_line_error(result, text: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0], result.output


def _copy(source: Path, target: Path, edit) -> Path:
    shutil.copytree(source, target)
    manifest = json.loads((target / BUNDLE_FILE).read_text())
    edited = edit(manifest)
    (target / BUNDLE_FILE).write_text(edited if isinstance(edited, str) else json.dumps(edited))
    return target


@pytest.fixture(scope="module")
def tabular(tmp_path_factory) -> Path:
    from bot.agents.infosets import space_for

    game = load_game("kuhn")
    root = tmp_path_factory.mktemp("bundles") / "tabular"
    save_policy_bundle(root, game, space_for(game).uniform_strategy(), {"algorithm": "test"})
    return root


def _stack(manifest: dict, **changes) -> dict:
    stack = [dict(entry) for entry in manifest["stack"]]
    for index, entry in changes.items():
        stack[int(index[1:])].update(entry)
    return manifest | {"stack": stack}


@pytest.mark.parametrize(("edit", "text"), [
    (lambda m: "[1]", "not a bundle manifest (a JSON object)"),
    (lambda m: m | {"game": 5}, "missing or invalid fields 'game' / 'game_name'"),
    (lambda m: "[" * 100_000 + "]" * 100_000, "unreadable (maximum recursion depth"),
    (lambda m: _stack(m, e1={"weight": -5}), "stack entry 1 has weight -5; weights are positive finite numbers"),
    (lambda m: _stack(m, e1={"weight": "2"}), "stack entry 1 has weight '2'"),
    (lambda m: _stack(m, e1={"weight": 1e308}, e2={"weight": 1e308}), "the stack's weights sum past the largest number"),
    (lambda m: m | {"stack": [m["stack"][0]] * (MAX_STACK_ENTRIES + 1)}, "a stack of 100,001 entries is implausible"),
    (lambda m: m | {"stack": m["stack"] + [m["stack"][1]]}, "appears in two stack entries"),
    (lambda m: _stack(m, e1={"files": ["stack/p0_t000001.pt"]}), "stack entry 1 needs 'files': two network files"),
    (lambda m: m | {"files": {}}, "is not listed in 'files' (every file a bundle loads must be listed"),
    (lambda m: m | {"format": 1}, "bundle format 1 (written before checksums)"),
    (lambda m: m | {"format": True}, "bundle format True"),
])
def test_malformed_sdcfr_bundles_are_one_line_errors(kuhn_run, tmp_path, edit, text) -> None:
    bundle = _copy(kuhn_run / "policy", tmp_path / "b", edit)
    one_line_error(invoke("exploit", str(bundle)), text)


def test_an_unlisted_edited_policy_is_never_loaded(tabular, tmp_path) -> None:
    """``"files": {}`` plus an edited ``policy.json``: refused, not measured."""
    bundle = _copy(tabular, tmp_path / "b", lambda m: m | {"files": {}})
    policy = json.loads((bundle / "policy.json").read_text())
    first = next(iter(policy["policy"]))
    policy["policy"][first] = {"c": 1.0, "r": 0.0} if "c" in policy["policy"][first] else policy["policy"][first]
    (bundle / "policy.json").write_text(json.dumps(policy))
    one_line_error(invoke("exploit", str(bundle)), "'policy.json' is not listed in 'files'")
    one_line_error(invoke("match", "--game", "kuhn", "--agent", str(bundle), "--hands", "2"), "is not listed in 'files'")
    with pytest.raises(BundleError, match="not listed"):
        read_bundle(bundle).path("policy.json")


def test_every_listed_file_is_reachable_and_nothing_else(tabular) -> None:
    bundle = read_bundle(tabular)
    assert bundle.path("policy.json") == tabular / "policy.json"
    with pytest.raises(BundleError, match="'other.json' is not listed"):
        bundle.path("other.json")


def test_a_game_named_like_another_says_what_differs(tabular, tmp_path) -> None:
    bundle = _copy(tabular, tmp_path / "b", lambda m: m | {"game": KUHN_3P, "game_name": "kuhn.limit.2p"})
    result = invoke("match", "--game", "kuhn", "--agent", str(bundle), "--hands", "2")
    one_line_error(result, "trained for kuhn.limit.2p with num_players 3, stack 2147483647 2147483647 2147483647, "
                           "blind 1 1 1, num_ranks 4, not kuhn.limit.2p with num_players 2")


def test_weights_are_read_as_given_when_valid(kuhn_run) -> None:
    from bot.agents.deep_cfr import DeepCFRBundle

    loaded = DeepCFRBundle.load(kuhn_run / "policy")
    assert loaded.weights.tolist() == [float(e["weight"]) for e in loaded.stack]
    assert np.all(loaded.weights > 0)
