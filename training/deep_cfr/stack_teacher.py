"""The SD-CFR stack as a teacher: its exact average policy at the infosets of hands played in lockstep.

SD-CFR's policy is the reach-weighted average of its stack (Steinberger 2019),
``sigma_bar(I) = sum_t w_t pi_p^t(I) sigma^t(I) / sum_t w_t pi_p^t(I)``, where ``pi_p^t(I)`` is
entry ``t``'s probability of the player's own earlier actions. Queried one infoset at a time
that means running every entry at every own earlier decision (a 178-entry hold'em stack costs
~1 CPU-s a hand in LBR). Played forward, it is cheap: :class:`StackTeacher` deals a batch of
hands and walks them all a decision at a time, keeping for every hand, seat and entry the own
reach ``w_t pi_p^t`` so far; each decision runs each entry's network once on the batch's current
infosets, reads off the exact average there (the distillation target) and multiplies the
acting seat's reaches by the chosen action's probability under each entry.

The hands are played by the average itself mixed with ``exploration`` of uniform play (both
seats): the targets are exact whatever the behaviour, so exploration only spreads the samples
onto lines the policy rarely takes, which a best responder (and LBR) visits. Code:
:func:`teacher_samples`; the student fit is :mod:`training.deep_cfr.distil`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bot.agents.deep_cfr import DeepCFRBundle
from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, strategy_from_outputs
from protocol.betting_tree import DECISION
from training.deep_cfr.traversal import deal_batch, sample_actions


@dataclass
class TeacherSamples:
    """Infosets and the teacher's exact average strategy at each: card slots ``[n, slots]``
    (int8), betting ``node`` ``[n]`` (int32) and ``target`` ``[n, 3]`` (float32, zero on
    illegal actions, rows sum to 1)."""

    cards: np.ndarray
    node: np.ndarray
    target: np.ndarray

    def __len__(self) -> int:
        return len(self.node)

    @classmethod
    def concatenate(cls, parts: list[TeacherSamples]) -> TeacherSamples:
        return cls(np.concatenate([p.cards for p in parts]), np.concatenate([p.node for p in parts]),
                   np.concatenate([p.target for p in parts]))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"cards": self.cards, "node": self.node, "target": self.target}


class StackTeacher:
    """An ``sd-cfr`` bundle's exact average policy along hands played in lockstep."""

    def __init__(self, bundle: DeepCFRBundle, encoder: InfosetEncoder) -> None:
        if bundle.kind != "sd-cfr":
            raise ValueError(f"{bundle.root}: a {bundle.kind} bundle has no stack to distil")
        self.bundle = bundle
        self.encoder = encoder
        weights = bundle.weights
        self.log_weights = np.log(weights / weights.sum())
        #: Per entry: None (uniform) or its two value networks, all loaded once (a 178-entry
        #: HULH stack at width 64 is ~95 MB).
        self.networks: list[tuple[DeepCFRNetwork, DeepCFRNetwork] | None] = [
            None if entry.get("uniform") else (bundle.network(entry["files"][0]), bundle.network(entry["files"][1]))
            for entry in bundle.stack
        ]
        self.legal = torch.from_numpy(encoder.legal)
        self.bets = torch.from_numpy(encoder.bets)

    @torch.no_grad()
    def entry_strategies(self, cards: np.ndarray, node: np.ndarray, seat: np.ndarray) -> np.ndarray:
        """``[entries, n, 3]`` float64: every stack entry's strategy at each row's infoset (the
        value network of the row's ``seat``, regret matching; uniform entries uniform)."""
        legal = self.legal[node]
        out = np.empty((len(self.networks), len(node), 3))
        uniform = (legal / legal.sum(dim=1, keepdim=True)).double().numpy()
        cards_t = torch.from_numpy(cards.astype(np.int64))
        bets = self.bets[node]
        rows = [torch.from_numpy(np.flatnonzero(seat == p)) for p in (0, 1)]
        # suit-canonical inputs are the same for every entry: computed once per seat
        seen = [self.networks_seen(cards_t[r]) for r in rows]
        for t, nets in enumerate(self.networks):
            if nets is None:
                out[t] = uniform
                continue
            for p, r in enumerate(rows):
                if len(r):
                    net = nets[p]
                    outputs = net._trunk(net.embed(seen[p], seen=True), bets[r])
                    out[t, r.numpy()] = strategy_from_outputs("value", outputs, legal[r],
                                                              self.bundle.argmax_fallback).double().numpy()
        return out

    def networks_seen(self, cards: torch.Tensor) -> torch.Tensor:
        """Card slots as the stack's networks read them (all share one architecture)."""
        first = next((nets[0] for nets in self.networks if nets is not None), None)
        return cards.long() if first is None else first.cards_seen(cards)

    def play(self, hands: int, exploration: float, rng: np.random.Generator) -> TeacherSamples:
        """Deal ``hands`` hands and play them to the end, every decision of both seats a sample."""
        tree, encoder = self.encoder.tree, self.encoder
        deals = deal_batch(encoder, hands, rng)
        node = np.zeros(hands, dtype=np.int64)
        # log own reach per (hand, seat, entry), the stack weights included
        log_reach = np.broadcast_to(self.log_weights, (hands, 2, len(self.log_weights))).copy()
        parts: list[TeacherSamples] = []
        active = np.flatnonzero(tree.kind[node] == DECISION)
        while len(active):
            at = node[active]
            seat = tree.actor[at].astype(np.int64)
            rnd = tree.round[at].astype(np.int64)
            cards = encoder.card_slots(deals.holes[active], deals.board[active], seat, rnd)
            sigma = self.entry_strategies(cards, at, seat)
            reach = log_reach[active, seat]  # [n, entries]
            reach = np.exp(reach - reach.max(axis=1, keepdims=True))
            average = np.einsum("nt,tna->na", reach, sigma) / reach.sum(axis=1)[:, None]
            parts.append(TeacherSamples(cards, at.astype(np.int32), average.astype(np.float32)))
            legal = encoder.legal[at].astype(np.float64)
            behaviour = (1.0 - exploration) * average + exploration * legal / legal.sum(axis=1, keepdims=True)
            action = sample_actions(behaviour, rng)
            with np.errstate(divide="ignore"):  # an entry that never takes the action: reach 0
                updated = log_reach[active, seat] + np.log(sigma[:, np.arange(len(active)), action].T)
            # an explored action no entry takes: the stack's average is undefined below it, so
            # the targets there restart from the stack weights (not the agent's uniform play)
            unreached = np.isneginf(updated).all(axis=1)
            updated[unreached] = self.log_weights
            log_reach[active, seat] = updated
            node[active] = tree.child[at, action]
            active = active[tree.kind[node[active]] == DECISION]
        return TeacherSamples.concatenate(parts)
