"""Pure helpers behind the widgets and screens: card text, round names, roles, outcomes."""

from __future__ import annotations

from protocol.cards import cards_from_str
from protocol.gamedef import load_game
from protocol.match_log import HandRecord
from tui.screens import outcome_text, rules_text
from tui.session import BOT, HUMAN, HandResult
from tui.widgets import card_text, position_role, round_names

NAMES = {HUMAN: "You", BOT: "Bot"}


def test_card_text() -> None:
    assert [card_text(c) for c in cards_from_str("AsTh2c9d")] == ["A♠", "10♥", "2♣", "9♦"]


def test_round_names_and_roles() -> None:
    holdem, leduc, kuhn, fhp = (load_game(g) for g in ("holdem", "leduc", "kuhn", "fhp"))
    assert round_names(holdem) == ["Pre-flop", "Flop", "Turn", "River"]
    assert round_names(fhp) == ["Pre-flop", "Flop"]
    assert round_names(kuhn) == ["Betting"]
    assert [position_role(holdem, p) for p in (0, 1)] == ["big blind 10", "button, small blind 5"]
    assert [position_role(leduc, p) for p in (0, 1)] == ["ante 1", "button, ante 1"]


def _result(values, folder=None, human_position=0) -> HandResult:
    record = HandRecord(0, "x", ((), ()), (), values, ("human", "bot"))
    return HandResult(record, human_position=human_position, folder=folder)


def test_outcome_text() -> None:
    assert outcome_text(_result((40, -40)), NAMES) == "You win 40"
    assert outcome_text(_result((-10, 10), folder=0), NAMES) == "You folded. Bot wins 10"
    assert outcome_text(_result((-5, 5), folder=0, human_position=1), NAMES) == "Bot folded. You win 5"
    assert outcome_text(_result((0, 0)), NAMES) == "Split pot: nobody wins chips"


def test_rules_text_follows_gamedef() -> None:
    text = rules_text(load_game("leduc"))
    assert "Deck QKA x hs" in text
    assert "Round" not in text and "Flop: +1 board card, bets of 4, at most 2 bets/raises" in text
    assert "no straights or flushes" in text
