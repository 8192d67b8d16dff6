"""``pokerbot play`` options: opponent choice and one-line errors (the TUI itself is driven in
test_tui_app.py; scripts/tui_smoke.sh runs the real command in tmux)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.commands import play
from protocol.gamedef import load_game

LEDUC = load_game("leduc")


def test_strongest_available_is_first_that_resolves(monkeypatch) -> None:
    monkeypatch.setitem(play.STRONGEST_FIRST, "leduc", ["no-such-agent", "runs/none-here", "raise", "random"])
    agent, notice = play.strongest_opponent(LEDUC)
    assert agent.name == "raise" and notice is None


def test_fallback_names_the_cheapest_real_opponent(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(play.STRONGEST_FIRST, "leduc", ["no-such-agent"])
    agent, notice = play.strongest_opponent(LEDUC)
    assert agent.name == play.FALLBACK == "call"
    assert notice.line == "Opponent: call (a calling station; nothing stronger built)"
    assert "pokerbot solve --game leduc --out runs/cfr-leduc" in notice.details
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path))  # no abstraction is built here
    monkeypatch.setitem(play.STRONGEST_FIRST, "fhp", ["no-such-agent"])
    agent, notice = play.strongest_opponent(load_game("fhp"))
    assert agent.name == "call"
    assert "fhp_abstraction_4e4" in notice.details and "--size 4e4 --out runs/fhp_abstraction_4e4" in notice.details
    assert "pokerbot train --game fhp --algo sd-cfr" not in notice.details  # not a run that takes hours


def test_default_comes_first_and_the_notice_names_the_shipped_bot(monkeypatch, tmp_path) -> None:
    """A shipped folder for Leduc (manifest + a registered kind): ``play`` picks it before any
    other candidate; its notice is one line (name and first measured figure, without its
    parenthesis) with the manifest's name, description and every figure as details."""
    import bot.shipped as shipped
    from bot import registry
    from bot.agents.base import RaiseAgent

    assert all(candidates[0] == "default" for candidates in play.STRONGEST_FIRST.values())
    folder = tmp_path / "leduc"
    folder.mkdir()
    (folder / "weights.txt").write_text("raise\n")
    shipped.write_manifest(folder, {"kind": "test-raise", "game": LEDUC.name, "name": "leduc-bot",
                                    "description": "always raises (a test bot).",
                                    "strength": {"exploitability": "2,000 mbb/g (exact, NashConv/2)",
                                                 "vs call": "+300 mbb/g"}}, ["weights.txt"])
    registry.register_shipped_kind("test-raise", lambda game, path, manifest: RaiseAgent(game))
    monkeypatch.setattr(shipped, "SHIPPED_ROOT", tmp_path)
    monkeypatch.setattr(shipped, "SHIPPED_GAMES", ("leduc",))
    agent, notice = play.strongest_opponent(LEDUC)
    assert agent.name == "leduc-bot" and isinstance(agent, RaiseAgent)
    assert notice.line == "Opponent: leduc-bot (shipped), exploitability 2,000 mbb/g"
    assert notice.details == ("Playing leduc-bot, the bot shipped for leduc.limit.2p: always raises (a test bot). "
                              "Measured: exploitability 2,000 mbb/g (exact, NashConv/2); vs call +300 mbb/g.")


def test_the_shipped_holdem_notice_is_one_short_line() -> None:
    """The real shipped hold'em bot's notice fits one line of a wide side panel (the whole
    provenance paragraph is the details) and quotes its first manifest figure."""
    from bot.shipped import shipped_manifest

    holdem = load_game("holdem")
    notice = play.shipped_notice(holdem)
    first_key, first_value = next(iter(shipped_manifest(holdem)["strength"].items()))
    assert notice.line.startswith("Opponent: pokerbot-hulh-1.4e7 (shipped), ")
    assert notice.line.endswith(f"{first_key} {first_value.split(' (')[0]}") and len(notice.line) <= 80
    assert "\n" not in notice.line and len(notice.details) > 4 * len(notice.line)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--game", "nosuch"], "unknown game 'nosuch'"),
        (["--game", "leduc", "--opponent", "nosuch"], "unknown agent 'nosuch'"),
        (["--connect", "127.0.0.1", "9", "--opponent", "call"], "exclude each other"),
        (["--game", "leduc", "--opponent", "call", "--log", "no/such/dir/x.log"], "folder no/such/dir does not exist"),
    ],
)
def test_bad_input_is_one_line(args, message) -> None:
    result = CliRunner().invoke(main, ["play", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
