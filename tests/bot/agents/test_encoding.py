"""Infoset features: bet slots per betting position, card groups, view form == batched form."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bot.agents.encoding import EncodingError, InfosetEncoder
from protocol.dealing import deal_hand
from protocol.gamedef import load_game
from protocol.matchstate import parse_matchstate, view_of
from protocol.state import State


def test_kuhn_bet_slots() -> None:
    enc = InfosetEncoder(load_game("kuhn"))
    assert enc.group_sizes == (1,) and enc.num_bet_slots == 3
    rows = {h: enc.bets[enc.tree.node_of[h]].tolist() for h in ("", "c", "r", "cr")}
    assert rows == {"": [-1, -1, -1], "c": [0, -1, -1], "r": [1, -1, -1], "cr": [0, 1, -1]}


def test_holdem_layout_matches_the_paper() -> None:
    enc = InfosetEncoder(load_game("holdem"))
    assert enc.group_sizes == (2, 3, 1, 1)
    assert enc.slots_per_round == 6 and enc.num_bet_slots == 24  # the paper's 6 per round


@pytest.mark.parametrize("game_name", ["leduc", "fhp", "holdem"])
def test_view_encoding_equals_batched_encoding(game_name: str) -> None:
    """Play random hands with the rules engine; at every decision the single-view encoding of
    the actor's MATCHSTATE equals the batched card slots and the node's bet row."""
    game = load_game(game_name)
    enc = InfosetEncoder(game)
    rng = np.random.default_rng(5)
    for hand in range(20):
        holes, board = deal_hand(game, seed=3, hand_number=hand)
        state = State(game, hole_cards=holes, board_cards=board)
        while not state.is_finished:
            actor = state.actor
            view = parse_matchstate(_text(view_of(state, actor, hand)))
            node, cards = enc.encode_view(view)
            assert enc.tree.history[node] == state.betting_string()
            batched = enc.card_slots(np.array([holes], dtype=np.int8), np.array([board], dtype=np.int8),
                                     np.array([actor]), np.array([state.round]))
            assert cards.tolist() == batched[0].tolist()
            visible = game.num_hole_cards + game.board_cards_through(state.round)
            assert (cards[visible:] == -1).all() and (cards[:visible] >= 0).all()
            legal = state.legal_actions()
            state.apply(legal[int(rng.integers(len(legal)))])


def _text(view) -> str:
    from protocol.matchstate import format_matchstate

    return format_matchstate(view)


def test_bad_views_are_clear_errors() -> None:
    enc = InfosetEncoder(load_game("leduc"))
    with pytest.raises(EncodingError, match="not a decision point"):
        enc.encode_view(parse_matchstate("MATCHSTATE:0:0:rc/rf:Qs|/Ks"))
    with pytest.raises(EncodingError, match="board cards"):
        enc.encode_view(parse_matchstate("MATCHSTATE:0:0:rc/:Qs|"))
    with pytest.raises(EncodingError, match="two-player limit"):
        InfosetEncoder(dataclasses.replace(load_game("kuhn"), betting_type="nolimit"))
