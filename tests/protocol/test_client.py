"""The ACPC client against scripted dealers: the golden exchange of spec §2.3 byte for byte,
buffering, comments, EOF handling and the one-line errors of ``pokerbot connect``."""

from __future__ import annotations

import socket
import threading

import pytest
from click.testing import CliRunner

from bot.cli import main
from protocol.acpc_client import (
    ACPCConnection,
    ACPCConnectionError,
    ACPCProtocolError,
    LineBuffer,
)
from protocol.gamedef import load_game

HULH = load_game("holdem")


class ScriptedDealer:
    """Accepts one client, records everything it sends, and plays a script of
    ("send", bytes) / ("expect", None) / ("silent", None) steps; then closes the connection."""

    def __init__(self, script: list[tuple[str, bytes | None]]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.script = script
        self.received: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        connection, _ = self.listener.accept()
        buffer = LineBuffer()
        pending: list[str] = []

        def next_line() -> str | None:
            while not pending:
                data = connection.recv(4096)
                if not data:
                    return None
                pending.extend(buffer.feed(data))
            return pending.pop(0)

        self.received.append(next_line() or "")  # the version line
        for step, payload in self.script:
            if step == "send":
                assert payload is not None
                connection.sendall(payload)
            elif step == "silent":  # say nothing until the client gives up and closes
                while next_line() is not None:
                    pass
            else:
                line = next_line()
                if line is not None:
                    self.received.append(line)
        connection.shutdown(socket.SHUT_RDWR)
        connection.close()
        self.listener.close()


def golden_script() -> list[tuple[str, bytes | None]]:
    """Spec §2.3 seen by Bob (hand 0: folds the small blind; hand 1: a showdown he loses),
    with states split across writes, several per write, and a comment line."""
    return [
        ("send", b"MATCHSTATE:1:0::|2h"),
        ("send", b"Ac\r\n"),
        ("expect", None),
        (
            "send",
            b"MATCHSTATE:1:0:f:|2hAc\r\nMATCHSTATE:0:1::9h6s|\r\n# a comment\r\nMATCHSTATE:0:1:c:9h6s|\r\n",
        ),
        ("expect", None),
        ("send", b"MATCHSTATE:0:1:cc/:9h6s|/5s3s8h\r\n"),
        ("expect", None),
        ("send", b"MATCHSTATE:0:1:cc/c:9h6s|/5s3s8h\r\nMATCHSTATE:0:1:cc/cc/:9h6s|/5s3s8h/9d\r\n"),
        ("expect", None),
        (
            "send",
            b"MATCHSTATE:0:1:cc/cc/r:9h6s|/5s3s8h/9d\r\nMATCHSTATE:0:1:cc/cc/rr:9h6s|/5s3s8h/9d\r\n",
        ),
        ("expect", None),
        (
            "send",
            b"MATCHSTATE:0:1:cc/cc/rrr:9h6s|/5s3s8h/9d\r\nMATCHSTATE:0:1:cc/cc/rrrr:9h6s|/5s3s8h/9d\r\n",
        ),
        ("expect", None),
        ("send", b"MATCHSTATE:0:1:cc/cc/rrrrc/:9h6s|/5s3s8h/9d/5c\r\n"),
        ("expect", None),
        ("send", b"MATCHSTATE:0:1:cc/cc/rrrrc/r:9h6s|/5s3s8h/9d/5c\r\n"),
        ("send", b"MATCHSTATE:0:1:cc/cc/rrrrc/rc:9h6s|3d3h/5s3s8h/9d/5c\r\n"),
    ]


def test_golden_exchange_byte_for_byte() -> None:
    dealer = ScriptedDealer(golden_script())
    answers = iter("fccrrcr")
    decisions: list[str] = []

    def decide(view) -> str:
        decisions.append(view.betting)
        return next(answers)

    with ACPCConnection.connect("127.0.0.1", dealer.port, HULH) as connection:
        summary = connection.play(decide)
    dealer.thread.join(5)
    assert dealer.received == [
        "VERSION:2.0.0\r",
        "MATCHSTATE:1:0::|2hAc:f\r",
        "MATCHSTATE:0:1:c:9h6s|:c\r",
        "MATCHSTATE:0:1:cc/:9h6s|/5s3s8h:c\r",
        "MATCHSTATE:0:1:cc/cc/:9h6s|/5s3s8h/9d:r\r",
        "MATCHSTATE:0:1:cc/cc/rr:9h6s|/5s3s8h/9d:r\r",
        "MATCHSTATE:0:1:cc/cc/rrrr:9h6s|/5s3s8h/9d:c\r",
        "MATCHSTATE:0:1:cc/cc/rrrrc/:9h6s|/5s3s8h/9d/5c:r\r",
    ]
    assert decisions == ["", "c", "cc/", "cc/cc/", "cc/cc/rr", "cc/cc/rrrr", "cc/cc/rrrrc/"]
    assert summary.hands == 2 and summary.chips == -5 - 110
    assert summary.mbb_per_hand == pytest.approx(1000 * -115 / (2 * 10))


def test_line_buffer_splits_and_keeps_partial() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b"ab") == []
    assert buffer.feed(b"c\r\nde\nf") == ["abc\r", "de"]
    assert buffer.pending == b"f"


def test_connection_refused_is_a_clear_error() -> None:
    port = socket.create_server(("127.0.0.1", 0)).getsockname()[1]  # closed again at once
    with pytest.raises(ACPCConnectionError, match="refused"):
        ACPCConnection.connect("127.0.0.1", port, HULH)


def test_dealer_closing_mid_hand() -> None:
    dealer = ScriptedDealer([("send", b"MATCHSTATE:0:0::9h6s|\r\n")])
    with ACPCConnection.connect("127.0.0.1", dealer.port, HULH) as connection:
        with pytest.raises(ACPCProtocolError, match="middle of hand 0"):
            connection.play(lambda view: "c")


def test_malformed_line_from_dealer() -> None:
    dealer = ScriptedDealer([("send", b"MATCHSTATE:0:0:zz:9h6s|\r\n")])
    with ACPCConnection.connect("127.0.0.1", dealer.port, HULH) as connection:
        with pytest.raises(ACPCProtocolError, match="malformed line"):
            connection.play(lambda view: "c")


def test_illegal_action_never_sent() -> None:
    dealer = ScriptedDealer([("send", b"MATCHSTATE:0:1:c:9h6s|\r\n"), ("expect", None)])
    with ACPCConnection.connect("127.0.0.1", dealer.port, HULH) as connection:
        with pytest.raises(ACPCProtocolError, match="illegal action 'f'"):
            connection.play(lambda view: "f")  # checking is free: folding is illegal
    dealer.thread.join(5)
    assert dealer.received == ["VERSION:2.0.0\r"]


def test_cli_connect_errors_are_one_line() -> None:
    port = socket.create_server(("127.0.0.1", 0)).getsockname()[1]
    result = CliRunner().invoke(main, ["connect", "127.0.0.1", str(port), "--game", "holdem"])
    assert result.exit_code == 2
    assert (
        result.output.strip().startswith("error: connection to 127.0.0.1")
        and "Traceback" not in result.output
    )
    dealer = ScriptedDealer(golden_script()[:3])
    result = CliRunner().invoke(main, ["connect", "127.0.0.1", str(dealer.port), "--agent", "call"])
    assert result.exit_code == 2 and "middle of hand 0" in result.output


def test_cli_connect_plays_to_eof() -> None:
    dealer = ScriptedDealer(
        [
            ("send", b"MATCHSTATE:0:0::Ks|\r\n"),
            ("expect", None),
            ("send", b"MATCHSTATE:0:0:c:Ks|\r\nMATCHSTATE:0:0:cc:Ks|Qs\r\n"),
        ]
    )
    result = CliRunner().invoke(
        main, ["connect", "127.0.0.1", str(dealer.port), "--game", "kuhn", "--agent", "call"]
    )
    dealer.thread.join(5)
    assert result.exit_code == 0, result.output
    assert dealer.received == ["VERSION:2.0.0\r", "MATCHSTATE:0:0::Ks|:c\r"]
    assert "hands played 1, chips won 1, 1000.0 mbb/g" in result.output


# -- a hostile dealer: impossible cards, silence, a line cut off ------------------------------
LEDUC = load_game("leduc")


@pytest.mark.parametrize(
    ("game", "line", "problem"),
    [
        (
            HULH,
            "MATCHSTATE:0:0::9h|",
            "position 0 has 1 hole cards; holdem.limit.2p.reverse_blinds deals 2",
        ),
        (HULH, "MATCHSTATE:0:0::9h6s7c|", "position 0 has 3 hole cards"),
        (HULH, "MATCHSTATE:0:0::AsAs|", "card As appears twice"),
        (HULH, "MATCHSTATE:0:0:cc/:9h6s|/5s9h8h", "card 9h appears twice"),
        (HULH, "MATCHSTATE:0:0:cc/:9h6s|/5s3s8h2c3c4c", "6 board cards in round 1; holdem"),
        (HULH, "MATCHSTATE:0:0::9h6s|/5s3s8h", "board cards of round 1 sent in round 0"),
        (HULH, "MATCHSTATE:0:0:cc/:9h6s|", "board cards of round 1 missing"),
        (HULH, "MATCHSTATE:0:0::9h6s|As", "position 1 has 1 hole cards"),
        (HULH, "MATCHSTATE:0:0::9h6s", "2 hole-card groups expected, got 1"),
        (HULH, "MATCHSTATE:0:0:cc/cc/cc/cc/cc:9h6s|", "more rounds than"),
        (LEDUC, "MATCHSTATE:0:0::2c|", "card 2c is not in the leduc.limit.2p deck"),
        (HULH, "MATCHSTATE:0:" + "9" * 5000 + "::9h6s|", "hand numbers have at most 18 digits"),
    ],
)
def test_impossible_cards_are_refused_in_one_line(game, line: str, problem: str) -> None:
    """An agent that ignores cards (always call) would play on; the client refuses instead."""
    dealer = ScriptedDealer([("send", line.encode() + b"\r\n")])
    with ACPCConnection.connect("127.0.0.1", dealer.port, game) as connection:
        with pytest.raises(ACPCProtocolError, match="malformed line from dealer") as error:
            connection.play(lambda view: "c")
    assert problem in str(error.value) and "\n" not in str(error.value)
    dealer.thread.join(5)
    assert dealer.received == ["VERSION:2.0.0\r"]  # nothing was answered


def test_cards_changing_within_a_hand_are_refused() -> None:
    dealer = ScriptedDealer(
        [
            ("send", b"MATCHSTATE:0:0:c:9h6s|\r\n"),
            ("expect", None),
            ("send", b"MATCHSTATE:0:0:cc/:9h6s|/5s3s8h\r\nMATCHSTATE:0:0:cc/c:9h6s|/5s3s8d\r\n"),
        ]
    )
    with ACPCConnection.connect("127.0.0.1", dealer.port, HULH) as connection:
        with pytest.raises(ACPCProtocolError, match="cards changed within hand 0"):
            connection.play(lambda view: "c")


def test_silent_dealer_times_out_in_one_line() -> None:
    dealer = ScriptedDealer(
        [("send", b"MATCHSTATE:0:1:c:9h6s|\r\n"), ("expect", None), ("silent", None)]
    )
    connection = ACPCConnection.connect("127.0.0.1", dealer.port, HULH, read_timeout=0.2)
    with connection, pytest.raises(ACPCConnectionError) as error:
        connection.play(lambda view: "c")
    assert str(error.value).startswith("the dealer sent nothing for 0.2 s; giving up")
    dealer.thread.join(5)
    assert dealer.received == ["VERSION:2.0.0\r", "MATCHSTATE:0:1:c:9h6s|:c\r"]


def test_cli_connect_timeout_option() -> None:
    dealer = ScriptedDealer([("silent", None)])
    result = CliRunner().invoke(
        main, ["connect", "127.0.0.1", str(dealer.port), "--agent", "call", "--timeout", "0.2"]
    )
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith("error: the dealer sent nothing for 0.2 s; giving up")


def test_partial_last_line_before_eof_is_reported() -> None:
    """A finished hand, then half a line and EOF: not dropped silently."""
    dealer = ScriptedDealer(
        [
            ("send", b"MATCHSTATE:0:0::Ks|\r\n"),
            ("expect", None),
            ("send", b"MATCHSTATE:0:0:c:Ks|\r\nMATCHSTATE:0:0:cc:Ks|Qs\r\nMATCHSTATE:1:1"),
        ]
    )
    with ACPCConnection.connect("127.0.0.1", dealer.port, load_game("kuhn")) as connection:
        with pytest.raises(ACPCProtocolError) as error:
            connection.play(lambda view: "c")
    assert str(error.value) == (
        "dealer closed the connection in the middle of a line (14 bytes without a newline: "
        "b'MATCHSTATE:1:1'); hands played 1, chips won 1, 1000.0 mbb/g"
    )
