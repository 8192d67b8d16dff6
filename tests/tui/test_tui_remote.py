"""``play --connect``: the person's table as an ACPC client of our dealer, with a bot in the
other seat. The dealer deals from the same seed function as the local table, so the remote hands
must equal the local ones played with the same actions."""

from __future__ import annotations

import asyncio
import io
import threading

from bot.agents.base import CallAgent, RaiseAgent
from bot.evaluation.match import run_as_client
from protocol.dealer import Dealer, DealerOptions
from protocol.gamedef import load_game
from protocol.match_log import read_match_log
from tui.app import PokerApp
from tui.remote import RemoteSession
from tui.screens import ShowdownScreen
from tui.session import HUMAN, TableSession

LEDUC = load_game("leduc")


def start_match(tmp_path, monkeypatch, agent, hands: int, seed: int) -> int:
    """A dealer on OS-chosen ports with ``agent`` in seat 2; returns seat 1's port. The match
    clock is a person's (10 minutes a hand), not the reference dealer's 7 s a hand: the Pilot's
    key presses render whole screens, which on a loaded CI machine took longer than the 14 s
    a 2-hand match allows, and the dealer then rightly ended the match at hand 0."""
    monkeypatch.chdir(tmp_path)
    options = DealerOptions(
        "remote", "leduc.limit.2p.game", LEDUC, hands, seed, ("human", agent.name), quiet=True, os_ports=True,
        t_per_hand=600_000,
    )
    dealer = Dealer(options, out=io.StringIO(), err=io.StringIO())
    ports = dealer.listen()
    threading.Thread(target=lambda: asyncio.run(dealer.serve()), daemon=True).start()
    threading.Thread(
        target=run_as_client, args=(LEDUC, agent, "127.0.0.1", ports[1], 0), daemon=True
    ).start()
    return ports[0]


def play_remote(session: RemoteSession, letters: str) -> None:
    while True:
        session.start_hand()
        if session.is_over:
            return
        todo = iter(letters)
        while session.in_hand:
            if session.to_act() == HUMAN:
                session.act(next(todo))
            else:
                session.apply_bot(session.decide_bot())
        session.finish_hand()


def test_remote_hands_equal_local_hands(tmp_path, monkeypatch) -> None:
    port = start_match(tmp_path, monkeypatch, RaiseAgent(LEDUC), hands=6, seed=3)
    remote = RemoteSession.connect(LEDUC, "127.0.0.1", port)
    play_remote(remote, "cccccc")
    assert remote.is_over and remote.end_reason == "the dealer ended the match"
    local = TableSession(LEDUC, RaiseAgent(LEDUC), seed=3)
    for _ in range(6):
        local.start_hand()
        todo = iter("cccccc")
        while local.in_hand:
            local.act(next(todo)) if local.to_act() == HUMAN else local.bot_turn()
        local.finish_hand()
    assert [r.human_position for r in remote.results] == [r.human_position for r in local.results]
    assert [r.record.betting for r in remote.results] == [r.record.betting for r in local.results]
    assert [r.human_net for r in remote.results] == [r.human_net for r in local.results]
    dealer_log = read_match_log(tmp_path / "remote.log")
    assert [h.value_of("human") for h in dealer_log.hands] == [r.human_net for r in remote.results]
    assert remote.human_total == dealer_log.score[0][0]


async def test_remote_table_by_keys(tmp_path, monkeypatch) -> None:
    port = start_match(tmp_path, monkeypatch, CallAgent(LEDUC), hands=2, seed=5)
    session = RemoteSession.connect(LEDUC, "127.0.0.1", port)
    app = PokerApp(session, bot_delay=0)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(40):  # the network answers on its own time: poll, never time
            await app.workers.wait_for_complete()
            await pilot.pause()
            if session.is_over:
                break
            if isinstance(app.screen, ShowdownScreen):
                await pilot.press("n")
            elif session.to_act() == HUMAN:
                await pilot.press("c")
        assert session.is_over and session.hands_played == 2
    dealer_log = read_match_log(tmp_path / "remote.log")
    assert [h.value_of("human") for h in dealer_log.hands] == [r.human_net for r in session.results]
