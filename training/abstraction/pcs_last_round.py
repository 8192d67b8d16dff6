"""The last betting round of a PCS pass in one sweep over the hands, its subtree at bucket level.

In the last round (the river in hold'em, the flop in FHP) no card is dealt any more and a hand's
strategy depends only on its bucket of that round. So below a last-round root every reach
factor is a function of the bucket: a hand h of the updating player reaches terminal t with
``own_reach(h) x G[b(h), t]`` and an opponent hand h' with ``opp_reach(h') x F[b(h'), t]``, ``G``
and ``F`` the products of the two players' bucket strategies along the path. The terminal
values of every terminal of the subtree then come out of *one* ascending sort-by-strength sweep
over the live hands with one accumulator lane per opponent-reach *profile* (Johanson, Waugh,
Bowling & Zinkevich 2011, "Accelerating Best Response Calculation in Large Extensive Games",
sec. 4.2, with the terminals as vector lanes instead of one sweep each; terminals that share
the opponent's reach share a lane), and everything else is bucket-level work:

* the root's counterfactual value of hand h is ``sum_t G[b(h), t] x u_t(h)`` (``u_t`` the
  terminal value against the opponent's reach at t, a combination of the lane's weaker,
  at-most-as-strong and disjoint opponent reach);
* a bucket's summed value at a node is the bucket-level backup of ``U[b, t] = sum_{h in b} u_t(h)``
  (own nodes weight children by the bucket's strategy, the opponent's add them), from which
  regrets follow as in :func:`training.abstraction.pcs_kernel.walk`; the average strategy's
  increment is the bucket's own reach mass at the root times ``G`` at the node times sigma.

HULH's 567 river subtrees each hold 10 decision nodes and 17 terminals: the per-node vector
passes (reach down, values up) and 17 separate terminal sweeps of the depth-first walk become
one two-pass sweep with 13 float32 lanes (padded to :data:`LANE_BLOCK`, one AVX-512 register;
float32 like the regret tables the sums feed). The result equals the depth-first walk up to
float rounding (``tests/training/abstraction/test_pcs.py``: one enumerated iteration equals
full-width CFR; the sweep against pairwise sums).

Work arrays (:func:`last_round_work`, per thread) are indexed by the node's offset in the
subtree (``node - root``, preorder) and by the bucket's position among the board's distinct
buckets of the round (:func:`training.abstraction.pcs_kernel.local_buckets`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from protocol.betting_tree import DECISION, FOLD_END

#: Lanes are padded to a multiple of this (16 float32 = one AVX-512 register).
LANE_BLOCK = 16
#: ``per_card`` has one row per card plus this always-zero row, the "second card" of one-card hands.
NO_CARD = 52


def subtree_ends(parent: np.ndarray) -> np.ndarray:
    """int64 ``[n]``: one past the last node of each node's subtree (nodes in preorder, so a
    subtree is the contiguous id range ``[n, end[n])``)."""
    size = np.ones(len(parent), dtype=np.int64)
    for n in range(len(parent) - 1, 0, -1):
        size[parent[n]] += size[n]
    return np.arange(len(parent), dtype=np.int64) + size


def last_round_shape(kind: np.ndarray, actor: np.ndarray, rnd: np.ndarray, parent: np.ndarray,
                     end: np.ndarray) -> tuple[int, int]:  # fmt: skip
    """(largest last-round subtree, most lanes a subtree needs, padded to :data:`LANE_BLOCK`):
    the work-array sizes. A lane is an opponent-reach profile that some terminal has, counted
    for either updating player (:func:`_strategies_and_lanes`). Raises if a showdown lies
    outside the last round (the sweep is the only place showdowns are evaluated)."""
    last = int(rnd.max())
    roots = [n for n in range(len(kind)) if kind[n] == DECISION and rnd[n] == last and (n == 0 or rnd[parent[n]] != last)]
    if ((kind != DECISION) & (kind != FOLD_END) & (rnd != last)).any():
        raise ValueError("a showdown before the last betting round: PCS's last-round sweep cannot evaluate it")
    nodes, lanes = 1, 1
    for root in roots:
        nodes = max(nodes, int(end[root] - root))
        for player in (0, 1):
            profile = {root: root}  # a node's profile: the opponent edge its opponent reach comes from
            for n in range(root + 1, int(end[root])):
                profile[n] = profile[parent[n]] if actor[parent[n]] == player else n
            lanes = max(lanes, len({profile[n] for n in range(root, int(end[root])) if kind[n] != DECISION}))
    return nodes, -(-lanes // LANE_BLOCK) * LANE_BLOCK


@njit(cache=True)
def last_round_work(nodes, lanes, hands):
    """Fresh per-thread work arrays for :func:`last_round` (subtree size, padded lanes, hands)."""
    f32 = np.float32
    return (
        np.zeros((nodes, 3, hands)),  # sigma [node, action, bucket]
        np.empty((nodes, hands)),  # own_factor [node, bucket]: own strategy product from the root
        np.empty((nodes, hands)),  # opp_factor [node, bucket]
        np.empty((nodes, hands)),  # bucket_value [node, bucket]: summed counterfactual values
        np.empty(nodes, dtype=np.int64),  # profile [node]: which opponent reach the node has
        np.empty(nodes, dtype=np.int64),  # lane_of [profile]
        np.zeros((nodes, 3)),  # coef [node, (weaker, at most as strong, disjoint)] of a terminal
        np.zeros((hands, lanes), dtype=f32),  # opp_lane [bucket, lane]: opponent reach factor
        np.zeros((3, hands, lanes), dtype=f32),  # weight [(weaker, at most, disjoint), bucket, lane]
        np.zeros((3, hands, lanes), dtype=f32),  # sums [(weaker, at most, disjoint), bucket, lane]
        np.empty((hands, lanes), dtype=f32),  # weaker [hand, lane]
        np.empty((hands, lanes), dtype=f32),  # at_most [hand, lane]
        np.zeros((NO_CARD + 1, lanes), dtype=f32),  # per_card [card, lane]
        np.zeros(lanes, dtype=f32),  # total [lane]
        np.empty(hands),  # own_mass [bucket]
    )


@njit(cache=True, fastmath=True, error_model="numpy")
def regret_match(regrets, offset, stride, ids, nb, legal, n, out):
    """Regret matching of node ``n``'s rows ``offset + ids[:nb] * stride`` into ``out[:, :nb]``
    (one column per bucket; uniform over the legal actions where no regret is positive). One
    call per node, not per bucket: the legal mask is read once and the bucket loop stays simple."""
    l0, l1, l2 = np.float64(legal[n, 0]), np.float64(legal[n, 1]), np.float64(legal[n, 2])
    for b in range(nb):
        row = offset + ids[b] * stride
        s0 = max(np.float64(regrets[row, 0]), 0.0) * l0
        s1 = max(np.float64(regrets[row, 1]), 0.0) * l1
        s2 = max(np.float64(regrets[row, 2]), 0.0) * l2
        total = s0 + s1 + s2
        if total <= 0.0:
            s0, s1, s2 = l0, l1, l2
            total = s0 + s1 + s2
        scale = 1.0 / total
        out[0, b] = s0 * scale
        out[1, b] = s1 * scale
        out[2, b] = s2 * scale


@njit(cache=True, fastmath=True, error_model="numpy")
def _strategies_and_lanes(player, root, end, nb, ids, kind, actor, legal, folder, spent, parent, parent_action,
                          row_offset, stride, regrets, sigma, own_factor, opp_factor, profile, lane_of, coef, opp_lane, weight):  # fmt: skip
    """Preorder over the subtree: bucket strategies at decision nodes and both players'
    strategy products from the root. A terminal's opponent reach is one of the subtree's
    *profiles* (one per opponent action edge: an own action keeps the parent's), and each
    profile that some terminal has gets a lane (HULH's river: 13 lanes for 17 terminals, as a
    fold of the updating player shares the reach of the showdown beside it).
    ``weight[k, b, lane]`` sums, over the lane's terminals, own reach factor x the terminal's
    coefficient of k (the weaker, at-most-as-strong and disjoint opponent reach) in its value.
    Returns the lanes used."""
    other = 1 - player
    profiles = 1
    for j in range(end - root):
        n = root + j
        if j == 0:
            own_factor[0, :nb] = 1.0
            opp_factor[0, :nb] = 1.0
            profile[0] = 0
        else:
            p, x = parent[n] - root, parent_action[n]
            if actor[parent[n]] == player:
                profile[j] = profile[p]
                for b in range(nb):
                    own_factor[j, b] = own_factor[p, b] * sigma[p, x, b]
                    opp_factor[j, b] = opp_factor[p, b]
            else:
                profile[j] = profiles
                profiles += 1
                for b in range(nb):
                    opp_factor[j, b] = opp_factor[p, b] * sigma[p, x, b]
                    own_factor[j, b] = own_factor[p, b]
        if kind[n] == DECISION:
            regret_match(regrets, row_offset[n], stride[n], ids, nb, legal, n, sigma[j])
        elif kind[n] == FOLD_END:
            coef[j, 0], coef[j, 1] = 0.0, 0.0
            coef[j, 2] = -spent[n, player] if folder[n] == player else spent[n, other]
        else:  # showdown: win x weaker - lose x stronger, stronger = disjoint - at most as strong
            coef[j, 0], coef[j, 1], coef[j, 2] = spent[n, other], spent[n, player], -spent[n, player]
    lane_of[:profiles] = -1
    lanes = 0
    opp_lane[:nb] = 0.0
    weight[:, :nb] = 0.0
    for j in range(end - root):
        if kind[root + j] == DECISION:
            continue
        if lane_of[profile[j]] < 0:
            lane_of[profile[j]] = lanes
            for b in range(nb):
                opp_lane[b, lanes] = opp_factor[j, b]
            lanes += 1
        lane = lane_of[profile[j]]
        for k in range(3):
            if coef[j, k] != 0.0:
                for b in range(nb):
                    weight[k, b, lane] += own_factor[j, b] * coef[j, k]
    return lanes


@njit(cache=True, fastmath=True, error_model="numpy")
def _sweep(v, cards, local, strength, opp_reach, opp_lane, weight, sums, weaker, at_most, per_card, total, nb, out):
    """Every terminal's value for every live hand, in float32 lanes (one per opponent-reach
    profile). One ascending pass over the hands (ties as a group) records each hand's weaker (W)
    and at-most-as-strong (E, h itself excluded) opponent reach per lane; then, with every
    hand's reach counted, a second pass gets the disjoint reach (D), ``out[h] = sum_lane
    weight[:, b(h)] . (W, E, D)`` and ``sums[:, b]``, the bucket's totals of (W, E, D).
    ``per_card[c]`` is the reach of the hands holding card c counted so far; with two hole
    cards a hand is subtracted once per card, so its own reach is added back (``twice``), as
    :func:`training.abstraction.pcs_kernel._disjoint` does. Each lane loop touches few arrays:
    LLVM vectorises a loop only while its runtime overlap checks stay few, so the per-bucket
    sums are three loops, not one."""
    lanes = opp_lane.shape[1]
    two = cards.shape[1] == 2
    twice = np.float32(1.0 if two else 0.0)
    per_card[:] = 0.0
    total[:] = 0.0
    start = 0
    while start < v:
        stop = start + 1
        while stop < v and strength[stop] == strength[start]:
            stop += 1
        for h in range(start, stop):
            c0, c1 = cards[h, 0], cards[h, 1] if two else NO_CARD
            for t in range(lanes):
                weaker[h, t] = total[t] - per_card[c0, t] - per_card[c1, t]
        for h in range(start, stop):
            c0, c1 = cards[h, 0], cards[h, 1] if two else NO_CARD
            r, b = np.float32(opp_reach[h]), local[h]
            for t in range(lanes):
                x = r * opp_lane[b, t]
                total[t] += x
                per_card[c0, t] += x
                per_card[c1, t] += x
        per_card[NO_CARD] = 0.0
        for h in range(start, stop):
            c0, c1 = cards[h, 0], cards[h, 1] if two else NO_CARD
            r, b = np.float32(opp_reach[h]) * twice, local[h]
            for t in range(lanes):
                at_most[h, t] = total[t] - per_card[c0, t] - per_card[c1, t] + r * opp_lane[b, t]
        start = stop
    sums[:, :nb] = 0.0
    w_weight, e_weight, d_weight = weight[0], weight[1], weight[2]
    w_sums, e_sums, d_sums = sums[0], sums[1], sums[2]
    for h in range(v):
        c0, c1 = cards[h, 0], cards[h, 1] if two else NO_CARD
        r, b = np.float32(opp_reach[h]) * twice, local[h]
        value = np.float32(0.0)
        for t in range(lanes):
            disjoint = total[t] - per_card[c0, t] - per_card[c1, t] + r * opp_lane[b, t]
            value += w_weight[b, t] * weaker[h, t] + e_weight[b, t] * at_most[h, t] + d_weight[b, t] * disjoint
        out[h] = value
        for t in range(lanes):
            w_sums[b, t] += weaker[h, t]
        for t in range(lanes):
            e_sums[b, t] += at_most[h, t]
        for t in range(lanes):
            d_sums[b, t] += total[t] - per_card[c0, t] - per_card[c1, t] + r * opp_lane[b, t]


@njit(cache=True, fastmath=True, error_model="numpy")
def _backup_and_update(player, root, end, nb, ids, kind, actor, child, legal, row_offset, stride, regret_out, average,
                       regret_weight, average_weight, floor, sigma, own_factor, bucket_value, profile, lane_of, coef,
                       sums, own_mass):  # fmt: skip
    """Reverse preorder: each node's per-bucket summed value (a terminal's from its lane's
    bucket sums of (W, E, D) and its coefficients); at the updating player's nodes the regret
    increments ``regret_weight x (S(a) - sum sigma S)`` and the average's ``average_weight x own
    mass x sigma``, as the depth-first walk does per (node, bucket)."""
    for j in range(end - root - 1, -1, -1):
        n = root + j
        if kind[n] != DECISION:
            lane = lane_of[profile[j]]
            for b in range(nb):
                bucket_value[j, b] = coef[j, 0] * sums[0, b, lane] + coef[j, 1] * sums[1, b, lane] \
                    + coef[j, 2] * sums[2, b, lane]
            continue
        bucket_value[j, :nb] = 0.0
        own = actor[n] == player
        for x in range(3):
            if legal[n, x]:
                below, here = bucket_value[child[n, x] - root], bucket_value[j]
                if own:
                    strategy = sigma[j, x]
                    for b in range(nb):
                        here[b] += strategy[b] * below[b]
                else:
                    for b in range(nb):
                        here[b] += below[b]
        if not own:
            continue
        offset, step = row_offset[n], stride[n]
        for b in range(nb):
            row = offset + ids[b] * step
            mass = average_weight * own_mass[b] * own_factor[j, b]
            for x in range(3):
                if legal[n, x]:
                    updated = regret_out[row, x] + regret_weight * (bucket_value[child[n, x] - root, b] - bucket_value[j, b])
                    regret_out[row, x] = max(updated, 0.0) if floor else updated
                    average[row, x] += mass * sigma[j, x, b]


@njit(cache=True, fastmath=True, error_model="numpy")
def last_round(player, root, end, v, cards, local, ids, nb, strength, kind, actor, child, legal, folder, spent, parent,
               parent_action, row_offset, stride, regrets, regret_out, average, regret_weight, average_weight, floor,
               own_reach, opp_reach, out, work):  # fmt: skip
    """The PCS pass of ``player`` over the last-round subtree ``[root, end)`` (module docstring):
    ``out[:v]`` gets the counterfactual value of every live hand at ``root``, and the player's
    rows of the subtree get their regret and average increments (same semantics as
    :func:`training.abstraction.pcs_kernel.walk`). ``local``/``ids``/``nb`` are the last round's
    bucket numbering on this board, ``work`` a :func:`last_round_work` tuple. Returns the
    (decision node, live hand) pairs evaluated, counted as the depth-first walk counts them."""
    (sigma, own_factor, opp_factor, bucket_value, profile, lane_of, coef, opp_lane, weight, sums, weaker, at_most,
     per_card, total, own_mass) = work  # fmt: skip
    _strategies_and_lanes(player, root, end, nb, ids, kind, actor, legal, folder, spent, parent, parent_action,
                          row_offset, stride, regrets, sigma, own_factor, opp_factor, profile, lane_of, coef, opp_lane, weight)  # fmt: skip
    _sweep(v, cards, local, strength, opp_reach, opp_lane, weight, sums, weaker, at_most, per_card, total, nb, out)
    own_mass[:nb] = 0.0
    for h in range(v):
        own_mass[local[h]] += own_reach[h]
    _backup_and_update(player, root, end, nb, ids, kind, actor, child, legal, row_offset, stride, regret_out, average,
                       regret_weight, average_weight, floor, sigma, own_factor, bucket_value, profile, lane_of, coef,
                       sums, own_mass)  # fmt: skip
    decisions = 0
    for n in range(root, end):
        decisions += kind[n] == DECISION
    return decisions * v
