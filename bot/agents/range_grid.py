"""A network's strategy at one decision for every hand of a range, from halves kept across queries.

Local best response (:mod:`bot.evaluation.lbr`) asks the agent for its strategy with every hand
of its range at each decision: ~1,000 hold'em hands, several times a round, each deal twice
(once per seat) on the same board. A plain forward pass reruns the card branch (embeddings and
three layers, ~60% of a width-64 forward) for every hand at every query, and an SD-CFR stack's
average reruns every entry at every earlier decision of the hand as well.

The appendix C network's card branch depends only on (hand, board of the round) and its bet
branch only on the betting node (the factoring :mod:`bot.agents.board_grid` uses for whole
boards), so a :class:`RangeGrid` keeps, per network and board of a round, the first trunk
layer's card half of *every* hand disjoint from that board, and per (network, node, board) the
finished strategy of every such hand; a query is then one compiled trunk pass
(:func:`bot.agents.network_kernels.trunk_strategies`) over the live hands the first time a
node is asked, and a gather afterwards. The values are the network's float32 maths as the board
match computes them (``tests/bot/evaluation/test_lbr_agents.py``: equal to the torch forward
within 2e-5).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from itertools import combinations, permutations

import numpy as np
import torch

from bot.agents.board_grid import board_card_rows
from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from bot.agents.network_kernels import trunk_strategies

#: Card halves kept (one per network and board of a round: ``[hands, width]`` float32, ~340 KB
#: for 1,326 hold'em hands at width 64): every round of a deal for an SD-CFR stack of ~250
#: entries, ~350 MB at most.
CARD_HALVES_KEPT = 1024
#: Node strategies kept (``[hands, 3]`` float32, ~16 KB each: ~130 MB at most; an SD-CFR deal of 178
#: iterations asks ~1,100).
STRATEGIES_KEPT = 8192
#: Boards whose live hands are kept (~42 KB each for hold'em): a deal's rounds, many times over.
BOARDS_KEPT = 256


class RangeGrid:
    """Strategies of every live hand at one decision, one grid per (network, node, board)."""

    def __init__(self, encoder: InfosetEncoder) -> None:
        self.encoder = encoder
        game = encoder.game
        self.num_hole_cards = game.num_hole_cards
        self.card_codes = max(game.deck) + 1
        self._deck = tuple(sorted(game.deck))
        self._hands: OrderedDict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._card_halves: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._strategies: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def live_hands(self, board: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(every hand disjoint from ``board`` ``[n, hole]`` in deck order, its row per card code
        ``[codes ** hole]``: -1 for a hand that touches the board)."""
        found = self._hands.get(board)
        if found is None:
            rest = [c for c in self._deck if c not in board]
            hands = np.array(list(combinations(rest, self.num_hole_cards)), dtype=np.int64).reshape(-1, self.num_hole_cards)
            row_of = np.full(self.card_codes**self.num_hole_cards, -1, dtype=np.int64)
            for order in permutations(range(self.num_hole_cards)):  # any order of the hole cards names the hand
                row_of[self.codes(hands[:, list(order)])] = np.arange(len(hands))
            found = (hands, row_of)
            _keep(self._hands, board, found, BOARDS_KEPT)
        else:
            self._hands.move_to_end(board)
        return found

    def codes(self, hands: np.ndarray) -> np.ndarray:
        """One integer per hand row (its cards in the given order, base :attr:`card_codes`)."""
        code = np.zeros(len(hands), dtype=np.int64)
        for column in range(hands.shape[1]):
            code = code * self.card_codes + hands[:, column]
        return code

    @torch.no_grad()
    def strategies(self, key: Hashable, net: DeepCFRNetwork, kind: str, argmax_fallback: bool, node: int,
                   board: tuple[int, ...], hands: np.ndarray) -> np.ndarray:
        """float64 ``[len(hands), 3]``: ``net``'s strategy (``kind`` ``value``: regret matching;
        ``average``: masked softmax) at decision ``node`` for each row of ``hands`` on ``board``
        (the cards visible at the node's round). ``key`` names the network for the caches: a
        stable name (a bundle file, a seat), not ``id(net)``, which a reloaded network changes."""
        board = tuple(int(c) for c in board)
        live, row_of = self.live_hands(board)
        rows = row_of[self.codes(np.asarray(hands, dtype=np.int64))]
        if (rows < 0).any():
            raise ValueError(f"range query: a hand shares a card with the board {board}")
        grid_key = (key, node, board)
        grid = self._strategies.get(grid_key)
        if grid is None:
            card_half = self._card_half(key, net, int(self.encoder.tree.round[node]), board, live)
            bet_half = net.bet_half(torch.from_numpy(self.encoder.bets[[node]]))
            legal = torch.from_numpy(self.encoder.legal[[node]])
            out = np.empty((1, len(live), 3), dtype=np.float32)
            grid = trunk_strategies(net, card_half, bet_half, legal, kind, argmax_fallback, out)[0]
            _keep(self._strategies, grid_key, grid, STRATEGIES_KEPT)
        else:
            self._strategies.move_to_end(grid_key)
        return grid[rows].astype(np.float64)

    def _card_half(self, key: Hashable, net: DeepCFRNetwork, round_index: int, board: tuple[int, ...],
                   live: np.ndarray) -> torch.Tensor:
        half_key = (key, round_index, board)
        half = self._card_halves.get(half_key)
        if half is None:
            rows = board_card_rows(self.encoder, live, np.array(board, dtype=np.int64), round_index)
            half = net.card_half(net.cards_seen(rows))
            _keep(self._card_halves, half_key, half, CARD_HALVES_KEPT)
        else:
            self._card_halves.move_to_end(half_key)
        return half


def _keep(cache: OrderedDict, key: tuple, value: object, limit: int) -> None:
    cache[key] = value
    if len(cache) > limit:
        cache.popitem(last=False)
