"""Batched external-sampling traversals over the compiled betting tree (Deep CFR, algorithm 2).

One call runs many traversals for one traverser together. Deals are sampled up front in bulk
(chance is external-sampled once per traversal, so a traversal's chance outcomes are its deal);
showdown winners come from :func:`protocol.evaluator.hand_strength_batch`. The traversals then
advance level by level through :class:`~protocol.betting_tree.BettingTree`: each level is a
frontier of ``(deal, node)`` rows, the strategy of every decision row is computed by the caller's
``strategy`` function in one call per acting player, the traverser's rows expand every legal
action, the opponent's rows sample one action (external sampling), and terminal rows get their
payoff. A backward pass over the levels then forms the traverser's values
``v(h) = sum_a sigma(I, a) v(h a)`` and the sampled instantaneous regrets
``r(I, a) = v(h a) - v(h)`` (zero on illegal actions). There is no Python per node or per
traversal: only per level (the tree's depth, at most ~25 in HULH).

The outputs are exactly Algorithm 2's memory inserts: advantage samples (traverser infosets,
regrets) and strategy samples (opponent infosets, the opponent's strategy vector).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bot.agents.encoding import InfosetEncoder
from protocol.betting_tree import DECISION, FOLD_END
from protocol.evaluator import hand_strength_batch

#: ``strategy(player, nodes [n], cards [n, slots]) -> probabilities [n, 3]`` (zero on illegal).
StrategyFn = Callable[[int, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class Deals:
    """A batch of deals: hole cards ``[n, 2, hole]``, full board ``[n, board]`` (int8), and
    ``winner_sign`` ``[n]``: +1 if position 0 wins a showdown, -1 if position 1 does, 0 on a tie."""

    holes: np.ndarray
    board: np.ndarray
    winner_sign: np.ndarray

    def __len__(self) -> int:
        return len(self.holes)


def deal_batch(encoder: InfosetEncoder, n: int, rng: np.random.Generator) -> Deals:
    """``n`` uniformly random deals (a random permutation prefix of the deck per row)."""
    game = encoder.game
    deck = np.array(game.deck, dtype=np.int8)
    hole, board = game.num_hole_cards, game.total_board_cards
    need = 2 * hole + board
    order = np.argsort(rng.random((n, len(deck))), axis=1)[:, :need]
    cards = deck[order]
    holes = cards[:, : 2 * hole].reshape(n, 2, hole)
    board_cards = cards[:, 2 * hole :]
    strength = [hand_strength_batch(np.concatenate([holes[:, p], board_cards], axis=1)) for p in (0, 1)]
    return Deals(holes, board_cards, np.sign(strength[0] - strength[1]).astype(np.int8))


@dataclass
class TraversalResult:
    """Memory inserts of one batch (each a dict of field arrays) and counts for metrics."""

    advantage: dict[str, np.ndarray]
    strategy: dict[str, np.ndarray]
    infosets_evaluated: int
    root_value: np.ndarray  # the traverser's sampled value of each traversal (float64 [n])
    example: dict | None = None
    """The first traversal of the batch as a small tree (``pokerbot watch`` draws it): the
    ``traverser``, the deal (``holes`` per position, the full ``board``), betting ``nodes`` in
    visit order, each row's ``parent`` row (-1 at the root), the traverser's sampled ``value``
    and, at the traverser's decisions, its strategy ``sigma``; None past
    :data:`EXAMPLE_MAX_ROWS` rows (hold'em-sized trees are not worth a metrics line)."""


#: Largest first-traversal tree kept in :attr:`TraversalResult.example`.
EXAMPLE_MAX_ROWS = 400


def terminal_payoff(encoder: InfosetEncoder, nodes: np.ndarray, deals: Deals, rows: np.ndarray, player: int) -> np.ndarray:
    """Chips won by ``player`` at terminal ``nodes`` for deal ``rows`` (two players, limit)."""
    tree = encoder.tree
    spent = tree.spent[nodes]
    own, other = spent[:, player].astype(np.float64), spent[:, 1 - player].astype(np.float64)
    fold = tree.kind[nodes] == FOLD_END
    folded_self = tree.folder[nodes] == player
    sign = deals.winner_sign[rows].astype(np.float64) * (1 if player == 0 else -1)
    showdown = np.where(sign > 0, other, np.where(sign < 0, -own, 0.0))
    return np.where(fold, np.where(folded_self, -own, other), showdown)


def sample_actions(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row drawn from ``probabilities`` ``[n, 3]``: the first action whose
    cumulative probability exceeds a uniform draw (zero-probability actions, illegal ones
    included, have empty intervals and are never drawn)."""
    cumulative = np.cumsum(probabilities, axis=1)
    draw = rng.random(len(probabilities))[:, None] * cumulative[:, -1:]
    return np.minimum((draw >= cumulative).sum(axis=1), probabilities.shape[1] - 1)


def traverse(encoder: InfosetEncoder, deals: Deals, traverser: int, strategy: StrategyFn, rng: np.random.Generator) -> TraversalResult:
    """External-sampling traversals of ``traverser``, one per deal (see the module docstring)."""
    tree = encoder.tree
    n = len(deals)
    level_nodes: list[np.ndarray] = []  # node of every row, level by level (global id order)
    level_deals: list[np.ndarray] = []  # the deal (traversal) of every row, same order
    node = np.zeros(n, dtype=np.int64)
    deal = np.arange(n, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    action = np.full(n, -1, dtype=np.int64)
    offset = 0
    values_parts: list[np.ndarray] = []
    trav_ids: list[np.ndarray] = []
    trav_sigma: list[np.ndarray] = []
    trav_cards: list[np.ndarray] = []
    child_of_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (parent gid, action, child gid)
    strategy_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    evaluated = 0
    while len(node):
        size = len(node)
        gid = offset + np.arange(size, dtype=np.int64)
        level_nodes.append(node)
        level_deals.append(deal)
        if offset:  # record child links of the previous level's rows
            child_of_parts.append((parent, action, gid))
        values = np.zeros(size, dtype=np.float64)
        terminal = tree.kind[node] != DECISION
        if terminal.any():
            values[terminal] = terminal_payoff(encoder, node[terminal], deals, deal[terminal], traverser)
        values_parts.append(values)

        actor = tree.actor[node].astype(np.int64)
        next_node, next_deal, next_parent, next_action = [], [], [], []
        for player in (traverser, 1 - traverser):
            rows = np.flatnonzero(~terminal & (actor == player))
            if not len(rows):
                continue
            rnd = tree.round[node[rows]].astype(np.int64)
            cards = encoder.card_slots(deals.holes[deal[rows]], deals.board[deal[rows]], np.full(len(rows), player), rnd)
            sigma = strategy(player, node[rows], cards)
            evaluated += len(rows)
            if player == traverser:
                trav_ids.append(gid[rows])
                trav_sigma.append(sigma)
                trav_cards.append(cards)
                legal = tree.legal[node[rows]]
                r_idx, a_idx = np.nonzero(legal)
                src = rows[r_idx]
            else:
                strategy_rows.append((node[rows], cards, sigma))
                a_idx = sample_actions(sigma, rng)
                src = rows
            next_node.append(tree.child[node[src], a_idx].astype(np.int64))
            next_deal.append(deal[src])
            next_parent.append(gid[src])
            next_action.append(a_idx.astype(np.int64))
        offset += size
        if next_node:
            node, deal = np.concatenate(next_node), np.concatenate(next_deal)
            parent, action = np.concatenate(next_parent), np.concatenate(next_action)
        else:
            node = np.zeros(0, dtype=np.int64)

    # backward pass: children (level L) complete their parents (level L-1)
    values = np.concatenate(values_parts)
    total = len(values)
    weight = np.ones(total, dtype=np.float64)  # sigma of the traverser's parent, 1 for opponents
    sigma_of = np.zeros((total, 3), dtype=np.float64)
    if trav_ids:
        tid = np.concatenate(trav_ids)
        sigma_of[tid] = np.concatenate(trav_sigma)
    else:
        tid = np.zeros(0, dtype=np.int64)
    is_trav = np.zeros(total, dtype=bool)
    is_trav[tid] = True
    child_of = np.full((total, 3), -1, dtype=np.int64)
    for p_gid, act, c_gid in child_of_parts:
        child_of[p_gid, act] = c_gid
        weight[c_gid] = np.where(is_trav[p_gid], sigma_of[p_gid, act], 1.0)
    for p_gid, _act, c_gid in reversed(child_of_parts):
        np.add.at(values, p_gid, weight[c_gid] * values[c_gid])

    advantage: dict[str, np.ndarray]
    if len(tid):
        children = child_of[tid]
        legal = children >= 0
        regrets = np.where(legal, values[np.maximum(children, 0)] - values[tid][:, None], 0.0)
        advantage = {
            "node": np.concatenate(level_nodes)[tid].astype(np.int32),
            "cards": np.concatenate(trav_cards),
            "target": regrets.astype(np.float32),
        }
    else:
        advantage = empty_rows(encoder)
    if strategy_rows:
        strat = {
            "node": np.concatenate([s[0] for s in strategy_rows]).astype(np.int32),
            "cards": np.concatenate([s[1] for s in strategy_rows]),
            "target": np.concatenate([s[2] for s in strategy_rows]).astype(np.float32),
        }
    else:
        strat = empty_rows(encoder)
    example = first_traversal(np.concatenate(level_nodes), np.concatenate(level_deals), child_of_parts, values, sigma_of, is_trav)
    if example is not None:
        example.update(traverser=traverser, holes=deals.holes[0].tolist(), board=deals.board[0].tolist())
    return TraversalResult(advantage, strat, evaluated, values[:n].copy(), example)


def first_traversal(nodes: np.ndarray, deals: np.ndarray, child_of_parts: list, values: np.ndarray,
                    sigma_of: np.ndarray, is_traverser: np.ndarray) -> dict | None:
    """The rows of traversal 0 as :attr:`TraversalResult.example` (rows renumbered from 0)."""
    rows = np.flatnonzero(deals == 0)
    if len(rows) > EXAMPLE_MAX_ROWS:
        return None
    parent = np.full(len(nodes), -1, dtype=np.int64)
    for p_gid, _action, c_gid in child_of_parts:
        parent[c_gid] = p_gid
    renumber = np.full(len(nodes), -1, dtype=np.int64)
    renumber[rows] = np.arange(len(rows))
    return {"nodes": nodes[rows].tolist(),
            "parent": [int(renumber[p]) if p >= 0 else -1 for p in parent[rows]],
            "value": [round(float(v), 6) for v in values[rows]],
            "sigma": [[round(float(x), 4) for x in sigma_of[r]] if is_traverser[r] else None for r in rows]}


def empty_rows(encoder: InfosetEncoder) -> dict[str, np.ndarray]:
    """No memory rows (the fields of :attr:`TraversalResult.advantage`)."""
    return {
        "node": np.zeros(0, dtype=np.int32),
        "cards": np.zeros((0, encoder.num_card_slots), dtype=np.int8),
        "target": np.zeros((0, 3), dtype=np.float32),
    }
