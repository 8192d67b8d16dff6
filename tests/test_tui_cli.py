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


def test_fallback_says_so_and_how_to_train(monkeypatch) -> None:
    monkeypatch.setitem(play.STRONGEST_FIRST, "leduc", ["no-such-agent"])
    agent, notice = play.strongest_opponent(LEDUC)
    assert agent.name == play.FALLBACK == "call"
    assert "pokerbot train --game leduc --algo sd-cfr --out runs/sd-cfr-leduc" in notice


@pytest.mark.parametrize(
    "args, message",
    [
        (["--game", "nosuch"], "unknown game 'nosuch'"),
        (["--game", "leduc", "--opponent", "nosuch"], "unknown agent 'nosuch'"),
        (["--connect", "127.0.0.1", "9", "--opponent", "call"], "exclude each other"),
    ],
)
def test_bad_input_is_one_line(args, message) -> None:
    result = CliRunner().invoke(main, ["play", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
