"""Many heads-up hands advancing together on the compiled public betting tree.

Self-play learners (NFSP here; any sampler that plays whole hands) need thousands of hands per
second, which per-hand :class:`~protocol.state.State` objects cannot give. Betting in limit games
does not depend on the cards, so a hand in progress is just a node id of
:class:`~protocol.betting_tree.BettingTree` plus its cards: one step of all hands is an array
lookup ``child[node, action]``. Cards are dealt for a whole batch with one argsort of random keys
(a uniform permutation per hand), and the showdown strengths of both players are evaluated once
per deal with :func:`protocol.evaluator.hand_strength_batch`. A player's view is the
``(node, card slots)`` pair of :class:`bot.agents.encoding.InfosetEncoder` (board cards it cannot see
yet are -1), which is what the networks read and the replay memories store.

>>> from protocol.gamedef import load_game
>>> env = VectorEnv(load_game("kuhn"), num_envs=4)
>>> env.deal(np.arange(4), np.random.default_rng(0))
>>> env.actor.tolist(), env.done.tolist()
([0, 0, 0, 0], [False, False, False, False])
>>> env.step(np.array([1, 1, 2, 2]))  # check, check, bet, bet
>>> env.step(np.array([1, 1, 0, 1]))  # check, check, fold, call
>>> env.done.tolist(), [env.tree.history[n] for n in env.node]
([True, True, True, True], ['cc', 'cc', 'rf', 'rc'])
"""

from __future__ import annotations

import numpy as np

from bot.agents.encoding import InfosetEncoder
from bot.errors import UnsupportedGameError
from protocol.betting_tree import FOLD_END, SHOWDOWN, BettingTree
from protocol.evaluator import hand_strength_batch
from protocol.gamedef import Game


class VectorEnv:
    """``num_envs`` hands of a two-player limit game; arrays are indexed by hand."""

    def __init__(self, game: Game, num_envs: int, tree: BettingTree | None = None) -> None:
        if game.num_players != 2:
            raise UnsupportedGameError(f"self-play environments are heads-up only; {game.name} has {game.num_players} players")
        if not game.is_limit:
            raise UnsupportedGameError(f"{game.name} is no-limit; the compiled betting tree covers limit games only")
        self.game = game
        self.tree = tree if tree is not None else BettingTree.build(game)
        self.encoder = InfosetEncoder(game, self.tree)
        self.num_envs = num_envs
        self._deck = np.array(game.deck, dtype=np.int8)
        self.fold_payoff, self.showdown_stake = _terminal_tables(self.tree)
        self.node = np.zeros(num_envs, dtype=np.int64)
        #: Hole cards per hand and position, shape [n, 2, hole].
        self.holes = np.full((num_envs, 2, game.num_hole_cards), -1, dtype=np.int8)
        #: The whole board of each hand (dealt up front; views hide what is not out yet).
        self.board = np.full((num_envs, game.total_board_cards), -1, dtype=np.int8)
        #: Showdown strength of each player's best hand with the full board, shape [n, 2].
        self.strength = np.zeros((num_envs, 2), dtype=np.int32)

    # -- dealing and stepping ------------------------------------------------------------
    def deal(self, index: np.ndarray, rng: np.random.Generator) -> None:
        """Start fresh hands in the games ``index``: uniform deals, betting at the root."""
        count = len(index)
        if count == 0:
            return
        hole = self.game.num_hole_cards
        needed = 2 * hole + self.game.total_board_cards
        order = np.argsort(rng.random((count, len(self._deck))), axis=1)[:, :needed]
        cards = self._deck[order]
        holes = cards[:, : 2 * hole].reshape(count, 2, hole)
        board = cards[:, 2 * hole :]
        self.holes[index], self.board[index], self.node[index] = holes, board, 0
        for player in range(2):
            self.strength[index, player] = hand_strength_batch(np.concatenate([holes[:, player], board], axis=1))

    def step(self, actions: np.ndarray, index: np.ndarray | None = None) -> None:
        """Apply action columns (0 fold, 1 check/call, 2 bet/raise) to the hands ``index``
        (default: all); every one must be at a decision and the action legal there."""
        nodes = self.node if index is None else self.node[index]
        successor = self.tree.child[nodes, actions]
        if (successor < 0).any():
            bad = int(np.flatnonzero(successor < 0)[0])
            raise ValueError(
                f"illegal action {int(actions[bad])} at betting {self.tree.history[int(nodes[bad])]!r}"
            )
        if index is None:
            self.node = successor.astype(np.int64)
        else:
            self.node[index] = successor

    # -- what the players see ------------------------------------------------------------
    @property
    def actor(self) -> np.ndarray:
        """Position to act per hand, -1 where the hand is over."""
        return self.tree.actor[self.node]

    @property
    def done(self) -> np.ndarray:
        return self.tree.is_terminal[self.node]

    @property
    def legal(self) -> np.ndarray:
        """Legal-action mask [n, 3] (fold, call, raise); all False at terminals."""
        return self.tree.legal[self.node]

    def observation(self, index: np.ndarray, player: np.ndarray | int) -> np.ndarray:
        """Card slots ``player`` sees in hands ``index`` (its hole cards, then the board with
        cards not out yet as -1), in :class:`~bot.agents.encoding.InfosetEncoder` layout."""
        player = np.broadcast_to(np.asarray(player), index.shape)
        rnd = self.tree.round[self.node[index]]
        return self.encoder.card_slots(self.holes[index], self.board[index], player, rnd)

    def payoffs(self, index: np.ndarray) -> np.ndarray:
        """Net chips [len(index), 2] of finished hands ``index`` (zero-sum)."""
        nodes = self.node[index]
        if not self.tree.is_terminal[nodes].all():
            raise ValueError("payoffs asked for a hand that is not over")
        strength = self.strength[index]
        sign = np.sign(strength[:, 0] - strength[:, 1]).astype(np.float64)
        showdown = self.showdown_stake[nodes] * sign
        result = self.fold_payoff[nodes].copy()
        at_showdown = self.tree.kind[nodes] == SHOWDOWN
        result[at_showdown, 0] = showdown[at_showdown]
        result[at_showdown, 1] = -showdown[at_showdown]
        return result


def _terminal_tables(tree: BettingTree) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the payoff vector when the hand ended by a fold, and the amount the better
    hand wins at a showdown (heads-up: the smaller contribution, the rest is returned)."""
    fold_payoff = np.zeros((tree.num_nodes, 2), dtype=np.float64)
    folds = np.flatnonzero(tree.kind == FOLD_END)
    folder = tree.folder[folds].astype(np.int64)
    lost = tree.spent[folds, folder].astype(np.float64)
    fold_payoff[folds, folder] = -lost
    fold_payoff[folds, 1 - folder] = lost
    showdown_stake = tree.spent.min(axis=1).astype(np.float64)
    showdown_stake[tree.kind != SHOWDOWN] = 0.0
    return fold_payoff, showdown_stake
