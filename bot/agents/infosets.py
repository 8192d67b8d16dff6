"""The dense index of every information set of a small two-player limit game.

An information set of the acting player is (decision node of the public
:class:`~protocol.betting_tree.BettingTree`, the board cards dealt so far, the actor's own hole
cards). Strategies everywhere in the project are numpy arrays ``[num_infosets, 3]`` over this
index: columns f, c, r; zero on illegal actions; every row sums to 1.

Infosets are numbered by *slot*: decision nodes in preorder, then boards of the node's round,
then hands. A slot exists for every (node, board, hand) even when the hand collides with the
board; the infosets are the slots whose hand does not. That dense slot layout
(``[num_slots, 3]``, see :meth:`InfosetSpace.to_dense`) is what best response and CFR work on:
a node's slots are one contiguous ``[boards, hands, 3]`` block, so the public-tree algorithms
(Johanson et al. 2011) read a node's strategy as a view, with no gathers.

The policy-file key of an infoset is ``<own hole cards>|<board so far>|<betting so far>``,
cards in descending code order (within each round for the board), betting exactly as
:meth:`protocol.state.State.betting_string`:

>>> from protocol.gamedef import load_game
>>> space = InfosetSpace.build(load_game("leduc"))
>>> space.num_infosets, space.num_infosets_of(0), space.num_infosets_of(1)
(936, 468, 468)
>>> space.key(space.index("Ah|Qs|rc/cr"))
'Ah|Qs|rc/cr'
>>> kuhn = InfosetSpace.build(load_game("kuhn"))
>>> [kuhn.key(i) for i in range(4)]
['As||', 'Ks||', 'Qs||', 'As||c']
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import comb

import numpy as np

from bot.errors import UnsupportedGameError
from protocol.betting_tree import BettingTree
from protocol.cards import cards_to_str
from protocol.gamedef import Game
from protocol.state import ACTIONS

#: Tolerance on a strategy row summing to 1.
SUM_TOLERANCE = 1e-6


def _combos(cards: list[int], k: int) -> list[tuple[int, ...]]:
    """All k-subsets, each in descending card order (the key order)."""
    return list(itertools.combinations(sorted(cards, reverse=True), k))


def card_masks(cards: np.ndarray) -> np.ndarray:
    """One int64 bit mask (bit = card code) per row of card codes ``[n, k]``."""
    masks = np.zeros(len(cards), dtype=np.int64)
    for col in range(cards.shape[1]):
        masks |= np.int64(1) << cards[:, col].astype(np.int64)
    return masks


def canonical_cards(cards: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Cards in key order (descending codes)."""
    return tuple(sorted(cards, reverse=True))


def _build_boards(game: Game) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per round: every board dealt through that round ``[B_r, cards]`` and its parent board
    index in the previous round. Children of one parent are contiguous and equally many, so
    summing a child-round array over chance is a reshape ``[B_{r-1}, K, ...].sum(1)``."""
    boards = [np.array([c for c in _combos(list(game.deck), game.num_board_cards[0])], dtype=np.int16)]
    boards[0] = boards[0].reshape(len(boards[0]), game.num_board_cards[0])
    parents = [np.zeros(len(boards[0]), dtype=np.int64)]
    for r in range(1, game.num_rounds):
        rows, parent_rows = [], []
        for p, prefix in enumerate(boards[r - 1]):
            rest = [c for c in game.deck if c not in set(prefix.tolist())]
            for new in _combos(rest, game.num_board_cards[r]):
                rows.append(tuple(prefix.tolist()) + new)
                parent_rows.append(p)
        width = game.board_cards_through(r)
        boards.append(np.array(rows, dtype=np.int16).reshape(len(rows), width))
        parents.append(np.array(parent_rows, dtype=np.int64))
    return boards, parents


@dataclass(frozen=True, eq=False)
class InfosetSpace:
    """Every infoset of both players of a two-player limit game, in a dense index.

    Per-infoset arrays (length ``num_infosets``, computed on first use): ``slot``,
    ``node`` (betting-tree node id), ``player``, ``hand`` (row of ``hands``), ``board`` (row of
    ``boards[round]``), ``legal`` ``[n, 3]``.
    ``hands`` ``[H, hole cards]`` lists every possible holding; ``boards[r]`` every board
    through round r; ``valid[r]`` ``[B_r, H]`` says which hands do not collide with a board.
    """

    game: Game
    tree: BettingTree
    hands: np.ndarray  # int16 [H, num_hole_cards], each row descending
    boards: tuple[np.ndarray, ...]  # per round: int16 [B_r, cards through round r]
    board_parent: tuple[np.ndarray, ...]  # per round: int64 [B_r], row in boards[r - 1]
    valid: tuple[np.ndarray, ...]  # per round: bool [B_r, H]
    node_offset: np.ndarray  # int64 [num_nodes]: first slot of a decision node, -1 at terminals

    @classmethod
    def build(cls, game: Game) -> InfosetSpace:
        if game.num_players != 2 or not game.is_limit:
            raise UnsupportedGameError(f"{game.name}: infoset spaces are built for two-player limit games only")
        tree = BettingTree.build(game)
        hands = np.array(_combos(list(game.deck), game.num_hole_cards), dtype=np.int16)
        boards, parents = _build_boards(game)
        hand_masks = card_masks(hands)
        valid = [(card_masks(rows)[:, None] & hand_masks[None, :]) == 0 for rows in boards]
        num_hands = len(hands)
        decision = tree.decision_ids
        sizes = np.array([len(boards[tree.round[n]]) * num_hands for n in decision], dtype=np.int64)
        node_offset = np.full(tree.num_nodes, -1, dtype=np.int64)
        node_offset[decision] = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        return cls(
            game=game,
            tree=tree,
            hands=hands,
            boards=tuple(boards),
            board_parent=tuple(parents),
            valid=tuple(valid),
            node_offset=node_offset,
        )

    # -- per-infoset arrays (computed on first use: FHP's would take tens of GB) ----------
    @cached_property
    def slot(self) -> np.ndarray:
        """int64 [num_infosets]: the dense slot of each infoset."""
        decision = self.tree.decision_ids
        return np.flatnonzero(np.concatenate([self.valid[self.tree.round[n]].ravel() for n in decision]))

    @cached_property
    def node(self) -> np.ndarray:
        """int32 [num_infosets]: betting-tree node id."""
        decision = self.tree.decision_ids
        starts = self.node_offset[decision]
        return decision[np.searchsorted(starts, self.slot, side="right") - 1].astype(np.int32)

    @cached_property
    def _local(self) -> np.ndarray:
        return self.slot - self.node_offset[self.node]

    @cached_property
    def player(self) -> np.ndarray:
        """int8 [num_infosets]: the acting player."""
        return self.tree.actor[self.node].astype(np.int8)

    @cached_property
    def hand(self) -> np.ndarray:
        """int32 [num_infosets]: row of ``hands``."""
        return (self._local % self.num_hands).astype(np.int32)

    @cached_property
    def board(self) -> np.ndarray:
        """int32 [num_infosets]: row of ``boards[round of the node]``."""
        return (self._local // self.num_hands).astype(np.int32)

    @cached_property
    def legal(self) -> np.ndarray:
        """bool [num_infosets, 3]: legal actions (f, c, r)."""
        return self.tree.legal[self.node]

    # -- sizes ---------------------------------------------------------------------------
    @cached_property
    def num_infosets(self) -> int:
        return sum(int(self.valid[self.tree.round[n]].sum()) for n in self.tree.decision_ids)

    @property
    def num_hands(self) -> int:
        return len(self.hands)

    @cached_property
    def num_slots(self) -> int:
        decision = self.tree.decision_ids
        return int(sum(len(self.boards[self.tree.round[n]]) for n in decision)) * self.num_hands

    def num_infosets_of(self, player: int) -> int:
        return int(np.count_nonzero(self.player == player))

    # -- keys ----------------------------------------------------------------------------
    def hole_cards(self, infoset: int) -> tuple[int, ...]:
        return tuple(int(c) for c in self.hands[self.hand[infoset]])

    def board_cards(self, infoset: int) -> tuple[int, ...]:
        """The board dealt so far (rounds in order, each round's cards descending)."""
        rnd = self.tree.round[self.node[infoset]]
        return tuple(int(c) for c in self.boards[rnd][self.board[infoset]])

    def key(self, infoset: int) -> str:
        """The policy-file key, e.g. ``Ah|Qs|rc/cr``."""
        return (
            f"{cards_to_str(self.hole_cards(infoset))}|{cards_to_str(self.board_cards(infoset))}"
            f"|{self.tree.history[self.node[infoset]]}"
        )

    @cached_property
    def keys(self) -> tuple[str, ...]:
        """Every key in index order (small games only: one Python string per infoset)."""
        return tuple(self.key(i) for i in range(self.num_infosets))

    @cached_property
    def _index_of(self) -> dict[str, int]:
        return {k: i for i, k in enumerate(self.keys)}

    def index(self, key: str) -> int:
        """Infoset id of a key; KeyError naming the key when there is none."""
        try:
            return self._index_of[key]
        except KeyError:
            raise KeyError(f"no infoset {key!r} in {self.game.name}") from None

    @staticmethod
    def make_key(hole: tuple[int, ...], board_by_round: tuple[tuple[int, ...], ...], betting: str) -> str:
        """The key of a player's view: own hole cards, the board per round, the betting text."""
        board = tuple(c for rnd in board_by_round for c in canonical_cards(rnd))
        return f"{cards_to_str(canonical_cards(hole))}|{cards_to_str(board)}|{betting}"

    # -- strategies ----------------------------------------------------------------------
    def uniform_strategy(self) -> np.ndarray:
        """Uniform over the legal actions at every infoset."""
        legal = self.legal.astype(np.float64)
        return legal / legal.sum(axis=1, keepdims=True)

    def check_strategy(self, strategy: np.ndarray) -> np.ndarray:
        """``strategy`` as float64 after checking shape, signs, illegal zeros and row sums."""
        strategy = np.asarray(strategy, dtype=np.float64)
        if strategy.shape != (self.num_infosets, len(ACTIONS)):
            raise ValueError(
                f"strategy has shape {strategy.shape}, expected ({self.num_infosets}, 3) for {self.game.name}"
            )
        bad = np.flatnonzero(
            (strategy < 0).any(axis=1)
            | (strategy * ~self.legal != 0).any(axis=1)
            | (np.abs(strategy.sum(axis=1) - 1.0) > SUM_TOLERANCE)
        )
        if len(bad):
            raise ValueError(
                f"strategy row {bad[0]} ({self.key(int(bad[0]))}) is not a distribution over the "
                f"legal actions: {strategy[bad[0]].tolist()}"
            )
        return strategy

    def to_dense(self, strategy: np.ndarray) -> np.ndarray:
        """The slot layout ``[num_slots, 3]`` (rows of impossible hands stay zero)."""
        dense = np.zeros((self.num_slots, strategy.shape[1]), dtype=np.float64)
        dense[self.slot] = strategy
        return dense

    def from_dense(self, dense: np.ndarray) -> np.ndarray:
        """Infoset rows of a slot-layout array."""
        return dense[self.slot]

    def node_blocks(self, dense: np.ndarray) -> list[np.ndarray | None]:
        """:meth:`node_block` of every node (None at terminals), for passes that read many."""
        return [
            self.node_block(dense, n) if self.node_offset[n] >= 0 else None
            for n in range(self.tree.num_nodes)
        ]

    def node_block(self, dense: np.ndarray, node: int) -> np.ndarray:
        """The view ``[B_r, H, ...]`` of one decision node's slots in a dense array."""
        start = self.node_offset[node]
        boards = len(self.boards[self.tree.round[node]])
        return dense[start : start + boards * self.num_hands].reshape(
            boards, self.num_hands, *dense.shape[1:]
        )


#: Slots above which tabular tables are refused on this kind of machine (3 float64 tables of
#: [slots, 3] is 72 bytes a slot: 3.6 GB here; FHP would need 1.64e9 slots).
MAX_TABULAR_SLOTS = 50_000_000


def count_slots(game: Game) -> int:
    """Slots of a game's infoset space, counted without building it (decision nodes x boards
    of their round x hands)."""
    tree = BettingTree.build(game)
    deck = len(game.deck)
    hands = comb(deck, game.num_hole_cards)
    boards, left, per_round = 1, deck, []
    for r in range(game.num_rounds):
        boards *= comb(left, game.num_board_cards[r])
        left -= game.num_board_cards[r]
        per_round.append(boards)
    return sum(per_round[int(tree.round[n])] for n in tree.decision_ids) * hands


def require_tabular_size(game: Game) -> None:
    """UnsupportedGameError when a game is too large for tabular tables over every infoset here."""
    slots = count_slots(game)
    if slots > MAX_TABULAR_SLOTS:
        raise UnsupportedGameError(
            f"{game.name} has {slots:,} infoset slots: too large for tabular tables here "
            f"(limit {MAX_TABULAR_SLOTS:,}); use a card abstraction or a network"
        )


@lru_cache(maxsize=8)
def space_for(game: Game) -> InfosetSpace:
    """The (cached) infoset space of a game."""
    return InfosetSpace.build(game)


def normalise_average(strategy_sum: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Rows of a strategy sum as distributions; uniform over legal actions where the sum is 0."""
    total = strategy_sum.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, strategy_sum / np.where(total > 0, total, 1.0), uniform)


#: Slots up to which exact exploitability is cheap enough to measure during training and to
#: write as a tabular file (Kuhn 12, Leduc 1,116; FHP's 1.6e9 are not).
MAX_EVALUATION_SLOTS = 100_000


def is_small(game: Game) -> bool:
    """Whether ``game`` is small enough for exact exploitability during training: the one test
    Deep CFR, NFSP, the abstraction solver and ``export-policy`` share."""
    return game.num_players == 2 and game.is_limit and count_slots(game) <= MAX_EVALUATION_SLOTS
