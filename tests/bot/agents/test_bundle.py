"""One policy bundle for every kind (bot/agents/bundle.py): manifest, checksums verified on load, paths
confined to the bundle, bounded architectures, export-policy for every kind, old runs still load."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from bot.agents.bundle import BUNDLE_FILE, BundleError, load_network, read_bundle
from bot.agents.tabular import load_policy
from bot.cli import main
from bot.errors import CorruptFileError, PokerbotError
from bot.registry import load_strategy, resolve_agent
from protocol.gamedef import load_game


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def nfsp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "nfsp-kuhn"
    result = invoke("train", "--algo", "nfsp", "--game", "kuhn", "--iterations", "30", "--seed", "2", "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def _manifest(run) -> dict:
    return json.loads((run / "policy" / BUNDLE_FILE).read_text())


def _train(out, *args: str) -> dict:
    """Run ``pokerbot train ARGS --threads 1 --out OUT``; the bundle manifest it wrote."""
    result = invoke("train", *args, "--threads", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    return _manifest(out)


def test_nfsp_run_writes_a_bundle_with_provenance_and_exports(nfsp_run, tmp_path) -> None:
    data = _manifest(nfsp_run)
    assert data["format"] == 2 and data["kind"] == "nfsp" and data["game_name"] == "kuhn.limit.2p"
    assert list(data["files"]) == ["nfsp_policy.pt"] and len(data["files"]["nfsp_policy.pt"]) == 64
    assert data["provenance"]["algorithm"] == "nfsp" and data["provenance"]["seed"] == 2
    assert data["provenance"]["iterations"] == 30 and data["provenance"]["config"]["steps"] == 30
    result = invoke("export-policy", str(nfsp_run), "--out", str(tmp_path / "nfsp.json"))
    assert result.exit_code == 0, result.output
    assert "(nfsp)" in result.output
    _, exported = load_policy(tmp_path / "nfsp.json")
    game, strategy = load_strategy(nfsp_run)
    assert game.name == "kuhn.limit.2p" and np.allclose(exported, strategy, atol=1e-9)


def _copy(run, tmp_path):
    import shutil

    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def test_a_bit_flipped_weight_file_is_caught_by_its_checksum(nfsp_run, tmp_path) -> None:
    run = _copy(nfsp_run, tmp_path)
    weights = run / "policy" / "nfsp_policy.pt"
    data = bytearray(weights.read_bytes())
    data[-200] ^= 0x10
    weights.write_bytes(bytes(data))
    result = invoke("export-policy", str(run), "--out", str(tmp_path / "x.json"))
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"error: {weights}: checksum mismatch (the file is damaged or was "
                                                  "changed after it was written)"]
    with pytest.raises(PokerbotError, match="checksum mismatch"):
        resolve_agent(str(run), load_game("kuhn"))


@pytest.mark.parametrize("name", ["../outside.pt", "/etc/passwd", "a/../../b.pt"])
def test_bundle_paths_stay_inside_the_bundle(nfsp_run, tmp_path, name: str) -> None:
    run = _copy(nfsp_run, tmp_path)
    manifest = _manifest(run)
    manifest["files"][name] = "0" * 64
    (run / "policy" / BUNDLE_FILE).write_text(json.dumps(manifest))
    with pytest.raises(CorruptFileError, match="(must be relative|leaves the bundle folder)"):
        read_bundle(run)


def test_old_nfsp_runs_without_a_manifest_still_load(nfsp_run, tmp_path) -> None:
    run = _copy(nfsp_run, tmp_path)
    (run / "policy" / BUNDLE_FILE).unlink()
    agent = resolve_agent(str(run), load_game("kuhn"))
    assert agent.name == "nfsp"
    assert invoke("export-policy", str(run), "--out", str(tmp_path / "old.json")).exit_code == 0


@pytest.mark.parametrize("architecture,match", [
    ({"group_sizes": [1], "bet_slots": 4, "width": 999_999_999}, "out of range"),
    ({"group_sizes": "1", "bet_slots": 4, "width": 8}, "needs group_sizes"),
    ({"group_sizes": [1], "bet_slots": 4, "width": -3}, "out of range"),
    ({"group_sizes": [1], "bet_slots": "x", "width": 8}, "needs group_sizes"),
    ({"width": 8}, "needs group_sizes"),
])
def test_absurd_or_malformed_architectures_are_one_line_errors(architecture, match) -> None:
    from pathlib import Path

    with pytest.raises(BundleError, match=match):
        load_network(architecture, {}, Path("bundle.json"))


def test_unknown_kind_and_format_are_named(nfsp_run, tmp_path) -> None:
    run = _copy(nfsp_run, tmp_path)
    manifest = _manifest(run)
    (run / "policy" / BUNDLE_FILE).write_text(json.dumps(manifest | {"format": 9}))
    with pytest.raises(BundleError, match="bundle format 9"):
        read_bundle(run)
    (run / "policy" / BUNDLE_FILE).write_text(json.dumps(manifest | {"kind": "alien"}))
    with pytest.raises(BundleError, match="unknown kind 'alien'"):
        resolve_agent(str(run), load_game("kuhn"))
    (run / "policy" / BUNDLE_FILE).write_text("[" * 100_000)
    with pytest.raises(BundleError, match="unreadable"):
        read_bundle(run)


def test_abstraction_runs_are_bundles_too(tmp_path) -> None:
    out = tmp_path / "abs"
    data = _train(out, "--algo", "abstraction", "--game", "leduc", "--size", "lossless", "--iterations", "2000")
    assert data["kind"] == "abstraction" and data["abstraction"] == "leduc_lossless"
    assert list(data["files"]) == ["average.npy"] and data["provenance"]["iterations"] == 2000
    exported = invoke("export-policy", str(out), "--out", str(tmp_path / "abs.json"))
    assert exported.exit_code == 0, exported.output
    final = [r for r in (json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()) if r.get("final")]
    from bot.evaluation.best_response import exploitability

    game, strategy = load_policy(tmp_path / "abs.json")
    report = exploitability(game, strategy)
    assert report.mbb(report.exploitability) == pytest.approx(final[-1]["exploitability_mbb"], rel=1e-6)
    agent = resolve_agent(str(out), load_game("leduc"))
    assert agent.name == "leduc_lossless"


def test_sdcfr_bundle_names_every_stack_file_and_catches_a_bit_flip(tmp_path) -> None:
    out = tmp_path / "sd"
    data = _train(out, "--algo", "sd-cfr", "--game", "kuhn", "--iterations", "3", "--traversals", "40")
    assert data["kind"] == "sd-cfr" and data["provenance"]["iterations"] == 3
    assert sorted(data["files"]) == sorted(f for entry in data["stack"] for f in entry.get("files", []))
    assert len(data["files"]) == 6
    stack_file = out / "policy" / data["stack"][2]["files"][1]
    raw = bytearray(stack_file.read_bytes())
    raw[len(raw) // 2] ^= 0x04
    stack_file.write_bytes(bytes(raw))
    result = invoke("exploit", str(out))
    assert result.exit_code == 2 and f"{stack_file}: checksum mismatch" in result.output


def test_tabular_bundle_round_trips_and_plays_for_a_custom_gamedef(tmp_path) -> None:
    """A ``tabular`` bundle carries its gamedef: a policy of a game that has no shipped name loads
    without --game, exports to the same table, plays, and a flipped bit is caught."""
    from bot.agents.infosets import space_for
    from bot.agents.tabular import save_policy_bundle
    from protocol.gamedef import parse_gamedef

    custom = parse_gamedef(load_game("kuhn").to_text(), source="test", name="my-kuhn")
    space = space_for(custom)
    rng = np.random.default_rng(3)
    strategy = rng.random((space.num_infosets, 3)) * space.legal
    strategy /= strategy.sum(axis=1, keepdims=True)
    root = tmp_path / "policy"
    data = save_policy_bundle(root, custom, strategy, {"algorithm": "cfr+", "seed": 3, "iterations": 7})
    assert data["format"] == 2 and data["kind"] == "tabular" and data["game_name"] == "my-kuhn"
    assert list(data["files"]) == ["policy.json"] and data["provenance"]["iterations"] == 7
    bundle = read_bundle(root)
    assert bundle.kind == "tabular" and bundle.game.to_text() == custom.to_text()
    game, loaded = load_strategy(root)
    assert game.name == "my-kuhn" and np.allclose(loaded, strategy, atol=1e-12)
    agent = resolve_agent(str(root), custom)
    assert np.allclose(agent.strategy, strategy, atol=1e-12)
    result = invoke("export-policy", str(root), "--out", str(tmp_path / "t.json"))
    assert result.exit_code == 0, result.output
    assert "(tabular)" in result.output
    assert np.allclose(load_policy(tmp_path / "t.json", custom)[1], strategy, atol=1e-12)
    with pytest.raises(PokerbotError, match="a tabular policy trained for my-kuhn, not leduc.limit.2p"):
        resolve_agent(str(root), load_game("leduc"))
    text = (root / "policy.json").read_text()
    (root / "policy.json").write_text(text.replace("0.", "1.", 1))
    with pytest.raises(CorruptFileError, match="checksum mismatch"):
        load_strategy(root)
