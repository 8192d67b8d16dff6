"""Deep CFR / SD-CFR traversals on Ray actors; the driver stays the learner.

Brown et al. 2019 (algorithm 1) run K external-sampling traversals per player per iteration,
then fit that player's value network on its advantage memory. The traversals of one iteration
only read the networks, so they split freely: :class:`RayTraversals` gives each of N
:class:`TraversalWorker` actors a contiguous share of the K traversals; each runs the existing
batched traversals (:func:`training.deep_cfr.traversal.traverse`) on the CPU with its own random stream,
named by ``(seed, iteration, player, worker)``, and returns the sampled rows (advantage and
strategy inserts). The driver adds them to the reservoir memories in worker order (so a run is
reproducible for a fixed N), fits the networks (on the GPU when ``--device`` picks one), and
checkpoints exactly as the single-process loop does: a killed run loses at most the iteration in
progress.

Weights travel once: after a player's fit, its value network's state (moved to the CPU) is put
in Ray's object store once (``ray.put``) and every worker receives the same reference before the
next traversals that use it, so each network crosses the wire once per iteration, not once per
traversal or per SGD step (PokerRL's parameter server did the latter).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np
import torch

from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, regret_matching
from protocol.gamedef import load_game
from training.contract.cluster import DEFAULT_TIMEOUT_S, ActorPool, Cluster, Worker, shares, start
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.streams import Stream
from training.deep_cfr.traversal import TraversalResult, deal_batch, traverse


class Learner(Protocol):
    """What the driver reads of the learner it serves (:class:`training.deep_cfr.trainer.DeepCFRTrainer`):
    the run's config, the iteration in progress and the two value networks."""

    config: DeepCFRConfig
    iteration: int
    nets: list[DeepCFRNetwork | None]

def worker_rng(seed: int, iteration: int, player: int, worker: int) -> np.random.Generator:
    """The random stream of one worker's share of one iteration's traversals for ``player``
    (the driver's own stream is the same key without a worker)."""
    return np.random.default_rng([seed, iteration, player, int(Stream.TRAVERSAL), worker])


class TraversalWorker(Worker):
    """One Ray actor: the encoder, a CPU copy of both value networks, and batched traversals."""

    def __init__(self, game: str, width: int, argmax_fallback: bool, traversal_batch: int, seed: int,
                 canonical_suits: bool = False) -> None:
        torch.set_num_threads(1)  # one CPU per actor (the pool asks Ray for num_cpus=1)
        self.encoder = InfosetEncoder(load_game(game))
        self.width = width
        self.canonical_suits = canonical_suits
        self.argmax_fallback = argmax_fallback
        self.traversal_batch = traversal_batch
        self.seed = seed
        self.nets: list[DeepCFRNetwork | None] = [None, None]
        self.bets = torch.from_numpy(self.encoder.bets)
        self.legal = torch.from_numpy(self.encoder.legal)

    def set_network(self, player: int, state: dict[str, torch.Tensor] | None) -> None:
        """Load ``player``'s value network (``None``: no network yet, i.e. uniform)."""
        if state is None:
            self.nets[player] = None
            return
        net = DeepCFRNetwork(self.encoder.group_sizes, self.encoder.num_bet_slots, self.width, self.canonical_suits)
        net.load_state_dict(state)
        self.nets[player] = net.eval()

    @torch.no_grad()
    def strategy(self, player: int, nodes: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """sigma^t: regret matching on the value network's advantages (uniform without one)."""
        net = self.nets[player]
        if net is None:
            legal = self.encoder.legal[nodes]
            return legal / legal.sum(axis=1, keepdims=True)
        node_t = torch.from_numpy(nodes.astype(np.int64))
        advantages = net(torch.from_numpy(cards), self.bets[node_t])
        return regret_matching(advantages, self.legal[node_t], self.argmax_fallback).numpy()

    def traverse(self, iteration: int, player: int, worker: int, count: int) -> list[tuple[int, TraversalResult]]:
        """``count`` traversals for ``player`` in batches: ``(traversals, result)`` per batch."""
        rng = worker_rng(self.seed, iteration, player, worker)
        parts = []
        done = 0
        while done < count:
            n = min(self.traversal_batch, count - done)
            parts.append((n, traverse(self.encoder, deal_batch(self.encoder, n, rng), player, self.strategy, rng)))
            done += n
        return parts


class RayTraversals:
    """The driver's side: N worker actors, network hand-off, shares and retries."""

    def __init__(self, trainer: Learner, cluster: Cluster, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.ray = start(cluster)
        cfg = trainer.config
        self.pool = ActorPool(TraversalWorker, cluster.workers,
                              (cfg.game, cfg.width, cfg.argmax_fallback, cfg.traversal_batch, cfg.seed, cfg.canonical_suits), timeout_s)
        self.net_refs: list[Any] = [None, None]
        self.sent: list[int | None] = [None, None]  # iteration whose fit produced the net each worker holds

    def __len__(self) -> int:
        return len(self.pool)

    def results(self, trainer: Learner, player: int) -> Iterator[tuple[TraversalResult, int]]:
        """Run the trainer's iteration's K traversals for ``player`` on the workers; yields each
        batch's result with the number of traversals done so far (the single-process loop's
        contract, see ``DeepCFRTrainer.traversal_results``)."""
        iteration = trainer.iteration
        self._sync(trainer, iteration, player)
        counts = [count for _start, count in shares(trainer.config.traversals, len(self.pool))]
        outputs = self.pool.gather(lambda i, actor: actor.traverse.remote(iteration, player, i, counts[i]),
                                   prepare=self._send_all, what=f"traversals (iteration {iteration}, player {player})")
        done = 0
        for parts in outputs:
            for n, result in parts:
                done += n
                yield result, done

    def metrics(self) -> dict:
        return {"workers": len(self.pool), "worker_restarts": self.pool.restarts}

    def _sync(self, trainer: Learner, iteration: int, player: int) -> None:
        """Send each network that changed since the workers last got it. Player ``q``'s network
        in use now was fitted at ``iteration`` if ``q`` traversed before ``player`` this
        iteration, else at ``iteration - 1`` (the loop fits player 0, then player 1)."""
        for q in (0, 1):
            fitted = iteration if q < player else iteration - 1
            if self.sent[q] == fitted:
                continue
            net = trainer.nets[q]
            state = None if net is None else {k: v.detach().cpu() for k, v in net.state_dict().items()}
            self.net_refs[q] = self.ray.put(state)
            self.pool.broadcast(lambda actor, q=q: actor.set_network.remote(q, self.net_refs[q]),
                                prepare=self._send_all)
            self.sent[q] = fitted

    def _send_all(self, actor: Any) -> Any:
        """A restarted actor's state: both networks, from the refs already in the object store."""
        return [actor.set_network.remote(q, ref) for q, ref in enumerate(self.net_refs) if ref is not None]

    def close(self) -> None:
        self.pool.close()
