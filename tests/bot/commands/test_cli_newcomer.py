"""A newcomer's first commands: ``pokerbot agents``, the defaults every command agrees on,
``games`` at 80 columns, and ``exploit`` answering at once what it can do for each game."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot import catalogue
from bot.agents.bundle import manifest
from bot.cli import main
from bot.commands import exploit as exploit_command
from bot.registry import known_names, load_plugins
from protocol.gamedef import load_game


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


def test_help_lists_every_registered_name() -> None:
    load_plugins()
    assert sorted(catalogue.agent_names()) == known_names()
    for command in ("match", "play", "connect"):
        text = " ".join(invoke(command, "--help", env={"COLUMNS": "200"}).output.split())
        assert "abstraction_3e6," in text and "default," in text and "pokerbot agents" in text, command


def test_agents_lists_status_strength_and_cost_in_80_columns(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path))  # nothing built
    monkeypatch.chdir(tmp_path)  # no runs/ here
    result = invoke("agents")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    entries = [line for line in lines if not line.startswith(" ")]
    names = [line.split()[0] for line in entries if not line.startswith("pokerbot play")]
    load_plugins()
    assert sorted(names) == known_names()
    text = " ".join(result.output.split())
    assert "fhp_abstraction_4e4 [fhp] not built" in text
    assert "build: pokerbot train --algo abstraction --game fhp --size 4e4 --out runs/fhp_abstraction_4e4" in text
    assert "call [any game] built in Baseline: Always checks or calls" in text
    assert "runs/sd-cfr-leduc (absent)" in text
    assert "build: pokerbot train --algo nfsp --game" in text and "hold'em: LBR +2,781 mbb/g after 2 h of one core" in text


def test_agents_game_filter_and_built_abstraction(monkeypatch, tmp_path) -> None:
    """``--game leduc`` lists only what plays Leduc; a published abstraction is ``built`` with
    the iterations and exact exploitability its run recorded."""
    from bot.abstraction.spec import SPECS, policy_path

    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path))
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"iteration": 9000, "final": True, "exploitability_mbb": 12.345}) + "\n")
    policy = policy_path(SPECS["leduc_lossless"])
    policy.parent.mkdir(parents=True)
    policy.write_bytes(b"")
    (policy.parent / "meta.json").write_text("{}")
    policy.with_name("policy.json").write_text(json.dumps({"iterations": 9000, "run": str(run)}))
    (run / "config.toml").write_text('solver = "es-mccfr"\n')  # a policy published before its meta named the solver
    result = invoke("agents", "--game", "leduc")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "abstraction_3e6" not in text and "fhp_abstraction_4e4" not in text
    assert ("leduc_lossless [leduc] built Card abstraction, buckets per round lossless/lossless, solved by ES "
            "Linear MCCFR. strength: 9,000 iterations; exploitability 12.3 mbb/g (exact, NashConv/2)") in text
    assert "leduc_merged [leduc] not built" in text
    policy.with_name("policy.json").write_text(json.dumps({"iterations": 9000, "run": str(run), "solver": "pcs",
                                                           "scheme": "cfr+"}))
    text = " ".join(invoke("agents", "--game", "leduc").output.split())
    assert "lossless/lossless, solved by public chance sampling (CFR+). strength: 9,000 iterations" in text
    assert "leduc_merged [leduc] not built Card abstraction, buckets per round 2/3 (ehs2/ehs2), solved by public chance sampling." in text
    (run / "config.toml").unlink()
    policy.with_name("policy.json").write_text(json.dumps({"iterations": 9000, "run": str(run)}))
    text = " ".join(invoke("agents", "--game", "leduc").output.split())
    assert "lossless/lossless, solved. strength: 9,000 iterations" in text  # no record of its solver: none named


def test_match_agent_defaults_to_the_shipped_bot() -> None:
    """``pokerbot match --opponent X`` as typed: agent A is ``default`` (here Kuhn, where no bot
    ships, so the error says exactly that instead of "Missing option '--agent'")."""
    result = invoke("match", "--game", "kuhn", "--opponent", "call", "--hands", "10")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no bot ships for kuhn.limit.2p (shipped: ")


def test_game_defaults_agree() -> None:
    """holdem wherever a game is played; train has no default (a run's cost differs by hours)."""
    for command in ("match", "play", "connect"):
        options = {p.name: p for p in main.get_command(None, command).params}
        game = options.get("game") or options.get("game_option")
        assert game.default == "holdem", command
    result = invoke("train", "--algo", "sd-cfr", "--out", "nowhere")
    assert result.exit_code == 2 and "--game is required for a new run" in result.output


def test_games_fits_80_columns() -> None:
    result = invoke("games", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    rows = {line.split()[0]: line.split() for line in result.output.splitlines() if len(line.split()) == 6}
    assert rows["holdem"][1:] == ["4", "8/70/630/5670", "10,206", "1.597e+14", "10"]
    assert rows["leduc"][1:] == ["2", "6/30", "49", "468", "2"]
    assert "protocol/games/fhp.limit.2p.reverse_blinds.game" in result.output


def _bundle(tmp_path, alias: str):
    """A real bundle (uniform SD-CFR: its stack is sigma^1 only) for ``alias``."""
    from bot.agents.encoding import InfosetEncoder
    from bot.agents.network import DeepCFRNetwork

    game = load_game(alias)
    encoder = InfosetEncoder(game)
    architecture = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, 8).architecture()
    folder = tmp_path / alias / "policy"
    folder.mkdir(parents=True)
    (folder / "bundle.json").write_text(json.dumps(manifest("sd-cfr", game, {}, {}, architecture=architecture, argmax_fallback=True,
                                                                 stack=[{"weight": 1, "uniform": True}], average=None)))
    return tmp_path / alias


@pytest.mark.parametrize("alias, expected", [
    ("holdem", "exact exploitability of heads-up limit hold'em is out of reach"),
])  # FHP network runs are measured exactly now (tests/bot/flop/test_flop_network_policies.py)
def test_exploit_on_big_games_answers_before_loading(tmp_path, monkeypatch, alias, expected) -> None:
    def must_not_load(*args):
        raise AssertionError("the strategy was loaded (FHP: 54 GiB, hold'em: far more)")

    monkeypatch.setattr(exploit_command, "load_strategy", must_not_load)
    path = _bundle(tmp_path, alias)
    result = invoke("exploit", str(path))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0]
    assert f"pokerbot lbr {path}" in lines[0] or f"pokerbot match --game {alias} --agent {path}" in lines[0] \
        or f"pokerbot match --agent {path}" in lines[0]


def test_exploit_on_a_run_without_a_finished_iteration(tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.toml").write_text('game = "leduc"\nalgo = "sd-cfr"\n')
    result = invoke("exploit", str(run))
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: {run}: the run has no finished iteration yet (no policy in {run / 'policy'}); "
                                     f"continue it with pokerbot train --resume {run}")


def test_exploit_of_a_uniform_leduc_bundle_is_the_uniform_figure(tmp_path) -> None:
    result = invoke("exploit", str(_bundle(tmp_path, "leduc")))
    assert result.exit_code == 0, result.output
    assert "= 1186.8" in result.output.replace("1186.79", "1186.8")


def test_solve_resume_takes_the_run_directory_like_train_resume(tmp_path) -> None:
    """``solve --resume RUN`` (train's shape) continues the run to the policy of a straight run."""
    resumed, straight = tmp_path / "a", tmp_path / "b"
    assert invoke("solve", "--game", "kuhn", "--iterations", "20", "--eval-every", "10", "--out", str(resumed)).exit_code == 0
    assert invoke("solve", "--resume", str(resumed), "--iterations", "40").exit_code == 0
    assert invoke("solve", "--game", "kuhn", "--iterations", "40", "--eval-every", "10", "--out", str(straight)).exit_code == 0
    policies = [json.loads((run / "policy" / "policy.json").read_text())["policy"] for run in (resumed, straight)]
    assert policies[0] == policies[1]
    assert json.loads((resumed / "policy" / "bundle.json").read_text())["provenance"]["iterations"] == 40
    result = invoke("solve", "--game", "kuhn")
    assert result.exit_code == 2 and "give --out RUN_DIR for a new solve or --resume RUN_DIR to continue one" in result.output


def test_match_against_a_run_without_a_finished_iteration_says_so(tmp_path) -> None:
    run = tmp_path / "run"
    (run / "policy").mkdir(parents=True)
    (run / "config.toml").write_text('game = "leduc"\nalgo = "sd-cfr"\n')
    result = invoke("match", "--game", "leduc", "--agent", str(run), "--hands", "10")
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: {run}: the run has no finished iteration yet (no policy in {run / 'policy'}); "
                                     f"continue it with pokerbot train --resume {run}")


def test_exploit_of_an_agent_name_says_how_to_measure_an_agent() -> None:
    result = invoke("exploit", "abstraction_3e6")
    assert result.exit_code == 2
    line = result.output.strip()
    assert line.startswith("error: abstraction_3e6 is an agent name, not a stored strategy")
    assert "pokerbot lbr abstraction_3e6 --game holdem" in line or "pokerbot match --game holdem --agent abstraction_3e6" in line
    assert invoke("exploit", "no-such-file").output.strip() == "error: no-such-file: no such file or directory"


def test_agents_names_the_full_width_solver_of_fhp_lossless(monkeypatch, tmp_path) -> None:
    """``fhp_lossless`` is published by the full-width flop solve (``solver = "flop_cfr"``), not
    by MCCFR: ``agents`` names that solver, its iteration count and its last exact measurement."""
    from bot.abstraction.spec import SPECS, policy_path

    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path))
    run = tmp_path / "run"
    run.mkdir()
    records = [{"iteration": 25, "exploitability_mbb": 40.5}, {"iteration": 30, "solve_s": 1.0},
               {"iteration": 50, "exploitability_mbb": 3.25}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    policy = policy_path(SPECS["fhp_lossless"])
    policy.parent.mkdir(parents=True)
    policy.write_bytes(b"")
    (policy.parent / "meta.json").write_text("{}")
    meta = {"solver": "flop_cfr", "iteration": 50, "config": {"algo": "dcfr"}, "state": {"exploitability_mbb": 9.0},
            "run": str(run)}
    policy.with_name("policy.json").write_text(json.dumps(meta))
    text = " ".join(invoke("agents", "--game", "fhp").output.split())
    assert ("fhp_lossless [fhp] built Card abstraction, buckets per round lossless/lossless, solved by full-width "
            "DCFR over every flop. strength: 50 iterations; exploitability 3.25 mbb/g (exact, NashConv/2)") in text
