"""Public Chance Sampling CFR over a card abstraction: sample a board, update every hand.

PCS (Johanson, Bard, Lanctot, Gibson & Bowling 2012, "Efficient Nash Equilibrium Approximation
through Monte Carlo Counterfactual Regret Minimization") samples only the *public* chance
events, the board cards of every round, and enumerates the private ones: each iteration walks
the betting tree once with vectors over every hole-card pair that the board leaves live
(:mod:`training.abstraction.pcs_kernel`). A hand's instantaneous counterfactual regret at
(node, hand) is added to the row (node, bucket of the hand and the board visible in that round)
of the same ``[rows, 3]`` regret and average tables as the ES solver
(:mod:`training.abstraction.solver`, layout :func:`bot.abstraction.tables.row_layout`), so the
published policy and the agent do not change. Summed over every board (tests: enumerated with
weight 1) one iteration is exactly one iteration of full-width CFR on the imperfect-recall
abstract game; sampling the board makes it an unbiased estimate.

**Alternating updates.** An iteration is two passes over the same board: player 0's update,
then player 1's against player 0's new regrets. A simultaneous pass (both players' values in
one walk) would save one of the four vector sweeps (the reach pass is shared), ~25% of the
work, but alternating updates converge faster per iteration, and CFR+ needs them (Tammelin,
Burch, Johanson & Bowling 2015, "Solving Heads-up Limit Texas Hold'em", sec. 3; Burch, Moravcik
& Schmid 2019, "Revisiting CFR+ and Alternating Updates"), so the pass per player wins.

**Weighting** (one of :data:`SCHEMES`), applied per *batch* of iterations as the ES solver
does (a discount sweep over the tables costs O(rows), too much per iteration for 3e8 rows):
before batch k the tables are rescaled, then batch k's increments are added with a weight:

* ``linear``: Linear CFR (Brown & Sandholm 2019, "Solving Imperfect-Information Games via
  Discounted Regret Minimization", sec. 3): both tables x (k-1)/(k+1), increments x 2/(k+1),
  i.e. batch k weighted k;
* ``dcfr``: DCFR(1.5, 0, 2) of the same paper: positive regrets x t^1.5/(t^1.5+1), negative x
  1/2, the average x (t/(t+1))^2, with t = k-1 batches done;
* ``cfr+``: regret-matching+ (regrets floored at 0 after every update, Tammelin 2015) with the
  linearly weighted average.

``benchmarks/bench_pcs_fhp.py`` measured them on fhp_abstraction_4e4 (2 threads, 64 s each,
exact exploitability): DCFR reaches 48.5 mbb/g at 1,024 iterations and stays near it (its
floor), CFR+ is at 59.1 and Linear at 68.3 after as long; DCFR is :data:`DEFAULT_SCHEME`.

**Board sampling.** The flop is *stratified*: iteration t's flop is row perm_e((t - 1) mod L) of
the flop classes listed by size (:func:`first_board_strata`, L = 5,525 on a 52-card deck),
perm_e a permutation seeded by (seed, epoch e); the turn and river are drawn uniformly from the
rest of the deck by a splitmix64 stream keyed by (seed, t). Every epoch of L iterations thus
deals each flop class exactly in proportion to its probability (the abstraction is
suit-invariant, so a class's representative updates exactly what any of its flops would):
the sampling noise of which flops came up is gone at every epoch's end, and each iteration's
board is still uniformly distributed. On ``fhp_abstraction_3.6e6`` (where the flop is the whole
board) it measured 252.9 mbb/g after 10 CPU-s against 260.6 for independent draws (one run
each, 1 thread, load 11-13; ``benchmarks/bench_pcs_fhp.py --iid-boards`` runs the comparison).

**Batch structure and threads.** :func:`run_iterations` samples the boards as above, evaluates
every (hand, board) showdown strength in one vectorised call, then a ``prange`` over ``threads`` contiguous shares of the iterations runs
each share's boards one after another; every thread owns its work arrays (depth x hands, ~2 MB
on hold'em) and updates the shared tables without locks (Hogwild-style, as the ES solver: two
threads rarely write one row at the same instant, and a lost update is noise far below the
board sampling's). Per-thread accumulation was rejected: a delta table per thread costs the
tables' size again per thread (abstraction_3e8: 7.9 GB each) and an O(rows) merge per call. One
thread is reproducible bit for bit, and any split of a batch into calls samples the same boards
(``tests/training/abstraction/test_pcs.py``). The run loop (:mod:`training.abstraction.batches`) cuts a batch into
calls of ~0.5 s for its progress bar and stop checks.

**Clusters.** The unit of work is :func:`run_iterations` (tables, first iteration, count,
weights) -> (node, hand) pairs. :mod:`training.abstraction.ray_pcs` runs each batch as merge
rounds on Ray workers: every worker runs its share of a round on a copy of the driver's tables
and returns the changed rows, which the driver adds; the board streams are keyed by iteration,
not by worker, so the merged run samples exactly the single-process boards.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numba
import numpy as np
from numba import njit, prange

from bot.abstraction.tables import AbstractGame
from bot.errors import ConfigError
from protocol.evaluator import hand_strength_batch
from protocol.isomorphism import HandIndexer, canonical_representatives
from training.abstraction.pcs_kernel import NUM_CARDS, local_buckets, prepare_board, walk
from training.abstraction.pcs_last_round import last_round_shape, last_round_work, subtree_ends
from training.abstraction.row_layout import RowLayout
from training.abstraction.solver import kernel_args, seed_state, uniform

#: Regret/average weighting schemes (module docstring).
SCHEMES = ("dcfr", "linear", "cfr+")
DEFAULT_SCHEME = "dcfr"
#: DCFR's (alpha, beta, gamma): Brown & Sandholm 2019's recommended (1.5, 0, 2).
DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA = 1.5, 0.0, 2.0


@dataclass(frozen=True)
class BatchWeights:
    """How batch k rescales the tables before it and weighs its increments."""

    positive: float  # factor of positive regrets
    negative: float  # factor of negative regrets
    average: float  # factor of the average-strategy sums
    regret_weight: float
    average_weight: float
    floor: bool  # regrets floored at 0 after every update (CFR+)


def batch_weights(scheme: str, k: int) -> BatchWeights:
    """The rescaling before batch ``k`` (1-based) and its increments' weights."""
    linear = (k - 1) / (k + 1)
    if scheme == "linear":
        return BatchWeights(linear, linear, linear, 2 / (k + 1), 2 / (k + 1), False)
    if scheme == "cfr+":
        return BatchWeights(1.0, 1.0, linear, 1.0, 2 / (k + 1), True)
    if scheme == "dcfr":
        t = k - 1
        positive = t**DCFR_ALPHA / (t**DCFR_ALPHA + 1)
        negative = t**DCFR_BETA / (t**DCFR_BETA + 1) if t else 0.0
        return BatchWeights(positive, negative, (t / (t + 1)) ** DCFR_GAMMA, 1.0, 1.0, False)
    raise ConfigError(f"unknown PCS weighting {scheme!r}; known: {', '.join(SCHEMES)}")


@njit(cache=True, parallel=True)
def _rescale(regrets, average, positive, negative, average_scale):  # pragma: no cover - numba
    for row in prange(regrets.shape[0]):
        for x in range(3):
            r = regrets[row, x]
            regrets[row, x] = r * (positive if r > 0 else negative)
            average[row, x] *= average_scale


def discount(regrets: np.ndarray, average: np.ndarray, weights: BatchWeights) -> None:
    """Rescale both tables in place as ``weights`` says (skipped when it is the identity)."""
    if (weights.positive, weights.negative, weights.average) != (1.0, 1.0, 1.0):
        _rescale(regrets, average, np.float32(weights.positive), np.float32(weights.negative), np.float32(weights.average))


@dataclass(frozen=True, eq=False)
class PCSGame:
    """An abstract game compiled for the PCS kernels: hands, indexers, tree arrays."""

    ag: AbstractGame
    hands: np.ndarray  # int64 [H, hole]: every hole-card combination of the deck
    preflop_bucket: np.ndarray  # int64 [H]: bucket of the rounds before any board card
    board_cards: int
    card_args: tuple  # prepare_board's indexer and bucket-table arguments
    tree_args: tuple  # walk's tree arguments
    max_depth: int
    last_round_nodes: int  # the largest last-round subtree (:func:`last_round_shape`)
    lanes: int  # its terminals, padded
    strata: np.ndarray  # int8 [L, k]: the first board round's canonical cards, by orbit (:func:`first_board_strata`)

    @classmethod
    def build(cls, ag: AbstractGame, layout: RowLayout | None = None) -> PCSGame:
        """``ag`` compiled for tables in ``layout`` (None: canonical)."""
        game = ag.abstraction.game
        layout = layout or RowLayout.canonical_of(ag)
        if game.num_players != 2 or not game.is_limit or game.num_hole_cards not in (1, 2):
            raise ConfigError(f"{game.name}: PCS solves two-player limit games with one or two hole cards")
        hands = np.array(list(combinations(sorted(game.deck), game.num_hole_cards)), dtype=np.int64)
        t = ag.tree
        ends = subtree_ends(t.parent)
        last_nodes, lanes = last_round_shape(t.kind, t.actor, t.round, t.parent, ends)
        tree_args = (t.kind, t.actor, t.round.astype(np.int64), t.child, t.legal.astype(np.int64), t.folder,
                     t.spent.astype(np.float64), t.parent.astype(np.int64), t.parent_action.astype(np.int64), ends,
                     int(t.round.max()), layout.row_offset, layout.stride)  # fmt: skip
        _, board_through, *rest = kernel_args(ag)
        a = ag.abstraction
        preflop = a.indexers[0].index_batch(hands)
        if a.tables[0] is not None:
            preflop = np.asarray(a.tables[0])[preflop].astype(np.int64)
        return cls(ag, hands, preflop, game.total_board_cards, (board_through, *rest), tree_args, int(t.depth.max()),
                   last_nodes, lanes, first_board_strata(game))  # fmt: skip

    @property
    def num_hands(self) -> int:
        return len(self.hands)


def first_board_strata(game) -> np.ndarray:
    """int8 ``[L, k]``: one representative of every suit class of the first board round's ``k``
    cards (the flop), each repeated (class size / g) times, g the classes' common divisor
    (hold'em and FHP flops: 1,755 classes of 4, 12 or 24 flops, L = 5,525); ``[0, 0]`` without
    board cards. A seeded permutation of these rows is a stratified draw of the flop: over L
    iterations every flop class comes up in proportion to its size (the bucket tables are
    suit-invariant, so a representative updates exactly what any flop of its class would)."""
    rounds = [int(c) for c in game.num_board_cards if c]
    if not rounds:
        return np.zeros((0, 0), dtype=np.int8)
    representatives, sizes = canonical_representatives(HandIndexer((rounds[0],), game.num_ranks, game.num_suits),
                                                       tuple(game.deck))  # fmt: skip
    return np.repeat(representatives, sizes // np.gcd.reduce(sizes), axis=0).astype(np.int8)


@njit(cache=True)
def sample_boards(deck, board_cards, strata, seed, first_iteration, count):  # pragma: no cover - numba
    """The full board (every round's cards, in dealing order) of ``count`` iterations: the first
    round's cards are row ``perm_e[(t - 1) % L]`` of ``strata`` for iteration t in epoch
    e = (t - 1) // L (``perm_e`` a permutation seeded by (seed, e)), the later rounds' cards are
    drawn uniformly from the rest of the deck (seeded by (seed, t)); any split of the
    iterations into calls draws the same boards."""
    boards = np.empty((count, board_cards), dtype=np.int8)
    work = deck.copy()
    n = deck.shape[0]
    size, first_cards = strata.shape
    perm = np.arange(size)
    epoch_drawn = -1
    for i in range(count):
        t = first_iteration + i - 1
        work[:] = deck
        if size:
            epoch = t // size
            if epoch != epoch_drawn:
                perm[:] = np.arange(size)
                state = seed_state(seed, epoch, 5)
                for j in range(size - 1):
                    state, u = uniform(state)
                    k = j + int(u * (size - j))
                    perm[j], perm[k] = perm[k], perm[j]
                epoch_drawn = epoch
            for j in range(first_cards):  # the stratum's cards to the front of the deck
                k = j
                while work[k] != strata[perm[t % size], j]:
                    k += 1
                work[j], work[k] = work[k], work[j]
                boards[i, j] = work[j]
        state = seed_state(seed, first_iteration + i, 4)
        for j in range(first_cards, board_cards):  # partial Fisher-Yates
            state, u = uniform(state)
            k = j + int(u * (n - j))
            work[j], work[k] = work[k], work[j]
            boards[i, j] = work[j]
    return boards


def showdown_strengths(pg: PCSGame, boards: np.ndarray) -> np.ndarray:
    """int32 ``[boards, H]``: strength of every hand with each full board (rows of hands that
    share a card with the board are computed but never read)."""
    count, h = len(boards), pg.num_hands
    if pg.board_cards == 0:  # Kuhn-like: the hole cards alone
        return np.broadcast_to(hand_strength_batch(pg.hands.astype(np.int8)), (count, h)).copy()
    rows = np.concatenate([np.broadcast_to(pg.hands.astype(np.int8)[None], (count, h, pg.hands.shape[1])),
                           np.broadcast_to(boards[:, None, :], (count, h, boards.shape[1]))], axis=2)  # fmt: skip
    return hand_strength_batch(rows.reshape(count * h, rows.shape[2])).reshape(count, h)


@njit(cache=True, parallel=True)
def _walk_boards(boards, strengths, players, num_chunks, hands, preflop_bucket, max_depth, last_nodes, lanes, board_through,
                 groups, binom, suit_size, class_keys, class_offsets, num_ranks, num_suits, tables, lossless,
                 kind, actor, rnd, child, legal, folder, spent, parent, parent_action, subtree_end, last, row_offset, stride,
                 regrets, regret_out, average, regret_weight, average_weight, floor):  # pragma: no cover - numba  # fmt: skip
    count = boards.shape[0]
    num_hands, num_hole = hands.shape
    depth = max_depth + 1
    touched = np.zeros(num_chunks, dtype=np.int64)
    for c in prange(num_chunks):
        live_cards = np.empty((num_hands, num_hole), dtype=np.int64)
        bucket = np.empty((board_through.shape[0], num_hands), dtype=np.int64)
        local = np.empty((board_through.shape[0], num_hands), dtype=np.int64)
        ids = np.empty((board_through.shape[0], num_hands), dtype=np.int64)
        counts = np.empty(board_through.shape[0], dtype=np.int64)
        sorted_strength = np.empty(num_hands, dtype=np.int64)
        node_at = np.empty(depth, dtype=np.int64)
        action_at = np.empty(depth, dtype=np.int64)
        own_at = np.empty(depth, dtype=np.int64)
        opp_at = np.empty(depth, dtype=np.int64)
        reach = np.empty((depth, num_hands))
        value = np.empty((depth, num_hands))
        sigma = np.zeros((depth, 3, num_hands))
        bucket_value = np.zeros((depth, 3, num_hands))
        own_mass = np.empty(num_hands)
        per_card = np.zeros(NUM_CARDS)
        last_work = last_round_work(last_nodes, lanes, num_hands)
        for i in range(c * count // num_chunks, (c + 1) * count // num_chunks):
            v = prepare_board(boards[i], hands, strengths[i], preflop_bucket, board_through, groups, binom, suit_size, class_keys,
                              class_offsets, num_ranks, num_suits, tables, lossless, live_cards, bucket, sorted_strength)  # fmt: skip
            local_buckets(bucket, v, local, ids, counts)
            for p in players:
                touched[c] += walk(p, v, live_cards, local, ids, counts, sorted_strength, kind, actor, rnd, child, legal,
                                   folder, spent, parent, parent_action, subtree_end, last, row_offset, stride, regrets,
                                   regret_out, average, regret_weight, average_weight, floor, node_at, action_at,
                                   own_at, opp_at, reach, value, sigma, bucket_value, own_mass, per_card,
                                   last_work)  # fmt: skip
    return touched.sum()


def walk_boards(pg: PCSGame, regrets: np.ndarray, regret_out: np.ndarray, average: np.ndarray, boards: np.ndarray,
                players: tuple[int, ...], regret_weight: float, average_weight: float, floor: bool,
                threads: int) -> int:  # fmt: skip
    """PCS passes of ``players`` (in that order) on each of ``boards`` (int8 ``[B, board
    cards]``), strategies from ``regrets``, regret increments into ``regret_out`` (the same
    array for immediate updates); returns the (decision node, live hand) pairs evaluated."""
    numba.set_num_threads(threads)
    boards = np.ascontiguousarray(boards, dtype=np.int8)
    return int(_walk_boards(boards, showdown_strengths(pg, boards), np.array(players, dtype=np.int64),
                            max(1, min(threads, len(boards))), pg.hands, pg.preflop_bucket, pg.max_depth, pg.last_round_nodes,
                            pg.lanes, *pg.card_args, *pg.tree_args,
                            regrets, regret_out, average, float(regret_weight), float(average_weight), bool(floor)))  # fmt: skip


def run_iterations(pg: PCSGame, regrets: np.ndarray, average: np.ndarray, seed: int, first_iteration: int,
                   count: int, weights: BatchWeights, threads: int) -> int:  # fmt: skip
    """Iterations ``first_iteration ..`` (``count``), one sampled board each, both players'
    passes (alternating), updates applied at once; returns (node, hand) pairs evaluated."""
    deck = np.array(pg.ag.abstraction.game.deck, dtype=np.int8)
    boards = sample_boards(deck, pg.board_cards, pg.strata, seed, first_iteration, count)
    return walk_boards(pg, regrets, regrets, average, boards, (0, 1), weights.regret_weight, weights.average_weight,
                       weights.floor, threads)  # fmt: skip
