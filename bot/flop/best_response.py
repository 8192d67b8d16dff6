"""Exact best response and exploitability of any policy in flop hold'em, one flop at a time.

The walk is Johanson et al.'s public-tree best response (IJCAI 2011) specialised to games with
one chance event between two betting rounds (:mod:`bot.flop.game`): per flop, a numba pass
over the flop's betting nodes with a vector over all hole-card pairs gives, at each preflop
line that reaches the flop, both seats' best-response values and the profile's value; the
flops are weighted and summed, then one small preflop pass finishes each value. Flops run in
parallel (numba ``prange``) in chunks whose strategy tables the policy computes on request.

Two paths: a suit-invariant policy (abstractions, the lossless solution, a suit-canonical
network) is evaluated on the canonical flops (FHP: 1,755, each weighted by its orbit size);
any other policy on every raw flop (FHP: 22,100). Memory is one chunk's table
(``chunk x flop decision nodes x hands x 3`` float32: 256 flops of FHP = 228 MB; none for a
policy that gives its tables as :class:`SharedRows`, which the walk expands one flop at a time)
plus the per-flop showdown orders (FHP all flops: 160 MB).

Units as :class:`bot.evaluation.best_response.ExploitabilityReport`: chips per hand, NashConv = both seats'
gains ("total"), exploitability = NashConv / 2 ("average").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit, prange

from bot.evaluation.best_response import ExploitabilityReport
from bot.flop.game import (
    FlopGame,
    leaf_reach,
    match_strategy,
    reach_down,
    store_root_values,
    values_up,
)
from protocol.gamedef import Game

#: ``(lo, hi) -> float32 [hi - lo, flop decision nodes, H, 3]``: a policy's flop strategies
#: (or any non-negative weights, normalised per row) on flops ``lo..hi-1`` of a FlopGame.
FlopTables = Callable[[int, int], np.ndarray]
#: Called with (flops done, flops in all).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SharedRows:
    """A chunk's flop strategy tables as rows that many (flop, hand)s share: decision row ``d``
    of flop ``i`` plays ``strategies[g][node_row[d], rows_of[g][i x H + h]]`` for hand ``h``,
    with ``g = node_group[d]`` (-1 in ``rows_of``: not a deal, 0). A suit-canonical network's
    tables take this form (its distinct card rows' strategies and their index, ~1.6x fewer
    rows than (flop, hand)s), and the best response then expands one flop at a time in cache
    instead of reading a ``[flops, D, H, 3]`` table (~0.3 GB a chunk) written for it."""

    strategies: tuple[np.ndarray, ...]
    """float32 ``[nodes of group g, rows of group g, 3]`` per group (one group per network)."""
    rows_of: tuple[np.ndarray, ...]
    """int64 ``[flops x H]`` per group."""
    node_group: np.ndarray
    """int64 ``[D]``."""
    node_row: np.ndarray
    """int64 ``[D]``: the decision row's index among its group's nodes."""


@dataclass(frozen=True)
class FlopPolicy:
    """A policy as the flop passes read it."""

    preflop: np.ndarray
    """``[preflop decision nodes, H, 3]`` weights (normalised per row)."""
    flop: FlopTables
    """The flop strategies, chunk by chunk, over the flops of the FlopGame it is evaluated on."""
    suit_invariant: bool
    """True when renaming suits never changes the policy: the canonical-flop path is exact."""
    shared: Callable[[int, int], SharedRows] | None = None
    """The same flop strategies as :class:`SharedRows`, when the policy has that form (the best
    response reads them instead of :attr:`flop`)."""


@lru_cache(maxsize=4)
def flop_game_for(game: Game, canonical: bool) -> FlopGame:
    """The (cached) compiled game: canonical flops or all raw flops."""
    return FlopGame.build(game, canonical)


@njit(cache=True)
def shared_table(strategies, rows_of, node_group, node_row, i, out):  # pragma: no cover - numba
    """out float32 ``[D, H, 3]``: flop ``i``'s table of a :class:`SharedRows`."""
    num_hands = out.shape[1]
    for d in range(out.shape[0]):
        strategy, row_of, k = strategies[node_group[d]], rows_of[node_group[d]], node_row[d]
        for h in range(num_hands):
            row = row_of[i * num_hands + h]
            for a in range(3):
                out[d, h, a] = strategy[k, row, a] if row >= 0 else np.float32(0.0)


@njit(cache=True)
def _evaluate_flop(arrays, legal, table, root_reach, valid, hand_cards, order, strength, out):  # pragma: no cover - numba
    """out[k, t, h] for one flop of strategy ``table [D, H, 3]``: k = 0, 1 the best-response
    values of seat k, k = 2 seat 0's value under the profile, at flop root t."""
    num_nodes = arrays[0].shape[0]
    num_hands = valid.shape[0]
    strategy = np.empty((legal.shape[0], num_hands, 3))
    reach = np.empty((num_nodes, 2, num_hands))
    values = np.empty((num_nodes, num_hands))
    empty = np.zeros((0, num_hands))
    match_strategy(table, legal, strategy)
    reach_down(arrays, strategy, root_reach, valid, reach)
    for k in range(3):
        player = k if k < 2 else 0
        values_up(arrays, strategy, player, k < 2, reach, empty, valid, hand_cards, 1.0,
                  order, strength, values)
        store_root_values(arrays, values, out[k])


@njit(parallel=True, cache=True)
def _evaluate_chunk(arrays, legal, tables, lo, root_reach, valid, hand_cards, order, strength, out):  # pragma: no cover - numba
    """:func:`_evaluate_flop` of flop lo + i into out[i], from its table ``tables[i]``."""
    for i in prange(tables.shape[0]):
        c = lo + i
        _evaluate_flop(arrays, legal, tables[i], root_reach, valid[c], hand_cards, order[c], strength[c], out[i])


@njit(parallel=True, cache=True)
def _evaluate_shared_chunk(arrays, legal, strategies, rows_of, node_group, node_row, lo, root_reach, valid, hand_cards,
                           order, strength, out):  # pragma: no cover - numba
    """:func:`_evaluate_flop` of flop lo + i into out[i], its table expanded from a :class:`SharedRows`."""
    for i in prange(out.shape[0]):
        c = lo + i
        table = np.empty((legal.shape[0], valid.shape[1], 3), np.float32)
        shared_table(strategies, rows_of, node_group, node_row, i, table)
        _evaluate_flop(arrays, legal, table, root_reach, valid[c], hand_cards, order[c], strength[c], out[i])


def chunk_size(fg: FlopGame, budget_bytes: int = 256 << 20) -> int:
    """Flops per chunk so that one chunk's float32 table stays near ``budget_bytes``."""
    per_flop = fg.flop.num_decisions * fg.num_hands * 3 * 4
    return max(1, budget_bytes // per_flop)


def flop_exploitability(fg: FlopGame, policy: FlopPolicy, progress: Progress | None = None,
                        chunk: int | None = None) -> ExploitabilityReport:
    """Exact best-response values of both seats, the profile value, NashConv and
    exploitability of ``policy`` on ``fg`` (canonical flops only for suit-invariant policies)."""
    if fg.canonical and not policy.suit_invariant:
        raise ValueError("the canonical-flop path is exact only for suit-invariant policies")
    pre_strategy, pre_reach = fg.preflop_reach(policy.preflop)
    root_reach = leaf_reach(fg.preflop, pre_reach)
    order, strength = fg.showdown
    valid = fg.valid
    chunk = chunk or chunk_size(fg)
    leaf = np.zeros((3, fg.num_transitions, fg.num_hands))
    for lo in range(0, fg.num_flops, chunk):
        hi = min(lo + chunk, fg.num_flops)
        out = np.empty((hi - lo, 3, fg.num_transitions, fg.num_hands))
        if policy.shared is not None:
            rows = policy.shared(lo, hi)
            _evaluate_shared_chunk(fg.flop.arrays, fg.flop.legal, rows.strategies, rows.rows_of, rows.node_group,
                                   rows.node_row, lo, root_reach, valid, fg.hands, order, strength, out)
        else:
            tables = np.ascontiguousarray(policy.flop(lo, hi), dtype=np.float32)
            expected = (hi - lo, fg.flop.num_decisions, fg.num_hands, 3)
            if tables.shape != expected:
                raise ValueError(f"flop tables of shape {tables.shape}, expected {expected}")
            _evaluate_chunk(fg.flop.arrays, fg.flop.legal, tables, lo, root_reach, valid, fg.hands, order, strength, out)
        leaf += np.tensordot(fg.weights[lo:hi], out, axes=1)
        if progress is not None:
            progress(hi, fg.num_flops)
    leaf = fg.symmetrize(leaf)
    results = [
        float(fg.preflop_values(pre_strategy, pre_reach, player, best, leaf[k])[0].sum() / fg.deals)
        for k, (player, best) in enumerate(((0, True), (1, True), (0, False)))
    ]
    game = fg.game
    return ExploitabilityReport(game.name, game.big_blind, (results[0], results[1]), results[2])


def uniform_policy(fg: FlopGame) -> FlopPolicy:
    """Uniform random play (suit-invariant)."""
    table = fg.uniform_table(fg.flop)
    return FlopPolicy(fg.uniform_table(fg.preflop), lambda lo, hi: np.broadcast_to(table, (hi - lo, *table.shape)), True)
