"""Card codes and ACPC text."""

import pytest

from protocol.cards import CardError, card_from_str, cards_from_str, cards_to_str, deck


def test_round_trip_every_card():
    full = deck()
    assert len(full) == 52 and cards_from_str(cards_to_str(full)) == full


def test_reduced_decks_use_top_ranks_and_last_suits():
    assert cards_to_str(deck(3, 1)) == "QsKsAs"


@pytest.mark.parametrize("text", ["1s", "Ax", "A", "10h"])
def test_bad_cards(text):
    with pytest.raises(CardError):
        cards_from_str(text) if len(text) % 2 == 0 else card_from_str(text)
