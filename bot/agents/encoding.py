"""Infoset features for the Deep CFR network (Brown et al. 2019, sec. 5 and appendix C).

An infoset of a limit game is (the viewer's hole cards, the visible board, the betting text).
The network sees it as two inputs:

* **cards** (int64 ``[N, num_card_slots]``): card groups side by side — the hole cards, then the
  board cards dealt in each round that deals any (Leduc: hole | board; FHP: hole | flop; HULH:
  hole | flop | turn | river). Slots of cards not yet visible hold ``-1`` ("no card"), which
  the network's card embedding zeroes.
* **bets** (float32 ``[N, num_bet_slots]``): one slot per betting position (``slots_per_round``
  per round: the most actions any round of the game can hold, derived from the betting tree;
  the paper bounds it by 6). A slot is
  the chips that action put in, in big blinds (a check is 0.0), or ``-1`` where no action
  happened. The network turns each slot into the paper's pair (bet occurred, bet size).

Bets depend only on the betting node, so :class:`InfosetEncoder` precomputes them for every
node of the compiled :class:`~protocol.betting_tree.BettingTree`; a stored sample is then just a
node id plus the viewer's card slots (compact reservoir memories), and the batched form used by
traversals and the single-view form used by agents go through the same tables.

>>> from protocol.gamedef import load_game
>>> from protocol.matchstate import parse_matchstate
>>> enc = InfosetEncoder(load_game("leduc"))
>>> enc.group_sizes, enc.slots_per_round, enc.num_bet_slots
((1, 1), 4, 8)
>>> node, cards = enc.encode_view(parse_matchstate("MATCHSTATE:0:0:rc/r:Qs|/Ks"))
>>> enc.tree.history[node], cards.tolist()
('rc/r', [43, 47])
>>> enc.bets[node].tolist()
[1.0, 1.0, -1.0, -1.0, 2.0, -1.0, -1.0, -1.0]
"""

from __future__ import annotations

import numpy as np

from bot.errors import PokerbotError
from protocol.betting_tree import DECISION, BettingTree
from protocol.gamedef import Game
from protocol.matchstate import MatchState

#: Bump when the meaning of any feature changes; stored in every policy bundle and checked on load.
ENCODER_VERSION = 1


class EncodingError(PokerbotError, ValueError):
    """A view that does not fit the game this encoder was built for."""


def _max_actions_per_round(tree: BettingTree) -> int:
    """Largest number of actions taken within one round on any betting sequence."""
    return max(max((len(part) for part in h.split("/")), default=0) for h in tree.history)


class InfosetEncoder:
    """Feature tables for one two-player limit game (see the module docstring for the layout)."""

    def __init__(self, game: Game, tree: BettingTree | None = None) -> None:
        if game.num_players != 2 or not game.is_limit:
            raise EncodingError(f"{game.name}: Deep CFR features cover two-player limit games only")
        self.game = game
        self.tree = tree if tree is not None else BettingTree.build(game)
        groups = [game.num_hole_cards] + [n for n in game.num_board_cards if n > 0]
        self.group_sizes: tuple[int, ...] = tuple(groups)
        self.num_card_slots = sum(groups)
        self.slots_per_round = _max_actions_per_round(self.tree)
        self.num_bet_slots = self.slots_per_round * game.num_rounds
        self.bets = self._bet_table()
        #: visible[r, s]: slot s shows a card once round r has started (hole slots always).
        self.visible = np.zeros((game.num_rounds, self.num_card_slots), dtype=bool)
        for r in range(game.num_rounds):
            self.visible[r, : game.num_hole_cards + game.board_cards_through(r)] = True
        self.legal = self.tree.legal

    def _bet_table(self) -> np.ndarray:
        tree, bb = self.tree, float(self.game.big_blind)
        table = np.full((tree.num_nodes, self.num_bet_slots), -1.0, dtype=np.float32)
        for node in range(1, tree.num_nodes):
            parent = int(tree.parent[node])
            actor = int(tree.actor[parent])
            rnd = int(tree.round[parent])
            # the parent's betting text in its own round tells the slot of this action
            slot = rnd * self.slots_per_round + len(tree.history[parent].split("/")[rnd])
            table[node] = table[parent]
            table[node, slot] = (tree.spent[node, actor] - tree.spent[parent, actor]) / bb
        return table

    # -- batched form (traversals, exploitability, memories) ---------------------------------

    def card_slots(self, holes: np.ndarray, board: np.ndarray, player: np.ndarray, rnd: np.ndarray) -> np.ndarray:
        """Card features ``[N, num_card_slots]`` (int8) for each row's ``player`` at round ``rnd``.

        ``holes`` is ``[N, players, hole]`` and ``board`` the full board ``[N, total_board]`` of
        each row's deal; cards of later rounds are hidden as -1.
        """
        rows = np.arange(len(player))
        full = np.concatenate([holes[rows, player], board], axis=1)
        return np.where(self.visible[rnd], full, -1).astype(np.int8)

    # -- single view (agents) ----------------------------------------------------------------

    def encode_view(self, view: MatchState) -> tuple[int, np.ndarray]:
        """(betting node id, card slots int8) of the viewer's decision in ``view``."""
        node = self.tree.node_of.get(view.betting)
        if node is None or self.tree.kind[node] != DECISION:
            raise EncodingError(f"betting {view.betting!r} is not a decision point of {self.game.name}")
        rnd = int(self.tree.round[node])
        hole, board = view.own_hole_cards, view.board_flat
        if len(hole) != self.game.num_hole_cards or len(board) != self.game.board_cards_through(rnd):
            raise EncodingError(
                f"view has {len(hole)} hole and {len(board)} board cards; {self.game.name} round {rnd} "
                f"needs {self.game.num_hole_cards} and {self.game.board_cards_through(rnd)}"
            )
        cards = np.full(self.num_card_slots, -1, dtype=np.int8)
        cards[: len(hole) + len(board)] = list(hole) + list(board)
        return node, cards
