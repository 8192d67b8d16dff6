"""DREAM's learned history-action baseline ``Q_i(s*(h), a)`` (Steinberger et al. 2020, sec. 5.2).

One per traverser ``i``: the traverser's expected payoff after action ``a`` at history ``h``,
given every player's infostate ``s*(h)`` (in poker: both players' hole cards, the visible board
and the betting, which identify ``h``). The network is the appendix C one (:mod:`bot.agents.network`)
with the paper's input change (appendix D): one more card group, the second player's hole cards,
so the inputs are player 0's card slots (hole, board) followed by player 1's hole; the head gives
one value per action.

Training (sec. 5.2, 6.2): expected SARSA (van Seijen et al. 2009) on a circular buffer ``B_i^q``
(200,000 steps in the paper) of the traverser's trajectory steps ``(h, a, h')``: minimise
``(Q(s*(h), a) - y)^2`` with ``y = R_i(h')`` at a terminal ``h'`` and otherwise
``y = sum_a' pi(s(h'), a') Q(s*(h'), a')`` under the current policy of the player acting at
``h'``; fine-tuned from the previous iteration's weights for a number of Adam minibatches (paper:
1,000 of 512, lr 0.001, gradient-norm clip 1). The targets use the network itself (no target
network: the paper names none).
"""

from __future__ import annotations

import numpy as np
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from protocol.betting_tree import DECISION
from training.common.reservoir import Reservoir
from training.deep_cfr.traversal import Deals, StrategyFn, terminal_payoff


class QBaseline:
    """``Q_i`` of one traverser: network, Adam state and the circular step buffer."""

    def __init__(self, encoder: InfosetEncoder, traverser: int, width: int, capacity: int, learning_rate: float,
                 grad_clip: float, device: torch.device) -> None:
        self.encoder = encoder
        self.traverser = traverser
        self.device = device
        self.grad_clip = grad_clip
        game = encoder.game
        hole, board = game.num_hole_cards, game.total_board_cards
        self.net = DeepCFRNetwork((*encoder.group_sizes, hole), encoder.num_bet_slots, width).to(device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=learning_rate, fused=True)
        self.buffer = Reservoir(capacity, {
            "holes": ((2, hole), np.int8), "board": ((board,), np.int8), "winner_sign": ((), np.int8),
            "node": ((), np.int32), "action": ((), np.int8), "next_node": ((), np.int32)}, mode="window")
        self.bets = torch.from_numpy(encoder.bets).to(device)

    # -- inputs and baseline values --------------------------------------------------------------

    def inputs(self, holes: np.ndarray, board: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Card slots of ``s*(h)``: player 0's cards at the node's round, then player 1's hole."""
        rnd = self.encoder.tree.round[nodes].astype(np.int64)
        own = self.encoder.card_slots(holes, board, np.zeros(len(nodes), dtype=np.int64), rnd)
        return np.concatenate([own, holes[:, 1]], axis=1)

    def values(self, holes: np.ndarray, board: np.ndarray, nodes: np.ndarray) -> torch.Tensor:
        cards = torch.from_numpy(self.inputs(holes, board, nodes)).to(self.device)
        return self.net(cards, self.bets[torch.from_numpy(nodes.astype(np.int64)).to(self.device)])

    def baseline(self, deals: Deals):
        """A :data:`training.deep_cfr.outcome_sampling.BaselineFn` over ``deals`` (one network call per level)."""

        @torch.no_grad()
        def baseline(nodes: np.ndarray, rows: np.ndarray) -> np.ndarray:
            # many trajectories share a history (Leduc: ~20k rows, a few thousand histories):
            # run the network once per distinct (node, cards) input
            inputs = np.column_stack([nodes, self.inputs(deals.holes[rows], deals.board[rows], nodes)])
            distinct, inverse = np.unique(inputs, axis=0, return_inverse=True)
            cards = torch.from_numpy(distinct[:, 1:].astype(np.int8)).to(self.device)
            values = self.net(cards, self.bets[torch.from_numpy(distinct[:, 0]).to(self.device)])
            return values.double().cpu().numpy()[inverse.reshape(-1)]

        return baseline

    # -- the buffer and training -----------------------------------------------------------------

    def add(self, transitions: dict[str, np.ndarray], deals: Deals) -> None:
        """Append a batch's trajectory steps (``deal`` indexes ``deals``)."""
        deal = transitions["deal"]
        self.buffer.add({"holes": deals.holes[deal], "board": deals.board[deal], "winner_sign": deals.winner_sign[deal],
                         "node": transitions["node"], "action": transitions["action"],
                         "next_node": transitions["next_node"]}, np.random.default_rng(0))  # a window draws nothing

    def targets(self, batch: dict[str, np.ndarray], strategy: StrategyFn) -> torch.Tensor:
        """Expected-SARSA targets ``y`` of a batch of steps (see the module docstring)."""
        tree = self.encoder.tree
        next_node = batch["next_node"].astype(np.int64)
        target = np.zeros(len(next_node), dtype=np.float64)
        ended = tree.kind[next_node] != DECISION
        if ended.any():
            deals = Deals(batch["holes"][ended], batch["board"][ended], batch["winner_sign"][ended])
            target[ended] = terminal_payoff(self.encoder, next_node[ended], deals, np.arange(int(ended.sum())),
                                            self.traverser)
        live = np.flatnonzero(~ended)
        if len(live):
            holes, board, nodes = batch["holes"][live], batch["board"][live], next_node[live]
            policy = np.zeros((len(live), 3))
            actor = tree.actor[nodes].astype(np.int64)
            for player in (0, 1):
                rows = np.flatnonzero(actor == player)
                if len(rows):
                    cards = self.encoder.card_slots(holes[rows], board[rows], actor[rows], tree.round[nodes[rows]].astype(np.int64))
                    policy[rows] = strategy(player, nodes[rows], cards)
            with torch.no_grad():
                q_next = self.values(holes, board, nodes).double().cpu().numpy()
            target[live] = (policy * np.where(tree.legal[nodes], q_next, 0.0)).sum(axis=1)
        return torch.from_numpy(target.astype(np.float32)).to(self.device)

    def train(self, steps: int, batch_size: int, strategy: StrategyFn, rng: np.random.Generator) -> float:
        """Fine-tune on ``steps`` uniform minibatches of the buffer; the mean loss of the last 10%."""
        if len(self.buffer) == 0:
            return float("nan")
        self.net.train()
        parameters = list(self.net.parameters())
        losses = []
        for step in range(steps):
            batch = self.buffer.sample(batch_size, rng)
            target = self.targets(batch, strategy)
            q = self.values(batch["holes"], batch["board"], batch["node"].astype(np.int64))
            chosen = q.gather(1, torch.from_numpy(batch["action"].astype(np.int64)).to(self.device)[:, None])[:, 0]
            loss = ((chosen - target) ** 2).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, self.grad_clip)
            self.optimizer.step()
            if step >= steps - max(1, steps // 10):
                losses.append(loss.item())
        self.net.eval()
        return float(np.mean(losses))

    # -- checkpoints -----------------------------------------------------------------------------

    def state(self) -> dict:
        """Weights, Adam state and the buffer (rows and write counter) as tensors."""
        rows = {name: torch.from_numpy(array.copy()) for name, array in self.buffer.stored().items()}
        return {"net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(), "rows": rows,
                "seen": self.buffer.seen}

    def load_state(self, state: dict) -> None:
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        for name, array in self.buffer.data.items():
            stored = state["rows"][name].numpy()
            array[: len(stored)] = stored
        self.buffer.seen = int(state["seen"])
        self.buffer.total_weight = float(self.buffer.seen)
        self.net.eval()
