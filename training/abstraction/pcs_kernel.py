"""Numba kernels of Public Chance Sampling: one board, every hole-card pair at once.

For one full board (every round's public cards), :func:`prepare_board` lists the hands that
share no card with it (the *live* hands), each one's bucket in every round (imperfect recall:
hole cards plus the board visible in that round, through the suit-isomorphism index and the
bucket table) and the live hands in ascending showdown strength; :func:`local_buckets` numbers
each round's distinct buckets among them, so the walk reads and writes the tables once per
(node, bucket) rather than per (node, hand). :func:`walk` is then one pass over the betting
tree (:class:`protocol.betting_tree.BettingTree` arrays) carrying vectors over the live hands:
both players' reach on the way down, the updating player's counterfactual values on the way up
(Johanson, Bard, Lanctot, Gibson & Bowling 2012, "Efficient Nash Equilibrium Approximation
through Monte Carlo Counterfactual Regret Minimization", sec. 3, vector form). It is depth first
through the rounds before the last, where a fold's value uses exact card removal in O(V) (by
inclusion-exclusion over the hands holding each of h's cards); each subtree of the last round,
with every showdown, is one call of :func:`training.abstraction.pcs_last_round.last_round`
(one sweep over the hands for all its terminals; HULH's river holds 5,670 of the 6,378
decision nodes). The pass keeps one row of vectors per *depth* (not per node), so its working
set is depth x V (HULH: ~20 x 1,081 doubles per array) and stays in cache.

These are generalisations of :mod:`bot.flop.game`'s ``fold_values``/``showdown_values`` to one
or two hole cards and to a compact live-hand index (that module stays FHP-only).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from protocol.betting_tree import DECISION, FOLD_END
from protocol.isomorphism import index_one
from training.abstraction.pcs_last_round import last_round, regret_match

NUM_CARDS = 52


@njit(cache=True)
def prepare_board(board, hands, strengths, preflop_bucket, board_through, groups, binom, suit_size, class_keys, class_offsets,
                  num_ranks, num_suits, tables, lossless, live_cards, bucket, sorted_strength):  # fmt: skip
    """Fill the per-board arrays for ``board`` (all rounds' cards); returns V, the live hands.

    ``hands [H, hole]``, ``strengths [H]`` (hole + full board; read for live hands only),
    ``preflop_bucket [H]`` (the bucket of rounds without board cards, computed once). The
    live hands are numbered by ascending showdown strength, so a showdown sweeps them in order;
    outputs over the first V entries: ``live_cards [V, hole]``, ``bucket [rounds, V]`` and
    ``sorted_strength``."""
    num_hole = hands.shape[1]
    mask = np.int64(0)
    for c in board:
        mask |= np.int64(1) << np.int64(c)
    live = np.empty(hands.shape[0], dtype=np.int64)
    v = 0
    for h in range(hands.shape[0]):
        ok = True
        for j in range(num_hole):
            if (mask >> np.int64(hands[h, j])) & 1:
                ok = False
        if ok:
            live[v] = h
            v += 1
    live_strength = np.empty(v, dtype=np.int64)
    for i in range(v):
        live_strength[i] = strengths[live[i]]
    ranked = np.argsort(live_strength, kind="mergesort")
    for i in range(v):
        sorted_strength[i] = live_strength[ranked[i]]
        for j in range(num_hole):
            live_cards[i, j] = hands[live[ranked[i]], j]
    cards = np.empty(num_hole + board.shape[0], dtype=np.int64)
    for r in range(board_through.shape[0]):
        if board_through[r] == 0:
            for i in range(v):
                bucket[r, i] = preflop_bucket[live[ranked[i]]]
            continue
        for j in range(board_through[r]):
            cards[num_hole + j] = board[j]
        for i in range(v):
            for j in range(num_hole):
                cards[j] = live_cards[i, j]
            index = index_one(cards[: num_hole + board_through[r]], groups[r], binom, suit_size[r], class_keys[r],
                              class_offsets[r], num_ranks, num_suits)  # fmt: skip
            bucket[r, i] = index if lossless[r] else tables[r][index]
    return v


@njit(cache=True)
def local_buckets(bucket, v, local, ids, counts):
    """Number the distinct buckets of each round among the first ``v`` hands: ``ids[r, :counts[r]]``
    are round r's buckets in ascending order and ``local[r, i]`` is hand i's position among them.
    Many hands share a bucket on one board (abstraction_3e6's river: ~60 buckets for 1,081 hands;
    fhp_abstraction_3.6e6's flop: ~100 for 1,176), so the walk matches regrets and writes the
    tables once per (node, bucket) instead of once per (node, hand)."""
    for r in range(bucket.shape[0]):
        order = np.argsort(bucket[r, :v])
        n = 0
        for k in range(v):
            b = bucket[r, order[k]]
            if n == 0 or ids[r, n - 1] != b:
                ids[r, n] = b
                n += 1
            local[r, order[k]] = n - 1
        counts[r] = n


@njit(cache=True, inline="always")
def _outside(total, per_card, cards, h):
    """Reach of the hands sharing no card with hand ``h``, from the total and the reach through
    each card (with two hole cards, h itself is the one hand through both and is subtracted
    twice: :func:`_disjoint` adds its reach back when h is among the counted hands)."""
    mass = total
    for k in range(cards.shape[1]):
        mass -= per_card[cards[h, k]]
    return mass


@njit(cache=True, inline="always")
def _disjoint(total, per_card, cards, reach, h):
    """Reach of the counted hands sharing no card with ``h`` when h itself is counted."""
    mass = _outside(total, per_card, cards, h)
    return mass + reach[h] if cards.shape[1] == 2 else mass


@njit(cache=True, inline="always")
def _count(reach, cards, h, per_card):
    for k in range(cards.shape[1]):
        per_card[cards[h, k]] += reach[h]
    return reach[h]


@njit(cache=True, inline="always", fastmath=True, error_model="numpy")
def _fold(won, reach, cards, v, per_card, out):
    """out[i] = won x (reach of live hands sharing no card with hand i)."""
    per_card[:] = 0.0
    total = 0.0
    for i in range(v):
        total += _count(reach, cards, i, per_card)
    for i in range(v):
        out[i] = won * _disjoint(total, per_card, cards, reach, i)


@njit(cache=True, fastmath=True, error_model="numpy")
def walk(player, v, live_cards, local, ids, counts, sorted_strength, kind, actor, rnd, child, legal, folder, spent,
         parent, parent_action, subtree_end, last, row_offset, stride, regrets, regret_out, average, regret_weight,
         average_weight, floor, node_at, action_at, own_at, opp_at, reach, value, sigma, bucket_value, own_mass,
         per_card, last_work):  # fmt: skip
    """One PCS pass for ``player`` on a prepared board (:func:`prepare_board`, then
    :func:`local_buckets`): regret increments ``regret_weight x (v(I, a) - v(I))`` of every live
    hand at the player's nodes are summed per bucket and added into ``regret_out`` at row
    (node, bucket) (then floored at 0 if ``floor``); ``average_weight x own reach x sigma`` into
    ``average`` (row ``row_offset[node] + bucket * stride[node]``: the tables' layout,
    :mod:`training.abstraction.row_layout`). Strategies are read from ``regrets`` by regret matching, once per (node,
    bucket) (pass the same array as ``regret_out`` for immediate updates, a zeroed one to
    collect one iteration's increments against fixed strategies). As sigma is one per bucket, a
    bucket's summed regret is ``S(a) - sum_a' sigma(a') S(a')`` with ``S(a)`` the bucket's summed
    action values (``bucket_value``), so no per-hand action values are kept.

    The walk is depth first down to the first node of round ``last``; each such subtree
    (``[n, subtree_end[n])``, every showdown among its leaves) is one call of
    :func:`training.abstraction.pcs_last_round.last_round` with the reach rows at its root
    (``last_work`` its work arrays). Work arrays are per depth (``[max_depth + 1, ...]``;
    ``reach`` has a row per depth, and ``own_at``/``opp_at`` say which row holds each player's
    reach at a depth: an action changes only its actor's reach, the other row is shared, not
    copied). Returns the (decision node, live hand) pairs evaluated."""
    other = 1 - player
    touched = 0
    d = 0
    node_at[0] = 0
    reach[0, :v] = 1.0
    own_at[0] = 0
    opp_at[0] = 0
    entering = True
    while d >= 0:
        n = node_at[d]
        r = rnd[n]
        if entering:
            if kind[n] == DECISION and r == last:
                touched += last_round(player, n, subtree_end[n], v, live_cards, local[r], ids[r], counts[r],
                                      sorted_strength, kind, actor, child, legal, folder, spent, parent, parent_action,
                                      row_offset, stride, regrets, regret_out, average, regret_weight, average_weight, floor,
                                      reach[own_at[d]], reach[opp_at[d]], value[d], last_work)  # fmt: skip
                d -= 1
                entering = False
                continue
            if kind[n] == FOLD_END:  # before the last round; showdowns are all in last_round
                won = -spent[n, player] if folder[n] == player else spent[n, other]
                _fold(won, reach[opp_at[d]], live_cards, v, per_card, value[d])
                d -= 1
                entering = False
                continue
            touched += v
            regret_match(regrets, row_offset[n], stride[n], ids[r], counts[r], legal, n, sigma[d])
            value[d, :v] = 0.0
            if actor[n] == player:
                bucket_value[d, :, : counts[r]] = 0.0
            action_at[d] = 3
        else:
            x = action_at[d]
            if actor[n] == player:
                for i in range(v):
                    b = local[r, i]
                    value[d, i] += sigma[d, x, b] * value[d + 1, i]
                    bucket_value[d, x, b] += value[d + 1, i]
            else:
                for i in range(v):
                    value[d, i] += value[d + 1, i]
        x = action_at[d] - 1
        while x >= 0 and not legal[n, x]:
            x -= 1
        if x >= 0:
            action_at[d] = x
            source = own_at[d] if actor[n] == player else opp_at[d]
            for i in range(v):
                reach[d + 1, i] = reach[source, i] * sigma[d, x, local[r, i]]
            own_at[d + 1] = d + 1 if actor[n] == player else own_at[d]
            opp_at[d + 1] = opp_at[d] if actor[n] == player else d + 1
            node_at[d + 1] = child[n, x]
            d += 1
            entering = True
            continue
        if actor[n] == player:
            nb = counts[r]
            own = reach[own_at[d]]
            own_mass[:nb] = 0.0
            for i in range(v):
                own_mass[local[r, i]] += own[i]
            offset, step = row_offset[n], stride[n]
            for b in range(nb):
                row = offset + ids[r, b] * step
                expected = sigma[d, 0, b] * bucket_value[d, 0, b] + sigma[d, 1, b] * bucket_value[d, 1, b] \
                    + sigma[d, 2, b] * bucket_value[d, 2, b]
                for x in range(3):
                    if legal[n, x]:
                        updated = regret_out[row, x] + regret_weight * (bucket_value[d, x, b] - expected)
                        regret_out[row, x] = max(updated, 0.0) if floor else updated
                        average[row, x] += average_weight * own_mass[b] * sigma[d, x, b]
        d -= 1
        entering = False
    return touched
