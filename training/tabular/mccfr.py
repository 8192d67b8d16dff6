"""External-sampling Monte Carlo CFR (Lanctot et al. 2009, "Monte Carlo Sampling for Regret
Minimization in Extensive Games", sec. 3.2), optionally with linear weighting.

Each iteration makes one traversal per player. Chance is sampled once per traversal (a whole
deal: both hands and every round's board); at the traverser's nodes every action is explored
and regrets get ``v(a) - v`` (the sampled counterfactual values need no importance weights:
opponent and chance actions are sampled from their own distributions); at the opponent's nodes
one action is sampled from the current strategy and the opponent's current strategy is added
to its strategy sum ("simple averaging", Lanctot 2013 thesis sec. 4.2, unbiased because the
opponent's reach is sampled). With ``linear=True`` iteration t's regrets and strategy
contributions are multiplied by t (Linear MCCFR, as the Deep CFR paper solves its abstractions;
Brown & Sandholm 2019).

The traversal is a recursive numba function over the compiled betting tree and the slot layout
of :class:`bot.agents.infosets.InfosetSpace`, so the average strategy is read out exactly like full
CFR's. Random numbers come from numba's generator, seeded from the run seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from bot.agents.infosets import card_masks, normalise_average
from bot.evaluation.best_response import public_tree_for
from protocol.betting_tree import DECISION, FOLD_END
from protocol.gamedef import Game
from training.tabular.cfr import restore_tables


@dataclass(frozen=True)
class MCCFRConfig:
    """Settings of one external-sampling MCCFR run."""

    linear: bool = True
    """Weight iteration t's regrets and average-strategy contributions by t."""
    seed: int = 0
    """Seed of the deals and opponent actions (numba's generator, reseeded per run call)."""


@njit(cache=True)
def _seed(seed):  # pragma: no cover - numba
    np.random.seed(seed)


@njit(cache=True)
def _sample_hand(valid_row, num_hands, other_mask, hand_masks):  # pragma: no cover - numba
    while True:
        h = np.random.randint(num_hands)
        if valid_row[h] and (hand_masks[h] & other_mask) == 0:
            return h


@njit(cache=True, inline="always")
def regret_matching_row(regrets, slot, legal, out):  # pragma: no cover - numba
    """Regret matching (Zinkevich et al. 2007, eq. 8) of row ``slot`` into ``out``; uniform over
    legal actions when none is positive. Shared by every tabular MCCFR kernel."""
    total = 0.0
    for a in range(3):
        out[a] = max(regrets[slot, a], 0.0) if legal[a] else 0.0
        total += out[a]
    n_legal = legal[0] + legal[1] + legal[2]
    for a in range(3):
        if total > 0.0:
            out[a] /= total
        else:
            out[a] = 1.0 / n_legal if legal[a] else 0.0


@njit(cache=True)
def _payoff(node, player, hands, final_board, kind, folder, spent, strength):  # pragma: no cover - numba
    if kind[node] == FOLD_END:
        return -float(spent[node, player]) if folder[node] == player else float(spent[node, 1 - player])
    mine = strength[final_board, hands[player]]
    theirs = strength[final_board, hands[1 - player]]
    if mine > theirs:
        return float(spent[node, 1 - player])
    if mine < theirs:
        return -float(spent[node, player])
    return 0.0


@njit(cache=True)
def _traverse(player, hands, board_ids, final_board, weight, child, legal, actor, kind, rnd, folder,
              spent, node_offset, num_hands, strength, regrets, strategy_sum,
              frame_node, frame_slot, frame_prob, frame_value, frame_action):  # pragma: no cover - numba
    """One external-sampling traversal for ``player``; iterative (an explicit stack of the
    traverser's open decisions) because numba cannot cache recursive functions."""
    depth = 0
    node = 0
    prob = np.zeros(3)
    while True:
        # descend: sample through chance-free opponent nodes, open a frame at the traverser's
        while kind[node] == DECISION:
            slot = node_offset[node] + board_ids[rnd[node]] * num_hands + hands[actor[node]]
            regret_matching_row(regrets, slot, legal[node], prob)
            if actor[node] == player:
                frame_node[depth] = node
                frame_slot[depth] = slot
                a = 0
                while not legal[node, a]:
                    a += 1
                for b in range(3):
                    frame_prob[depth, b] = prob[b]
                    frame_value[depth, b] = 0.0
                frame_action[depth] = a
                depth += 1
                node = child[node, a]
                continue
            for b in range(3):
                strategy_sum[slot, b] += weight * prob[b]
            u = np.random.random()
            if u < prob[0]:
                a = 0
            elif u < prob[0] + prob[1]:
                a = 1
            elif prob[2] > 0.0:
                a = 2
            else:  # rounding left u above p0 + p1: the last action with positive probability
                a = 1 if prob[1] > 0.0 else 0
            node = child[node, a]
        value = _payoff(node, player, hands, final_board, kind, folder, spent, strength)
        # ascend: hand the value to the open frame; explore its next action or close it
        while depth > 0:
            top = depth - 1
            parent = frame_node[top]
            frame_value[top, frame_action[top]] = value
            a = frame_action[top] + 1
            while a < 3 and not legal[parent, a]:
                a += 1
            if a < 3:
                frame_action[top] = a
                node = child[parent, a]
                break
            value = 0.0
            for b in range(3):
                value += frame_prob[top, b] * frame_value[top, b]
            slot = frame_slot[top]
            for b in range(3):
                if legal[parent, b]:
                    regrets[slot, b] += weight * (frame_value[top, b] - value)
            depth -= 1
        if depth == 0:
            return value


@njit(cache=True)
def _run(first, count, linear, board_of_round, final_valid, hand_masks, board_masks, child, legal,
         actor, kind, rnd, folder, spent, node_offset, num_hands, strength, regrets,
         strategy_sum):  # pragma: no cover - numba
    num_rounds = board_of_round.shape[0]
    num_final = board_of_round.shape[1]
    hands = np.zeros(2, dtype=np.int64)
    board_ids = np.zeros(num_rounds, dtype=np.int64)
    max_depth = child.shape[0]
    frame_node = np.zeros(max_depth, dtype=np.int64)
    frame_slot = np.zeros(max_depth, dtype=np.int64)
    frame_action = np.zeros(max_depth, dtype=np.int64)
    frame_prob = np.zeros((max_depth, 3))
    frame_value = np.zeros((max_depth, 3))
    for t in range(first, first + count):
        weight = float(t) if linear else 1.0
        for player in range(2):
            final_board = np.random.randint(num_final)
            for r in range(num_rounds):
                board_ids[r] = board_of_round[r, final_board]
            mask = board_masks[final_board]
            hands[0] = _sample_hand(final_valid[final_board], num_hands, mask, hand_masks)
            hands[1] = _sample_hand(final_valid[final_board], num_hands, mask | hand_masks[hands[0]], hand_masks)
            _traverse(player, hands, board_ids, final_board, weight, child, legal, actor, kind, rnd,
                      folder, spent, node_offset, num_hands, strength, regrets, strategy_sum,
                      frame_node, frame_slot, frame_prob, frame_value, frame_action)


class ExternalSamplingMCCFR:
    """Regret and strategy-sum tables in the slot layout; :meth:`run` does iterations in numba."""

    def __init__(self, game: Game, config: MCCFRConfig = MCCFRConfig()) -> None:
        self.config = config
        public = public_tree_for(game)
        self.space = space = public.space
        tree = space.tree
        last = game.num_rounds - 1
        # board row of every round for each final board (deals are sampled as a final board)
        board_of_round = np.zeros((game.num_rounds, len(space.boards[last])), dtype=np.int64)
        board_of_round[last] = np.arange(len(space.boards[last]))
        for r in range(last, 0, -1):
            board_of_round[r - 1] = space.board_parent[r][board_of_round[r]]
        self._board_of_round = board_of_round
        self._hand_masks = card_masks(space.hands)
        self._board_masks = card_masks(space.boards[last])
        # strengths by (final board, hand), from the showdown tables of the public tree
        strength = np.zeros(space.valid[last].shape, dtype=np.int64)
        np.put_along_axis(strength, public.showdown_order, public.showdown_strength, axis=1)
        self._strength = strength
        self._tree = (
            tree.child.astype(np.int64), tree.legal.copy(), tree.actor.astype(np.int64),
            tree.kind.astype(np.int64),
            tree.round.astype(np.int64), tree.folder.astype(np.int64), tree.spent.astype(np.int64),
            space.node_offset,
        )
        self.regrets = np.zeros((space.num_slots, 3))
        self.strategy_sum = np.zeros((space.num_slots, 3))
        self.iteration = 0

    def run(self, iterations: int) -> None:
        """Run ``iterations`` more iterations (one traversal per player each). The generator is
        seeded from (seed, first iteration) at each call, so a run resumed from a checkpoint
        draws what the uninterrupted run would have drawn."""
        _seed(int(np.random.SeedSequence([self.config.seed, self.iteration]).generate_state(1)[0]))
        _run(self.iteration + 1, iterations, self.config.linear, self._board_of_round,
             self.space.valid[-1], self._hand_masks, self._board_masks, *self._tree,
             self.space.num_hands, self._strength, self.regrets,
             self.strategy_sum)
        self.iteration += iterations

    def state(self) -> dict[str, np.ndarray]:
        """Everything needed to continue the run (for checkpoints)."""
        return {"regrets": self.regrets, "strategy_sum": self.strategy_sum, "iteration": np.array(self.iteration)}

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Continue from :meth:`state`."""
        restore_tables(self, state, ("regrets", "strategy_sum"))

    def average_strategy(self) -> np.ndarray:
        """The average strategy ``[num_infosets, 3]``."""
        return normalise_average(self.space.from_dense(self.strategy_sum), self.space.legal)

