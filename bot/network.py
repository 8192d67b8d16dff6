"""The Deep CFR network of Brown et al. 2019, appendix C, for any two-player limit game.

Layout (paper sec. 5.1, fig. 2; appendix C code): per card group (hole, flop, turn, river) the
sum over its cards of rank(13) + suit(4) + card(52) embeddings (-1 = no card, embedded as zero);
a 3-layer card branch, a 2-layer bet branch over (bet occurred, bet size) per betting position,
a 3-layer trunk; every layer is ``ReLU(A x [+ x])``, with skips where the appendix code has
them (bet2, comb2, comb3; the code's card branch has none although the text suggests it); the last features are normalised to
zero mean and unit variance; a linear head gives one output per action (fold, call, raise).
The same class is the value network (outputs = advantages) and the average-strategy network
(outputs = logits), and NFSP reuses it for its Q and policy networks.

Parameter count: ``embeddings 69*w*groups + w*w*(groups + 7) + w*(2*bet_slots + 8 + actions)
+ actions``. With the paper's FHP layout (2 card groups, 6 betting positions per round, 3
actions) width 96 gives 99,555 parameters, +0.6% against the paper's 98,948; no integer width
and no natural choice of groups/bet inputs/actions reproduces 98,948 exactly with the appendix
code's layer shapes, so the paper's run differed in some detail it does not state (see
``tests/test_network.py``).

>>> from protocol.gamedef import load_game
>>> net = DeepCFRNetwork.for_game(load_game("fhp"), width=96, bet_slots=12)
>>> net.num_parameters()
99555
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bot.encoding import InfosetEncoder
from protocol.gamedef import Game

NUM_ACTIONS = 3


class CardEmbedding(nn.Module):
    """Sum over a group's cards of card + rank + suit embeddings; -1 ("no card") adds zero."""

    def __init__(self, width: int, num_suits: int = 4) -> None:
        super().__init__()
        self.num_suits = num_suits
        self.rank = nn.Embedding(13, width)
        self.suit = nn.Embedding(4, width)
        self.card = nn.Embedding(52, width)

    def forward(self, cards: torch.Tensor) -> torch.Tensor:
        valid = cards.ge(0).unsqueeze(-1).to(self.card.weight.dtype)
        x = cards.clamp(min=0)
        embs = self.card(x) + self.rank(x // 4) + self.suit(x % 4)
        return (embs * valid).sum(dim=1)

    @staticmethod
    def counts(cards: torch.Tensor) -> torch.Tensor:
        """``[N, 52 + 13 + 4]`` how often each card, rank and suit occurs among a group's cards."""
        valid = cards.ge(0).to(torch.float32)
        x = cards.clamp(min=0).long()
        counts = torch.zeros(len(cards), 52 + 13 + 4, device=cards.device)
        for column in (x, 52 + x // 4, 65 + x % 4):
            counts.scatter_add_(1, column, valid)
        return counts

    def embed_counts(self, counts: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` from :meth:`counts`: one matrix product, the same sums (and gradients)."""
        return counts @ torch.cat([self.card.weight, self.rank.weight, self.suit.weight])


class DeepCFRNetwork(nn.Module):
    """Appendix C network; ``forward(cards int [N, slots], bets float [N, bet_slots]) -> [N, 3]``."""

    def __init__(self, group_sizes: tuple[int, ...], bet_slots: int, width: int = 64) -> None:
        super().__init__()
        self.group_sizes = tuple(group_sizes)
        self.bet_slots = bet_slots
        self.width = width
        self.card_embeddings = nn.ModuleList(CardEmbedding(width) for _ in group_sizes)
        self.card1 = nn.Linear(width * len(group_sizes), width)
        self.card2 = nn.Linear(width, width)
        self.card3 = nn.Linear(width, width)
        self.bet1 = nn.Linear(bet_slots * 2, width)
        self.bet2 = nn.Linear(width, width)
        self.comb1 = nn.Linear(2 * width, width)
        self.comb2 = nn.Linear(width, width)
        self.comb3 = nn.Linear(width, width)
        self.action_head = nn.Linear(width, NUM_ACTIONS)

    @classmethod
    def for_game(cls, game: Game, width: int = 64, bet_slots: int | None = None) -> DeepCFRNetwork:
        """The network for ``game``'s :class:`~bot.encoding.InfosetEncoder` layout."""
        encoder = InfosetEncoder(game)
        return cls(encoder.group_sizes, bet_slots or encoder.num_bet_slots, width)

    def architecture(self) -> dict:
        """Constructor arguments (stored beside the weights in every bundle/checkpoint)."""
        return {"group_sizes": list(self.group_sizes), "bet_slots": self.bet_slots, "width": self.width}

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, cards: torch.Tensor, bets: torch.Tensor) -> torch.Tensor:
        groups = torch.split(cards.long(), self.group_sizes, dim=1)
        x = torch.cat([emb(g) for emb, g in zip(self.card_embeddings, groups, strict=True)], dim=1)
        return self._trunk(x, bets)

    def input_features(self, cards: torch.Tensor, bets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The inputs in a weight-free form (per-group card/rank/suit counts, bets) for
        :meth:`forward_features`. Training that reuses one batch for many steps (full-batch fits)
        computes it once; each step then embeds cards with one matrix product per group instead
        of three lookups and their scatter-add backward (~14% of a Leduc step)."""
        groups = torch.split(cards.long(), self.group_sizes, dim=1)
        return torch.cat([CardEmbedding.counts(g) for g in groups], dim=1), bets

    def forward_features(self, features: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """:meth:`forward` on :meth:`input_features` (equal outputs and gradients, tested)."""
        counts, bets = features
        width = 52 + 13 + 4
        x = torch.cat([emb.embed_counts(counts[:, i * width : (i + 1) * width])
                       for i, emb in enumerate(self.card_embeddings)], dim=1)
        return self._trunk(x, bets)

    def _trunk(self, x: torch.Tensor, bets: torch.Tensor) -> torch.Tensor:
        """Card branch on embedded cards ``x``, bet branch, trunk and head."""
        x = F.relu(self.card1(x))
        x = F.relu(self.card2(x))  # no skips in the card branch: exactly the appendix C code
        x = F.relu(self.card3(x))

        bet_feats = torch.cat([bets.clamp(0, 1e6), bets.ge(0).to(bets.dtype)], dim=1)
        y = F.relu(self.bet1(bet_feats))
        y = F.relu(self.bet2(y) + y)

        z = torch.cat([x, y], dim=1)
        z = F.relu(self.comb1(z))
        z = F.relu(self.comb2(z) + z)
        z = F.relu(self.comb3(z) + z)
        z = F.layer_norm(z, (self.width,))  # (z - mean) / std, no affine: the paper's normalize
        return self.action_head(z)


def regret_matching(advantages: torch.Tensor, legal: torch.Tensor, argmax_fallback: bool = True) -> torch.Tensor:
    """Strategy from predicted advantages over legal actions (Brown et al. 2019, sec. 3, eq. 3).

    Positive advantages are normalised; where no legal advantage is positive the highest-advantage
    legal action gets probability 1 (the paper's choice, sec. 5.1; ``argmax_fallback=False`` is the
    uniform ablation). Illegal actions always get 0.
    """
    legal = legal.bool()
    positive = torch.where(legal, advantages.clamp(min=0), torch.zeros_like(advantages))
    total = positive.sum(dim=1, keepdim=True)
    if argmax_fallback:
        masked = advantages.masked_fill(~legal, float("-inf"))
        fallback = F.one_hot(masked.argmax(dim=1), advantages.shape[1]).to(advantages.dtype)
    else:
        fallback = legal.to(advantages.dtype) / legal.sum(dim=1, keepdim=True)
    return torch.where(total > 0, positive / total.clamp(min=1e-30), fallback)


def masked_softmax(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Average-strategy network output as probabilities over legal actions."""
    return torch.softmax(logits.masked_fill(~legal.bool(), float("-inf")), dim=1)
