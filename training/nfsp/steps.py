"""NFSP's learning steps as functions: the two memories, the DQN targets and the exact
full-memory Q loss, the supervised (average-policy) loss and its gradient for the compiled step,
and the schedules of eta, epsilon and the Q learning rate (Heinrich & Silver 2016, algorithm 1;
Mnih et al. 2015; van Hasselt et al. 2016). The learner (:mod:`training.nfsp.learner`) calls them.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from bot.agents.encoding import InfosetEncoder
from training.common.reservoir import Reservoir
from training.nfsp.config import NFSPConfig
from training.nfsp.counts import ReplayGroups


def replay_memory(capacity: int, encoder: InfosetEncoder, keyed: bool = False) -> Reservoir:
    """M_RL: a circular window of the newest transitions (s, a, r, s', done); ``keyed`` adds the
    (s, a) row key and the s' input key of :class:`~training.nfsp.counts.InputKeys` (for
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
    :meth:`~training.nfsp.counts.InputCounts.row_keys` (for ``sl_full_batch``)."""
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
    :class:`~training.nfsp.counts.ReplayGroups`. No gradient flows through targets."""
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
    of M_RL minus a constant, so with exactly its gradient (derivation: :mod:`training.nfsp.counts`).
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


def sample_rows(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column per row drawn from that row's distribution (vectorised inverse CDF: the first
    column whose cumulative sum exceeds a uniform draw, which never is a zero-probability one)."""
    cumulative = np.cumsum(probabilities, axis=1)
    draws = rng.random(len(probabilities)) * cumulative[:, -1]
    return np.argmax(cumulative > draws[:, None], axis=1)


def supervised_loss(logits: torch.Tensor, legal: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of Pi over the rows that ``counts[i, a]`` stands for: with one-hot
    rows it is the minibatch loss of algorithm 1; with the action counts of M_SL's distinct
    inputs it is the same loss over the whole memory (:mod:`training.nfsp.counts`). Illegal
    actions are masked out of the softmax (their counts are zero)."""
    log_pi = F.log_softmax(logits.masked_fill(~legal, -1e9), dim=1)
    return -(counts * log_pi).sum() / counts.sum()


def clip_norm(config: NFSPConfig) -> float:
    """The compiled steps' clip norm (``grad_clip`` 0 = none, as in :func:`apply_update`)."""
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


def apply_update(optimizer: torch.optim.Optimizer, network: torch.nn.Module, loss: torch.Tensor, clip: float) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip > 0:
        torch.nn.utils.clip_grad_norm_(network.parameters(), clip)
    optimizer.step()
