"""Cards in ACPC notation and their integer codes.

A card is the integer ``rank * 4 + suit`` with ranks ``23456789TJQKA`` (0..12) and suits
``cdhs`` (0..3), exactly as the ACPC server's ``makeCard``. Reduced decks (Kuhn, Leduc) use the
*highest* ranks and the *last* suits, so their cards keep the same codes as in a full deck:

>>> card_from_str("As"), card_to_str(51)
(51, 'As')
>>> cards_from_str("Td2c")
(33, 0)
>>> cards_to_str((33, 0))
'Td2c'
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from protocol.errors import ProtocolError

RANKS = "23456789TJQKA"
SUITS = "cdhs"
NUM_RANKS = len(RANKS)
NUM_SUITS = len(SUITS)
SUIT_SYMBOLS = {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}


class CardError(ProtocolError, ValueError):
    """Raised for text that is not a card in ACPC notation."""


def make_card(rank: int, suit: int) -> int:
    """The code of the card with rank index ``rank`` (0 = deuce) and suit index ``suit``."""
    return rank * NUM_SUITS + suit


def card_rank(card: int) -> int:
    """Rank index 0 (deuce) .. 12 (ace)."""
    return card // NUM_SUITS


def card_suit(card: int) -> int:
    """Suit index 0 (clubs) .. 3 (spades)."""
    return card % NUM_SUITS


#: Two-character text -> code, for parsing a card with one dictionary look-up.
_CODES = {
    rank + suit: make_card(r, s) for r, rank in enumerate(RANKS) for s, suit in enumerate(SUITS)
}
#: Code -> two-character text.
_TEXTS = tuple(sorted(_CODES, key=_CODES.__getitem__))


def _not_a_card(text: str) -> CardError:
    return CardError(f"not a card: {text!r} (expected a rank of {RANKS} and a suit of {SUITS})")


def card_from_str(text: str) -> int:
    """Parse one two-character card such as ``Kh``."""
    try:
        return _CODES[text]
    except KeyError:
        raise _not_a_card(text) from None


def card_to_str(card: int) -> str:
    """Two-character ACPC text of a card code."""
    if not 0 <= card < NUM_RANKS * NUM_SUITS:
        raise CardError(f"not a card code: {card}")
    return _TEXTS[card]


def cards_from_str(text: str) -> tuple[int, ...]:
    """Parse concatenated cards (``"AhKd"``); the empty string is no cards."""
    if len(text) % 2:
        raise CardError(f"card text has odd length: {text!r}")
    try:
        return tuple([_CODES[text[i : i + 2]] for i in range(0, len(text), 2)])
    except KeyError as error:
        raise _not_a_card(error.args[0]) from None


def cards_to_str(cards: Iterable[int]) -> str:
    """Concatenated ACPC text of card codes."""
    return "".join([card_to_str(c) for c in cards])


@lru_cache(maxsize=64)
def deck_set(num_ranks: int = NUM_RANKS, num_suits: int = NUM_SUITS) -> frozenset[int]:
    """The cards of :func:`deck` as a set, for membership tests."""
    return frozenset(deck(num_ranks, num_suits))


@lru_cache(maxsize=64)
def deck(num_ranks: int = NUM_RANKS, num_suits: int = NUM_SUITS) -> tuple[int, ...]:
    """The cards of a deck with the top ``num_ranks`` ranks and last ``num_suits`` suits.

    >>> cards_to_str(deck(3, 2))
    'QhQsKhKsAhAs'
    """
    if not (1 <= num_ranks <= NUM_RANKS and 1 <= num_suits <= NUM_SUITS):
        raise CardError(f"impossible deck: {num_ranks} ranks x {num_suits} suits")
    return tuple(
        make_card(rank, suit)
        for rank in range(NUM_RANKS - num_ranks, NUM_RANKS)
        for suit in range(NUM_SUITS - num_suits, NUM_SUITS)
    )
