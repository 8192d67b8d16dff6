"""LBR's exact expected value on small games: every deal, every agent action, no sampling.

For each LBR hand (all equally likely) the walk goes down the betting with the agent's
*unnormalised* range: the chance weight of each agent hand times the agent's probabilities of
its actions so far. That vector is the Bayesian range LBR reasons with (normalised), and summed
against terminal payoffs it is the expectation over the agent's hands, board cards and actions:

* agent decision: every action, its children's ranges multiplied by the action's probability;
* LBR decision: only the action :class:`bot.evaluation.lbr.Responder` chooses (the same code as a match);
* new board cards: every combination of the unseen cards; given the agent's hand each of the
  ``C(unseen - hole, new)`` combinations missing it is equally likely;
* terminal: fold payoffs times the range's mass, showdowns hand by hand.

Equities are always enumerated here, so on games where the sampled runner enumerates too
(Leduc, small decks) the two play the same strategy and the sampled mean must agree with this
value within its interval. Cost: hands x the public tree below LBR's choices; fine for Leduc and
8-card decks, not for FHP or HULH.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from math import comb

import numpy as np

from bot.agents.base import Agent
from bot.evaluation.lbr import EquityMemo, LBRConfig, Responder
from protocol.evaluator import hand_strength_batch
from protocol.gamedef import Game
from protocol.state import State


def exact_lbr_value(game: Game, agent: Agent, responder: int, config: LBRConfig | None = None) -> float:
    """LBR's expected net chips per hand in position ``responder`` against ``agent``."""
    lbr = Responder(game, agent, replace(config or LBRConfig(), max_enumeration=2**62))
    hands = lbr.hands
    total = 0.0
    for hole in hands.cards:
        hole_cards = tuple(int(c) for c in hole)
        reach = hands.disjoint(hole_cards).astype(np.float64)
        reach /= reach.sum()
        walk = _Walk(lbr, responder, hole_cards)
        total += walk.value(State(game), (), reach)
    return total / len(hands)


class _Walk:
    """The expectation for one LBR hand."""

    def __init__(self, lbr: Responder, responder: int, hole: tuple[int, ...]) -> None:
        self.lbr, self.responder, self.hole = lbr, responder, hole
        self.game = lbr.game
        # the generator goes unused: enumeration is forced
        self.equities = EquityMemo(lbr, hole, np.random.default_rng(0), restrict=False)

    def value(self, state: State, board: tuple[int, ...], reach: np.ndarray) -> float:
        game, lbr = self.game, self.lbr
        if reach.sum() <= 0:
            return 0.0
        if not state.is_finished and len(board) < game.board_cards_through(state.round):
            return self.deal(state, board, reach)
        if state.is_finished:
            return self.terminal(state, board, reach)
        if state.actor == self.responder:
            choice = lbr.decide(state, reach, board, 0, self.equities)
            child = state.copy()
            child.apply(choice.action)
            return self.value(child, board, reach)
        support, probabilities = lbr.agent_probabilities(state, reach, board, 0)
        total = 0.0
        for action, kind in enumerate(("f", "c", "r")):
            if not probabilities[:, action].any():
                continue
            child = state.copy()
            child.apply(kind)
            child_reach = np.zeros_like(reach)
            child_reach[support] = reach[support] * probabilities[:, action]
            total += self.value(child, board, child_reach)
        return total

    def deal(self, state: State, board: tuple[int, ...], reach: np.ndarray) -> float:
        game, hands = self.game, self.lbr.hands
        new = game.board_cards_through(state.round) - len(board)
        unseen = [c for c in game.deck if c not in self.hole + board]
        ways = comb(len(unseen) - game.num_hole_cards, new)
        total = 0.0
        for cards in itertools.combinations(unseen, new):
            total += self.value(state, board + cards, reach * hands.disjoint(cards) / ways)
        return total

    def terminal(self, state: State, board: tuple[int, ...], reach: np.ndarray) -> float:
        me, other = self.responder, 1 - self.responder
        if not state.is_showdown:
            won = -state.spent[me] if state.folded[me] else state.spent[other]
            return float(won * reach.sum())
        hands = self.lbr.hands
        rows = np.flatnonzero(reach > 0)
        mine = hand_strength_batch(np.array([self.hole + board]))[0]
        cards = np.concatenate([hands.cards[rows], np.broadcast_to(np.array(board), (len(rows), len(board)))], axis=1)
        theirs = hand_strength_batch(cards)
        stake = state.spent[me]
        return float(stake * (reach[rows] * np.sign(mine - theirs)).sum())
