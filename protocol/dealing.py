"""Deals that depend only on (seed, hand number), never on the actions.

Both our dealer and the in-process match runner deal with :func:`deal_hand`, so the same seed
gives the same cards by position in every hand whichever way a match is played, and replaying a
seed with the seats swapped is a duplicate match (as the reference ACPC ``dealer.c``'s seeded
deals and seat rotation allow). The rotation itself is here too, the one copy the dealer, the
match runner and the table share: in hand ``h`` the player in 0-based seat ``s`` holds position
``(s - h) mod n``.

>>> from protocol.gamedef import load_game
>>> game = load_game("leduc")
>>> deal_hand(game, seed=7, hand_number=3) == deal_hand(game, seed=7, hand_number=3)
True
>>> [position_of_seat(0, hand, 2) for hand in range(4)], seat_of_position(1, 3, 2)
([0, 1, 0, 1], 0)
"""

from __future__ import annotations

import numpy as np

from protocol.gamedef import Game


def position_of_seat(seat: int, hand_number: int, num_players: int) -> int:
    """Position held by 0-based ``seat`` in hand ``hand_number`` under the dealer's rotation."""
    return (seat - hand_number) % num_players


def seat_of_position(position: int, hand_number: int, num_players: int) -> int:
    """0-based seat holding ``position`` in hand ``hand_number`` (the inverse rotation)."""
    return (position + hand_number) % num_players


def deal_hand(
    game: Game, seed: int, hand_number: int
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """Hole cards per position and the board for every round of hand ``hand_number``."""
    rng = np.random.default_rng([seed, hand_number])
    order = rng.permutation(len(game.deck))
    deck = game.deck
    cards = [deck[i] for i in order.tolist()]
    holes = tuple(
        tuple(cards[p * game.num_hole_cards : (p + 1) * game.num_hole_cards])
        for p in range(game.num_players)
    )
    start = game.num_players * game.num_hole_cards
    return holes, tuple(cards[start : start + game.total_board_cards])
