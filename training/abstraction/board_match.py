"""Head to head of two abstraction policies, sampling only the board.

A sampled match (:mod:`bot.evaluation.match`) draws everything: the board, both hands and every
action. Between two fixed policies all but the board can be summed out exactly instead
(Rao-Blackwellisation): for one full board, the expected chips of A against B over every pair
of disjoint hole-card hands (all equally likely given the board) and every betting sequence
(each action weighted by the two policies) is one pass over the betting tree with *range
vectors*: both seats' reach of every live hand on the way down, and at each terminal the
chips against the opponent's reach with exact card removal, O(V) per terminal: a fold by
inclusion-exclusion over the hands holding each card, a showdown by the sort-by-strength sweep
(Johanson, Waugh, Bowling & Zinkevich 2011, "Accelerating Best Response Calculation in Large
Extensive Games", sec. 4.2; the same sweep as :mod:`training.abstraction.pcs_last_round`'s, the
walk is Public Chance Sampling's vector form: Johanson, Bard, Lanctot, Gibson & Bowling 2012).
Each board is evaluated with A in both seats (duplicate for free: the two values share the
board, so its luck cancels inside the pair).

**Estimator.** Board ``k`` (full: every round's public cards) is drawn uniformly from the deck
by a seeded stream (board ``k`` depends on (seed, k) only, so a longer run extends a shorter
one). Its value is ``X_k = (C_A0(b_k) - C_B0(b_k)) / 2``, where ``C_P0(b)`` is the chips seat 0
wins, per hand, when policy P sits there, averaged over every ordered pair of disjoint live
hands and weighted by every action's probability. ``E[X_k]`` is exactly A's expected chips per
hand against B over both seats, so the mean of n boards is unbiased; its 95% interval is the
normal one, ``mean +- 1.96 s / sqrt(n)`` with s the boards' sample standard deviation
(:func:`bot.evaluation.statistics.estimate`); all of its variance is the boards'. With every
board enumerated (:func:`all_boards`, small games) the mean is the exact value (tests).

Each seat plays its own policy. An abstraction (any :class:`bot.abstraction.agent.RowPolicyAgent`:
a solved abstraction by name or run directory, or the compact shipped bot) is read through its
own buckets (:meth:`RowPolicyAgent.buckets`, one batch per board and round) and its own table,
normalised over the legal actions with all-zero rows uniform, exactly as the agent plays. A
network policy (Deep CFR's average network, an SD-CFR stack, NFSP: any agent with
``board_strategies``) gives its strategy at every decision node for every live hand of a board
in one grid (:mod:`bot.agents.board_grid`), laid out as a table whose "bucket" of hand ``i`` on
the chunk's board ``k`` is row ``k V + i``, so one kernel reads both kinds. An SD-CFR stack
plays one entry per board, drawn by weight from (its seed, the board's index): in expectation
what drawing one per hand plays, so the estimate stays unbiased and the draw's variance joins
the boards'.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from bot.abstraction.agent import RowPolicyAgent
from bot.agents.base import Agent
from bot.errors import PokerbotError
from bot.evaluation.match_report import Row
from bot.evaluation.statistics import estimate, hands_for_half_width
from bot.threads import thread_counts_kept
from protocol.betting_tree import DECISION, FOLD_END, BettingTree
from protocol.evaluator import hand_strength_batch
from protocol.gamedef import Game
from training.abstraction.pcs_kernel import NUM_CARDS


class NotAbstractionPolicy(PokerbotError):
    """A board match needs two policies it can read over a whole board (abstractions or
    networks); the message names the one that is not."""


@njit(cache=True, inline="always")
def _strategy(table, row_offset, bucket, legal, v, out):  # pragma: no cover - numba
    """out[x, i]: the policy's probability of action x for live hand i (its row normalised
    over the legal actions; a row with no weight plays uniformly, as the agent does)."""
    count = legal[0] + legal[1] + legal[2]
    for i in range(v):
        row = row_offset + bucket[i]
        w0 = np.float64(table[row, 0]) if legal[0] else 0.0
        w1 = np.float64(table[row, 1]) if legal[1] else 0.0
        w2 = np.float64(table[row, 2]) if legal[2] else 0.0
        total = w0 + w1 + w2
        if total > 0.0:
            out[0, i], out[1, i], out[2, i] = w0 / total, w1 / total, w2 / total
        else:
            out[0, i], out[1, i], out[2, i] = legal[0] / count, legal[1] / count, legal[2] / count


@njit(cache=True, inline="always", fastmath=True, error_model="numpy")
def _disjoint_mass(a, weight, b, cards, v, per_card):  # pragma: no cover - numba
    """Sum of ``a_i weight_i b_j`` over the ordered pairs (i, j) of live hands sharing no card,
    in one pass: all pairs, less those through each card (a pair sharing both cards is one hand
    twice, counted twice there, so it is added back once): inclusion-exclusion as in
    :func:`training.abstraction.pcs_kernel._fold`, summed against a second reach instead of
    returned per hand (a fold's chips are the same for every pair)."""
    per_card[:] = 0.0
    total_a = total_b = same = 0.0
    for i in range(v):
        ai = a[i] * weight[i]
        total_a += ai
        total_b += b[i]
        same += ai * b[i]
        for k in range(cards.shape[1]):
            per_card[0, cards[i, k]] += ai
            per_card[1, cards[i, k]] += b[i]
    shared = 0.0
    for c in range(per_card.shape[1]):
        shared += per_card[0, c] * per_card[1, c]
    return total_a * total_b - shared + (same if cards.shape[1] == 2 else 0.0)


@njit(cache=True, inline="always", fastmath=True, error_model="numpy")
def _showdown_masses(a, weight_a, b, weight_b, cards, v, strength, per_card):  # pragma: no cover - numba
    """(wins, losses): sums of ``a_i b_j`` (each reach times its weight) over the disjoint
    pairs where seat 0's hand i is stronger, and where it is weaker. One ascending pass over the
    hands (numbered by ascending ``strength``) keeps both seats' reach of the strictly weaker
    hands, in total and through each card; ties are passed as a group, so they count for
    neither. The sort-by-strength sweep of :func:`training.abstraction.pcs_last_round._sweep`,
    made bilinear: both directions in one pass, and no per-hand vector."""
    per_card[:] = 0.0
    total_a = total_b = wins = losses = 0.0
    start = 0
    while start < v:
        end = start
        while end < v and strength[end] == strength[start]:
            end += 1
        for h in range(start, end):
            weaker_a, weaker_b = total_a, total_b
            for k in range(cards.shape[1]):
                weaker_a -= per_card[0, cards[h, k]]
                weaker_b -= per_card[1, cards[h, k]]
            wins += a[h] * weight_a[h] * weaker_b
            losses += b[h] * weight_b[h] * weaker_a
        for h in range(start, end):
            ah, bh = a[h] * weight_a[h], b[h] * weight_b[h]
            total_a += ah
            total_b += bh
            for k in range(cards.shape[1]):
                per_card[0, cards[h, k]] += ah
                per_card[1, cards[h, k]] += bh
        start = end
    return wins, losses


@njit(cache=True, fastmath=True, error_model="numpy")
def seat_chips(v, cards, strength, bucket_0, bucket_1, table_0, table_1, offset_0, offset_1, kind, actor, rnd,
               parent, parent_action, depth, legal, folder, spent, reach, sigma, ones, per_card):  # fmt: skip  # pragma: no cover - numba
    """Chips seat 0 wins on one board, summed over every ordered pair of disjoint live hands
    and weighted by both policies' action probabilities. Nodes are visited in preorder
    (:class:`protocol.betting_tree.BettingTree`), so row ``depth - 1`` of ``reach``/``sigma``
    still holds a node's parent: ``reach [depth + 1, 2, V]``, ``sigma [depth + 1, 3, V]``,
    ``per_card [2, cards]``, ``ones [V]`` all 1. A terminal's reach is not copied out: its
    chips come from its parent's rows and the last action's probabilities (a fold by
    :func:`_disjoint_mass`, a showdown by :func:`_showdown_masses`)."""
    total = 0.0
    reach[0, :, :v] = 1.0
    for n in range(kind.shape[0]):
        d = depth[n]
        p = d - 1
        mover = actor[parent[n]] if n > 0 else 0  # the root has no parent
        x = parent_action[n]
        if kind[n] == DECISION:
            if n > 0:
                reach[d, 1 - mover, :v] = reach[p, 1 - mover, :v]
                for i in range(v):
                    reach[d, mover, i] = reach[p, mover, i] * sigma[p, x, i]
            if actor[n] == 0:
                _strategy(table_0, offset_0[n], bucket_0[rnd[n]], legal[n], v, sigma[d])
            else:
                _strategy(table_1, offset_1[n], bucket_1[rnd[n]], legal[n], v, sigma[d])
        elif kind[n] == FOLD_END:
            won = -spent[n, 0] if folder[n] == 0 else spent[n, 1]
            total += won * _disjoint_mass(reach[p, mover], sigma[p, x], reach[p, 1 - mover], cards, v, per_card)
        else:
            weight_0, weight_1 = (sigma[p, x], ones) if mover == 0 else (ones, sigma[p, x])
            wins, losses = _showdown_masses(reach[p, 0], weight_0, reach[p, 1], weight_1, cards, v, strength, per_card)
            total += spent[n, 1] * wins - spent[n, 0] * losses
    return total


@njit(cache=True, parallel=True)
def _boards_chips(live, cards, strength, bucket_a, bucket_b, table_a, table_b, offset_a, offset_b, kind, actor, rnd,
                  parent, parent_action, depth, legal, folder, spent):  # fmt: skip  # pragma: no cover - numba
    """Per board ``[B, 2]``: chips per hand of seat 0 with A there (B in seat 1), then with B there."""
    count, width = cards.shape[0], cards.shape[1]
    rows = depth.max() + 1
    result = np.zeros((count, 2))
    for k in prange(count):
        v = live[k]
        reach = np.empty((rows, 2, width))
        sigma = np.empty((rows, 3, width))
        per_card = np.zeros((2, NUM_CARDS))
        ones = np.ones(width)
        pairs = _disjoint_mass(ones, ones, ones, cards[k], v, per_card)
        result[k, 0] = seat_chips(v, cards[k], strength[k], bucket_a[k], bucket_b[k], table_a, table_b, offset_a, offset_b, kind,
                                  actor, rnd, parent, parent_action, depth, legal, folder, spent, reach, sigma, ones,
                                  per_card) / pairs  # fmt: skip
        result[k, 1] = seat_chips(v, cards[k], strength[k], bucket_b[k], bucket_a[k], table_b, table_a, offset_b, offset_a, kind,
                                  actor, rnd, parent, parent_action, depth, legal, folder, spent, reach, sigma, ones,
                                  per_card) / pairs  # fmt: skip
    return result


def board_policy(agent: Agent, role: str) -> Agent:
    """``agent`` when the board match can read it (an abstraction's table rows, or a network's
    ``board_strategies``), else a one-line error naming it."""
    if not isinstance(agent, RowPolicyAgent) and not hasattr(agent, "board_strategies"):
        raise NotAbstractionPolicy(f"--boards needs two policies it can read over a whole board (a solved abstraction, "
                                   f"its run directory, the compact shipped bot, or a Deep CFR / SD-CFR / NFSP network "
                                   f"policy); {role} {agent.name!r} is a {type(agent).__name__}")  # fmt: skip
    return agent


@dataclass(frozen=True)
class BoardValues:
    """A's chips per hand on each board: in seat 0, in seat 1, and their mean (the estimator's
    observations)."""

    seat0: np.ndarray
    seat1: np.ndarray

    @property
    def duplicate(self) -> np.ndarray:
        return (self.seat0 + self.seat1) / 2


class BoardMatch:
    """Two abstraction policies of one game, evaluated board by board (module docstring)."""

    def __init__(self, game: Game, a: Agent, b: Agent) -> None:
        self.game = game
        self.a, self.b = board_policy(a, "agent A"), board_policy(b, "agent B")
        self.tree = tree = BettingTree.build(game)
        #: Decision nodes in order, and each node's index among them (-1: not a decision).
        self.decisions = np.flatnonzero(tree.kind == DECISION)
        self.decision_index = np.full(len(tree.kind), -1, dtype=np.int64)
        self.decision_index[self.decisions] = np.arange(len(self.decisions))
        self.tables = tuple(self._table(p) if isinstance(p, RowPolicyAgent) else None for p in (self.a, self.b))
        self.hands = np.array(list(itertools.combinations(sorted(game.deck), game.num_hole_cards)), dtype=np.int64)
        self.tree_args = (tree.kind, tree.actor, tree.round.astype(np.int64), tree.parent.astype(np.int64),
                          tree.parent_action.astype(np.int64), tree.depth.astype(np.int64),
                          tree.legal.astype(np.int64), tree.folder, tree.spent.astype(np.float64))  # fmt: skip

    @staticmethod
    def _table(policy: RowPolicyAgent) -> np.ndarray:
        """The policy's whole ``[rows, 3]`` table (a view: memory-mapped tables stay on disk)."""
        table = np.asarray(policy.rows_weights(slice(None)))  # type: ignore[arg-type]
        rows = int(policy.row_offset.max()) + 1
        if table.ndim != 2 or table.shape[1] != 3 or table.shape[0] < rows:
            raise NotAbstractionPolicy(f"{policy.name}: policy table of shape {table.shape} does not fit its abstraction")
        return table

    def values(self, boards: np.ndarray, threads: int = 1, first: int = 0) -> BoardValues:
        """A's exact chips per hand on each of ``boards`` (int ``[B, board cards]``; ``first``:
        the index of the first in its stream, which keys an SD-CFR stack's draws), on at most
        ``threads`` threads. numba's and torch's thread counts are put back afterwards, so a
        caller inside a training run (its strength signal) keeps its own."""
        with thread_counts_kept():
            return self._values(boards, threads, first)

    def _values(self, boards: np.ndarray, threads: int, first: int) -> BoardValues:
        game, hands = self.game, self.hands
        boards = np.asarray(boards, dtype=np.int64).reshape(len(boards), game.total_board_cards)
        count, width = len(boards), len(hands)
        live = np.zeros(count, dtype=np.int64)
        cards = np.zeros((count, width, hands.shape[1]), dtype=np.int64)
        strength = np.zeros((count, width), dtype=np.int64)
        buckets = np.zeros((2, count, game.num_rounds, width), dtype=np.int64)
        # a network policy's table: rows (decision, board, hand), so a node's rows start at its
        # decision index x count x width and hand i of board k is its "bucket" k x width + i
        bound = max(1, min(threads, count))
        numba.set_num_threads(bound)  # the network grids' kernels too
        grids = [None if isinstance(p, RowPolicyAgent) else np.zeros((len(self.decisions), count, width, 3), dtype=np.float32)
                 for p in (self.a, self.b)]  # fmt: skip
        if any(grid is not None for grid in grids):
            import torch  # network policies only: an abstraction match never loads it

            # left at every core beside other work, the grids' idle OpenMP threads spun at up to
            # 4x the CPU of the work itself
            torch.set_num_threads(bound)
        for k, board in enumerate(boards):
            ranked, ranked_strength = live_hands(hands, board)
            v = live[k] = len(ranked)
            cards[k, :v], strength[k, :v] = ranked, ranked_strength
            for s, policy in enumerate((self.a, self.b)):
                if isinstance(policy, RowPolicyAgent):
                    for r in range(game.num_rounds):
                        buckets[s, k, r, :v] = policy.buckets(r, ranked, tuple(board[: game.board_cards_through(r)].tolist()))
                else:
                    grids[s][:, k, :v] = policy.board_strategies(board, ranked, self.decisions, first + k)  # type: ignore[attr-defined,index]
                    buckets[s, k, :, :] = k * width + np.arange(width)
        tables, offsets = [], []
        for s, policy in enumerate((self.a, self.b)):
            if isinstance(policy, RowPolicyAgent):
                tables.append(self.tables[s])
                offsets.append(policy.row_offset)
            else:
                tables.append(grids[s].reshape(-1, 3))  # type: ignore[union-attr]
                offsets.append(np.where(self.decision_index >= 0, self.decision_index * count * width, -1))
        chips = _boards_chips(live, cards, strength, buckets[0], buckets[1], *tables, *offsets, *self.tree_args)
        return BoardValues(chips[:, 0], -chips[:, 1])


def live_hands(hands: np.ndarray, board: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hands sharing no card with ``board``, in ascending showdown strength (hole cards
    plus the whole board; ties keep their order), and those strengths."""
    hands = hands[~np.isin(hands, board).any(axis=1)]
    rows = np.concatenate([hands, np.broadcast_to(board, (len(hands), len(board)))], axis=1)
    strength = hand_strength_batch(rows.astype(np.int8)).astype(np.int64)
    order = np.argsort(strength, kind="stable")
    return hands[order], strength[order]


def sample_boards(game: Game, seed: int, first: int, count: int) -> np.ndarray:
    """Boards ``first .. first + count - 1`` of the stream ``seed``: each a uniform draw of
    every round's public cards from the full deck, keyed by (seed, board index)."""
    deck = np.array(game.deck, dtype=np.int64)
    return np.array([np.random.default_rng([seed, k]).choice(deck, game.total_board_cards, replace=False)
                     for k in range(first, first + count)], dtype=np.int64).reshape(count, game.total_board_cards)  # fmt: skip


def all_boards(game: Game) -> np.ndarray:
    """Every full board once (each round's cards as a set), all equally likely in a deal."""
    boards: list[tuple[int, ...]] = [()]
    for r in range(game.num_rounds):
        k = int(game.num_board_cards[r])
        boards = [b + c for b in boards for c in itertools.combinations([x for x in game.deck if x not in b], k)]
    return np.array(boards, dtype=np.int64).reshape(len(boards), game.total_board_cards)


def run(match: BoardMatch, seed: int, boards: int, threads: int, chunk: int,
        advance: Callable[[int], None] = lambda n: None) -> tuple[BoardValues, bool]:  # fmt: skip
    """Boards ``0 .. boards - 1`` of stream ``seed`` in chunks (``advance`` after each); a
    Ctrl-C stops the run and returns the boards of the chunks finished before it (and True)."""
    seat0: list[np.ndarray] = []
    seat1: list[np.ndarray] = []
    interrupted = False
    for first in range(0, boards, chunk):
        try:
            values = match.values(sample_boards(match.game, seed, first, min(chunk, boards - first)), threads, first)
        except KeyboardInterrupt:
            interrupted = True
            break
        seat0.append(values.seat0)
        seat1.append(values.seat1)
        advance(len(values.seat0))
    empty = np.zeros(0)
    return BoardValues(np.concatenate(seat0 or [empty]), np.concatenate(seat1 or [empty])), interrupted


def summary(values: BoardValues, big_blind: int, half_width: float) -> dict[str, Any]:
    """The match report's summary (:func:`bot.evaluation.match_report.table`), one observation
    per board, in mbb/g: the duplicate estimator first, then A's value in each seat."""
    scale = 1000.0 / big_blind
    rows = []
    for label, chips in (("duplicate, exact over hands", values.duplicate), ("seat 0", values.seat0),
                         ("seat 1", values.seat1)):  # fmt: skip
        est = estimate(chips * scale)
        rows.append(Row(label, len(chips), float(chips.sum()), est, hands_for_half_width(est.std, half_width)).to_dict())
    return {"boards": len(values.seat0), "unit": "boards", "big_blind": big_blind, "half_width_mbb": half_width,
            "rows": rows, "variance_reduction": {},
            "per_board": {"seat0_chips": values.seat0.tolist(), "seat1_chips": values.seat1.tolist()}}  # fmt: skip
