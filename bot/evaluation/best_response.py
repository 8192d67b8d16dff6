"""Exact best response, exploitability and profile values on the public tree.

The walk follows Johanson, Waugh, Bowling & Zinkevich, *Accelerating Best Response Calculation
in Large Extensive Games* (IJCAI 2011): nodes are public states (betting node x board dealt so
far), and each carries a vector over every private holding instead of recursing per hand. A
node's arrays are ``[boards of its round, hands]``; all boards of a round advance together, so
the Python loop runs once per *betting* node (Leduc: 85) and numpy does the rest.

Values are *counterfactual* values weighted by chance: ``v_p[b, h]`` is the sum over deals
(own hand h, board b, opponent hand h') of P(deal) x opponent reach x own future play x payoff.
It is one module because every figure it computes (best response, exploitability, profile and
head-to-head values) is one walk of one public tree.
Summed over h at the root this is the player's expected value, so chance nodes are plain sums
over child boards (``_Walk.child``). Terminals use card removal exactly:

* fold: the opponent reach of hands disjoint from h, by inclusion-exclusion over h's cards
  (``T - sum_c S_c (+ reach(h) for two-card hands)``);
* showdown: the sort-by-strength sweep (Johanson et al. 2011, sec. 4.2): per board, hands in
  ascending strength, keeping the running reach total and the running total per card, so the
  reach of weaker hands disjoint from h is ``total - sum_c card_total[c]``; ties win nothing.

:meth:`PublicTree.counterfactual_values` is the one walker (a depth-first pass: reach down,
values up): best response takes the max at the responder's
nodes, profile evaluation the expectation, and CFR (``training.tabular.cfr``) reads every node's own
reach and action values through its ``on_decision`` hook.

Units: chips per hand; mbb/g = 1000 x chips / ``game.big_blind``. NashConv = sum of both
players' best-response gains ("total exploitability" in Deep CFR); exploitability = NashConv / 2
("average", Johanson et al. eq. 3).

>>> from protocol.gamedef import load_game
>>> leduc = load_game("leduc")
>>> report = exploitability(leduc, space_for(leduc).uniform_strategy())
>>> round(report.mbb(report.exploitability), 1), round(report.nash_conv, 4)
(1186.8, 4.7472)

Memory: the walk is depth-first and deals a new round's boards in chunks of about
``max_elements`` (board, hand) entries, so its own arrays take depth x chunk x hands; the
strategy is read per node and board range, so it may be a dense table (Leduc: 1,116 slots) or
an object that computes blocks on request (FHP's dense table would be 1.64e9 slots x 3 floats).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np
from numba import njit

from bot.agents.infosets import InfosetSpace, space_for
from bot.errors import UnsupportedGameError
from protocol.betting_tree import DECISION, FOLD_END
from protocol.evaluator import NUM_CARDS, hand_strength_batch
from protocol.gamedef import Game

#: Called at each of the walking player's decision nodes with (node, the slice of the node's
#: round's boards being visited, the player's own reach ``[b, H]``, action values ``[b, H, 3]``
#: (zero at illegal actions), the node's value ``[b, H]``).
DecisionHook = Callable[[int, slice, np.ndarray, np.ndarray, np.ndarray], None]


@njit(cache=True)
def _sweep_one_way(b, positions, order, sorted_strength, reach, hand_cards, card_total, sign, out):  # pragma: no cover - numba
    """Walk board b's hands in ``positions`` order (groups of equal strength together): add
    ``sign`` x (reach of the hands already passed that share no card with h) to out[b, h]."""
    k = hand_cards.shape[1]
    card_total[:] = 0.0
    total = 0.0
    i = 0
    n = len(positions)
    while i < n:
        j = i
        while j < n and sorted_strength[b, positions[j]] == sorted_strength[b, positions[i]]:
            j += 1
        for m in range(i, j):
            h = order[b, positions[m]]
            w = total
            for c in range(k):
                w -= card_total[hand_cards[h, c]]
            out[b, h] += sign * w
        for m in range(i, j):
            h = order[b, positions[m]]
            r = reach[b, h]
            total += r
            for c in range(k):
                card_total[hand_cards[h, c]] += r
        i = j


@njit(cache=True)
def _showdown_sweep(order, sorted_strength, reach, hand_cards, num_cards, out):  # pragma: no cover - numba
    """out[b, h] += reach of weaker disjoint hands - reach of stronger disjoint hands.

    Ascending, the hands passed are the weaker ones; descending, the stronger ones. With at most
    two hole cards, ``total - sum_c card_total[c]`` is exact: the only hand holding both of h's
    cards is h itself, which is never strictly weaker or stronger than h."""
    num_valid = order.shape[1]
    card_total = np.zeros(num_cards)
    up = np.arange(num_valid)
    down = up[::-1].copy()
    for b in range(order.shape[0]):
        _sweep_one_way(b, up, order, sorted_strength, reach, hand_cards, card_total, 1.0, out)
        _sweep_one_way(b, down, order, sorted_strength, reach, hand_cards, card_total, -1.0, out)


class PublicTree:
    """Chance structure and terminal payoffs of a game's public tree, for range-vector passes."""

    def __init__(self, space: InfosetSpace, max_elements: int = 1 << 22) -> None:
        game = space.game
        #: Board chunks at a new round hold at most this many (board, hand) entries per array.
        self.max_elements = max_elements
        if game.num_hole_cards > 2:
            raise UnsupportedGameError(f"{game.name}: exact best response supports at most 2 hole cards")
        self.space = space
        self.tree = space.tree
        self.hand_cards = space.hands.astype(np.int64)
        self.incidence = np.zeros((space.num_hands, NUM_CARDS))
        for col in range(self.hand_cards.shape[1]):
            self.incidence[np.arange(space.num_hands), self.hand_cards[:, col]] = 1.0
        self.valid_float = tuple(v.astype(np.float64) for v in space.valid)
        self.deal_weight = self._deal_weights(game)
        last = game.num_rounds - 1
        self.showdown_order, self.showdown_strength = self._sorted_showdowns(space, last)
        tree = self.tree
        # per node, as Python values: the passes loop over nodes, so keep numpy scalars out
        self.node_round = [int(r) for r in tree.round]
        self.children = [
            [(a, int(c), int(tree.round[c])) for a, c in enumerate(tree.child[n]) if c >= 0]
            for n in range(tree.num_nodes)
        ]
        # per terminal: (round, is a fold, chance weight x chips won per player)
        self.terminal = {int(n): self._terminal_info(int(n)) for n in tree.terminal_ids}

    @staticmethod
    def _deal_weights(game: Game) -> tuple[float, ...]:
        """Per round r: the probability of one particular (hand 0, hand 1, board through r)."""
        k, deck = game.num_hole_cards, len(game.deck)
        hands = comb(deck, k) * comb(deck - k, k)
        left, boards, weights = deck - 2 * k, 1, []
        for r in range(game.num_rounds):
            boards *= comb(left, game.num_board_cards[r])
            left -= game.num_board_cards[r]
            weights.append(1.0 / (hands * boards))
        return tuple(weights)

    @staticmethod
    def _sorted_showdowns(space: InfosetSpace, last: int) -> tuple[np.ndarray, np.ndarray]:
        """Valid hands of every final board in ascending strength, with their strengths."""
        boards, valid = space.boards[last], space.valid[last]
        board_index, hand_index = np.nonzero(valid)
        cards = np.concatenate([space.hands[hand_index], boards[board_index]], axis=1)
        strength = np.full(valid.shape, np.iinfo(np.int32).min, dtype=np.int32)
        strength[board_index, hand_index] = hand_strength_batch(cards.astype(np.int64))
        num_valid = int(valid[0].sum())
        order = np.argsort(strength, axis=1, kind="stable")[:, -num_valid:]
        return order.astype(np.int64), np.take_along_axis(strength, order, axis=1)

    # -- chance --------------------------------------------------------------------------
    def _pieces(self, lo: int, hi: int, rnd: int, child_round: int):
        """Chunks ``(p0, p1, c0, c1)`` of the child-round boards below boards ``[lo, hi)`` of round
        ``rnd``: either whole groups of children of parents ``p0..p1-1`` or part of one
        parent's group, about ``max_elements / hands`` boards each. Children of one parent are
        contiguous and equally many (:func:`bot.agents.infosets._build_boards`)."""
        per_parent = len(self.space.boards[child_round]) // len(self.space.boards[rnd])
        chunk = max(1, self.max_elements // self.space.num_hands)
        if per_parent <= chunk:
            step = chunk // per_parent
            for p0 in range(lo, hi, step):
                p1 = min(p0 + step, hi)
                yield p0, p1, p0 * per_parent, p1 * per_parent
        else:
            for p in range(lo, hi):
                for c0 in range(p * per_parent, (p + 1) * per_parent, chunk):
                    yield p, p + 1, c0, min(c0 + chunk, (p + 1) * per_parent)

    # -- terminals -----------------------------------------------------------------------
    def _terminal_info(self, node: int) -> tuple[int, bool, tuple[float, float]]:
        tree = self.tree
        rnd, spent = int(tree.round[node]), [int(x) for x in tree.spent[node]]
        weight = self.deal_weight[rnd]
        if tree.kind[node] == FOLD_END:
            folder = int(tree.folder[node])
            won = tuple(-spent[p] if folder == p else spent[1 - p] for p in (0, 1))
            return rnd, True, (weight * won[0], weight * won[1])
        if spent[0] != spent[1] or rnd != self.space.game.num_rounds - 1:
            raise UnsupportedGameError(f"{self.space.game.name}: all-in showdowns (stacks) are not supported")
        return rnd, False, (weight * spent[0], weight * spent[1])

    def terminal_values(self, node: int, lo: int, hi: int, player: int, opponent_reach: np.ndarray) -> np.ndarray:
        """Chance-weighted payoff ``[hi - lo, H]`` of ``player`` at a terminal node, for boards
        ``[lo, hi)`` of its round: at a fold, the chips won times the opponent reach disjoint
        from each hand; at a showdown, the stake times (weaker - stronger disjoint reach)."""
        rnd, is_fold, scales = self.terminal[node]
        valid = self.valid_float[rnd][lo:hi]
        if is_fold:
            return scales[player] * self.disjoint_reach(opponent_reach) * valid
        net = np.zeros(opponent_reach.shape)  # hands colliding with the board stay 0
        _showdown_sweep(
            self.showdown_order[lo:hi], self.showdown_strength[lo:hi],
            np.ascontiguousarray(opponent_reach), self.hand_cards, NUM_CARDS, net,
        )
        return scales[player] * net * valid

    def disjoint_reach(self, opponent_reach: np.ndarray) -> np.ndarray:
        """``[boards, H]``: per own hand h, the opponent reach summed over the hands that share
        no card with h (inclusion-exclusion over h's cards; with two-card hands the hand h
        itself is subtracted twice, so it is added back once)."""
        per_card = opponent_reach @ self.incidence
        disjoint = opponent_reach.sum(axis=1, keepdims=True) - per_card[:, self.hand_cards].sum(axis=2)
        if self.hand_cards.shape[1] == 2:
            disjoint += opponent_reach
        return disjoint

    # -- passes --------------------------------------------------------------------------
    def counterfactual_values(
        self,
        player: int,
        blocks: list,
        best_response: bool = False,
        on_decision: DecisionHook | None = None,
    ) -> np.ndarray:
        """``player``'s chance-weighted values ``[B_0, H]`` at the root of the profile ``blocks``:
        per node, anything whose ``[lo:hi]`` is that node's ``[boards, H, 3]`` strategy for
        boards lo..hi-1 (:meth:`bot.agents.infosets.InfosetSpace.node_blocks` of a dense table, or a
        lazy object that computes a strategy on request).

        One depth-first pass: the opponent's reach (and, for ``on_decision``, the player's own)
        goes down, values come back up; a new round's boards go in chunks of about
        ``max_elements`` entries, so memory is depth x chunk x hands. With ``best_response``
        the player takes the best action per (board, hand) instead of following ``blocks``.
        """
        rnd = self.node_round[0]
        root = self.valid_float[rnd]
        own = root if on_decision is not None else None
        walk = _Walk(self, player, blocks, best_response, on_decision)
        return walk.node(0, 0, len(root), root, own)


class _Walk:
    """One depth-first pass of :meth:`PublicTree.counterfactual_values`."""

    def __init__(self, public: PublicTree, player: int, blocks: list, best_response: bool,
                 on_decision: DecisionHook | None) -> None:
        self.public, self.player, self.blocks = public, player, blocks
        self.best_response, self.on_decision = best_response, on_decision

    def node(self, node: int, lo: int, hi: int, opponent_reach: np.ndarray,
             own_reach: np.ndarray | None) -> np.ndarray:
        """Values ``[hi - lo, H]`` of ``node`` for boards ``[lo, hi)`` of its round."""
        public = self.public
        tree = public.tree
        if tree.kind[node] != DECISION:
            return public.terminal_values(node, lo, hi, self.player, opponent_reach)
        rnd = public.node_round[node]
        block = self.blocks[node][lo:hi]
        mine = tree.actor[node] == self.player
        action_values = np.zeros((hi - lo, public.space.num_hands, 3)) if mine else None
        total = None
        for a, child, child_round in public.children[node]:
            opponent = opponent_reach if mine else opponent_reach * block[..., a]
            own = None if own_reach is None else (own_reach * block[..., a] if mine else own_reach)
            v = self.child(child, child_round, rnd, lo, hi, opponent, own)
            if mine:
                action_values[..., a] = v
            else:
                total = v if total is None else total + v
        if not mine:
            return total
        if self.best_response:
            value = np.where(tree.legal[node], action_values, -np.inf).max(axis=2)
        else:
            value = (block * action_values).sum(axis=2)
        if self.on_decision is not None:
            self.on_decision(node, slice(lo, hi), own_reach, action_values, value)
        return value

    def child(self, child: int, child_round: int, rnd: int, lo: int, hi: int,
              opponent_reach: np.ndarray, own_reach: np.ndarray | None) -> np.ndarray:
        """Values of a child for the parent's boards: at a new round, deal the board cards
        (chunk by chunk): reach is copied to every child board with colliding hands zeroed,
        values are summed back over the child boards of each parent board."""
        if child_round == rnd:
            return self.node(child, lo, hi, opponent_reach, own_reach)
        public = self.public
        out = np.zeros((hi - lo, public.space.num_hands))
        for p0, p1, c0, c1 in public._pieces(lo, hi, rnd, child_round):
            per_parent = (c1 - c0) // (p1 - p0)
            valid = public.valid_float[child_round][c0:c1]
            opponent = np.repeat(opponent_reach[p0 - lo : p1 - lo], per_parent, axis=0) * valid
            own = None
            if own_reach is not None:
                own = np.repeat(own_reach[p0 - lo : p1 - lo], per_parent, axis=0) * valid
            v = self.node(child, c0, c1, opponent, own)
            out[p0 - lo : p1 - lo] += v.reshape(p1 - p0, per_parent, -1).sum(axis=1)
        return out


@lru_cache(maxsize=8)
def public_tree_for(game: Game) -> PublicTree:
    """The (cached) public tree of a game."""
    return PublicTree(space_for(game))


@dataclass(frozen=True)
class ExploitabilityReport:
    """Best-response values and exploitability of a strategy profile, in chips per hand."""

    game_name: str
    big_blind: int
    best_response_values: tuple[float, float]  # value of a best responder in each seat
    game_value: float  # the profile's expected value for player 0

    @property
    def gains(self) -> tuple[float, float]:
        """What each seat's best responder gains over the profile's own value for that seat."""
        return (
            self.best_response_values[0] - self.game_value,
            self.best_response_values[1] + self.game_value,
        )

    @property
    def nash_conv(self) -> float:
        """Sum of the gains ("total exploitability" in the Deep CFR paper)."""
        return sum(self.gains)

    @property
    def exploitability(self) -> float:
        """NashConv / 2 (Johanson et al. 2011, eq. 3: "average" exploitability)."""
        return self.nash_conv / 2

    def mbb(self, chips: float) -> float:
        """Chips per hand in milli-big-blinds per game."""
        return 1000.0 * chips / self.big_blind

    def __str__(self) -> str:
        br0, br1 = self.best_response_values
        return "\n".join([
            f"game {self.game_name} (big blind {self.big_blind} chips)",
            f"exploitability (NashConv/2): {self.exploitability:.6g} chips/hand = {self.mbb(self.exploitability):.4f} mbb/g",
            f"NashConv (total):            {self.nash_conv:.6g} chips/hand = {self.mbb(self.nash_conv):.4f} mbb/g",
            f"best response value: seat 0 {br0:.6g}, seat 1 {br1:.6g} chips/hand",
            f"profile value for seat 0: {self.game_value:.6g} chips/hand",
        ])


def _root_value(pt: PublicTree, player: int, blocks: list, best_response: bool = False) -> float:
    return float(pt.counterfactual_values(player, blocks, best_response).sum())


def _profile(game: Game, strategy: np.ndarray) -> tuple[PublicTree, list]:
    """The public tree and the strategy's node blocks."""
    pt = public_tree_for(game)
    return pt, pt.space.node_blocks(pt.space.to_dense(pt.space.check_strategy(strategy)))


def expected_value(game: Game, strategy: np.ndarray) -> float:
    """Player 0's expected chips per hand when both seats play ``strategy``."""
    pt, blocks = _profile(game, strategy)
    return _root_value(pt, 0, blocks)


def head_to_head(game: Game, strategy_a: np.ndarray, strategy_b: np.ndarray) -> float:
    """A's exact expected chips per hand against B, averaged over both seats (what a long
    duplicate match estimates)."""
    player = space_for(game).player
    a_first = np.where((player == 0)[:, None], strategy_a, strategy_b)
    b_first = np.where((player == 0)[:, None], strategy_b, strategy_a)
    return (expected_value(game, a_first) - expected_value(game, b_first)) / 2


def exploitability(game: Game, strategy: np.ndarray) -> ExploitabilityReport:
    """Exact best-response values, profile value, NashConv and exploitability of ``strategy``
    (an ``[num_infosets, 3]`` array over :func:`bot.agents.infosets.space_for` ``(game)``)."""
    pt, blocks = _profile(game, strategy)
    return _report(pt, blocks)


def exploitability_of_blocks(game: Game, blocks: list) -> ExploitabilityReport:
    """:func:`exploitability` of a strategy given per node as ``blocks[node][lo:hi] ->
    [boards, hands, 3]`` (see :meth:`PublicTree.counterfactual_values`): for games whose dense
    table would not fit in memory (FHP), with blocks computed on request."""
    return _report(public_tree_for(game), blocks)


def _report(pt: PublicTree, blocks: list) -> ExploitabilityReport:
    game = pt.space.game
    return ExploitabilityReport(
        game_name=game.name,
        big_blind=game.big_blind,
        best_response_values=(_root_value(pt, 0, blocks, True), _root_value(pt, 1, blocks, True)),
        game_value=_root_value(pt, 0, blocks),
    )


class UniformBlock:
    """The uniform strategy of one decision node, for any board range, without a table."""

    def __init__(self, legal: np.ndarray, num_hands: int) -> None:
        self.row = legal / legal.sum()
        self.num_hands = num_hands

    def __getitem__(self, boards: slice) -> np.ndarray:
        count = len(range(*boards.indices(2**62)))
        return np.broadcast_to(self.row, (count, self.num_hands, 3))


def uniform_blocks(space: InfosetSpace) -> list[UniformBlock | None]:
    """Uniform random play as lazy per-node blocks (None at terminals)."""
    legal = space.tree.legal.astype(np.float64)
    return [UniformBlock(legal[n], space.num_hands) if space.node_offset[n] >= 0 else None
            for n in range(space.tree.num_nodes)]


def best_response_strategy(game: Game, strategy: np.ndarray, player: int) -> np.ndarray:
    """A pure best response for ``player`` to ``strategy``: the profile with ``player``'s rows
    replaced by one-hot best actions (the other seat's rows are ``strategy``'s)."""
    pt, blocks = _profile(game, strategy)
    best = [None if b is None else b.copy() for b in blocks]

    def choose(node: int, boards: slice, own_reach: np.ndarray, action_values: np.ndarray, value: np.ndarray) -> None:
        masked = np.where(pt.tree.legal[node], action_values, -np.inf)
        best[node][boards] = np.eye(3)[masked.argmax(axis=2)]

    pt.counterfactual_values(player, blocks, True, choose)
    dense = np.zeros((pt.space.num_slots, 3))
    for node, block in enumerate(best):
        if block is not None:
            pt.space.node_block(dense, node)[...] = block
    return pt.space.from_dense(dense)

