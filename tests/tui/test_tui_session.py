"""The table session without the UI: rotation, legality, payoffs, totals, the session log."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from bot.agents.base import CallAgent, RaiseAgent, RandomAgent
from bot.cli import main
from protocol.cards import cards_to_str
from protocol.gamedef import load_game
from protocol.match_log import read_match_log
from protocol.state import IllegalActionError
from tui.session import BOT, HUMAN, TableSession, describe_betting
from tui.session_log import SessionLog

HOLDEM = load_game("holdem")
LEDUC = load_game("leduc")


def play_out(session: TableSession, human_letters: str) -> None:
    """Play the current hand: the person takes ``human_letters`` in order, the bot answers."""
    letters = iter(human_letters)
    while session.in_hand:
        if session.to_act() == HUMAN:
            session.act(next(letters))
        else:
            session.bot_turn()


def test_seats_rotate_as_acpc() -> None:
    """Hand h: position p is seat ((p + h) mod 2) + 1 and the person is seat 1."""
    session = TableSession(HOLDEM, CallAgent(HOLDEM), seed=7)
    positions = []
    for _ in range(4):
        session.start_hand()
        positions.append(session.human_position)
        assert ((session.human_position + session.hand_number) % 2) + 1 == 1
        play_out(session, "cccc")
        session.finish_hand()
    assert positions == [0, 1, 0, 1]
    names = [r.record.names for r in session.results]
    assert names == [("human", "call"), ("call", "human")] * 2


def test_showdown_hand_exact() -> None:
    """Seed 7 hand 0: you (big blind, 4h Kh) raise, the calling station calls to the river and
    shows a club flush (8h Jc on Ad 5c 6c 2c 8c): you lose 20."""
    session = TableSession(HOLDEM, CallAgent(HOLDEM), seed=7)
    session.start_hand()
    assert cards_to_str(session.hole_cards(0)) == "4hKh"
    assert session.hole_cards(1) is None  # the bot's cards are hidden during the hand
    assert session.state.betting_string() == ""
    assert session.to_act() == BOT
    session.bot_turn()
    assert session.state.betting_string() == "c" and session.legal_actions() == ("c", "r")
    assert [session.action_label(k) for k in "cr"] == ["check", "raise to 20"]
    with pytest.raises(IllegalActionError, match="checking is free"):
        session.act("f")
    session.act("r")
    assert session.to_act() == BOT and session.legal_actions() == ()
    session.bot_turn()
    assert session.state.betting_string() == "crc/" and session.state.pot == 40
    assert [session.action_label(k) for k in "cr"] == ["check", "bet 10"]
    play_out(session, "ccc")
    result = session.finish_hand()
    assert result.betting == "crc/cc/cc/cc" and result.is_showdown
    assert cards_to_str(session.hole_cards(1)) == "8hJc"  # revealed at the showdown
    assert result.human_net == -20 and result.bot_net == 20
    assert session.human_total == -20


def test_fold_and_split_pot() -> None:
    session = TableSession(HOLDEM, CallAgent(HOLDEM), seed=7)
    session.start_hand()
    play_out(session, "cccc")
    session.finish_hand()
    session.start_hand()  # hand 1: you are the small blind and act first
    assert session.human_position == 1 and session.legal_actions() == ("f", "c", "r")
    assert session.action_label("c") == "call 5"
    session.act("f")
    fold = session.finish_hand()
    assert fold.folder == 1 and fold.human_net == -5 and session.human_total == -15

    tie = TableSession(HOLDEM, CallAgent(HOLDEM), seed=5)  # 6d Jh vs 6h Js, board Ac 3h 9s Tc 9c
    tie.start_hand()
    play_out(tie, "cccc")
    result = tie.finish_hand()
    assert result.is_showdown and result.record.values == (0, 0) and tie.human_total == 0


def test_raise_cap_disables_raise() -> None:
    """Leduc allows two raises per round: after bet and re-raise you may only fold or call."""
    session = TableSession(LEDUC, RaiseAgent(LEDUC), seed=0)
    session.start_hand()
    session.act("r")
    session.bot_turn()
    assert session.state.betting_string() == "rr"
    assert session.legal_actions() == ("f", "c")
    assert session.action_label("c") == "call 2"
    with pytest.raises(IllegalActionError, match="allows 2 raises"):
        session.act("r")


def test_bot_decisions_carry_probabilities() -> None:
    session = TableSession(LEDUC, RandomAgent(LEDUC), seed=3)
    session.start_hand()
    play_out(session, "cccccc")
    result = session.finish_hand()
    assert result.decisions
    for decision in result.decisions:
        legal = decision.view.to_state(LEDUC).legal_actions()
        assert set(decision.probabilities) == set(legal)
        assert math.isclose(sum(decision.probabilities.values()), 1.0)
        assert decision.kind in legal


def test_deals_replay_from_seed() -> None:
    first, second = (TableSession(LEDUC, RandomAgent(LEDUC), seed=11) for _ in range(2))
    for session in (first, second):
        for _ in range(5):
            session.start_hand()
            play_out(session, "cccccc")
            session.finish_hand()
    assert [r.record for r in first.results] == [r.record for r in second.results]


def test_stats_are_the_persons_results() -> None:
    session = TableSession(LEDUC, RandomAgent(LEDUC), seed=2)
    for _ in range(6):
        session.start_hand()
        play_out(session, "rcrcrc")
        session.finish_hand()
    nets = [r.human_net for r in session.results]
    stats = session.stats()
    assert stats.hands == 6 and stats.total == sum(nets) == session.human_total
    assert math.isclose(stats.mbb_per_game, 1000 * sum(nets) / 6 / LEDUC.big_blind)
    assert stats.cumulative[-1] == sum(nets)
    assert all(r.human_net == -r.bot_net for r in session.results)


def test_describe_betting_round_by_round() -> None:
    assert describe_betting(LEDUC, "rrc/cr") == [
        [(0, "bet 2"), (1, "raise to 5"), (0, "call 2")],
        [(0, "check"), (1, "bet 4")],
    ]


def test_session_log_parses_and_reports(tmp_path) -> None:
    session = TableSession(HOLDEM, RandomAgent(HOLDEM), seed=4)
    log = SessionLog(tmp_path / "session.log", session)
    for _ in range(8):
        session.start_hand()
        play_out(session, "c" * 20)
        log.write_hand(session.finish_hand())
    path = log.close()
    parsed = read_match_log(path)
    assert parsed.header.hands == 8 and parsed.header.seed == 4
    assert len(parsed.hands) == 8
    assert [h.value_of("human") for h in parsed.hands] == [r.human_net for r in session.results]
    assert parsed.score == ((session.human_total, -session.human_total), ("human", "random"))
    summary = tmp_path / "report.json"
    output = CliRunner().invoke(main, ["report", str(path), "--player", "human", "--json", str(summary)])
    assert output.exit_code == 0, output.output
    row = json.loads(summary.read_text())["rows"][0]
    stats = session.stats()
    assert row["hands"] == stats.hands and row["total_chips"] == stats.total
    assert math.isclose(row["mean"], stats.mbb_per_game)
    assert math.isclose(row["half_width"], stats.ci95)
