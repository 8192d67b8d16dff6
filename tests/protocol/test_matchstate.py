"""MATCHSTATE text: the golden exchange of spec §2.3, turn derivation (§2.5), round trips."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.dealing import deal_hand
from protocol.gamedef import load_game
from protocol.matchstate import (
    HandViews,
    MatchStateError,
    format_matchstate,
    parse_matchstate,
    view_of,
)
from protocol.state import State

HULH = load_game("holdem")

# (dealer line, is it Bob's turn, is the hand over) from shared/acpc-protocol.md §2.3
GOLDEN = [
    ("MATCHSTATE:1:0::|2hAc", True, False),
    ("MATCHSTATE:1:0:f:|2hAc", False, True),
    ("MATCHSTATE:0:1::9h6s|", False, False),
    ("MATCHSTATE:0:1:c:9h6s|", True, False),
    ("MATCHSTATE:0:1:cc/:9h6s|/5s3s8h", True, False),
    ("MATCHSTATE:0:1:cc/c:9h6s|/5s3s8h", False, False),
    ("MATCHSTATE:0:1:cc/cc/:9h6s|/5s3s8h/9d", True, False),
    ("MATCHSTATE:0:1:cc/cc/rrrrc/rc:9h6s|3d3h/5s3s8h/9d/5c", False, True),
]


# Traffic of a real reference-dealer match (stderr TO/FROM lines, HULH, seed 0, 2 hands), as
# recorded in the acpc_poker_types gem's test data; FROM lines are the example players' replies.
REFERENCE_TRAFFIC = """\
TO 1 MATCHSTATE:0:0::5d5c|
TO 2 MATCHSTATE:1:0::|9hQd
FROM 2 MATCHSTATE:1:0::|9hQd:c
TO 1 MATCHSTATE:0:0:c:5d5c|
TO 2 MATCHSTATE:1:0:c:|9hQd
FROM 1 MATCHSTATE:0:0:c:5d5c|:c
TO 1 MATCHSTATE:0:0:cc/:5d5c|/8dAs8s
TO 2 MATCHSTATE:1:0:cc/:|9hQd/8dAs8s
FROM 1 MATCHSTATE:0:0:cc/:5d5c|/8dAs8s:c
TO 1 MATCHSTATE:0:0:cc/c:5d5c|/8dAs8s
TO 2 MATCHSTATE:1:0:cc/c:|9hQd/8dAs8s
FROM 2 MATCHSTATE:1:0:cc/c:|9hQd/8dAs8s:r
TO 1 MATCHSTATE:0:0:cc/cr:5d5c|/8dAs8s
TO 2 MATCHSTATE:1:0:cc/cr:|9hQd/8dAs8s
FROM 1 MATCHSTATE:0:0:cc/cr:5d5c|/8dAs8s:c
TO 1 MATCHSTATE:0:0:cc/crc/:5d5c|/8dAs8s/4h
TO 2 MATCHSTATE:1:0:cc/crc/:|9hQd/8dAs8s/4h
FROM 1 MATCHSTATE:0:0:cc/crc/:5d5c|/8dAs8s/4h:c
TO 1 MATCHSTATE:0:0:cc/crc/c:5d5c|/8dAs8s/4h
TO 2 MATCHSTATE:1:0:cc/crc/c:|9hQd/8dAs8s/4h
FROM 2 MATCHSTATE:1:0:cc/crc/c:|9hQd/8dAs8s/4h:c
TO 1 MATCHSTATE:0:0:cc/crc/cc/:5d5c|/8dAs8s/4h/6d
TO 2 MATCHSTATE:1:0:cc/crc/cc/:|9hQd/8dAs8s/4h/6d
FROM 1 MATCHSTATE:0:0:cc/crc/cc/:5d5c|/8dAs8s/4h/6d:c
TO 1 MATCHSTATE:0:0:cc/crc/cc/c:5d5c|/8dAs8s/4h/6d
TO 2 MATCHSTATE:1:0:cc/crc/cc/c:|9hQd/8dAs8s/4h/6d
FROM 2 MATCHSTATE:1:0:cc/crc/cc/c:|9hQd/8dAs8s/4h/6d:c
TO 1 MATCHSTATE:0:0:cc/crc/cc/cc:5d5c|9hQd/8dAs8s/4h/6d
TO 2 MATCHSTATE:1:0:cc/crc/cc/cc:5d5c|9hQd/8dAs8s/4h/6d
TO 1 MATCHSTATE:1:1::|5dJd
TO 2 MATCHSTATE:0:1::6sKs|
FROM 1 MATCHSTATE:1:1::|5dJd:c
TO 1 MATCHSTATE:1:1:c:|5dJd
TO 2 MATCHSTATE:0:1:c:6sKs|
FROM 2 MATCHSTATE:0:1:c:6sKs|:r
TO 1 MATCHSTATE:1:1:cr:|5dJd
TO 2 MATCHSTATE:0:1:cr:6sKs|
FROM 1 MATCHSTATE:1:1:cr:|5dJd:c
TO 1 MATCHSTATE:1:1:crc/:|5dJd/2sTh2h
TO 2 MATCHSTATE:0:1:crc/:6sKs|/2sTh2h
FROM 2 MATCHSTATE:0:1:crc/:6sKs|/2sTh2h:r
TO 1 MATCHSTATE:1:1:crc/r:|5dJd/2sTh2h
TO 2 MATCHSTATE:0:1:crc/r:6sKs|/2sTh2h
FROM 1 MATCHSTATE:1:1:crc/r:|5dJd/2sTh2h:c
TO 1 MATCHSTATE:1:1:crc/rc/:|5dJd/2sTh2h/Qh
TO 2 MATCHSTATE:0:1:crc/rc/:6sKs|/2sTh2h/Qh
FROM 2 MATCHSTATE:0:1:crc/rc/:6sKs|/2sTh2h/Qh:r
TO 1 MATCHSTATE:1:1:crc/rc/r:|5dJd/2sTh2h/Qh
TO 2 MATCHSTATE:0:1:crc/rc/r:6sKs|/2sTh2h/Qh
FROM 1 MATCHSTATE:1:1:crc/rc/r:|5dJd/2sTh2h/Qh:r
TO 1 MATCHSTATE:1:1:crc/rc/rr:|5dJd/2sTh2h/Qh
TO 2 MATCHSTATE:0:1:crc/rc/rr:6sKs|/2sTh2h/Qh
FROM 2 MATCHSTATE:0:1:crc/rc/rr:6sKs|/2sTh2h/Qh:c
TO 1 MATCHSTATE:1:1:crc/rc/rrc/:|5dJd/2sTh2h/Qh/8h
TO 2 MATCHSTATE:0:1:crc/rc/rrc/:6sKs|/2sTh2h/Qh/8h
FROM 2 MATCHSTATE:0:1:crc/rc/rrc/:6sKs|/2sTh2h/Qh/8h:r
TO 1 MATCHSTATE:1:1:crc/rc/rrc/r:|5dJd/2sTh2h/Qh/8h
TO 2 MATCHSTATE:0:1:crc/rc/rrc/r:6sKs|/2sTh2h/Qh/8h
FROM 1 MATCHSTATE:1:1:crc/rc/rrc/r:|5dJd/2sTh2h/Qh/8h:c
TO 1 MATCHSTATE:1:1:crc/rc/rrc/rc:6sKs|5dJd/2sTh2h/Qh/8h
TO 2 MATCHSTATE:0:1:crc/rc/rrc/rc:6sKs|5dJd/2sTh2h/Qh/8h
"""


def test_turns_agree_with_reference_dealer_traffic() -> None:
    """Every state the reference dealer sent: the seat we say must act is the one it read next,
    final states are the ones nobody answered, and values match its log (20|-20, 90|-90)."""
    lines = [line.split(" ", 2) for line in REFERENCE_TRAFFIC.splitlines()]
    awaiting: dict[str, str] = {}
    for index, (direction, seat, text) in enumerate(lines):
        if direction == "FROM":
            assert text.startswith(awaiting.pop(seat) + ":")
            continue
        view = parse_matchstate(text)
        assert format_matchstate(view) == text
        state = view.to_state(HULH)
        if not state.is_finished and state.actor == view.position:
            awaiting[seat] = text
            answer = next(line for line in lines[index + 1 :] if line[0] == "FROM")
            assert answer[1] == seat and answer[2].startswith(text + ":")
        if state.is_finished and view.position == 0:
            expected = {0: (20, -20), 1: (90, -90)}[view.hand_number]
            assert view.hand_values(HULH) == expected
    assert not awaiting


@pytest.mark.parametrize(("line", "ours", "over"), GOLDEN)
def test_golden_exchange_turns(line: str, ours: bool, over: bool) -> None:
    view = parse_matchstate(line)
    state = view.to_state(HULH)
    assert state.is_finished == over
    assert (not over and state.actor == view.position) == ours
    assert format_matchstate(view) == line


def test_golden_values() -> None:
    assert parse_matchstate("MATCHSTATE:1:0:f:|2hAc").hand_values(HULH) == (5, -5)
    final = parse_matchstate("MATCHSTATE:0:1:cc/cc/rrrrc/rc:9h6s|3d3h/5s3s8h/9d/5c")
    assert final.hand_values(HULH) == (-110, 110)  # the log line of §8 says -110|110
    assert parse_matchstate("MATCHSTATE:0:1:cc/c:9h6s|/5s3s8h").hand_values(HULH) is None


def test_round_closing_rules() -> None:
    """§2.5: the small blind's limp does not close pre-flop; cc, rc, crc and rrrc do."""
    assert parse_matchstate("MATCHSTATE:0:0:c:9h6s|").to_state(HULH).round == 0
    for betting in ("cc/", "rc/", "rrrc/"):
        assert parse_matchstate(f"MATCHSTATE:0:0:{betting}:9h6s|/5s3s8h").to_state(HULH).round == 1
    kuhn = load_game("kuhn")
    assert parse_matchstate("MATCHSTATE:0:0:crc:Ks|").to_state(kuhn).is_finished


def test_nolimit_strings_parse_and_format() -> None:
    line = "MATCHSTATE:0:7:cr20000c///:8s2h|Kd5c/7hAdTd/4s/Kc"
    view = parse_matchstate(line)
    assert view.betting == "cr20000c///" and view.round == 3 and len(view.board) == 3
    assert format_matchstate(view) == line


@pytest.mark.parametrize(
    "line",
    [
        "MATCHSTATE:0:1:c",
        "MATCHSTATE:x:1:c:9h6s|",
        "MATCHSTATE:0:1:cx:9h6s|",
        "MATCHSTATE:0:1:c:9h6z|",
        "MATCHSTATE:2:1:c:9h6s|",
        "STATE:0:1:c:9h6s|",
    ],
)
def test_malformed_lines_raise(line: str) -> None:
    with pytest.raises(MatchStateError):
        parse_matchstate(line)


def test_illegal_betting_is_an_error() -> None:
    with pytest.raises(MatchStateError):
        parse_matchstate("MATCHSTATE:0:0:rrrrr:9h6s|").to_state(HULH)  # past the cap


@settings(max_examples=150, deadline=None)
@given(
    game_name=st.sampled_from(["kuhn", "leduc", "fhp", "holdem"]),
    seed=st.integers(0, 2**32 - 1),
    hand=st.integers(0, 10**6),
)
def test_every_dealer_state_parses_back(game_name: str, seed: int, hand: int) -> None:
    """Play a random hand; every view the dealer would write parses to the same view, and the
    turn/over derived from the text equals the engine's."""
    game = load_game(game_name)
    holes, board = deal_hand(game, seed, hand)
    state = State(game, holes, board)
    rng = np.random.default_rng(seed)
    while True:
        for position in range(game.num_players):
            view = view_of(state, position, hand, reveal=state.is_showdown)
            text = format_matchstate(view)
            again = parse_matchstate(text)
            assert again == view and format_matchstate(again) == text
            derived = again.to_state(game)
            assert derived.is_finished == state.is_finished
            assert derived.actor == state.actor
            if state.is_finished:
                assert again.hand_values(game) == state.payoffs()
        if state.is_finished:
            break
        legal = state.legal_actions()
        state.apply(legal[int(rng.integers(len(legal)))])


@pytest.mark.parametrize("game_name", ["kuhn", "leduc", "fhp", "holdem"])
def test_hand_views_equal_formatted_views(game_name: str) -> None:
    """The dealer's cached view strings are exactly ``format_matchstate(view_of(...))`` in every
    state of random hands (folds, showdowns, every position, revealed or not)."""
    game = load_game(game_name)
    rng = random.Random(7)
    for hand in range(60):
        holes, board = deal_hand(game, 3, hand)
        state = State(game, holes, board)
        views = HandViews(game, holes, board, hand)
        while True:
            for position in range(game.num_players):
                for reveal in (False, True):
                    expected = format_matchstate(view_of(state, position, hand, reveal=reveal))
                    assert views.line(state, position, reveal) == expected
            if state.is_finished:
                break
            state.apply(rng.choice(state.legal_actions()))
