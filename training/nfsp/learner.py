"""Neural Fictitious Self-Play (Heinrich & Silver 2016, "Deep Reinforcement Learning from
Self-Play in Imperfect-Information Games", algorithm 1) for two-player limit games.

Each player has two networks with the Deep CFR appendix C architecture (Brown et al. 2019,
footnote 4: NFSP run "with the same model architecture as we use for Deep CFR"):

* a **best-response Q network** trained by DQN (Mnih et al. 2015) on a circular replay memory
  M_RL of its own transitions, with a target network refitted every ``target_update_every``
  updates, double-DQN action selection (van Hasselt et al. 2016, eq. 4) and epsilon-greedy
  exploration decaying as ``eps_start / sqrt(1 + steps / eps_decay_steps)`` (the NFSP paper decays
  exploration to zero "proportionally to the inverse square root of the number of iterations");
* an **average-policy network** Pi trained by supervised learning (cross-entropy) on a reservoir
  memory M_SL of the player's own best-response actions: Pi approximates the time average of
  the best responses, which is what fictitious play converges with (paper sec. 3-4).

At the start of every hand each player independently follows its epsilon-greedy best response
with probability ``eta`` (the anticipatory parameter, optionally annealed: ``eta_final``) and Pi
otherwise, for the whole hand (algorithm 1); only best-response actions enter M_SL. The policy evaluated and played is
always Pi.

Vectorised self-play: ``num_envs`` hands advance together on the compiled betting tree
(:class:`~training.nfsp.vector_env.VectorEnv`); one step asks each (player, policy) group its action
with one network call for the whole group. Transitions are closed when the same player acts
again in that hand (reward 0) or the hand ends (reward = net chips in big blinds, done). The
learning rhythm keeps the paper's ratio: ``updates_per_learn`` Q updates and
``sl_updates_per_learn`` Pi updates after every ``learn_every`` new transitions of a player.
Rewards are in big blinds so one set of learning rates fits Kuhn to HULH.

This module is the learner; its settings are :mod:`training.nfsp.config`, its loss and schedule
functions :mod:`training.nfsp.steps`, the run loop :mod:`training.nfsp.trainer` and the small-game
diagnostics :mod:`training.nfsp.diagnostics`. What remains is the learner's one
state (self-play hands in progress, both players' networks and memories) and the methods that
step, learn and checkpoint it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from threadpoolctl import ThreadpoolController

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from bot.agents.nfsp import NFSPPolicy
from bot.errors import CorruptFileError
from protocol.gamedef import load_game
from training.common.fused_network import Features, FusedNetwork
from training.contract.entry import resolve_device, worker_threads
from training.contract.rundir import RunDir, load_torch, save_torch
from training.nfsp.config import NFSPConfig
from training.nfsp.counts import InputCounts, ReplayCounts, ReplayGroups
from training.nfsp.steps import (
    anticipatory,
    apply_update,
    clip_norm,
    dqn_targets,
    epsilon,
    exact_q_loss,
    pair_targets,
    q_learning_rate,
    replay_memory,
    sample_rows,
    supervised_loss,
    supervised_loss_gradient,
    supervised_memory,
)
from training.nfsp.vector_env import VectorEnv

#: Format number stored in checkpoints.
FORMAT = 1


class PlayerLearner:
    """One player's networks, optimizers and memories."""

    def __init__(self, config: NFSPConfig, encoder: InfosetEncoder, device: torch.device) -> None:
        def network() -> DeepCFRNetwork:
            return DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, config.width).to(device)

        self.q, self.q_target, self.pi = network(), network(), network()
        self.q_target.load_state_dict(self.q.state_dict())
        self.q_target.requires_grad_(False)
        optimizer = torch.optim.SGD if config.optimizer == "sgd" else torch.optim.Adam
        self.q_optimizer = optimizer(self.q.parameters(), lr=config.rl_lr)
        self.pi_optimizer = optimizer(self.pi.parameters(), lr=config.sl_lr)
        self.replay = replay_memory(config.rl_capacity, encoder, keyed=config.rl_full_batch)
        #: Input keys and per-key totals of M_RL's rows (``rl_full_batch`` only).
        self.keys = ReplayCounts(encoder) if config.rl_full_batch else None
        self.replay.listener = self.keys
        self.supervised = supervised_memory(config.sl_capacity, encoder, counted=config.sl_full_batch)
        #: Action counts per distinct input of M_SL (``sl_full_batch`` only).
        self.counts = InputCounts(encoder) if config.sl_full_batch else None
        self.supervised.listener = self.counts
        #: Compiled twins of q and pi sharing their weights (``fused`` only).
        self.fused_q = FusedNetwork.tied_to(self.q) if config.fused and config.rl_full_batch else None
        self.fused_pi = FusedNetwork.tied_to(self.pi) if config.fused and config.sl_full_batch else None
        self.q_updates = 0
        self.pi_updates = 0

    def modules(self) -> dict[str, torch.nn.Module | torch.optim.Optimizer]:
        return {"q": self.q, "q_target": self.q_target, "pi": self.pi,
                "q_optimizer": self.q_optimizer, "pi_optimizer": self.pi_optimizer}


class NFSP:
    """The NFSP learner: self-play state, both players' learners and the counters."""

    def __init__(self, config: NFSPConfig) -> None:
        self.config = config
        self.game = load_game(config.game)
        self.device = torch.device(resolve_device(config.device))
        if self.device.type == "cpu":
            torch.set_num_threads(worker_threads(config.threads))
        torch.manual_seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.env = VectorEnv(self.game, config.num_envs)
        self.encoder = self.env.encoder
        self._bets = torch.from_numpy(self.encoder.bets).to(self.device)
        self._legal = torch.from_numpy(self.encoder.legal).to(self.device)
        self._big_blind = float(self.game.big_blind)
        self.players = [PlayerLearner(config, self.encoder, self.device) for _ in range(2)]
        #: BLAS thread control for the compiled steps (``fused``), created once: making one per
        #: step rescans the process's loaded libraries. Their BLAS library loads on the first
        #: kernel call, so one warm-up forward runs before.
        self._blas: ThreadpoolController | None = None
        if config.fused:
            fused = self.players[0].fused_q or self.players[0].fused_pi
            fused.forward(self._features(np.zeros(1, dtype=np.int64), np.full((1, self.encoder.num_card_slots), -1)))
            self._blas = ThreadpoolController()
        #: The average policy (what is evaluated, saved and played), sharing the live Pi networks.
        self.policy = NFSPPolicy(self.game, [p.pi for p in self.players], self.encoder)
        n, slots = config.num_envs, self.encoder.num_card_slots
        # Per hand and player: the open transition (state, action) waiting for its successor.
        self.pending = np.zeros((n, 2), dtype=bool)
        self.pending_node = np.zeros((n, 2), dtype=np.int32)
        self.pending_cards = np.zeros((n, 2, slots), dtype=np.int8)
        self.pending_action = np.zeros((n, 2), dtype=np.int8)
        #: Per hand and player: following the best response this hand (else the average policy).
        self.use_best_response = np.zeros((n, 2), dtype=bool)
        self.since_learn = np.zeros(2, dtype=np.int64)
        self.step_count = 0
        self.hands = 0
        #: Seconds spent in self-play and learning (evaluation and checkpoints excluded), all sessions.
        self.train_seconds = 0.0
        self.transitions = np.zeros(2, dtype=np.int64)
        #: Rows in each player's latest SL step (distinct inputs with ``sl_full_batch``).
        self.sl_rows = [0, 0]
        self.last_losses = {"q_loss_0": float("nan"), "q_loss_1": float("nan"),
                            "pi_loss_0": float("nan"), "pi_loss_1": float("nan")}
        self._start_hands(np.arange(n))

    # -- networks on batches of (node, card slots) -----------------------------------------------
    def forward(self, network: torch.nn.Module, nodes: np.ndarray, cards: np.ndarray) -> torch.Tensor:
        node_index = torch.from_numpy(np.asarray(nodes, dtype=np.int64)).to(self.device)
        card_tensor = torch.from_numpy(np.asarray(cards)).to(self.device)
        return network(card_tensor, self._bets[node_index])

    @torch.inference_mode()
    def best_response_actions(self, player: int, nodes: np.ndarray, cards: np.ndarray, eps: float) -> np.ndarray:
        """Epsilon-greedy over the legal actions of the Q network's values."""
        q = self.forward(self.players[player].q, nodes, cards).cpu().numpy()
        legal = self.encoder.legal[nodes]
        greedy = np.where(legal, q, -np.inf).argmax(axis=1)
        explore = self.rng.random(len(nodes)) < eps
        return np.where(explore, sample_rows(legal / legal.sum(axis=1, keepdims=True), self.rng), greedy)

    # -- self-play -------------------------------------------------------------------------------
    def _start_hands(self, index: np.ndarray) -> None:
        self.env.deal(index, self.rng)
        self.use_best_response[index] = self.rng.random((len(index), 2)) < anticipatory(self.config, self.step_count)

    def _close(self, player: int, index: np.ndarray, reward: np.ndarray, done: bool,
               next_node: np.ndarray, next_cards: np.ndarray) -> None:
        """Store the open transitions of ``player`` in hands ``index`` into M_RL (with
        ``rl_vs_average``, those of hands where the other seat follows Pi)."""
        if len(index) == 0:
            return
        self.pending[index, player] = False
        self.transitions[player] += len(index)
        self.since_learn[player] += len(index)
        if self.config.rl_vs_average:
            keep = ~self.use_best_response[index, 1 - player]
            index, reward, next_node, next_cards = index[keep], reward[keep], next_node[keep], next_cards[keep]
        rows = {
            "node": self.pending_node[index, player], "cards": self.pending_cards[index, player],
            "action": self.pending_action[index, player], "reward": reward.astype(np.float32),
            "done": np.full(len(index), done), "next_node": next_node.astype(np.int32), "next_cards": next_cards,
        }
        keys = self.players[player].keys
        if keys is not None:
            rows["count_key"] = keys.row_keys(rows["node"], rows["cards"], rows["action"])
            rows["next_key"] = keys.keys(next_node, next_cards).astype(np.int32)
        self.players[player].replay.add(rows, self.rng)

    def step(self) -> None:
        """One action in every hand, finished hands scored and redealt, then any learning due."""
        env, eps = self.env, epsilon(self.config, self.step_count)
        everyone = np.arange(env.num_envs)
        actor = env.actor.astype(np.int64)
        nodes = env.node.astype(np.int32)
        cards = env.observation(everyone, actor)
        actions = np.zeros(env.num_envs, dtype=np.int64)
        for player in range(2):
            rows = np.flatnonzero(actor == player)
            waiting = rows[self.pending[rows, player]]
            self._close(player, waiting, np.zeros(len(waiting)), False, nodes[waiting], cards[waiting])
            br = rows[self.use_best_response[rows, player]]
            avg = rows[~self.use_best_response[rows, player]]
            if len(br):
                actions[br] = self.best_response_actions(player, nodes[br], cards[br], eps)
                self._remember(player, {"node": nodes[br], "cards": cards[br], "action": actions[br].astype(np.int8)})
            if len(avg):
                actions[avg] = sample_rows(self.policy.probabilities(player, nodes[avg], cards[avg]), self.rng)
            self.pending[rows, player] = True
            self.pending_node[rows, player] = nodes[rows]
            self.pending_cards[rows, player] = cards[rows]
            self.pending_action[rows, player] = actions[rows]
        env.step(actions)

        finished = np.flatnonzero(env.done)
        if len(finished):
            payoffs = env.payoffs(finished) / self._big_blind
            no_cards = np.full((len(finished), self.encoder.num_card_slots), -1, dtype=np.int8)
            for player in range(2):
                open_ = self.pending[finished, player]
                self._close(player, finished[open_], payoffs[open_, player], True,
                            env.node[finished[open_]], no_cards[open_])
            self.hands += len(finished)
            self._start_hands(finished)

        for player in range(2):
            while self.since_learn[player] >= self.config.learn_every:
                self.since_learn[player] -= self.config.learn_every
                groups = self._replay_groups(player)
                if self.config.rl_lr_decay_steps:
                    for group in self.players[player].q_optimizer.param_groups:
                        group["lr"] = q_learning_rate(self.config, self.step_count)
                if groups is not None and self.players[player].fused_q is not None:
                    self._learn_q_fused(player, groups)
                else:
                    for _ in range(self.config.updates_per_learn):
                        self._learn_q(player, groups)
                for _ in range(self.config.sl_updates_per_learn):
                    self._learn_pi(player)
        self.step_count += 1

    def _remember(self, player: int, rows: dict[str, np.ndarray]) -> None:
        """Add best-response decisions to M_SL (with their count keys under ``sl_full_batch``)."""
        learner = self.players[player]
        if learner.counts is not None:
            rows["count_key"] = learner.counts.row_keys(rows["node"], rows["cards"], rows["action"])
        weight = float(self.step_count + 1) if self.config.sl_averaging == "linear" else 1.0
        learner.supervised.add(rows, self.rng, weight=weight)

    # -- learning --------------------------------------------------------------------------------
    def _replay_groups(self, player: int) -> ReplayGroups | None:
        """M_RL grouped for the exact Q step (``rl_full_batch``; the memory does not change
        during a learning round, so its Q updates share one grouping)."""
        learner = self.players[player]
        if learner.keys is None or len(learner.replay) < self.config.batch_size:
            return None
        return learner.keys.groups(len(learner.replay))

    def _learn_q(self, player: int, groups: ReplayGroups | None = None) -> None:
        """One DQN step on M_RL, exact over the whole memory (``groups``) or on a minibatch
        (and the target refit when due)."""
        learner, config = self.players[player], self.config
        if len(learner.replay) >= config.batch_size:
            if groups is not None:
                loss = self._exact_q_loss(learner, groups)
            else:
                loss = self._q_loss(learner, learner.replay.sample(config.batch_size, self.rng))
            apply_update(learner.q_optimizer, learner.q, loss, config.grad_clip)
            self._after_q_update(player, float(loss.detach()))

    def _after_q_update(self, player: int, loss: float) -> bool:
        """Count a Q update, refit the target network when due (True then), record the loss."""
        learner = self.players[player]
        learner.q_updates += 1
        self.last_losses[f"q_loss_{player}"] = loss
        if learner.q_updates % self.config.target_update_every:
            return False
        learner.q_target.load_state_dict(learner.q.state_dict())
        return True

    def _features(self, nodes: np.ndarray, cards: np.ndarray) -> Features:
        return Features.build(cards, self.encoder.bets[nodes], self.encoder.group_sizes)

    def _learn_q_fused(self, player: int, groups: ReplayGroups) -> None:
        """The round's ``updates_per_learn`` exact DQN steps in the compiled kernels: one forward
        over M_RL's distinct states and next states together (the next states' online values pick
        the double-DQN action; their rows get no gradient), the gradient of :func:`exact_q_loss`
        w.r.t. Q(s, a), backward, clip, SGD. Same steps as :meth:`_learn_q` with ``groups``."""
        learner, config = self.players[player], self.config
        nodes, cards = learner.keys.inputs(groups.state_keys)
        next_nodes, next_cards = learner.keys.inputs(groups.next_keys)
        features = self._features(np.concatenate([nodes, next_nodes]), np.concatenate([cards, next_cards]))
        next_legal = self._legal[torch.from_numpy(next_nodes)]
        states, pair_state, pair_action = len(nodes), groups.pair_state, groups.pair_action
        weight = (2.0 * groups.pair_count / groups.rows).astype(np.float32)
        lr = learner.q_optimizer.param_groups[0]["lr"]
        target_q = self._target_values(learner, next_nodes, next_cards)
        d_out = np.zeros((len(features), 3), dtype=np.float32)
        with self._blas.limit(limits=config.threads, user_api="blas"):
            for _ in range(config.updates_per_learn):
                out = learner.fused_q.forward(features)
                mean_y = pair_targets(torch.from_numpy(out[states:]), target_q, next_legal, groups,
                                      config.double_dqn).numpy()
                error = out[pair_state, pair_action] - mean_y
                d_out[pair_state, pair_action] = weight * error
                learner.fused_q.backward(d_out)
                learner.fused_q.sgd_step(lr, clip_norm(config))
                if self._after_q_update(player, float(0.5 * (weight * error * error).sum())):
                    target_q = self._target_values(learner, next_nodes, next_cards)

    @torch.inference_mode()
    def _target_values(self, learner: PlayerLearner, nodes: np.ndarray, cards: np.ndarray) -> torch.Tensor:
        return self.forward(learner.q_target, nodes, cards)

    def _learn_pi(self, player: int) -> None:
        """One supervised step of Pi on M_SL (exact full batch or a minibatch)."""
        learner, config = self.players[player], self.config
        if len(learner.supervised) >= config.batch_size and learner.fused_pi is not None:
            self._learn_pi_fused(player)
        elif len(learner.supervised) >= config.batch_size:
            nodes, cards, counts = self._supervised_batch(learner)
            loss = supervised_loss(self.forward(learner.pi, nodes, cards), self._legal[torch.from_numpy(nodes).to(self.device)],
                                   torch.from_numpy(counts).to(self.device))
            apply_update(learner.pi_optimizer, learner.pi, loss, config.grad_clip)
            learner.pi_updates += 1
            self.last_losses[f"pi_loss_{player}"] = float(loss.detach())
            self.sl_rows[player] = len(nodes)

    def _learn_pi_fused(self, player: int) -> None:
        """:meth:`_learn_pi`'s exact step in the compiled kernels: forward over M_SL's distinct
        inputs, the gradient of :func:`supervised_loss` w.r.t. the logits
        (:func:`supervised_loss_gradient`), backward, clip, SGD."""
        learner, config = self.players[player], self.config
        nodes, cards, counts = learner.counts.batch()
        with self._blas.limit(limits=config.threads, user_api="blas"):
            logits = learner.fused_pi.forward(self._features(nodes, cards))
            loss, d_logits = supervised_loss_gradient(logits, self.encoder.legal[nodes], counts)
            learner.fused_pi.backward(d_logits)
            learner.fused_pi.sgd_step(config.sl_lr, clip_norm(config))
        learner.pi_updates += 1
        self.last_losses[f"pi_loss_{player}"] = loss
        self.sl_rows[player] = len(nodes)

    def _supervised_batch(self, learner: PlayerLearner) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(nodes, cards, action counts)`` of one SL step: M_SL's distinct inputs with all their
        counts (``sl_full_batch``), else a uniform minibatch of rows with one-hot counts."""
        if learner.counts is not None:
            nodes, cards, counts = learner.counts.batch()
            return nodes, cards, counts.astype(np.float32)
        batch = learner.supervised.sample(self.config.batch_size, self.rng)
        counts = np.eye(3, dtype=np.float32)[batch["action"].astype(np.int64)]
        return batch["node"].astype(np.int64), batch["cards"], counts

    def _q_loss(self, learner: PlayerLearner, batch: dict[str, np.ndarray]) -> torch.Tensor:
        to = self.device
        action = torch.from_numpy(batch["action"].astype(np.int64)).to(to)
        reward = torch.from_numpy(batch["reward"]).to(to)
        done = torch.from_numpy(batch["done"]).to(to)
        q = self.forward(learner.q, batch["node"], batch["cards"]).gather(1, action[:, None]).squeeze(1)
        with torch.no_grad():
            next_legal = self._legal[torch.from_numpy(batch["next_node"].astype(np.int64)).to(to)]
            online = self.forward(learner.q, batch["next_node"], batch["next_cards"])
            target_q = self.forward(learner.q_target, batch["next_node"], batch["next_cards"])
            target = dqn_targets(reward, done, online, target_q, next_legal, self.config.double_dqn)
        return F.smooth_l1_loss(q, target) if self.config.q_loss == "huber" else F.mse_loss(q, target)

    def _exact_q_loss(self, learner: PlayerLearner, groups: ReplayGroups) -> torch.Tensor:
        """The full-memory DQN loss (up to a constant), one network call per distinct input set."""
        to = self.device
        nodes, cards = learner.keys.inputs(groups.state_keys)
        q_states = self.forward(learner.q, nodes, cards)
        next_nodes, next_cards = learner.keys.inputs(groups.next_keys)
        with torch.no_grad():
            online = self.forward(learner.q, next_nodes, next_cards)
            target_q = self.forward(learner.q_target, next_nodes, next_cards)
        next_legal = self._legal[torch.from_numpy(next_nodes).to(to)]
        return exact_q_loss(q_states, online, target_q, next_legal, groups, self.config.double_dqn)

    # -- evaluation ------------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """Counters, memory fill and the latest losses (one metrics.jsonl line)."""
        line: dict[str, float] = {"step": self.step_count, "hands": self.hands,
                                  "transitions": int(self.transitions.sum()),
                                  "epsilon": epsilon(self.config, self.step_count),
                                  "eta": anticipatory(self.config, self.step_count)}
        for player, learner in enumerate(self.players):
            line[f"rl_fill_{player}"] = len(learner.replay) / learner.replay.capacity
            line[f"sl_fill_{player}"] = len(learner.supervised) / learner.supervised.capacity
            line[f"q_updates_{player}"] = learner.q_updates
            line[f"sl_rows_{player}"] = self.sl_rows[player]
        line.update(self.last_losses)
        return line

    # -- checkpoint state ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Networks, optimizers, counters, the hands in progress and the RNG states, as tensors and
        plain values (``torch.load(weights_only=True)`` reads it back). The memories are saved
        beside it by :meth:`save_checkpoint`."""
        arrays = {
            "node": self.env.node, "holes": self.env.holes, "board": self.env.board, "strength": self.env.strength,
            "pending": self.pending, "pending_node": self.pending_node, "pending_cards": self.pending_cards,
            "pending_action": self.pending_action, "use_best_response": self.use_best_response,
            "transitions": self.transitions, "since_learn": self.since_learn,
        }
        return {
            "format": FORMAT,
            "players": [{name: module.state_dict() for name, module in p.modules().items()}
                        | {"q_updates": p.q_updates, "pi_updates": p.pi_updates} for p in self.players],
            "arrays": {name: torch.from_numpy(np.ascontiguousarray(a)) for name, a in arrays.items()},
            "step": self.step_count, "hands": self.hands, "train_seconds": self.train_seconds,
            "losses": dict(self.last_losses), "sl_rows": list(self.sl_rows),
            "rng": self.rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        if state.get("format") != FORMAT:
            raise CorruptFileError(f"NFSP checkpoint format {state.get('format')}; this pokerbot reads {FORMAT}")
        for learner, saved in zip(self.players, state["players"], strict=True):
            for name, module in learner.modules().items():
                module.load_state_dict(saved[name])
            learner.q_updates, learner.pi_updates = saved["q_updates"], saved["pi_updates"]
        arrays = {name: tensor.numpy() for name, tensor in state["arrays"].items()}
        self.env.node[:], self.env.holes[:], self.env.board[:] = arrays["node"], arrays["holes"], arrays["board"]
        self.env.strength[:] = arrays["strength"]
        self.pending[:], self.pending_node[:] = arrays["pending"], arrays["pending_node"]
        self.pending_cards[:], self.pending_action[:] = arrays["pending_cards"], arrays["pending_action"]
        self.use_best_response[:] = arrays["use_best_response"]
        self.transitions[:], self.since_learn[:] = arrays["transitions"], arrays["since_learn"]
        self.step_count, self.hands, self.train_seconds = state["step"], state["hands"], state["train_seconds"]
        self.last_losses = dict(state["losses"])
        self.sl_rows = list(state.get("sl_rows", [0, 0]))  # checkpoints written before sl_rows existed
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])

    def save_checkpoint(self, run: RunDir) -> None:
        """One complete checkpoint (state + all four memories), swapped in atomically."""
        with run.writing_checkpoint() as folder:
            save_torch(folder / "state.pt", self.state_dict())
            for player, learner in enumerate(self.players):
                learner.replay.save(folder / f"replay_{player}.npz")
                learner.supervised.save(folder / f"supervised_{player}.npz")

    def load_checkpoint(self, folder: Path) -> None:
        self.load_state_dict(load_torch(folder / "state.pt"))
        for player, learner in enumerate(self.players):
            learner.replay.load(folder / f"replay_{player}.npz")
            learner.supervised.load(folder / f"supervised_{player}.npz")
            if learner.counts is not None:
                learner.counts.recount(learner.supervised)
            if learner.keys is not None:
                learner.keys.recount(learner.replay)
