"""External-sampling Linear MCCFR over a card abstraction, jitted with numba, on all cores.

The abstract game keeps the real betting (the compiled :class:`~protocol.betting_tree.BettingTree`)
and replaces a player's cards in round r by a bucket (:mod:`bot.abstraction.tables`); an
abstract infoset is (decision node, bucket) and owns one row of two float32 tables ``[rows, 3]``
(columns f, c, r): cumulative regrets and the cumulative average strategy.

One *iteration* is one traversal per player (external sampling, Lanctot et al. 2009, "Monte
Carlo Sampling for Regret Minimization in Extensive Games", sec. 3.2): chance (the deal) and the
opponent's actions are sampled; all of the traverser's actions are explored; at the
traverser's nodes the sampled counterfactual regret ``v(I, a) - v(I)`` is added; at the
opponent's nodes the current strategy is added to the average (the "simple" averaging whose
expectation is the opponent-reach-weighted average). Both traversals of an iteration share its
deal, so its buckets (eight isomorphism indices in hold'em, which cost about as much as a
traversal's walk) are computed once per iteration. Current strategies come from regret
matching (Zinkevich et al. 2007, eq. 8: positive regrets normalised, uniform over legal actions
when none is positive).

Linear CFR (Brown & Sandholm 2019, sec. 3, DCFR(1,1,1)) weights iteration t by t. Iterations run
in batches; batch k is weighted k, implemented as in Pluribus by discounting: before batch k
both tables are multiplied by (k-1)/(k+1) and batch k's increments by 2/(k+1). Regret matching and
average normalisation are scale-free, so this equals weighting by k while the tables stay
bounded (float32 never grows like t^2).

Negative-regret pruning (Brown & Sandholm, "Reduced Space and Faster Convergence in
Imperfect-Information Games via Pruning", ICML 2017; as Pluribus's MCCFR-P, Brown & Sandholm,
Science 2019, supplementary), optional (:class:`Pruning`): from a given batch on, all but a
share ``full_share`` of the traversals (chosen by a coin of their own stream) skip the
traverser's actions whose regret is below ``-ratio`` times the row's positive regret. Those
actions have probability 0, so the node's value is exact; only their own regret increments are
missing, and the full traversals add them multiplied by ``1 / full_share``, so each action's
expected increment is the unpruned one. The threshold is relative to the row because a row's
scale is its visits per batch (a preflop row is visited every iteration, a river bucket of
``abstraction_3e7`` a few times a batch), and the discounting above keeps every row at the scale
of one batch's increments, so no threshold in chips fits every row.

The kernel finds the row of (node, bucket) through a :class:`~training.abstraction.row_layout.RowLayout`
(``row_offset[node] + bucket * stride[node]``): canonical for callers that hand it tables as they
are on disk, the bucket-major *traversal* layout in a run, where a traversal's nodes of one round
share cache lines (1.15x on abstraction_3e7; :mod:`training.abstraction.row_layout`).

Within a batch, traversals run in parallel threads that update the shared tables without locks
(Hogwild-style; a rare lost update is noise of the same order as the sampling). Each traversal
draws from its own splitmix64 stream seeded by (seed, iteration, player), so a one-thread run is
reproducible bit for bit and a multi-thread run differs only through update races.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from bot.abstraction.tables import AbstractGame
from protocol.betting_tree import DECISION, FOLD_END
from protocol.evaluator import hand_strength_batch
from protocol.isomorphism import SCRATCH, index_into
from training.abstraction.row_layout import RowLayout
from training.tabular.mccfr import regret_matching_row

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _split(state):
    """splitmix64: the next state and a 64-bit output."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return state, z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def uniform(state):
    """splitmix64: the next state and a uniform float in [0, 1)."""
    state, z = _split(state)
    return state, (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def seed_state(seed: int, iteration: int, player: int):
    """The stream of (seed, iteration, tag): tags 0/1 traversals, 2 deals (3 unused since the
    two traversals share a deal), 4 PCS boards, 5/6 the pruning coin of each traversal."""
    state = np.uint64(seed)
    state, a = _split(state)
    state = a ^ np.uint64(iteration)
    state, b = _split(state)
    state = b ^ np.uint64(player)
    state, c = _split(state)
    return c


@njit(cache=True)
def sample_deals(deck, num_cards, seed, first_iteration, count):
    """Cards of ``count`` iterations (both traversals of an iteration share its deal): hole
    cards of both seats, then the board."""
    deals = np.empty((count, num_cards), dtype=np.int8)
    work = deck.copy()
    n = deck.shape[0]
    for i in range(count):
        work[:] = deck  # from the full deck, so any split of the iterations draws the same deals
        state = seed_state(seed, first_iteration + i, 2)
        for j in range(num_cards):  # partial Fisher-Yates
            state, u = uniform(state)
            k = j + int(u * (n - j))
            work[j], work[k] = work[k], work[j]
            deals[i, j] = work[j]
    return deals


@njit(cache=True)
def _traverse(traverser, strength, buckets, stream, weight, prune_ratio, skip, boost,
              kind, actor, rnd, child, legal, folder, spent, row_offset, stride,
              regrets, average, nodes, sampled, values, sigma):  # fmt: skip
    """One external-sampling traversal of the betting tree for one deal; returns nodes touched.
    At the traverser's nodes, an action whose regret is below ``-prune_ratio`` times the row's
    positive regret is not explored (its probability is 0, so the node's value is exact);
    ``sampled`` holds the explored actions there as a bit mask (inf: explore all)."""
    # forward: the nodes this traversal visits, in breadth-first order (children after parents)
    state = stream
    nodes[0] = 0
    count = 1
    i = 0
    while i < count:
        n = nodes[i]
        i += 1
        if kind[n] != DECISION:
            continue
        a = actor[n]
        row = row_offset[n] + buckets[a, rnd[n]] * stride[n]
        if a == traverser:
            floor = -np.inf
            if prune_ratio < np.inf:
                positive = 0.0
                for x in range(3):
                    if legal[n, x]:
                        positive += max(regrets[row, x], 0.0)
                if positive > 0.0:
                    floor = -prune_ratio * positive
            explored = 0
            for x in range(3):
                if not legal[n, x]:
                    continue
                if regrets[row, x] < floor:
                    if skip:
                        continue
                    explored |= 8 << x  # a full traversal: this action's increment is boosted
                explored |= 1 << x
                nodes[count] = child[n, x]
                count += 1
            sampled[n] = explored
        else:
            regret_matching_row(regrets, row, legal[n], sigma)
            state, u = uniform(state)
            pick = 2
            acc = 0.0
            for x in range(3):
                if legal[n, x]:
                    acc += sigma[x]
                    if u < acc:
                        pick = x
                        break
            while not legal[n, pick]:
                pick -= 1
            for x in range(3):
                average[row, x] += weight * sigma[x]
            sampled[n] = pick
            nodes[count] = child[n, pick]
            count += 1
    # backward: values bottom-up; regret updates at the traverser's nodes
    other = 1 - traverser
    for j in range(count - 1, -1, -1):
        n = nodes[j]
        if kind[n] == FOLD_END:
            values[n] = -spent[n, traverser] if folder[n] == traverser else spent[n, other]
        elif kind[n] != DECISION:
            if strength[traverser] > strength[other]:
                values[n] = spent[n, other]
            elif strength[traverser] < strength[other]:
                values[n] = -spent[n, traverser]
            else:
                values[n] = 0.0
        elif actor[n] == traverser:
            row = row_offset[n] + buckets[traverser, rnd[n]] * stride[n]
            regret_matching_row(regrets, row, legal[n], sigma)
            explored = sampled[n]
            v = 0.0
            for x in range(3):
                if explored >> x & 1:
                    v += sigma[x] * values[child[n, x]]
            for x in range(3):
                if explored >> x & 1:
                    scale = weight * boost if explored >> (x + 3) & 1 else weight
                    regrets[row, x] += scale * (values[child[n, x]] - v)
            values[n] = v
        else:
            values[n] = values[child[n, sampled[n]]]
    return count


@njit(cache=True)
def _deal_buckets(cards, num_hole, board_through, groups, binom, suit_size, class_keys, class_offsets,
                  num_ranks, num_suits, tables, lossless, hand, scratch, out):  # fmt: skip
    """Bucket of each seat in each round for one deal (hole cards of both seats, then board);
    ``hand`` holds a seat's hole cards and the whole board, ``scratch`` the indexer's work."""
    board = cards.shape[0] - 2 * num_hole
    for p in range(2):
        for j in range(num_hole):
            hand[j] = cards[p * num_hole + j]
        for j in range(board):
            hand[num_hole + j] = cards[2 * num_hole + j]
        for r in range(board_through.shape[0]):
            seen = hand[: num_hole + board_through[r]]
            index = index_into(seen, groups[r], binom, suit_size[r], class_keys[r], class_offsets[r], num_ranks, num_suits,
                               scratch)  # fmt: skip
            out[p, r] = index if lossless[r] else tables[r][index]


@njit(cache=True, parallel=True)
def _run_batch(deals, strengths, seed, first_iteration, weight, prune_ratio, full_share, num_chunks,
               num_hole, board_through, groups, binom, suit_size, class_keys, class_offsets,
               num_ranks, num_suits, tables, lossless,
               kind, actor, rnd, child, legal, folder, spent, row_offset, stride, regrets, average):  # fmt: skip
    count = deals.shape[0]
    touched = np.zeros(num_chunks, dtype=np.int64)
    num_nodes = kind.shape[0]
    for c in prange(num_chunks):
        nodes = np.empty(num_nodes, dtype=np.int32)
        sampled = np.zeros(num_nodes, dtype=np.int8)
        values = np.zeros(num_nodes)
        sigma = np.zeros(3)
        buckets = np.zeros((2, board_through.shape[0]), dtype=np.int64)
        hand = np.empty(deals.shape[1], dtype=np.int64)
        scratch = np.empty(SCRATCH, dtype=np.int64)
        for i in range(c * count // num_chunks, (c + 1) * count // num_chunks):
            _deal_buckets(deals[i], num_hole, board_through, groups, binom, suit_size, class_keys,
                          class_offsets, num_ranks, num_suits, tables, lossless, hand, scratch, buckets)  # fmt: skip
            for p in range(2):
                skip = False
                if prune_ratio < np.inf:  # a pruned traversal unless this coin says full (tags 5/6)
                    _, u = uniform(seed_state(seed, first_iteration + i, p + 5))
                    skip = u >= full_share
                state = seed_state(seed, first_iteration + i, p)
                touched[c] += _traverse(p, strengths[i], buckets, state, weight, prune_ratio, skip, 1.0 / full_share,
                                        kind, actor, rnd, child, legal, folder, spent, row_offset, stride,
                                        regrets, average, nodes, sampled, values, sigma)  # fmt: skip
    return touched.sum()


def kernel_args(ag: AbstractGame) -> tuple:
    """Per-round indexer and bucket tables as homogeneous tuples (numba UniTuples)."""
    a, game = ag.abstraction, ag.abstraction.game
    tables = tuple(_read_only(np.zeros(0, dtype=np.uint16) if t is None else np.asarray(t)) for t in a.tables)
    if any(t.dtype != np.uint16 for t in tables):
        raise ValueError("bucket tables must be uint16 (at most 65,536 buckets per round)")
    board_through = np.array([game.board_cards_through(r) for r in range(game.num_rounds)], dtype=np.int64)
    ix = a.indexers
    return (
        game.num_hole_cards, board_through,
        tuple(np.asarray(i._tables[0]) for i in ix), ix[0].binom,
        tuple(i.suit_size for i in ix), tuple(i.class_keys for i in ix), tuple(i.class_offsets for i in ix),
        game.num_ranks, game.num_suits, tables, np.array([t is None for t in a.tables]),
    )  # fmt: skip


def _read_only(table: np.ndarray) -> np.ndarray:
    """A read-only view: in-memory and memory-mapped tables then share one numba type."""
    view = table.view()
    view.flags.writeable = False
    return view


def tree_args(ag: AbstractGame, layout: RowLayout | None = None) -> tuple:
    """The betting tree's arrays and the tables' row layout (None: canonical)."""
    t, layout = ag.tree, layout or RowLayout.canonical_of(ag)
    return (t.kind, t.actor, t.round, t.child, t.legal.astype(np.int8), t.folder,
            t.spent.astype(np.float64), layout.row_offset, layout.stride)  # fmt: skip


@dataclass(frozen=True)
class Pruning:
    """Negative-regret pruning (module docstring): from batch ``from_batch`` on, a share
    ``1 - full_share`` of the traversals skips the traverser's actions whose regret is below
    ``-ratio`` times the row's positive regret."""

    ratio: float
    from_batch: int = 1
    full_share: float = 0.05


def run_batch(ag: AbstractGame, regrets: np.ndarray, average: np.ndarray, seed: int,
              first_iteration: int, count: int, batch_index: int, threads: int,
              pruning: Pruning | None = None, layout: RowLayout | None = None) -> int:  # fmt: skip
    """Run ``count`` iterations as Linear-CFR batch ``batch_index`` (1-based) on tables in
    ``layout`` (None: canonical); returns nodes touched."""
    discount_tables(regrets, average, batch_index)
    active = pruning if pruning is not None and batch_index >= pruning.from_batch else None
    return run_iterations(ag, regrets, average, seed, first_iteration, count, batch_weight(batch_index), threads, active,
                          layout)  # fmt: skip


def discount_tables(regrets: np.ndarray, average: np.ndarray, batch_index: int) -> None:
    """Before batch k > 1, scale both tables by (k-1)/(k+1), so batch k ends up weighted k
    (module docstring)."""
    if batch_index > 1:
        scale = np.float32((batch_index - 1) / (batch_index + 1))
        regrets *= scale
        average *= scale


def batch_weight(batch_index: int) -> float:
    """The weight 2/(k+1) of batch k's increments (module docstring)."""
    return 2.0 / (batch_index + 1)


def run_iterations(ag: AbstractGame, regrets: np.ndarray, average: np.ndarray, seed: int,
                   first_iteration: int, count: int, weight: float, threads: int,
                   pruning: Pruning | None = None, layout: RowLayout | None = None) -> int:  # fmt: skip
    """Iterations ``first_iteration ..`` (``count`` of them) with increments scaled by ``weight``,
    on ``threads`` threads, pruned by ``pruning`` (None: never), on tables in ``layout`` (None:
    canonical, :mod:`training.abstraction.row_layout`); returns nodes touched. The
    random streams depend only on (seed, iteration, player), so any split of a batch's
    iterations draws the same deals."""
    game = ag.abstraction.game
    num_cards = 2 * game.num_hole_cards + game.total_board_cards
    deals = sample_deals(np.array(game.deck, dtype=np.int8), num_cards, seed, first_iteration, count)
    strengths = _showdown_strengths(deals, game.num_hole_cards)
    numba.set_num_threads(threads)
    ratio, full_share = (np.inf, 1.0) if pruning is None else (pruning.ratio, pruning.full_share)
    return int(_run_batch(deals, strengths, seed, first_iteration, weight, ratio, full_share, max(1, threads),
                          *kernel_args(ag), *tree_args(ag, layout), regrets, average))  # fmt: skip


def _showdown_strengths(deals: np.ndarray, num_hole: int) -> np.ndarray:
    """Strength of each seat's hole + full board for every deal, in one batched evaluation."""
    count = deals.shape[0]
    board = deals[:, 2 * num_hole :]
    rows = np.stack([np.concatenate([deals[:, p * num_hole : (p + 1) * num_hole], board], axis=1) for p in range(2)], axis=1)
    return hand_strength_batch(rows.reshape(count * 2, -1)).reshape(count, 2)
