"""Our dealer on loopback TCP: full matches on every shipped game, and clients that send garbage,
illegal actions, stall, disconnect or never say hello (spec §4), each handled as specified with a
complete log of every finished hand."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.agents.base import RandomAgent
from bot.evaluation.match import AgentClient
from protocol.acpc_client import ACPCConnection, ACPCConnectionError, ACPCProtocolError, Turn
from protocol.dealer import Dealer, DealerOptions
from protocol.gamedef import load_game
from protocol.match_log import read_match_log
from protocol.matchstate import parse_matchstate
from protocol.state import State

Client = Callable[[int], None]


def run_dealer(
    game_name: str,
    hands: int,
    clients: list[Client],
    tmp_path: Path,
    seed: int = 5,
    names=("a", "b"),
    **options,
):
    game = load_game(game_name)
    tmp_path.mkdir(parents=True, exist_ok=True)  # the dealer creates no folders
    dealer_options = DealerOptions(
        str(tmp_path / "m"), game_name, game, hands, seed, names, os_ports=True, **options
    )
    out, err = io.StringIO(), io.StringIO()
    dealer = Dealer(dealer_options, out, err)
    ports = dealer.listen()
    threads = [
        threading.Thread(target=client, args=(port,), daemon=True)
        for client, port in zip(clients, ports, strict=True)
    ]
    for thread in threads:
        thread.start()
    status = dealer.run()
    for thread in threads:
        thread.join(10)
    return status, out.getvalue(), err.getvalue(), read_match_log(tmp_path / "m.log")


def agent_client(game_name: str, seed: int = 0) -> Client:
    def play(port: int) -> None:
        game = load_game(game_name)
        try:
            with ACPCConnection.connect("127.0.0.1", port, game) as connection:
                AgentClient(RandomAgent(game), seed).play(connection)
        except (ACPCProtocolError, ACPCConnectionError):
            pass  # the dealer aborted the match (closed or reset): what the abort tests check

    return play


def raw_client(
    game_name: str,
    reply: Callable[[Turn, int], bytes | None],
    version: bytes = b"VERSION:2.0.0\r\n",
) -> Client:
    """A client that sends ``reply(turn, hands_finished)`` on its turns; None = say nothing
    (stall); the string b"close" = disconnect."""

    def play(port: int) -> None:
        game = load_game(game_name)
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(version)
        connection = ACPCConnection(sock, game)
        finished = 0
        try:
            for turn in connection.turns():
                finished += turn.is_final
                if turn.is_our_turn or (turn.view.betting == "" and not turn.is_final):
                    data = reply(turn, finished)
                    if data == b"close":
                        return
                    if data is not None and turn.is_our_turn:
                        sock.sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            sock.close()

    return play


def assert_complete_and_legal(log, hands: int, game_name: str) -> None:
    game = load_game(game_name)
    assert [h.hand_number for h in log.hands] == list(range(hands))
    for hand in log.hands:
        state = State(game, hand.hole_cards, None)
        for rnd, actions in enumerate(hand.betting.split("/")):
            assert state.round == rnd
            for kind in actions:
                state.apply(kind)  # raises if the dealer let an illegal action through
        assert state.is_finished and sum(hand.values) == 0


@pytest.mark.parametrize("game_name", ["kuhn", "leduc", "fhp", "holdem"])
def test_full_match_every_game(game_name: str, tmp_path: Path) -> None:
    status, out, err, log = run_dealer(
        game_name, 40, [agent_client(game_name, 1), agent_client(game_name, 2)], tmp_path
    )
    assert status == 0
    ports_line, score_line = out.splitlines()
    assert len(ports_line.split()) == 2 and score_line.startswith("SCORE:")
    assert "WARNING" not in err and "ERROR" not in err
    assert err.splitlines()[0] == f"# name/game/hands/seed {tmp_path / 'm'} {game_name} 40 5"
    assert_complete_and_legal(log, 40, game_name)
    totals = [sum(h.value_of(n) for h in log.hands) for n in ("a", "b")]
    assert log.score == (tuple(totals), ("a", "b")) and totals[0] == -totals[1]
    assert score_line == f"SCORE:{totals[0]}|{totals[1]}:a|b"
    # rotation (§6): seat 1 holds position 0 in even hands
    assert all(h.names[0] == ("a" if h.hand_number % 2 == 0 else "b") for h in log.hands)


def test_traffic_lines_unless_quiet(tmp_path: Path) -> None:
    _, _, err, _ = run_dealer("kuhn", 2, [agent_client("kuhn"), agent_client("kuhn")], tmp_path)
    assert (
        "TO 1 at " in err and "FROM 2 at " in err and "STARTED at" in err and "FINISHED at" in err
    )
    _, _, err, _ = run_dealer(
        "kuhn", 2, [agent_client("kuhn"), agent_client("kuhn")], tmp_path, quiet=True
    )
    assert "TO 1" not in err and "SCORE:" in err


def test_garbage_and_stale_lines_are_skipped(tmp_path: Path) -> None:
    def reply(turn: Turn, _: int) -> bytes:
        fields = turn.text.split(":")
        stale = ":".join(fields[:2] + [str(turn.view.hand_number + 7)] + fields[3:])
        junk = b"hello dealer\r\n" + b"x" * 5000 + b"\n# comment\r\n" + f"{stale}:c\r\n".encode()
        return junk + f"{turn.text}:c\r\n".encode()

    status, _, err, log = run_dealer(
        "leduc", 10, [raw_client("leduc", reply), agent_client("leduc")], tmp_path, quiet=True
    )
    assert status == 0
    turns = err.count("WARNING: ignoring un-requested response")
    assert turns > 0 and err.count("WARNING: bad state format in response") == 2 * turns
    assert_complete_and_legal(log, 10, "leduc")


def test_reply_split_across_writes_is_reassembled(tmp_path: Path) -> None:
    """A reply that arrives in pieces (partial line, then the rest) counts once, no warning."""

    def play(port: int) -> None:
        game = load_game("leduc")
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(b"VERSI")
        time.sleep(0.02)
        sock.sendall(b"ON:2.0.0\r\n")
        connection = ACPCConnection(sock, game)
        for turn in connection.turns():
            if turn.is_our_turn:
                reply = f"{turn.text}:c\r\n".encode()
                sock.sendall(reply[:9])
                time.sleep(0.01)
                sock.sendall(reply[9:])
        sock.close()

    status, _, err, log = run_dealer(
        "leduc", 5, [play, agent_client("leduc")], tmp_path, quiet=True
    )
    assert status == 0 and "WARNING" not in err
    assert_complete_and_legal(log, 5, "leduc")


def test_illegal_and_malformed_actions_become_calls(tmp_path: Path) -> None:
    def raiser(turn: Turn, _: int) -> bytes:
        return f"{turn.text}:r\r\n".encode()  # past the cap too

    def folder(turn: Turn, _: int) -> bytes:
        if turn.view.hand_number % 2 == 0:
            return raiser(turn, 0)
        if "f" not in turn.legal:
            return f"{turn.text}:f\r\n".encode()  # folding when checking is free
        return f"{turn.text}\r\n".encode()  # no action at all

    status, _, err, log = run_dealer(
        "leduc",
        20,
        [raw_client("leduc", raiser), raw_client("leduc", folder)],
        tmp_path,
        quiet=True,
    )
    assert status == 0
    assert err.count("WARNING: invalid action, changed to call") >= 20
    assert "WARNING: bad action format in response, changed to call" in err
    assert_complete_and_legal(log, 20, "leduc")
    assert "f" not in "".join(h.betting for h in log.hands)  # every bad reply became a call
    assert all(h.betting == "rrc/rrc" for h in log.hands if h.hand_number % 2 == 0)  # the cap held


def test_aliases_and_trailing_text_are_accepted(tmp_path: Path) -> None:
    letters = {"c": "k", "r": "B"}

    def reply(turn: Turn, _: int) -> bytes:
        action = "r" if "r" in turn.legal else "c"
        return f"{turn.text}:{letters[action]} junk!\r\n".encode()

    status, _, err, log = run_dealer(
        "kuhn", 6, [raw_client("kuhn", reply), agent_client("kuhn")], tmp_path, quiet=True
    )
    assert status == 0 and "WARNING" not in err
    assert_complete_and_legal(log, 6, "kuhn")


def test_stalling_client_times_out_with_complete_log(tmp_path: Path) -> None:
    def reply(turn: Turn, finished: int) -> bytes | None:
        return None if finished >= 3 else f"{turn.text}:c\r\n".encode()

    status, out, err, log = run_dealer(
        "leduc",
        10,
        [raw_client("leduc", reply), agent_client("leduc")],
        tmp_path,
        quiet=True,
        t_response=300,
    )
    assert status == 1
    assert "ERROR: could not get action from seat 1" in err and "SCORE" not in out
    assert [h.hand_number for h in log.hands] == [0, 1, 2] and log.score is None


def test_slow_client_runs_out_of_hand_time(tmp_path: Path) -> None:
    def reply(turn: Turn, _: int) -> bytes:
        time.sleep(0.15)
        return f"{turn.text}:c\r\n".encode()

    status, _, err, _ = run_dealer(
        "kuhn",
        5,
        [raw_client("kuhn", reply), agent_client("kuhn")],
        tmp_path,
        quiet=True,
        t_hand=100,
    )
    assert status == 1 and "ERROR: seat 1 ran out of time" in err


def test_disconnect_ends_match_with_complete_log(tmp_path: Path) -> None:
    def reply(turn: Turn, finished: int) -> bytes:
        return b"close" if finished >= 4 else f"{turn.text}:c\r\n".encode()

    status, out, err, log = run_dealer(
        "holdem", 10, [agent_client("holdem"), raw_client("holdem", reply)], tmp_path, quiet=True
    )
    assert status == 1 and "SCORE" not in out
    assert (
        "ERROR: could not get action from seat 2" in err
        or "ERROR: could not send state to seat 2" in err
    )
    assert_complete_and_legal(log, 4, "holdem")


def test_silent_client_cannot_hang_the_dealer(tmp_path: Path) -> None:
    def silent(port: int) -> None:
        with socket.create_connection(("127.0.0.1", port)):
            time.sleep(1.0)

    status, _, err, log = run_dealer(
        "kuhn", 3, [agent_client("kuhn"), silent], tmp_path, quiet=True, t_response=200
    )
    assert status == 1 and "timed out waiting for the version string of seat 2" in err
    assert log.hands == []


def test_bad_and_newer_versions(tmp_path: Path) -> None:
    bad = raw_client("kuhn", lambda t, f: None, version=b"# hi\r\nVERSION:2.0.0\r\n")
    status, _, err, _ = run_dealer(
        "kuhn", 2, [bad, agent_client("kuhn")], tmp_path, quiet=True, t_response=500
    )
    assert status == 1 and "ERROR: invalid version string" in err
    newer = raw_client("kuhn", lambda t, f: f"{t.text}:c\r\n".encode(), version=b"VERSION:2.1.0\n")
    status, _, err, _ = run_dealer("kuhn", 2, [newer, agent_client("kuhn")], tmp_path, quiet=True)
    assert status == 0 and "ERROR: this server is currently using version 2.0.0" in err


def test_start_timeout(tmp_path: Path) -> None:
    status, _, err, _ = run_dealer(
        "kuhn",
        2,
        [agent_client("kuhn"), lambda port: None],
        tmp_path,
        quiet=True,
        start_timeout=200,
    )
    assert status == 1 and "ERROR: timed out waiting for seat 2 to connect" in err


def test_same_seed_swapped_seats_same_cards(tmp_path: Path) -> None:
    first = run_dealer(
        "holdem", 30, [agent_client("holdem", 1), agent_client("holdem", 2)], tmp_path / "x", seed=9
    )[3]
    second = run_dealer(
        "holdem",
        30,
        [agent_client("holdem", 3), agent_client("holdem", 4)],
        tmp_path / "y",
        seed=9,
        names=("b", "a"),
    )[3]
    assert [h.hole_cards for h in first.hands] == [h.hole_cards for h in second.hands]
    assert all(h1.names == h2.names[::-1] for h1, h2 in zip(first.hands, second.hands, strict=True))


def test_fixed_seats(tmp_path: Path) -> None:
    log = run_dealer(
        "kuhn", 4, [agent_client("kuhn"), agent_client("kuhn")], tmp_path, fixed_seats=True
    )[3]
    assert all(h.names == ("a", "b") for h in log.hands)


def test_cli_dealer_and_two_connects_play_hulh(tmp_path: Path) -> None:
    """`pokerbot dealer` + two `pokerbot connect` processes: a full HULH match over loopback."""
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    cli = [str(Path(sys.executable).with_name("pokerbot"))]
    dealer = subprocess.Popen(
        cli + ["dealer", "hulh", "holdem", "200", "7", "Alice", "Bob", "-q"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert dealer.stdout is not None
    ports = dealer.stdout.readline().split()
    clients = [
        subprocess.Popen(
            cli
            + ["connect", "127.0.0.1", port, "--game", "holdem", "--agent", agent, "--seed", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for port, agent in zip(ports, ("random", "raise"), strict=True)
    ]
    rest, err = dealer.communicate(timeout=120)
    outputs = [c.communicate(timeout=60) for c in clients]
    assert dealer.returncode == 0 and "WARNING" not in err, err
    assert all(c.returncode == 0 for c in clients), outputs
    score = rest.strip().splitlines()[-1]
    log = read_match_log(tmp_path / "hulh.log")
    assert len(log.hands) == 200 and score == "SCORE:{}|{}:Alice|Bob".format(*log.score[0])
    alice = log.score[0][0]
    assert f"hands played 200, chips won {alice:g}," in outputs[0][0]


def test_cli_dealer_bad_arguments() -> None:
    from click.testing import CliRunner

    from bot.cli import main

    result = CliRunner().invoke(main, ["dealer", "m", "holdem", "0", "1", "a", "b"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    result = CliRunner().invoke(main, ["dealer", "m", "holdem", "10", "1", "a"])
    assert result.exit_code == 2 and "needs 2 player names" in result.output
    busy = socket.create_server(("127.0.0.1", 0))
    port = str(busy.getsockname()[1])
    result = CliRunner().invoke(main, ["dealer", "m", "holdem", "10", "1", "a", "b", "-p", port])
    busy.close()
    assert (
        result.exit_code == 1
        and "ERROR: could not create listen socket for player 1" in result.output
    )


def test_replayed_log_states_match_engine(tmp_path: Path) -> None:
    """Every final state written in the log is one the client-side parser accepts."""
    log = run_dealer("fhp", 15, [agent_client("fhp"), agent_client("fhp")], tmp_path, quiet=True)[3]
    for hand in log.hands:
        view = parse_matchstate(
            f"MATCHSTATE:0:{hand.hand_number}:{hand.betting}:"
            + "|".join(
                "".join("23456789TJQKA"[c // 4] + "cdhs"[c % 4] for c in h) for h in hand.hole_cards
            )
            + "".join(
                "/" + "".join("23456789TJQKA"[c // 4] + "cdhs"[c % 4] for c in b)
                for b in hand.board
            )
        )
        if view.to_state(load_game("fhp")).is_showdown:
            assert view.hand_values(load_game("fhp")) == hand.values
