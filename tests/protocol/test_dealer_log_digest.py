"""Pins what our dealer and client say, byte for byte, for fixed seeds: the ``.log``, the
traffic every client received and sent, and each client's own account of the match. The dealer
and the client are tuned for speed (``benchmarks/bench_dealer.py``); these digests were taken
before that tuning, so any change in what goes over the wire or into the log fails here."""

from __future__ import annotations

import hashlib
import io
import re
import threading
from pathlib import Path

import pytest

from bot.agents.base import CallAgent, RaiseAgent, RandomAgent
from bot.evaluation.match import AgentClient
from protocol.acpc_client import ACPCConnection
from protocol.dealer import Dealer, DealerOptions
from protocol.gamedef import load_game

#: ``TO n at <stamp> ``/``FROM n at <stamp> ``: the stamps are wall-clock times.
_STAMP = re.compile(r"^(TO|FROM) (\d+) at \d+\.\d{6} ")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _play(game_name: str, hands: int, seed: int, agents, tmp_path: Path):
    game = load_game(game_name)
    options = DealerOptions(
        str(tmp_path / "m"), f"{game_name}.game", game, hands, seed, ("p1", "p2"), os_ports=True
    )
    err = io.StringIO()
    dealer = Dealer(options, io.StringIO(), err)
    ports = dealer.listen()
    summaries: list = [None, None]

    def client(seat: int) -> None:
        with ACPCConnection.connect("127.0.0.1", ports[seat], game) as connection:
            summaries[seat] = AgentClient(agents[seat](game), seed=11 + seat).play(connection)

    threads = [threading.Thread(target=client, args=(seat,), daemon=True) for seat in (0, 1)]
    for thread in threads:
        thread.start()
    assert dealer.run() == 0
    for thread in threads:
        thread.join(30)
    traffic = "".join(
        _STAMP.sub(r"\1 \2 ", line) + "\n"
        for line in err.getvalue().splitlines()
        if line.startswith(("TO ", "FROM "))
    )
    log = (tmp_path / "m.log").read_text().replace(str(tmp_path), "TMP")  # the header names it
    return log, traffic, [(s.hands, s.chips) for s in summaries]


@pytest.mark.parametrize(
    ("game_name", "hands", "agents", "log_digest", "traffic_digest", "chips"),
    [
        (
            "holdem",
            300,
            (RandomAgent, RandomAgent),
            "d2b99ed271c30cf4",
            "7c4f5cfda3a28327",
            [(300, 1020.0), (300, -1020.0)],
        ),
        (
            "holdem",
            200,
            (RaiseAgent, CallAgent),
            "4224204f27cb4a0c",
            "722a7c2993f0145b",
            [(200, 0.0), (200, 0.0)],
        ),
        (
            "leduc",
            300,
            (RandomAgent, RaiseAgent),
            "15bf798e167e5ecf",
            "cd445edaf14ddc39",
            [(300, -495.0), (300, 495.0)],
        ),
    ],
    ids=["hulh-random-random", "hulh-raise-call", "leduc-random-raise"],
)
def test_log_and_traffic_are_pinned(
    game_name, hands, agents, log_digest, traffic_digest, chips, tmp_path: Path
) -> None:
    log, traffic, summaries = _play(game_name, hands, 7, agents, tmp_path)
    assert log.count("\nSTATE:") == hands
    assert _digest(log) == log_digest
    assert _digest(traffic) == traffic_digest
    assert summaries == chips
