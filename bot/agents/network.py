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
``tests/bot/agents/test_network.py``).

>>> from protocol.gamedef import load_game
>>> net = DeepCFRNetwork.for_game(load_game("fhp"), width=96, bet_slots=12)
>>> net.num_parameters()
99555
"""

from __future__ import annotations

import itertools

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit
from torch import nn

from bot.agents.encoding import InfosetEncoder
from protocol.cards import NUM_SUITS
from protocol.gamedef import Game

NUM_ACTIONS = 3
#: Card rows per block of :meth:`DeepCFRNetwork.comb1_halves` (1,024-16,384 measured within 10%).
CARD_BLOCK = 4096


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

    def card_table(self) -> torch.Tensor:
        """``[53, w]``: each card's card + rank + suit embedding, row 52 zero ("no card"), so a
        group's embedding is the sum of its cards' rows: :meth:`forward` as one gather, for
        evaluations over millions of card rows."""
        ids = torch.arange(52, device=self.card.weight.device)
        table = self.card.weight + self.rank.weight[ids // 4] + self.suit.weight[ids % 4]
        return torch.cat([table, table.new_zeros(1, table.shape[1])])

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

    def __init__(self, group_sizes: tuple[int, ...], bet_slots: int, width: int = 64, canonical_suits: bool = False) -> None:
        super().__init__()
        self.group_sizes = tuple(group_sizes)
        self.bet_slots = bet_slots
        self.width = width
        #: Read cards through :func:`canonical_suit_cards` (suit-invariant policy; off by default,
        #: and absent from the architecture of networks trained before the option existed).
        self.canonical_suits = canonical_suits
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
    def for_game(cls, game: Game, width: int = 64, bet_slots: int | None = None,
                 canonical_suits: bool = False) -> DeepCFRNetwork:
        """The network for ``game``'s :class:`~bot.agents.encoding.InfosetEncoder` layout."""
        encoder = InfosetEncoder(game)
        return cls(encoder.group_sizes, bet_slots or encoder.num_bet_slots, width, canonical_suits)

    def architecture(self) -> dict:
        """Constructor arguments (stored beside the weights in every bundle/checkpoint);
        ``canonical_suits`` only when on, so older architectures read the same."""
        arch: dict = {"group_sizes": list(self.group_sizes), "bet_slots": self.bet_slots, "width": self.width}
        return arch | ({"canonical_suits": True} if self.canonical_suits else {})

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, cards: torch.Tensor, bets: torch.Tensor) -> torch.Tensor:
        return self._trunk(self.embed(cards), bets)

    def cards_seen(self, cards: torch.Tensor) -> torch.Tensor:
        """The card slots as the network reads them (suit-canonical with ``canonical_suits``)."""
        return canonical_suit_cards(cards, self.group_sizes) if self.canonical_suits else cards.long()

    def embed(self, cards: torch.Tensor, seen: bool = False) -> torch.Tensor:
        """Card slots ``[N, slots]`` -> the card groups' embeddings side by side ``[N, groups * w]``
        (``seen``: the cards are :meth:`cards_seen`'s already)."""
        groups = torch.split(cards.long() if seen else self.cards_seen(cards), self.group_sizes, dim=1)
        return torch.cat([emb(g) for emb, g in zip(self.card_embeddings, groups, strict=True)], dim=1)

    def input_features(self, cards: torch.Tensor, bets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The inputs in a weight-free form (per-group card/rank/suit counts, bets) for
        :meth:`forward_features`. Training that reuses one batch for many steps (full-batch fits)
        computes it once; each step then embeds cards with one matrix product per group instead
        of three lookups and their scatter-add backward (~14% of a Leduc step)."""
        groups = torch.split(self.cards_seen(cards), self.group_sizes, dim=1)
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
        z = torch.cat([self.card_features(x), self.bet_features(bets)], dim=1)
        return self.head_from(self.comb1(z))

    def card_features(self, x: torch.Tensor) -> torch.Tensor:
        """The card branch on embedded cards ``x`` (depends on the cards only)."""
        x = F.relu(self.card1(x))
        x = F.relu(self.card2(x))  # no skips in the card branch: exactly the appendix C code
        return F.relu(self.card3(x))

    def bet_features(self, bets: torch.Tensor) -> torch.Tensor:
        """The bet branch (depends on the betting node only)."""
        bet_feats = torch.cat([bets.clamp(0, 1e6), bets.ge(0).to(bets.dtype)], dim=1)
        y = F.relu(self.bet1(bet_feats))
        return F.relu(self.bet2(y) + y)

    def comb1_halves(self, seen: torch.Tensor, bets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The first trunk layer (``comb1``, affine in [card features, bet features]) split in
        its card half per card row ``[rows, w]`` (``seen``: :meth:`cards_seen`'s rows) and its bet
        half plus bias per betting node ``[nodes, w]``: a grid of (node, card row) inputs adds one
        of each and runs only :meth:`head_from` per pair (:mod:`bot.flop.network_policies`,
        :mod:`bot.agents.board_grid`, :mod:`bot.agents.range_grid`)."""
        return self.card_half(seen), self.bet_half(bets)

    @torch.no_grad()
    def card_half(self, seen: torch.Tensor) -> torch.Tensor:
        """:meth:`comb1_halves`' card half ``[rows, w]`` alone."""
        width, weight = self.width, self.comb1.weight
        seen = seen.long().where(seen >= 0, 52)  # -1 -> the zero row
        tables = [emb.card_table() for emb in self.card_embeddings]
        card_part = weight.new_empty((len(seen), width))
        # in blocks of CARD_BLOCK rows, whose intermediates stay in cache: over a whole FHP chunk
        # of flops (~200k rows) the same layers took 3x the CPU (1.6 against 0.55 us a row)
        for lo in range(0, len(seen), CARD_BLOCK):
            groups = torch.split(seen[lo : lo + CARD_BLOCK], self.group_sizes, dim=1)
            # a group's embedding is the sum of its cards' table rows: one embedding_bag (4-9x
            # less CPU than gathering [rows, cards, w] and summing, equal sums) per group
            embedded = torch.cat([F.embedding_bag(g, table, mode="sum") for table, g in zip(tables, groups, strict=True)],
                                 dim=1)
            card_part[lo : lo + CARD_BLOCK] = self.card_features(embedded) @ weight[:, :width].T
        return card_part

    @torch.no_grad()
    def bet_half(self, bets: torch.Tensor) -> torch.Tensor:
        """:meth:`comb1_halves`' bet half plus bias ``[nodes, w]`` alone."""
        return self.bet_features(bets) @ self.comb1.weight[:, self.width :].T + self.comb1.bias

    def head_from(self, combined: torch.Tensor) -> torch.Tensor:
        """The trunk after ``comb1``'s affine map (its input, pre-activation) to the outputs.
        ``comb1`` is linear in ``[card features, bet features]``, so a caller that evaluates a
        grid of (card rows x betting nodes) may add the two halves' products computed once
        each (:mod:`bot.flop.network_policies`)."""
        z = F.relu(combined)
        z = F.relu(self.comb2(z) + z)
        z = F.relu(self.comb3(z) + z)
        z = F.layer_norm(z, (self.width,))  # (z - mean) / std, no affine: the paper's normalize
        return self.action_head(z)


#: Every renaming of the 4 suits, ``[24, 4]``.
SUIT_PERMUTATIONS = np.array(list(itertools.permutations(range(NUM_SUITS))), dtype=np.int64)


def canonical_suit_cards(cards: torch.Tensor, group_sizes: tuple[int, ...]) -> torch.Tensor:
    """Card slots ``[N, slots]`` (-1 = no card) relabelled by the suit renaming that makes them
    smallest: each group sorted descending, compared board groups first, then the hole cards.

    The result is the minimum over the row's whole orbit under suit renaming, so every suit
    renaming of a row gives the same result: a network reading it is suit-invariant by
    construction (suit isomorphism, as in Gilpin, Sandholm & Sorensen 2007's lossless
    abstraction), and its policy is evaluated exactly on the canonical flops only
    (:mod:`bot.flop.game`). The card embedding sums over a group's cards, so sorting within a
    group changes nothing else. All 4! renamings are tried (a deck with fewer suits renames
    within a subgroup of them, whose orbits the minimum over all of them also respects), in
    one compiled pass over the rows (an exact FHP evaluation canonicalises 2.3M rows per
    network; as 24 rounds of torch operators that took ~15 CPU-s).
    """
    rows = np.ascontiguousarray(cards.detach().cpu().numpy(), dtype=np.int64)
    canonical = canonical_rows(rows, np.asarray(group_sizes, dtype=np.int64), SUIT_PERMUTATIONS)
    return torch.from_numpy(canonical).to(cards.device)


@njit(cache=True)
def canonical_rows(cards, group_sizes, permutations):  # pragma: no cover - numba
    """:func:`canonical_suit_cards` of int64 ``cards`` (compiled; callable from other kernels).

    The boards compare first, so only the renamings that make a row's boards smallest can make
    the row smallest: those are found once per run of rows with the same boards (an FHP flop's
    hands, a hold'em board's: 1-6 of the 24 renamings) and only they are tried on the hole
    cards. Rows are addressed by index (a view or temporary array per row costs more than the
    work)."""
    slots, hole = cards.shape[1], group_sizes[0]
    bounds = np.zeros(len(group_sizes) + 1, np.int64)
    bounds[1:] = np.cumsum(group_sizes)
    out = np.empty_like(cards)
    candidate = np.empty((2, slots), np.int64)  # row 0: a renamed row; row 1: the smallest boards
    renamings = np.empty(permutations.shape[0], np.int64)  # those that give the smallest boards
    count = 0
    for i in range(cards.shape[0]):
        if i == 0 or _compare(cards, i, cards, i - 1, hole, slots) != 0:
            count = 0
            for p in range(permutations.shape[0]):
                _renamed(cards, i, permutations[p], bounds, 1, len(group_sizes), candidate)
                order = _compare(candidate, 0, candidate, 1, hole, slots) if count else -1
                if order <= 0:
                    count = 0 if order < 0 else count
                    renamings[count] = p
                    count += 1
                    for k in range(hole, slots):
                        candidate[1, k] = candidate[0, k]
        for q in range(count):
            _renamed(cards, i, permutations[renamings[q]], bounds, 0, 1, candidate)
            if q == 0 or _compare(candidate, 0, out, i, 0, hole) < 0:
                for k in range(hole):
                    out[i, k] = candidate[0, k]
        for k in range(hole, slots):
            out[i, k] = candidate[1, k]
    return out


@njit(cache=True)
def _renamed(cards, i, permutation, bounds, first, last, candidate):  # pragma: no cover - numba
    """``candidate[0]``'s card groups ``first..last-1``: row ``i``'s with suits renamed by
    ``permutation`` (-1 stays -1), each group sorted descending."""
    for g in range(first, last):
        for k in range(bounds[g], bounds[g + 1]):
            card = cards[i, k]
            candidate[0, k] = -1 if card < 0 else card - card % NUM_SUITS + permutation[card % NUM_SUITS]
        for k in range(bounds[g] + 1, bounds[g + 1]):  # insertion sort, descending
            value, j = candidate[0, k], k
            while j > bounds[g] and candidate[0, j - 1] < value:
                candidate[0, j] = candidate[0, j - 1]
                j -= 1
            candidate[0, j] = value


@njit(cache=True)
def _compare(a, i, b, j, lo, hi):  # pragma: no cover - numba
    """-1, 0 or 1 as slots ``lo..hi-1`` of row ``i`` of ``a`` are lexicographically smaller
    than, equal to or larger than those of row ``j`` of ``b``."""
    for k in range(lo, hi):
        if a[i, k] != b[j, k]:
            return -1 if a[i, k] < b[j, k] else 1
    return 0


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


def strategy_from_outputs(kind: str, outputs: torch.Tensor, legal: torch.Tensor, argmax_fallback: bool) -> torch.Tensor:
    """Value-network advantages -> regret matching; average-network logits -> masked softmax."""
    if kind == "value":
        return regret_matching(outputs, legal, argmax_fallback)
    return masked_softmax(outputs, legal)
