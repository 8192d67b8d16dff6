"""The rules engine against the ACPC semantics of shared/acpc-protocol.md §2.4-2.5."""

import pytest

from protocol.cards import cards_from_str
from protocol.gamedef import load_game, parse_gamedef
from protocol.state import IllegalActionError, State, split_pots


def play(game_name: str, betting: str, holes=None, board=None) -> State:
    game = load_game(game_name)
    state = State(
        game,
        hole_cards=None if holes is None else [cards_from_str(h) for h in holes],
        board_cards=None if board is None else cards_from_str(board),
    )
    for letter in betting.replace("/", ""):
        state.apply(letter)
    return state


def test_holdem_small_blind_acts_first_preflop_and_big_blind_after():
    state = play("holdem", "")
    assert state.actor == 1 and state.spent == [10, 5]
    assert state.legal_actions() == ("f", "c", "r")
    state.apply("c")  # limp does not close the round
    assert state.round == 0 and state.actor == 0
    assert state.legal_actions() == ("c", "r")  # no fold when checking is free
    state.apply("c")
    assert state.round == 1 and state.actor == 0 and state.betting_string() == "cc/"


def test_holdem_raise_caps_do_not_count_the_blinds():
    state = play("holdem", "rrr")
    assert state.max_spent == 40  # big blind + 3 raises = 4 bets
    assert not state.can_bet_or_raise()
    with pytest.raises(IllegalActionError, match="allows 3 raises"):
        state.bet_or_raise()
    state.apply("c")
    state_flop = play("holdem", "rrrc/rrrr")
    assert not state_flop.can_raise() and state_flop.max_spent == 80


def test_fold_illegal_when_check_is_free():
    state = play("leduc", "")
    assert not state.can_fold()
    with pytest.raises(IllegalActionError, match="checking is free"):
        state.fold()


def test_holdem_biggest_loss_is_240():
    state = play("holdem", "rrrc/rrrrc/rrrrc/rrrr", holes=["2c3d", "AhAs"], board="AdAcKs4h7c")
    state.apply("f")
    assert state.payoffs() == (-220, 220)  # position 0 folds to the 4th river bet
    state = play("holdem", "rrrc/rrrrc/rrrrc/rrrrc", holes=["2c3d", "AhAs"], board="AdAcKs4h7c")
    assert state.payoffs() == (-240, 240)


@pytest.mark.parametrize(
    "betting, payoffs",
    [("cc", (-1, 1)), ("rf", (1, -1)), ("rc", (-2, 2)), ("crf", (-1, 1)), ("crc", (-2, 2))],
)
def test_kuhn_sequences(betting, payoffs):
    # position 0 holds Q, position 1 holds K
    state = play("kuhn", betting, holes=["Qs", "Ks"], board="")
    assert state.is_finished and state.payoffs() == payoffs


def test_leduc_largest_loss_is_13_and_pair_beats_high_card():
    state = play("leduc", "crrc/rrc", holes=["Qs", "As"], board="Qh")
    assert state.payoffs() == (13, -13)
    state = play("leduc", "cc/cc", holes=["Ah", "Qs"], board="Ks")
    assert state.payoffs() == (1, -1)
    state = play("leduc", "cc/cc", holes=["Ah", "As"], board="Ks")
    assert state.payoffs() == (0, 0)


def test_fhp_caps_reached_as_the_dealer_verified():
    state = play("fhp", "rrrc/cc", holes=["2c3d", "AhAs"], board="KdQc7h")
    assert state.payoffs() == (-400, 400)
    state = play("fhp", "rc/rrrc", holes=["2c3d", "AhAs"], board="KdQc7h")
    assert state.payoffs() == (-500, 500)


def test_finished_hand_accepts_no_action():
    state = play("kuhn", "cc")
    assert state.legal_actions() == ()
    with pytest.raises(IllegalActionError, match="hand is over"):
        state.check_or_call()


def test_showdown_without_cards_is_an_error():
    state = play("kuhn", "cc")
    with pytest.raises(IllegalActionError, match="needs every player's cards"):
        state.payoffs()


def test_all_in_skips_to_showdown_with_a_slash_per_skipped_round():
    game = parse_gamedef(
        "limit\nnumPlayers = 2\nnumRounds = 3\nstack = 4 4\nblind = 2 1\nraiseSize = 2 2 2\n"
        "firstPlayer = 2 1 1\nnumSuits = 4\nnumRanks = 13\nnumHoleCards = 2\nnumBoardCards = 0 3 1\n"
    )
    state = State(game)
    state.apply("r")  # small blind raises to 4: all-in
    assert not state.can_raise()
    state.apply("c")
    assert state.is_finished and state.betting_string() == "rc//"
    assert state.round == 2


def test_split_pots_with_side_pot():
    # player 0 all-in for 5, players 1 and 2 contest 10 each; 0 has the best hand
    assert split_pots([5, 10, 10], {0: 9, 1: 5, 2: 7}) == (10, -10, 0)
