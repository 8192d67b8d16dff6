"""A small suit-canonical policy for flop hold'em: an exact preflop table and a flop network.

The shipped FHP bot (``--agent default --game fhp``) is distilled from the lossless solution
(``scripts/build_fhp_shipped.py``). Its two parts:

* preflop: the solution's strategy per (preflop decision node, suit class of the hole cards),
  ``[8, 169, 3]``: exact, since the solution is suit-invariant;
* flop: an MLP from the *suit-canonical* cards (hole cards and flop relabelled by the suit
  renaming that makes them lexicographically smallest, as 52 + 52 one-hot inputs) to logits for
  every flop decision node at once (``[flop decision nodes, 3]``); the node's row, softmaxed
  over its legal actions, is the strategy. Canonical inputs make the policy suit-invariant by
  construction, so its exact exploitability is measured on the 1,755 canonical flops.

:mod:`bot.registry` registers :func:`load_shipped` as the shipped kind ``flop_net``
(:mod:`bot.shipped`) and :func:`default_flop_policy` for ``pokerbot exploit default``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bot.agents.base import Agent
from bot.flop.best_response import FlopPolicy, flop_game_for
from bot.flop.game import FlopGame
from bot.shipped import ShippedBotError, shipped_manifest
from protocol.betting_tree import BettingTree
from protocol.cards import NUM_SUITS
from protocol.gamedef import Game
from protocol.isomorphism import HandIndexer
from protocol.matchstate import MatchState
from protocol.state import ACTIONS

KIND = "flop_net"
NET_FILE, PREFLOP_FILE = "flop_net.pt", "preflop.npy"
INPUTS = 2 * 52


class FlopNet(nn.Module):
    """MLP: canonical cards ``[n, 104]`` -> logits ``[n, flop decision nodes, 3]``."""

    def __init__(self, num_decisions: int, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        size = INPUTS
        for _ in range(depth):
            layers += [nn.Linear(size, width), nn.ReLU()]
            size = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(size, num_decisions * 3)
        self.num_decisions = num_decisions

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(inputs)).view(-1, self.num_decisions, 3)


def canonical_cards(game: Game, hands: np.ndarray, flops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hands ``[n, 2]`` and flops ``[n, k]`` relabelled by the suit renaming that makes (flop,
    hand), each sorted descending, smallest: the same result for every suit renaming of a row."""
    suits = list(range(NUM_SUITS - game.num_suits, NUM_SUITS))
    best_key = best_hands = best_flops = None
    for perm in itertools.permutations(suits):
        rename = np.arange(52)
        for old, new in zip(suits, perm, strict=True):
            rename[old::NUM_SUITS] += new - old
        h = -np.sort(-rename[hands], axis=1)
        f = -np.sort(-rename[flops], axis=1)
        key = np.zeros(len(hands), dtype=np.int64)
        for column in [*f.T, *h.T]:
            key = key * 52 + column
        if best_key is None:
            best_key, best_hands, best_flops = key, h, f
            continue
        better = key < best_key
        best_key = np.where(better, key, best_key)
        best_hands = np.where(better[:, None], h, best_hands)
        best_flops = np.where(better[:, None], f, best_flops)
    return best_hands, best_flops


def encode(game: Game, hands: np.ndarray, flops: np.ndarray) -> torch.Tensor:
    """Network input of (hand, flop) rows: canonical cards as two 52-card one-hot blocks."""
    return one_hot_cards(*canonical_cards(game, np.asarray(hands, dtype=np.int64), np.asarray(flops, dtype=np.int64)))


def one_hot_cards(hands: np.ndarray, flops: np.ndarray) -> torch.Tensor:
    """Two 52-card one-hot blocks ``[n, 104]`` of (already canonical) hands and flops."""
    inputs = np.zeros((len(hands), INPUTS), dtype=np.float32)
    rows = np.arange(len(hands))[:, None]
    inputs[rows, hands] = 1.0
    inputs[rows, 52 + flops] = 1.0
    return torch.from_numpy(inputs)


def masked_softmax(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Softmax of ``logits [..., D, 3]`` over the legal actions ``legal [D, 3]`` (0 elsewhere)."""
    return torch.softmax(logits.masked_fill(~legal, float("-inf")), dim=-1)


class FlopNetPolicy:
    """The preflop table and the flop network of a game, as the agent and the BR read them."""

    def __init__(self, game: Game, preflop: np.ndarray, net: FlopNet) -> None:
        self.game, self.preflop, self.net = game, preflop, net.eval()
        self.fg: FlopGame = flop_game_for(game, True)
        self.class_indexer = HandIndexer((2,), game.num_ranks, game.num_suits)
        self.legal = torch.from_numpy(self.fg.flop.legal)
        if preflop.shape != (self.fg.preflop.num_decisions, self.class_indexer.size, 3):
            raise ShippedBotError(f"preflop table of shape {preflop.shape} does not fit {game.name}")

    @classmethod
    def load(cls, game: Game, folder: Path, manifest: dict[str, Any]) -> FlopNetPolicy:
        fg = flop_game_for(game, True)
        net = FlopNet(fg.flop.num_decisions, int(manifest["width"]), int(manifest["depth"]))
        state = torch.load(folder / NET_FILE, map_location="cpu", weights_only=True)
        net.load_state_dict({k: v.float() for k, v in state.items()})
        return cls(game, np.load(folder / PREFLOP_FILE).astype(np.float64), net)

    def save(self, folder: Path) -> list[str]:
        """Write the two files (weights as float16); returns their names."""
        folder.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.half() for k, v in self.net.state_dict().items()}, folder / NET_FILE)
        np.save(folder / PREFLOP_FILE, self.preflop.astype(np.float32))
        return [NET_FILE, PREFLOP_FILE]

    @torch.no_grad()
    def flop_probabilities(self, hands: np.ndarray, flops: np.ndarray) -> np.ndarray:
        """Strategies ``[n, flop decision nodes, 3]`` of (hand, flop) rows."""
        return masked_softmax(self.net(encode(self.game, hands, flops)), self.legal).numpy()

    def preflop_table(self) -> np.ndarray:
        """``[preflop decision nodes, H, 3]`` over the FlopGame's hands."""
        return self.preflop[:, self.class_indexer.index_batch(self.fg.hands)]

    def flop_policy(self) -> FlopPolicy:
        """The policy on the canonical flops (exact: the policy is suit-invariant)."""
        fg = self.fg

        def tables(lo: int, hi: int) -> np.ndarray:
            out = np.zeros((hi - lo, fg.flop.num_decisions, fg.num_hands, 3), dtype=np.float32)
            for i, c in enumerate(range(lo, hi)):
                valid = fg.valid[c] > 0
                hands = fg.hands[valid]
                probabilities = self.flop_probabilities(hands, np.broadcast_to(fg.flops[c], (len(hands), fg.flops.shape[1])))
                out[i][:, valid] = probabilities.transpose(1, 0, 2)
            return out

        return FlopPolicy(self.preflop_table(), tables, True)


class FlopNetAgent(Agent):
    """Plays a :class:`FlopNetPolicy`."""

    name = "flop_net"

    def __init__(self, game: Game, policy: FlopNetPolicy) -> None:
        super().__init__(game)
        self.policy = policy
        self.tree: BettingTree = policy.fg.tree
        self.decision_row = {int(n): d for d, n in enumerate(policy.fg.preflop.decision_nodes)}
        self.decision_row |= {int(n): d for d, n in enumerate(policy.fg.flop.decision_nodes)}

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        node = self.tree.node_of.get(view.betting)
        if node is None or node not in self.decision_row:
            raise ValueError(f"{self.name}: no decision at betting {view.betting!r}")
        row = self.decision_row[node]
        hole = np.array([view.own_hole_cards], dtype=np.int64)
        if self.tree.round[node] == 0:
            probabilities = self.policy.preflop[row, self.policy.class_indexer.index_batch(hole)[0]]
        else:
            flop = np.array([view.board_flat[: self.game.board_cards_through(1)]], dtype=np.int64)
            probabilities = self.policy.flop_probabilities(hole, flop)[0, row]
        legal = self.tree.legal[node]
        weights = np.where(legal, probabilities, 0.0)
        weights = weights / weights.sum() if weights.sum() > 0 else legal / legal.sum()
        return {kind: float(w) for kind, w, ok in zip(ACTIONS, weights, legal, strict=True) if ok}


def load_shipped(game: Game, folder: Path, manifest: dict[str, Any]) -> Agent:
    """A shipped bot of kind :data:`KIND`."""
    return FlopNetAgent(game, FlopNetPolicy.load(game, folder, manifest))


def default_flop_policy(game: Game, spec: str) -> tuple[FlopGame, FlopPolicy] | None:
    """``pokerbot exploit default --game fhp``: the shipped bot, when it is a flop network."""
    if spec != "default":
        return None
    manifest = shipped_manifest(game)
    if manifest is None or manifest.get("kind") != KIND:
        return None
    from bot.shipped import shipped_folder

    policy = FlopNetPolicy.load(game, shipped_folder(game), manifest)
    return policy.fg, policy.flop_policy()
