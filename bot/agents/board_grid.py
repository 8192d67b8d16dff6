"""A network's strategy over one whole public board: every betting node asked for, every
private hand, in one batched grid, for the board-sampled head to head
(:mod:`training.abstraction.board_match`), which sums hands and actions out exactly.

The appendix C network's first trunk layer is affine in [card features, bet features]
(:meth:`~bot.agents.network.DeepCFRNetwork.comb1_halves`), so on one board the card branch runs
once per (round, hand), the bet branch once per node, and only the rest of the trunk per
(node, hand) pair: in :mod:`bot.agents.network_kernels`' compiled trunk, :data:`NODE_CHUNK`
nodes at a time so that a block of hands times those nodes stays in cache (HULH's river has
5,670 decision nodes). On HULH a board has 6,378 decision nodes and 1,081 live hands: ~6.9M
pairs, half of them per seat (``benchmarks/bench_hulh_table1.py --grid-speed`` prints the CPU
seconds of one network's grid).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from bot.agents.network_kernels import trunk_strategies

#: Decision nodes per compiled-trunk call (its blocks: :data:`~bot.agents.network_kernels.BLOCK_PAIRS`
#: pairs, 16 hands x 128 nodes). On a width-64 HULH network 32, 128, 512 and 2,048 nodes took
#: 3.23, 2.41, 2.65 and 3.13 CPU-s a board with the previous kernel (--grid-speed --chunks
#: 32,128,512,2048, load 3); 128 and 512 nodes 1.82 and 1.87 with the blocked one.
NODE_CHUNK = 128


def board_card_rows(encoder: InfosetEncoder, hands: np.ndarray, board: np.ndarray, round_index: int) -> torch.Tensor:
    """Card slots ``[len(hands), slots]``: each hand with the board cards dealt by ``round_index``
    (later slots -1), as :meth:`InfosetEncoder.encode_view` lays out a decision's cards."""
    rows = np.full((len(hands), encoder.num_card_slots), -1, dtype=np.int64)
    full = np.concatenate([hands, np.broadcast_to(board, (len(hands), len(board)))], axis=1)
    rows[:, : full.shape[1]] = full
    return torch.from_numpy(np.where(encoder.visible[round_index], rows, -1))


@torch.no_grad()
def network_grid(net: DeepCFRNetwork, kind: str, argmax_fallback: bool, encoder: InfosetEncoder, hands: np.ndarray,
                 board: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """float32 ``[len(nodes), len(hands), 3]``: ``net``'s strategy (``kind`` ``value``: regret
    matching, ``average``: masked softmax) at decision ``nodes`` for every row of ``hands`` on
    ``board`` (its full public cards; each node reads its own round's)."""
    out = np.empty((len(nodes), len(hands), 3), dtype=np.float32)
    buffer = np.empty((NODE_CHUNK, len(hands), 3), dtype=np.float32)
    rounds = encoder.tree.round[nodes]
    for round_index in np.unique(rounds):
        at = np.flatnonzero(rounds == round_index)
        seen = net.cards_seen(board_card_rows(encoder, hands, board, int(round_index)))
        card_part, bet_part = net.comb1_halves(seen, torch.from_numpy(encoder.bets[nodes[at]]))
        legal = torch.from_numpy(encoder.legal[nodes[at]])
        for start in range(0, len(at), NODE_CHUNK):
            chunk = slice(start, start + NODE_CHUNK)
            count = len(at[chunk])
            out[at[chunk]] = trunk_strategies(net, card_part, bet_part[chunk], legal[chunk], kind, argmax_fallback,
                                              buffer[:count])  # fmt: skip
    return out


def seat_grids(nets: Sequence[DeepCFRNetwork | None], kind: str, argmax_fallback: bool, encoder: InfosetEncoder,
               hands: np.ndarray, board: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """:func:`network_grid` with each seat's decision ``nodes`` read from its own network
    (``nets[seat]``; None: uniform over the legal actions): an SD-CFR stack entry's two value
    networks, or NFSP's two average networks."""
    out = np.empty((len(nodes), len(hands), 3), dtype=np.float32)
    actor = encoder.tree.actor[nodes]
    for seat, net in enumerate(nets):
        at = np.flatnonzero(actor == seat)
        if net is None:
            legal = encoder.legal[nodes[at]].astype(np.float32)
            out[at] = (legal / legal.sum(axis=1, keepdims=True))[:, None, :]
        elif len(at):
            out[at] = network_grid(net, kind, argmax_fallback, encoder, hands, board, nodes[at])
    return out
