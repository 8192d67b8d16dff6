"""Bad input to ``match``, ``report``, ``connect`` and ``dealer`` is one line, before any work:
games a heads-up limit match cannot play, absurd hand counts, outputs in missing folders, logs
that are not a duplicate pair; a log cut off mid-line is reported on its complete hands."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.agents.base import CallAgent, RandomAgent
from bot.cli import main
from bot.evaluation.match import MAX_MATCH_HANDS, _schedule, run_in_process
from protocol.dealer import Dealer, DealerOptions
from protocol.gamedef import load_game

THREE_PLAYER = """GAMEDEF
limit
numPlayers = 3
numRounds = 1
blind = 1 1 1
raiseSize = 1
firstPlayer = 1
maxRaises = 1
numSuits = 1
numRanks = 4
numHoleCards = 1
numBoardCards = 0
END GAMEDEF
"""


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def test_three_player_game_is_refused_by_match_connect_and_report(tmp_path: Path) -> None:
    gamedef = tmp_path / "kuhn3.game"
    gamedef.write_text(THREE_PLAYER)
    one_line_error(
        run("match", "--game", str(gamedef), "--agent", "call", "--hands", "5"),
        "3-player game; matches are heads-up (2 players) only",
    )
    one_line_error(
        run("connect", "127.0.0.1", "9", "--game", str(gamedef)),
        "3-player game",
    )
    log = tmp_path / "three.log"
    log.write_text("STATE:0:ccc:Ks|Qs|Js:1|-1|0:a|b|c\n")
    one_line_error(run("report", str(log), "--game", str(gamedef)), "3-player game")


def test_no_limit_game_is_refused(tmp_path: Path) -> None:
    gamedef = tmp_path / "nl.game"
    gamedef.write_text(
        THREE_PLAYER.replace("limit\nnumPlayers = 3", "nolimit\nnumPlayers = 2").replace(
            "blind = 1 1 1", "blind = 1 2"
        )
    )
    one_line_error(
        run("match", "--game", str(gamedef), "--agent", "call"), "only limit games are playable"
    )


@pytest.mark.parametrize("hands", [str(10**22), str(MAX_MATCH_HANDS + 1)])
def test_absurd_hand_counts_are_refused_before_any_work(hands: str, tmp_path: Path) -> None:
    log = tmp_path / "m.log"
    one_line_error(
        run("match", "--game", "kuhn", "--agent", "call", "--hands", hands, "--log", str(log)),
        f"{int(hands)} hands: a match plays 1 to 10,000,000 hands",
    )
    assert not log.exists()


def test_schedule_is_streamed_not_built() -> None:
    """Asking for the first deals of a huge duplicate match costs nothing proportional to it."""
    first = list(itertools.islice(_schedule(10**22, duplicate=True), 5))
    assert first == [(0, False), (0, True), (1, False), (1, True), (2, False)]


@pytest.mark.parametrize("option", ["--log", "--json", "--plot"])
def test_outputs_in_missing_folders_are_refused(option: str, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "out.file"
    one_line_error(
        run("match", "--game", "kuhn", "--agent", "call", "--hands", "4", option, str(target)),
        f"{option} {target}: folder {target.parent} does not exist",
    )
    assert not (tmp_path / "no").exists()


def test_report_outputs_in_missing_folders_are_refused(tmp_path: Path) -> None:
    game = load_game("kuhn")
    log = tmp_path / "m.log"
    run_in_process(game, (CallAgent(game), CallAgent(game)), ("a", "b"), 4, 0, log_path=str(log))
    target = tmp_path / "missing" / "r.json"
    one_line_error(run("report", str(log), "--json", str(target)), "folder")
    assert not target.parent.exists()


def test_dealer_match_name_in_missing_folder(tmp_path: Path) -> None:
    name = str(tmp_path / "absent" / "match")
    one_line_error(
        run("dealer", name, "kuhn", "10", "1", "a", "b"),
        f"match name {name}: folder {tmp_path / 'absent'} does not exist",
    )
    # the Dealer itself (used in-process) stops with the reference's ERROR line, exit status 1
    game = load_game("kuhn")
    options = DealerOptions(name, "kuhn", game, 3, 1, ("a", "b"), os_ports=True)
    import io

    err = io.StringIO()
    dealer = Dealer(options, io.StringIO(), err)
    dealer.listen()
    assert dealer.run() == 1
    assert f"ERROR: {name}.log: cannot write (No such file or directory)" in err.getvalue()
    assert not (tmp_path / "absent").exists()


def duplicate_logs(tmp_path: Path, seed: int, stem: str = "m") -> tuple[Path, Path]:
    game = load_game("leduc")
    agents = (RandomAgent(game), CallAgent(game))
    log = tmp_path / f"{stem}.log"
    run_in_process(game, agents, ("r", "c"), 30, seed, duplicate=True, log_path=str(log))
    return log, tmp_path / f"{stem}.mirror.log"


def test_report_pairs_a_real_duplicate_match(tmp_path: Path) -> None:
    log, mirror = duplicate_logs(tmp_path, seed=3)
    result = run(
        "report", str(log), str(mirror), "--player", "r", "--json", str(tmp_path / "r.json")
    )
    assert result.exit_code == 0, result.output
    rows = {r["label"]: r for r in json.loads((tmp_path / "r.json").read_text())["rows"]}
    assert rows["duplicate"]["hands"] == 60


def test_report_refuses_logs_that_are_not_a_duplicate_pair(tmp_path: Path) -> None:
    log, _ = duplicate_logs(tmp_path, seed=3)
    other, other_mirror = duplicate_logs(tmp_path, seed=4, stem="other")
    one_line_error(
        run("report", str(log), str(other_mirror), "--player", "r"),
        "are not a duplicate pair: seeds 3 and 4",
    )
    # the same log twice: same cards, but the seats are not swapped
    one_line_error(run("report", str(log), str(log), "--player", "r"), "the seats are not swapped")
    # headers agree but the cards do not (a doctored header)
    doctored = tmp_path / "doctored.log"
    doctored.write_text(other_mirror.read_text().replace(" 30 4\n", " 30 3\n", 1))
    one_line_error(
        run("report", str(log), str(doctored), "--player", "r"), "was dealt different cards"
    )


def test_torn_last_line_is_reported_with_a_notice(tmp_path: Path) -> None:
    game = load_game("leduc")
    log = tmp_path / "m.log"
    run_in_process(game, (RandomAgent(game), CallAgent(game)), ("r", "c"), 20, 1, log_path=str(log))
    lines = log.read_text().splitlines(keepends=True)
    torn = (
        "".join(lines[:-2]) + lines[-2][:25]
    )  # 4 header lines, hands 0-18, then hand 19 cut (line 24)
    log.write_text(torn)
    result = run("report", str(log), "--player", "r", "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    assert "line 24 was cut off (no newline); reporting the 19 complete hands before it" in (
        " ".join(result.output.split())
    )
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["per_hand"]["chips"]) == 19


def test_five_thousand_digit_numbers_are_one_line_errors(tmp_path: Path) -> None:
    """Python refuses to convert integers over 4,300 digits with its own message; every parser
    bounds the digits first and names the problem."""
    huge = "9" * 5000
    log = tmp_path / "huge.log"
    log.write_text(f"STATE:{huge}:cc:Ks|Qs:1|-1:a|b\n")
    one_line_error(run("report", str(log)), "huge.log:1: bad hand number '9999")
    gamedef = tmp_path / "huge.game"
    gamedef.write_text(THREE_PLAYER.replace("numPlayers = 3", f"numPlayers = {huge}"))
    one_line_error(
        run("match", "--game", str(gamedef), "--agent", "call"),
        "key 'numPlayers' needs whole numbers of at most 19 digits",
    )
