"""A dealer that rewrites a hand: within one hand number the seat, own hole cards and board
dealt so far stay and the betting only grows; anything else is a one-line protocol error, never
an answer. Errors quote a bounded prefix of a huge line."""

from __future__ import annotations

import pytest

from protocol.acpc_client import HandTracker, interpret
from protocol.gamedef import load_game
from protocol.matchstate import QUOTE_LIMIT, MatchStateError, parse_matchstate

KUHN = load_game("kuhn")
HULH = load_game("holdem")


def play(game, lines: list[str]) -> list:
    tracker = HandTracker(game)
    return [interpret(line, game, tracker) for line in lines]


@pytest.mark.parametrize(("lines", "problem"), [
    # own card changed, the previous betting empty (the check used to be skipped then)
    (["MATCHSTATE:1:1::|As", "MATCHSTATE:1:1:c:|Ks"], "cards changed within hand 1"),
    # betting rewritten: r then c under the same hand number
    (["MATCHSTATE:0:1::As|", "MATCHSTATE:0:1:r:As|", "MATCHSTATE:0:1:rc:As|Ks"], None),
    (["MATCHSTATE:1:1:r:|As", "MATCHSTATE:1:1:c:|As"], "the betting was rewritten within hand 1 ('r' then 'c')"),
    (["MATCHSTATE:1:1:r:|As", "MATCHSTATE:1:1::|As"], "the betting was rewritten within hand 1 ('r' then '')"),
    (["MATCHSTATE:1:1::|As", "MATCHSTATE:0:1:c:As|"], "the seat changed within hand 1 (position 1 then 0)"),
])
def test_a_hand_rewritten_under_its_number_is_refused(lines, problem) -> None:
    if problem is None:  # the same hand growing, and at the end the other seat's cards shown
        turns = play(KUHN, lines)
        assert turns[-1].is_final and [t.is_our_turn for t in turns] == [True, False, False]
        return
    with pytest.raises(MatchStateError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        play(KUHN, lines)


def test_shown_cards_may_appear_but_not_change() -> None:
    start = ["MATCHSTATE:0:3:r:As|", "MATCHSTATE:0:3:rc:As|Ks"]
    assert play(KUHN, start)[-1].is_final
    with pytest.raises(MatchStateError, match="cards changed within hand 3"):
        play(KUHN, [*start, "MATCHSTATE:0:3:rc:As|Qs"])


def test_a_board_card_replaced_mid_hand_is_refused() -> None:
    lines = ["MATCHSTATE:0:0:cc/:9h6s|/5s3s8h", "MATCHSTATE:0:0:cc/c:9h6s|/5s3s8d"]
    with pytest.raises(MatchStateError, match="cards changed within hand 0"):
        play(HULH, lines)


def test_a_new_hand_number_starts_over() -> None:
    turns = play(KUHN, ["MATCHSTATE:1:1:r:|As", "MATCHSTATE:0:2::Ks|", "MATCHSTATE:0:2:c:Ks|"])
    assert [t.view.hand_number for t in turns] == [1, 2, 2] and turns[1].is_our_turn


def test_a_megabyte_line_is_quoted_short() -> None:
    line = "MATCHSTATE:0:0:" + "x" * 1_000_000 + ":As|"
    with pytest.raises(MatchStateError) as caught:
        parse_matchstate(line)
    message = str(caught.value)
    assert len(message) < 4 * QUOTE_LIMIT and "(1,000,000 characters)" in message
    with pytest.raises(MatchStateError) as caught:
        parse_matchstate("y" * 1_000_000)
    assert len(str(caught.value)) < 2 * QUOTE_LIMIT and "(1,000,000 characters)" in str(caught.value)
    long_betting = "MATCHSTATE:0:0:" + "c" * 1_000_000 + ":As|"
    with pytest.raises(MatchStateError) as caught:
        interpret(long_betting, KUHN)
    assert len(str(caught.value)) < 4 * QUOTE_LIMIT
