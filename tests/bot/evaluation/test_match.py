"""Matches: in-process and over the wire give the same hands; duplicate pairs cancel card luck;
the ``pokerbot match`` and ``pokerbot report`` commands end to end."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.agents.base import CallAgent, RaiseAgent, RandomAgent
from bot.cli import main
from bot.evaluation.match import run_as_client, run_in_process, run_wire
from protocol.dealer import Dealer, DealerOptions
from protocol.gamedef import load_game
from protocol.match_log import read_match_log


def outcomes(result):
    return [(h.deal, h.mirrored, h.position, h.chips, h.record) for h in result.hands]


@pytest.mark.parametrize("game_name", ["leduc", "holdem"])
def test_wire_and_in_process_give_identical_hands(game_name: str) -> None:
    game = load_game(game_name)
    names = ("r1", "r2")
    local = run_in_process(
        game, (RandomAgent(game), RandomAgent(game)), names, 60, 11, duplicate=True
    )
    wire = run_wire(
        game, (lambda: RandomAgent(game), lambda: RandomAgent(game)), names, 60, 11, duplicate=True
    )
    assert outcomes(local) == outcomes(wire)
    assert len(local.hands) == 120
    other_seed = run_in_process(
        game, (RandomAgent(game), RandomAgent(game)), names, 60, 12, duplicate=True
    )
    assert outcomes(other_seed) != outcomes(local)


@pytest.mark.parametrize("agent", [CallAgent, RaiseAgent, RandomAgent])
def test_duplicate_agent_against_itself_cancels_exactly(agent) -> None:
    """Same strategy both sides + common random numbers: each deal's twin is the mirror image."""
    game = load_game("holdem")
    result = run_in_process(game, (agent(game), agent(game)), ("x", "y"), 200, 3, duplicate=True)
    chips = result.chips.reshape(-1, 2)
    assert (chips.sum(axis=1) == 0).all()
    assert chips.std() > 0  # the card luck itself is not zero


def test_in_process_log_matches_results(tmp_path: Path) -> None:
    game = load_game("leduc")
    log_path = tmp_path / "m.log"
    result = run_in_process(
        game,
        (RandomAgent(game), CallAgent(game)),
        ("a", "b"),
        50,
        2,
        duplicate=True,
        log_path=str(log_path),
    )
    first, mirror = read_match_log(log_path), read_match_log(tmp_path / "m.mirror.log")
    assert [h.value_of("a") for h in first.hands] == [
        h.chips for h in result.hands if not h.mirrored
    ]
    assert [h.value_of("a") for h in mirror.hands] == [h.chips for h in result.hands if h.mirrored]
    assert (
        first.score is not None and first.score[1] == ("a", "b") and mirror.score[1] == ("b", "a")
    )


def test_cli_match_duplicate_writes_json_and_png(tmp_path: Path) -> None:
    json_path, png_path, log_path = tmp_path / "m.json", tmp_path / "m.png", tmp_path / "m.log"
    result = CliRunner().invoke(
        main,
        [
            "match",
            "--game",
            "leduc",
            "--agent",
            "random",
            "--opponent",
            "raise",
            "--hands",
            "300",
            "--duplicate",
            "--seed",
            "4",
            "--json",
            str(json_path),
            "--plot",
            str(png_path),
            "--log",
            str(log_path),
        ],
    )
    assert result.exit_code == 0, result.output
    for label in ("all hands", "duplicate", "AIVAT", "95% CI"):
        assert label in result.output
    data = json.loads(json_path.read_text())
    assert len(data["per_hand"]["chips"]) == 600 and len(data["per_hand"]["aivat_chips"]) == 600
    assert data["config"]["seed"] == 4 and data["config"]["duplicate"] is True
    rows = {r["label"]: r for r in data["rows"]}
    assert rows["all hands"]["total_chips"] == sum(data["per_hand"]["chips"])
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # report on the logs reproduces the raw and duplicate rows
    report = CliRunner().invoke(
        main,
        [
            "report",
            str(log_path),
            str(tmp_path / "m.mirror.log"),
            "--player",
            "random",
            "--agent",
            "random",
            "--opponent",
            "raise",
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert report.exit_code == 0, report.output
    again = {r["label"]: r for r in json.loads((tmp_path / "r.json").read_text())["rows"]}
    for label in ("all hands", "position 0", "position 1", "duplicate", "AIVAT"):
        assert again[label]["mean"] == pytest.approx(rows[label]["mean"])
        assert again[label]["high"] == pytest.approx(rows[label]["high"])


def test_cli_match_wire_equals_in_process(tmp_path: Path) -> None:
    outputs = []
    for extra in ([], ["--wire"]):
        path = tmp_path / f"{len(extra)}.json"
        result = CliRunner().invoke(
            main,
            [
                "match",
                "--game",
                "kuhn",
                "--agent",
                "random",
                "--opponent",
                "random",
                "--hands",
                "100",
                "--seed",
                "8",
                "--json",
                str(path),
                *extra,
            ],
        )
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(path.read_text())["per_hand"])
    assert outputs[0] == outputs[1]


def test_cli_match_against_an_external_dealer(tmp_path: Path) -> None:
    """`--dealer HOST:PORT`: agent A is seat 1 of our dealer; the per-hand results are the log's."""
    game = load_game("leduc")
    options = DealerOptions(
        str(tmp_path / "ext"), "leduc", game, 40, 6, ("A", "B"), os_ports=True, quiet=True
    )
    dealer = Dealer(options, io.StringIO(), io.StringIO())
    ports = dealer.listen()
    status: list[int] = []
    server = threading.Thread(target=lambda: status.append(dealer.run()))
    server.start()
    opponent = threading.Thread(
        target=run_as_client, args=(game, CallAgent(game), "127.0.0.1", ports[1], 0), daemon=True
    )
    opponent.start()
    json_path = tmp_path / "ext.json"
    args = ["match", "--game", "leduc", "--agent", "random", "--dealer", f"127.0.0.1:{ports[0]}"]
    result = CliRunner().invoke(main, [*args, "--json", str(json_path)])
    server.join(30)
    assert result.exit_code == 0, result.output
    assert status == [0]
    log = read_match_log(tmp_path / "ext.log")
    assert json.loads(json_path.read_text())["per_hand"]["chips"] == [
        h.value_of("A") for h in log.hands
    ]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["match", "--game", "leduc", "--agent", "nosuch"])
    assert result.exit_code == 2 and result.output.startswith("error: unknown agent 'nosuch'")
    result = CliRunner().invoke(main, ["match", "--game", "nosuchgame", "--agent", "call"])
    assert result.exit_code == 2 and result.output.startswith("error: unknown game 'nosuchgame'")
    result = CliRunner().invoke(main, ["match", "--agent", "call", "--dealer", "nohost"])
    assert result.exit_code == 2 and "HOST:PORT" in result.output
    bad = tmp_path / "bad.log"
    bad.write_text("STATE:zz\n")
    result = CliRunner().invoke(main, ["report", str(bad)])
    assert result.exit_code == 2 and "bad.log:1" in result.output
