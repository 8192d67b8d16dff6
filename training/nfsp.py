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
(:class:`~training.vector_env.VectorEnv`); one step asks each (player, policy) group its action
with one network call for the whole group. Transitions are closed when the same player acts
again in that hand (reward 0) or the hand ends (reward = net chips in big blinds, done). The
learning rhythm keeps the paper's ratio: ``updates_per_learn`` Q updates and
``sl_updates_per_learn`` Pi updates after every ``learn_every`` new transitions of a player.
Rewards are in big blinds so one set of learning rates fits Kuhn to HULH.
"""

from __future__ import annotations

import math
import signal
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from threadpoolctl import ThreadpoolController

from bot.encoding import InfosetEncoder
from bot.network import DeepCFRNetwork
from bot.nfsp_agent import NFSPPolicy
from protocol.gamedef import load_game
from training import plots
from training.fused_network import Features, FusedNetwork
from training.nfsp_counts import InputCounts, ReplayCounts, ReplayGroups, check_countable
from training.reservoir import Reservoir
from training.rundir import RunDir, load_torch, save_torch
from training.vector_env import VectorEnv

if TYPE_CHECKING:
    from bot.best_response import ExploitabilityReport

#: Format number stored in checkpoints and policy bundles.
FORMAT = 1


@dataclass(frozen=True)
class NFSPConfig:
    """Everything that defines an NFSP run (saved as the run's ``config.toml``)."""

    game: str = "leduc"
    """Game name or gamedef path."""
    seed: int = 0
    """Seed of every random choice (deals, exploration, policy sampling, minibatches, weights)."""
    steps: int = 20_000
    """Self-play steps: one action in each of the ``num_envs`` parallel hands, then learning."""
    time_budget: float = 0.0
    """Stop after this many seconds of training (0 = no limit)."""
    num_envs: int = 128
    """Hands played in parallel."""
    width: int = 64
    """Width of the appendix C network (all four networks)."""
    eta: float = 0.1
    """Anticipatory parameter: per hand, probability of acting with the best response."""
    eta_final: float = -1.0
    """Anneal eta linearly from ``eta`` to this value over ``eta_anneal_steps`` self-play steps,
    then keep it (-1 = constant eta). Why: each seat's Q learns a best response to what the
    other seat plays, the mixture ``eta * BR + (1 - eta) * Pi`` (the paper's anticipatory
    dynamics, sec. 4), not to Pi itself, so the fixed point of a large eta is biased away from
    fictitious play's; a large eta early fills M_SL fast, a small one late removes most of the
    bias. Still algorithm 1, with a time-varying eta."""
    eta_anneal_steps: int = 0
    """Self-play steps of the eta anneal (with ``eta_final``)."""
    rl_vs_average: bool = False
    """Store in M_RL only the transitions of hands in which the *other* seat followed its
    average policy Pi, so Q estimates a best response to Pi_-i itself, the best response of
    fictitious play (Heinrich & Silver 2016, sec. 3), instead of to the eta-mixture (see
    ``eta_final``). A departure from algorithm 1 (which stores every own transition); off by
    default. The learning rhythm still counts every closed transition."""
    rl_capacity: int = 200_000
    """Circular replay memory M_RL per player (transitions)."""
    sl_capacity: int = 2_000_000
    """Reservoir memory M_SL per player (state, best-response action) pairs."""
    sl_averaging: str = "uniform"
    """How M_SL weighs best-response rows over time. uniform: the paper's reservoir, so Pi fits
    the plain average of every past best response (fictitious play's step 1/t). linear: a row
    from self-play step s is kept with probability proportional to s + 1 (weighted reservoir,
    :mod:`training.reservoir`), so Pi averages best responses weighted by when they were played,
    as Linear CFR weights iterations (Brown & Sandholm 2019), and the poor best responses of the
    first minutes fade as s/t. Still generalised weakened fictitious play (Leslie & Collins
    2006: steps 2/(t+1) tend to zero and sum to infinity)."""
    optimizer: str = "sgd"
    """sgd (the paper) or adam."""
    rl_lr: float = 0.1
    """Learning rate of the Q networks."""
    rl_lr_decay_steps: int = 0
    """Decay the Q learning rate as ``rl_lr / sqrt(1 + steps / rl_lr_decay_steps)`` (the
    epsilon schedule's form); 0 keeps it constant."""
    q_loss: str = "mse"
    """mse (the paper) or huber (Mnih et al. 2015's clipped error: smooth L1 on the TD error;
    minibatch Q steps only, as it does not merge over repeated rows)."""
    sl_lr: float = 0.005
    """Learning rate of the average-policy networks."""
    batch_size: int = 128
    """Minibatch size of every update."""
    learn_every: int = 128
    """New transitions of a player between its learning rounds."""
    updates_per_learn: int = 2
    """Q-network minibatch updates in each learning round."""
    sl_updates_per_learn: int = 2
    """Average-policy updates in each learning round (the paper: 2, as for Q)."""
    target_update_every: int = 300
    """Q updates between refits of the target network."""
    eps_start: float = 0.06
    """Initial exploration of the epsilon-greedy best response."""
    eps_decay_steps: int = 1_000
    """Self-play steps after which epsilon has fallen to eps_start / sqrt(2)."""
    double_dqn: bool = True
    """Pick the bootstrap action with the online network (double DQN) rather than the target."""
    sl_full_batch: bool = False
    """Supervised step on the exact objective: one full batch over M_SL's distinct inputs with
    their action counts as targets (:mod:`training.nfsp_counts`; small games only) instead of a
    ``batch_size`` minibatch of rows. Same loss, no sampling noise."""
    rl_full_batch: bool = False
    """DQN step on the exact objective: the squared TD error over all of M_RL, merged over its
    distinct (state, action) pairs and next states (:func:`exact_q_loss`; small games only)
    instead of a ``batch_size`` minibatch. Same loss and gradient, no sampling noise."""
    fused: bool = False
    """Run the exact SL and Q steps (``sl_full_batch``, ``rl_full_batch``) in the compiled
    kernels of :mod:`training.fused_network` instead of torch autograd: the same loss, gradient,
    clip and SGD update (``tests/test_nfsp_fused.py``), several times cheaper per step on Leduc's
    few hundred distinct inputs, so more exact Q steps per learning round cost the same time.
    CPU and SGD only; the torch networks share the kernels' weight buffer (no copies)."""
    grad_clip: float = 10.0
    """Gradient-norm clip of every update (0 = none)."""
    eval_every: int = 1_000
    """Steps between exploitability evaluations (small games) and metrics lines."""
    checkpoint_every: int = 1_000
    """Steps between checkpoints (Ctrl-C also checkpoints after the step in progress)."""
    device: str = "cpu"
    """cpu or cuda."""
    threads: int = 1
    """Torch intra-op threads on CPU. One is fastest here: minibatches of 128-256 rows through a
    64-wide network are too small to split, and on a loaded 2-core machine two threads made
    self-play 14x slower (measured: 100 Kuhn steps 22.7 s with 2 threads, 1.6 s with 1)."""

    def __post_init__(self) -> None:
        positive = ("steps", "num_envs", "width", "rl_capacity", "sl_capacity", "batch_size", "learn_every",
                    "updates_per_learn", "sl_updates_per_learn", "target_update_every", "eps_decay_steps", "eval_every", "checkpoint_every",
                    "threads")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"nfsp config: {name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"nfsp config: eta must be in [0, 1], got {self.eta}")
        if self.eta_final != -1.0 and not 0.0 <= self.eta_final <= 1.0:
            raise ValueError(f"nfsp config: eta_final must be in [0, 1] or -1 (constant eta), got {self.eta_final}")
        if self.eta_anneal_steps < 0 or (self.eta_final != -1.0 and self.eta_anneal_steps == 0):
            raise ValueError("nfsp config: eta_final needs eta_anneal_steps > 0")
        if not 0.0 <= self.eps_start <= 1.0:
            raise ValueError(f"nfsp config: eps_start must be in [0, 1], got {self.eps_start}")
        if self.sl_averaging not in ("uniform", "linear"):
            raise ValueError(f"nfsp config: sl_averaging must be uniform or linear, got {self.sl_averaging!r}")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"nfsp config: optimizer must be sgd or adam, got {self.optimizer!r}")
        if self.q_loss not in ("mse", "huber"):
            raise ValueError(f"nfsp config: q_loss must be mse or huber, got {self.q_loss!r}")
        if self.q_loss == "huber" and self.rl_full_batch:
            raise ValueError("nfsp config: q_loss = huber needs minibatch Q steps (set rl_full_batch = false)")
        if self.rl_lr_decay_steps < 0:
            raise ValueError(f"nfsp config: rl_lr_decay_steps must be >= 0, got {self.rl_lr_decay_steps}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"nfsp config: device must be cpu or cuda, got {self.device!r}")
        if self.fused and (self.device != "cpu" or self.optimizer != "sgd"
                           or not (self.sl_full_batch or self.rl_full_batch)):
            raise ValueError("nfsp config: fused needs device = cpu, optimizer = sgd and an exact step "
                             "(sl_full_batch or rl_full_batch)")


def replay_memory(capacity: int, encoder: InfosetEncoder, keyed: bool = False) -> Reservoir:
    """M_RL: a circular window of the newest transitions (s, a, r, s', done); ``keyed`` adds the
    (s, a) row key and the s' input key of :class:`~training.nfsp_counts.InputKeys` (for
    ``rl_full_batch``)."""
    slots = encoder.num_card_slots
    fields_ = {
        "node": ((), np.int32), "cards": ((slots,), np.int8), "action": ((), np.int8),
        "reward": ((), np.float32), "done": ((), np.bool_),
        "next_node": ((), np.int32), "next_cards": ((slots,), np.int8),
    }
    if keyed:
        fields_ |= {"count_key": ((), np.int32), "next_key": ((), np.int32)}
    return Reservoir(capacity, fields_, mode="window")


def supervised_memory(capacity: int, encoder: InfosetEncoder, counted: bool = False) -> Reservoir:
    """M_SL: reservoir-sampled (state, best-response action) pairs; ``counted`` adds each row's
    :meth:`~training.nfsp_counts.InputCounts.row_keys` (for ``sl_full_batch``)."""
    fields_ = {"node": ((), np.int32), "cards": ((encoder.num_card_slots,), np.int8), "action": ((), np.int8)}
    if counted:
        fields_["count_key"] = ((), np.int32)
    return Reservoir(capacity, fields_, mode="reservoir")


def dqn_targets(
    reward: torch.Tensor,
    done: torch.Tensor,
    next_q_online: torch.Tensor,
    next_q_target: torch.Tensor,
    next_legal: torch.Tensor,
    double: bool = True,
) -> torch.Tensor:
    """Q-learning targets ``y = r + (1 - done) * Q_target(s', a*)`` with no discount (a hand is a
    short episode). Double DQN (van Hasselt et al. 2016, eq. 4) picks ``a*`` as the online
    network's best legal action; plain DQN (Mnih et al. 2015) as the target network's. Only legal
    actions of s' compete."""
    selector = next_q_online if double else next_q_target
    best = selector.masked_fill(~next_legal, float("-inf")).argmax(dim=1, keepdim=True)
    bootstrap = next_q_target.gather(1, best).squeeze(1)
    bootstrap = torch.where(done | ~next_legal.any(dim=1), torch.zeros_like(bootstrap), bootstrap)
    return reward + bootstrap


def q_learning_rate(config: NFSPConfig, step: int) -> float:
    """The Q networks' learning rate after ``step`` self-play steps (``rl_lr_decay_steps``)."""
    if not config.rl_lr_decay_steps:
        return config.rl_lr
    return config.rl_lr / float(np.sqrt(1.0 + step / config.rl_lr_decay_steps))


def pair_targets(next_q_online: torch.Tensor, next_q_target: torch.Tensor, next_legal: torch.Tensor,
                 groups: ReplayGroups, double: bool = True) -> torch.Tensor:
    """``ybar(s, a)`` per distinct (s, a) of M_RL: the mean of its rows' DQN targets ``y_i`` (those
    of :func:`dqn_targets`), from one bootstrap value per distinct next state (the ``next_*``
    tensors are at ``groups.next_keys``) spread over the (s, a, s') links of
    :class:`~training.nfsp_counts.ReplayGroups`. No gradient flows through targets."""
    to, dtype = next_q_online.device, next_q_online.dtype
    none = torch.zeros(len(next_legal), dtype=dtype, device=to)
    bootstrap = dqn_targets(none, torch.zeros(len(next_legal), dtype=torch.bool, device=to),
                            next_q_online, next_q_target.to(dtype), next_legal, double)
    linked = torch.from_numpy(groups.link_weight).to(device=to, dtype=dtype) * bootstrap
    mean_y = torch.from_numpy(groups.pair_reward).to(device=to, dtype=dtype)
    return mean_y.index_add(0, torch.from_numpy(groups.link_pair).to(to), linked)


def exact_q_loss(q_states: torch.Tensor, next_q_online: torch.Tensor, next_q_target: torch.Tensor,
                 next_legal: torch.Tensor, groups: ReplayGroups, double: bool = True) -> torch.Tensor:
    """``(1/N) sum_(s,a) n(s,a) (Q(s,a) - ybar(s,a))^2``: the mean squared TD error over every row
    of M_RL minus a constant, so with exactly its gradient (derivation: :mod:`training.nfsp_counts`).
    ``q_states`` are Q's values at ``groups.state_keys`` (with gradient); the ``next_*`` tensors
    are at ``groups.next_keys`` (:func:`pair_targets`)."""
    to, dtype = q_states.device, q_states.dtype
    mean_y = pair_targets(next_q_online.to(dtype), next_q_target, next_legal, groups, double)
    count = torch.from_numpy(groups.pair_count).to(device=to, dtype=dtype)
    q = q_states[torch.from_numpy(groups.pair_state).to(to), torch.from_numpy(groups.pair_action).to(to)]
    return (count * (q - mean_y) ** 2).sum() / groups.rows


def anticipatory(config: NFSPConfig, step: int) -> float:
    """eta after ``step`` self-play steps (``eta_final``: linear anneal, then constant)."""
    if config.eta_final == -1.0:
        return config.eta
    done = min(1.0, step / config.eta_anneal_steps)
    return config.eta + (config.eta_final - config.eta) * done


def epsilon(config: NFSPConfig, step: int) -> float:
    """Exploration after ``step`` self-play steps (inverse-square-root decay, NFSP paper sec. 5)."""
    return config.eps_start / float(np.sqrt(1.0 + step / config.eps_decay_steps))


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
        self.device = torch.device(config.device)
        if config.device == "cpu":
            torch.set_num_threads(config.threads)
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
        return np.where(explore, _sample_rows(legal / legal.sum(axis=1, keepdims=True), self.rng), greedy)

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
                actions[avg] = _sample_rows(self.policy.probabilities(player, nodes[avg], cards[avg]), self.rng)
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
            _update(learner.q_optimizer, learner.q, loss, config.grad_clip)
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
                learner.fused_q.sgd_step(lr, _max_norm(config))
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
            _update(learner.pi_optimizer, learner.pi, loss, config.grad_clip)
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
            learner.fused_pi.sgd_step(config.sl_lr, _max_norm(config))
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
            raise ValueError(f"NFSP checkpoint format {state.get('format')}; this pokerbot reads {FORMAT}")
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


def _sample_rows(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column per row drawn from that row's distribution (vectorised inverse CDF: the first
    column whose cumulative sum exceeds a uniform draw, which never is a zero-probability one)."""
    cumulative = np.cumsum(probabilities, axis=1)
    draws = rng.random(len(probabilities)) * cumulative[:, -1]
    return np.argmax(cumulative > draws[:, None], axis=1)


def supervised_loss(logits: torch.Tensor, legal: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of Pi over the rows that ``counts[i, a]`` stands for: with one-hot
    rows it is the minibatch loss of algorithm 1; with the action counts of M_SL's distinct
    inputs it is the same loss over the whole memory (:mod:`training.nfsp_counts`). Illegal
    actions are masked out of the softmax (their counts are zero)."""
    log_pi = F.log_softmax(logits.masked_fill(~legal, -1e9), dim=1)
    return -(counts * log_pi).sum() / counts.sum()


def _max_norm(config: NFSPConfig) -> float:
    """The compiled steps' clip norm (``grad_clip`` 0 = none, as in :func:`_update`)."""
    return config.grad_clip if config.grad_clip > 0 else float("inf")


def supervised_loss_gradient(logits: np.ndarray, legal: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
    """:func:`supervised_loss` and its gradient w.r.t. the logits, in numpy for the compiled
    step: with ``pi`` the softmax over the legal actions, ``n_i`` row i's count total and ``N``
    all rows', ``d loss / d logit[i, a] = (n_i pi[i, a] - count[i, a]) / N`` (zero at illegal
    actions, whose probability is 0)."""
    masked = np.where(legal, logits.astype(np.float64), -np.inf)
    shifted = masked - masked.max(axis=1, keepdims=True)
    log_pi = np.where(legal, shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)), -np.inf)
    total = float(counts.sum())
    loss = -float((counts * np.where(legal, log_pi, 0.0)).sum()) / total
    gradient = (counts.sum(axis=1, keepdims=True) * np.exp(log_pi) - counts) / total
    return loss, gradient.astype(np.float32)


def _update(optimizer: torch.optim.Optimizer, network: torch.nn.Module, loss: torch.Tensor, clip: float) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip > 0:
        torch.nn.utils.clip_grad_norm_(network.parameters(), clip)
    optimizer.step()


# -- presets and configuration ------------------------------------------------------------------

#: NFSP paper, sec. 5.1 (Leduc): M_RL 200k circular, M_SL 2M reservoir, plain SGD at 0.1 (RL)
#: and 0.005 (SL), 2 updates of 128 per network every 128 steps, target refit every 300
#: updates, epsilon from 0.06 decaying to 0, eta 0.1 (all equal to the NFSPConfig defaults).
LEDUC_PAPER = {"steps": 200_000, "eval_every": 1_000, "checkpoint_every": 1_000}
#: Leduc tuned for wall clock on one CPU core (README "NFSP on Leduc" has the sweep): the exact
#: full-batch SL step (one per learning round, so SGD can take 10x the paper's rate), eta 0.5
#: (more best-response rows per hand for M_SL; the largest single gain), exploration from 0.03
#: (fewer random actions averaged into Pi), width 32, and 4x larger batches and learning rounds
#: (4x fewer calls). Round 2: the exact full-batch Q step (``rl_full_batch``), 4 of them per
#: round and a target refit every 50 Q updates — 2.5-minute runs, seed 0, at ~530k hands: 134
#: mbb/g against 208 with 2 minibatch Q steps and refits every 300 (README "NFSP on Leduc").
#: Round 3: both exact steps in the compiled kernels (``fused``), 8 Q steps per round (more hands
#: per second with twice the Q steps), and eta annealed from 0.5 to 0.25 over the first 10,000
#: steps (~1.1M hands), which removes part of the eta-mixture bias of the best responses: 4-minute
#: runs at ~2M hands: 68.5 mbb/g against 90.3 for the round-2 preset (README "NFSP on Leduc").
#: Round 4: M_RL of 1M transitions instead of 200k (about a minute of self-play: the window's
#: per-(state, action) means were Q's main error, a sampling noise the network only partly
#: smooths), eta annealed to 0.1 over the first 50,000 steps (~5.7M hands), where its bias is
#: small, and linear averaging in M_SL (``sl_averaging``), so the first minutes' poor best
#: responses fade — 30-minute runs, seed 0: 37 mbb/g first reached after 1,189 s and 30.5 at
#: 30 minutes, against 1,477 s and 38.7 with uniform averaging; round 3: 58.5 (README "NFSP on
#: Leduc").
LEDUC_TUNED = LEDUC_PAPER | {
    "sl_full_batch": True, "sl_updates_per_learn": 1, "sl_lr": 0.05, "eta": 0.5, "eps_start": 0.03, "width": 32,
    "num_envs": 512, "batch_size": 512, "learn_every": 512,
    "rl_full_batch": True, "updates_per_learn": 8, "target_update_every": 50, "fused": True,
    "rl_capacity": 1_000_000, "eta_final": 0.1, "eta_anneal_steps": 50_000, "sl_averaging": "linear",
}
#: NFSP paper, sec. 5.3 (limit Texas hold'em; FHP uses it too): M_RL 600k, M_SL 30M, SGD 0.1 / 0.01, 2 updates
#: of 256 every 256 steps, target refit every 1,000 updates, epsilon from 0.08, eta 0.1. The
#: network is the Deep CFR paper's (width 96 ~ its 98,948 parameters) instead of the NFSP
#: paper's 1024-512-1024-512 MLP, as in the Deep CFR paper's comparison (its footnote 4).
_HOLDEM = {
    "width": 96, "rl_capacity": 600_000, "sl_capacity": 30_000_000, "sl_lr": 0.01,
    "batch_size": 256, "learn_every": 256, "target_update_every": 1_000, "eps_start": 0.08,
    "eps_decay_steps": 10_000, "steps": 2_000_000, "eval_every": 1_000, "checkpoint_every": 10_000,
}
PRESETS: dict[str, dict] = {
    # Kuhn: small networks and Adam so a laptop run converges in seconds (tests use it).
    "kuhn": {"width": 32, "num_envs": 64, "optimizer": "adam", "rl_lr": 1e-3, "sl_lr": 1e-3,
             "rl_capacity": 20_000, "sl_capacity": 200_000, "batch_size": 128, "learn_every": 64,
             "target_update_every": 100, "eps_decay_steps": 200, "steps": 3_000, "eval_every": 250,
             "checkpoint_every": 1_000, "sl_full_batch": True},
    "leduc": LEDUC_TUNED,
    "fhp": _HOLDEM,
    "holdem": _HOLDEM,
}


def preset_for(game: str) -> dict:
    """The preset of a shipped game's short name (gamedef paths start from the Leduc preset)."""
    from bot.nfsp_agent import short_game_name

    return dict(PRESETS.get(short_game_name(load_game(game)), PRESETS["leduc"]), game=game)


def make_config(values: dict) -> NFSPConfig:
    """An :class:`NFSPConfig` from a dict, naming any key that is not a config field."""
    known = {f.name for f in fields(NFSPConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown nfsp config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return NFSPConfig(**values)


# -- the run --------------------------------------------------------------------------------------

#: Most (hole cards x board) combinations for which exact exploitability runs during training.
SMALL_GAME_DEALS = 100_000


def is_small(game_name: str) -> bool:
    """Games whose exact exploitability is cheap enough to compute during training (Kuhn 3
    deals, Leduc 36; FHP's 29 million are not)."""
    game = load_game(game_name)
    deck = len(game.deck)
    return math.comb(deck, game.num_hole_cards) * math.comb(deck, game.total_board_cards) <= SMALL_GAME_DEALS


def evaluate(learner: NFSP) -> dict[str, float]:
    """Exact exploitability of the average policy (small games only), labelled both ways."""
    from bot.best_response import exploitability

    report = exploitability(learner.game, learner.policy.strategy())
    result = {"exploitability_mbb": report.mbb(report.exploitability), "nash_conv_mbb": report.mbb(report.nash_conv)}
    if learner.config.sl_full_batch:
        table = exploitability(learner.game, memory_frequencies(learner))
        result["sl_table_mbb"] = table.mbb(table.exploitability)
    result.update(best_response_quality(learner, report))
    return result


def greedy_q_strategy(learner: NFSP) -> np.ndarray:
    """The ``[num_infosets, 3]`` table of each seat's greedy Q policy (one-hot argmax over the
    legal actions): the best response NFSP's fictitious play averages, without exploration."""
    infosets = learner.policy.infosets
    out = np.zeros((infosets.space.num_infosets, 3))
    with torch.no_grad():
        for player, p in enumerate(learner.players):
            rows = np.flatnonzero(infosets.player == player)
            index = torch.from_numpy(rows)
            q = p.q(infosets.cards[index].to(learner.device), infosets.bets[index].to(learner.device)).cpu()
            best = q.masked_fill(~infosets.legal[index], float("-inf")).argmax(dim=1).numpy()
            out[rows, best] = 1.0
    return out


def _seat_value(learner: NFSP, table: np.ndarray, seat: int, average: np.ndarray) -> float:
    """Seat ``seat``'s expected value (chips, its own sign) playing ``table``'s rows for its
    infosets against the other seat's ``average`` rows."""
    from bot.best_response import expected_value

    mine = (learner.policy.infosets.player == seat)[:, None]
    value = expected_value(learner.game, np.where(mine, table, average))
    return value if seat == 0 else -value


def best_response_quality(learner: NFSP, report: ExploitabilityReport, table: np.ndarray | None = None) -> dict[str, float]:
    """How good the DQN best responses are, per seat p: ``q_gap_mbb_p`` = exact best response's
    value against the current average Pi_-p minus the greedy Q policy's value against it (mbb/g,
    >= 0), and ``q_share_p`` = the share of the exact best response's gain over Pi_p that greedy
    Q achieves (1 = an exact best response). Fictitious play converges with the best responses'
    error (Heinrich & Silver 2016, sec. 3: approximate FP), so this bounds what Pi can reach.
    ``table`` measures another best-response table the same way (default: greedy Q)."""
    table = greedy_q_strategy(learner) if table is None else table
    average = learner.policy.strategy()
    out = {}
    for seat in range(2):
        value = _seat_value(learner, table, seat, average)
        best, own = report.best_response_values[seat], (1.0 if seat == 0 else -1.0) * report.game_value
        out[f"q_gap_mbb_{seat}"] = report.mbb(best - value)
        out[f"q_share_{seat}"] = (value - own) / (best - own) if best > own else 1.0
    return out


def window_q_strategy(learner: NFSP, sweeps: int = 16) -> np.ndarray:
    """Each seat's greedy policy of a *tabular* Q fitted to its own M_RL: fitted-Q iteration on
    the window's per-(s, a) mean rewards and next-state shares (:class:`ReplayGroups`), i.e. what
    a perfectly fitted Q network would play if it matched the window's sample means exactly
    (``sweeps`` at least the game's decisions per seat make the iteration exact). Infosets where
    the window lacks a legal action keep greedy Q's choice. Compared with greedy Q, it separates
    the window's sampling noise from the network's fit (``rl_full_batch`` runs only)."""
    table = greedy_q_strategy(learner)
    infosets = learner.policy.infosets
    for seat, p in enumerate(learner.players):
        groups = p.keys.groups(len(p.replay))
        next_state, next_known = _positions(groups.state_keys, groups.next_keys)
        q = groups.pair_reward.copy()
        for _ in range(sweeps):
            state_value = np.full(len(groups.state_keys), -np.inf)
            np.maximum.at(state_value, groups.pair_state, q)
            bootstrap = np.where(next_known, state_value[next_state], 0.0)
            q = groups.pair_reward + np.bincount(groups.link_pair, groups.link_weight * bootstrap, minlength=len(q))
        values = np.full((len(groups.state_keys), 3), -np.inf)
        values[groups.pair_state, groups.pair_action] = q
        rows = np.flatnonzero(infosets.player == seat)
        where, found = _positions(groups.state_keys, p.keys.keys(infosets.space.node[rows], infosets.cards[rows].numpy()))
        legal = infosets.legal[rows].numpy()
        covered = found & (np.isfinite(values[where]) | ~legal).all(axis=1)
        best = np.where(legal, values[where], -np.inf).argmax(axis=1)
        table[rows[covered]] = np.eye(3)[best[covered]]
    return table


def _positions(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's index in ``sorted_keys`` and whether it is there at all (the index is a
    valid placeholder where it is not)."""
    where = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return where, sorted_keys[where] == keys


def mixture_bias(learner: NFSP, eta: float) -> tuple[float, float]:
    """What Q's target costs, per seat p, in mbb/g: the value against Pi_-p of an exact best
    response to the mixture the other seat actually plays with anticipatory parameter ``eta``
    (``eta * greedy Q_-p + (1 - eta) * Pi_-p``, exploration left out), short of an exact best
    response to Pi_-p itself. A perfectly fitted Q would still fall this far short of the best
    response fictitious play needs (the bias discussed at ``NFSPConfig.eta_final``)."""
    from bot.best_response import best_response_strategy, exploitability

    average = learner.policy.strategy()
    mixture = eta * greedy_q_strategy(learner) + (1.0 - eta) * average
    report = exploitability(learner.game, average)
    short = []
    for seat in range(2):
        value = _seat_value(learner, best_response_strategy(learner.game, mixture, seat), seat, average)
        short.append(report.mbb(report.best_response_values[seat] - value))
    return short[0], short[1]


def memory_frequencies(learner: NFSP) -> np.ndarray:
    """The strategy table ``[num_infosets, 3]`` of M_SL's empirical action frequencies (the
    policy Pi would play if it fitted its objective exactly): its exploitability, logged as
    ``sl_table_mbb``, separates the error of fictitious play with DQN best responses from the
    error of fitting Pi."""
    infosets = learner.policy.infosets
    space, out = infosets.space, np.zeros((infosets.space.num_infosets, 3))
    for player, p in enumerate(learner.players):
        rows = np.flatnonzero(infosets.player == player)
        out[rows] = p.counts.frequencies(space.node[rows], infosets.cards[rows].numpy(),
                                         space.legal[rows])
    return out


class _StopRequest:
    """SIGINT/SIGTERM set a flag; the loop finishes the step in progress, checkpoints and exits."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _StopRequest:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: no handlers, Ctrl-C behaves as usual
                pass
        return self

    def _handle(self, signum: int, frame: object) -> None:
        self.requested = True

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def train(config: NFSPConfig, run: RunDir, resume: bool = False, stream=None) -> NFSP:
    """Run (or continue) NFSP in ``run`` until ``config.steps`` steps or the time budget.

    Every ``eval_every`` steps a metrics line is appended (counters, memory fill, losses, wall
    time, hands, and the exact exploitability of the average policy in small games); every
    ``checkpoint_every`` steps, on Ctrl-C/SIGTERM and at the end a checkpoint is written; at the
    end the policy bundle and, for small games, ``exploitability.png``.
    """
    from training.rundir import Progress

    learner = NFSP(config)
    if resume:
        folder = run.checkpoint_path
        if folder is not None:
            learner.load_checkpoint(folder)
        run.truncate_metrics(learner.step_count)
    small = is_small(config.game)
    periods = -(-config.steps // config.eval_every)
    progress = Progress(periods, learner.step_count // config.eval_every + 1,
                        config.time_budget or None, stream=stream)
    budget_end = config.time_budget if config.time_budget > 0 else float("inf")
    saved_at = learner.step_count if resume and run.checkpoint_path is not None else -1
    try:
        with _StopRequest() as stop:
            while learner.step_count < config.steps and learner.train_seconds < budget_end and not stop.requested:
                period = learner.step_count // config.eval_every + 1
                progress.start_iteration(period, "self-play")
                started = time.perf_counter()
                learner.step()
                learner.train_seconds += time.perf_counter() - started
                progress.advance_iteration(learner.step_count - (period - 1) * config.eval_every, config.eval_every)
                if learner.step_count % config.eval_every == 0 or learner.step_count == config.steps:
                    record = {"iteration": learner.step_count, **learner.metrics(),
                              "train_seconds": round(learner.train_seconds, 3)}
                    if small:
                        record.update(evaluate(learner))
                    run.append_metrics(record)
                    progress.end_iteration(period, _summary(record))
                if learner.step_count % config.checkpoint_every == 0:
                    learner.save_checkpoint(run)
                    saved_at = learner.step_count
    finally:
        progress.close()
    if learner.step_count != saved_at:
        if learner.step_count % config.eval_every:  # the last partial period still gets its line
            record = {"iteration": learner.step_count, **learner.metrics(),
                      "train_seconds": round(learner.train_seconds, 3)}
            if small:
                record.update(evaluate(learner))
            run.append_metrics(record)
        learner.save_checkpoint(run)
    run.policy_path.mkdir(exist_ok=True)
    from bot.nfsp_agent import POLICY_FILE

    save_torch(run.policy_path / POLICY_FILE, learner.policy.bundle())
    if small:
        plot_exploitability(run)
    return learner


def _summary(record: dict) -> str:
    text = f"{record['hands']:,} hands, eps {record['epsilon']:.4f}, q loss {record['q_loss_0']:.3g}/{record['q_loss_1']:.3g}"
    text += f", pi loss {record['pi_loss_0']:.3g}/{record['pi_loss_1']:.3g}"
    if "exploitability_mbb" in record:
        text += f", exploitability {record['exploitability_mbb']:.1f} mbb/g (NashConv/2)"
    return text


def plot_exploitability(run: RunDir) -> Path:
    """``exploitability.png``: average exploitability against hands played and training time, of
    Pi and (with ``sl_full_batch``) of the M_SL frequencies it is trained to match."""
    records = [r for r in run.read_metrics() if "exploitability_mbb" in r]
    curves = {"NFSP average policy (network Pi)": "exploitability_mbb",
              "M_SL action frequencies (what Pi fits)": "sl_table_mbb"}
    panels = [(label, {name: ([r[key] for r in records if metric in r], [r[metric] for r in records if metric in r])
                       for name, metric in curves.items() if any(metric in r for r in records)})
              for key, label in (("hands", "hands of self-play"), ("train_seconds", "training seconds"))]
    return plots.plot_exploitability(run.path / "exploitability.png", panels,
                                     title=f"NFSP average policy, {run.config().get('game', '')}")


def run_from_cli(options: dict) -> None:
    """``pokerbot train --algo nfsp``: preset < ``--config`` TOML < flags, then train or resume."""
    from bot.errors import PokerbotError
    from training.rundir import parse_duration, read_toml

    for flag in ("traversals", "size"):
        if options.get(flag) is not None:
            raise PokerbotError(f"--{flag} does not apply to --algo nfsp")
    flags: dict = {}
    if options.get("iterations") is not None:
        flags["steps"] = options["iterations"]
    if options.get("time_budget") is not None:
        flags["time_budget"] = parse_duration(options["time_budget"])
    if options.get("device") not in (None, "auto"):
        flags["device"] = options["device"]
    elif torch.cuda.is_available():  # --device auto or left out
        flags["device"] = "cuda"
    if options.get("threads"):
        flags["threads"] = options["threads"]
    if options.get("resume"):
        if options.get("seed") is not None or options.get("config_path"):
            raise PokerbotError("--seed and --config cannot change a run on --resume (its config.toml is kept)")
        run = RunDir.open(options["resume"])
        values = run.config() | flags  # a resumed run may be given more steps, time or another device
        config = make_config(values)
        _write_config(run, config)
        train(config, run, resume=True)
    else:
        from_file = read_toml(Path(options["config_path"])) if options.get("config_path") else {}
        game = str(options.get("game") or from_file.get("game") or "leduc")
        if from_file.get("game", game) != game:
            raise PokerbotError(f"{options['config_path']} is for game {from_file['game']!r} but --game is "
                                f"{game!r}; pass --game {from_file['game']} or leave --game out")
        values = preset_for(game) | from_file
        if options.get("seed") is not None:
            flags["seed"] = options["seed"]
        config = make_config(values | flags)
        for option in ("sl_full_batch", "rl_full_batch"):  # fail before the run directory is created
            if getattr(config, option):
                check_countable(InfosetEncoder(load_game(config.game)), option)
        run = RunDir.create(options["out"], config)
        train(config, run)
    print(f"policy saved in {run.policy_path}")


def _write_config(run: RunDir, config: NFSPConfig) -> None:
    """Record a resumed run's extended budget in its config.toml."""
    import tomli_w

    from training.rundir import CONFIG_FILE, atomic_write, config_to_dict

    atomic_write(run.path / CONFIG_FILE, lambda h: h.write(tomli_w.dumps(config_to_dict(config)).encode()))
