"""Deep CFR hot paths: batched traversal throughput vs bare network inference, SGD steps/s at
the paper's batch sizes, and bytes per stored memory sample.

* traversal: infosets whose strategy the traversal computed per second (external sampling,
  both players' value networks live, deals + hand evaluation + tree walking + regret backup
  included), next to the bare forward pass of the same network on batches of the same size
  (the traversal's mean rows per network call). Target: traversal >= 50% of bare inference.
* SGD: Adam steps per second of the value-network loss at the paper's batch sizes
  (FHP 10,000, HULH 20,000) and at a Leduc full batch (a memory's ~468 distinct inputs per
  player), in torch and in the compiled kernels of ``training/common/fused_network.py`` (CPU only).
* memory: bytes per stored sample (node id, card slots, 3 targets, iteration) and what the
  paper's 40M-sample memories take.

    python benchmarks/bench_deep_cfr_throughput.py [--device cpu|cuda] [--threads N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from bot.agents.encoding import InfosetEncoder  # noqa: E402
from bot.agents.network import DeepCFRNetwork, regret_matching  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402
from training.common.fused_network import Features, fit_weighted_mse  # noqa: E402
from training.common.reservoir import Reservoir  # noqa: E402
from training.deep_cfr.config import PRESETS  # noqa: E402
from training.deep_cfr.traversal import deal_batch, traverse  # noqa: E402

#: game -> traversals per batch (HULH trees are far larger per traversal)
TRAVERSALS = {"leduc": 4000, "fhp": 2000, "holdem": 300}


def traversal_rate(game_name: str, device: torch.device, seconds: float) -> tuple[float, float, float]:
    """(traversal infosets/s, mean rows per network call, bare-forward infosets/s at that size)."""
    game = load_game(game_name)
    enc = InfosetEncoder(game)
    width = PRESETS[game_name]["width"]
    torch.manual_seed(0)
    nets = [DeepCFRNetwork(enc.group_sizes, enc.num_bet_slots, width).to(device).eval() for _ in (0, 1)]
    bets, legal = torch.from_numpy(enc.bets).to(device), torch.from_numpy(enc.legal).to(device)
    calls = [0, 0]

    @torch.no_grad()
    def strategy(player, nodes, cards):
        calls[0] += 1
        calls[1] += len(nodes)
        node = torch.from_numpy(nodes.astype(np.int64)).to(device)
        out = nets[player](torch.from_numpy(cards).to(device), bets[node])
        return regret_matching(out, legal[node]).cpu().numpy()

    rng = np.random.default_rng(0)
    traverse(enc, deal_batch(enc, 50, rng), 0, strategy, rng)  # warm-up (numba, allocator)
    calls[:] = [0, 0]
    evaluated, start, player = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        evaluated += traverse(enc, deal_batch(enc, TRAVERSALS[game_name], rng), player, strategy, rng).infosets_evaluated
        player = 1 - player
    rate = evaluated / (time.perf_counter() - start)
    batch = max(1, round(calls[1] / calls[0]))
    cards = torch.from_numpy(np.tile(np.arange(enc.num_card_slots, dtype=np.int8), (batch, 1))).to(device)
    node = torch.from_numpy(rng.choice(enc.tree.decision_ids, size=batch)).to(device)
    with torch.no_grad():
        for _ in range(3):
            regret_matching(nets[0](cards, bets[node]), legal[node]).cpu()
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 2:
            regret_matching(nets[0](cards, bets[node]), legal[node]).cpu()
            reps += 1
    bare = reps * batch / (time.perf_counter() - start)
    return rate, batch, bare


def sgd_batch(game_name: str, batch: int) -> tuple[InfosetEncoder, tuple[torch.Tensor, ...]]:
    """A random value-loss batch of real betting nodes and cards of ``game_name``'s deck."""
    enc = InfosetEncoder(load_game(game_name))
    rng = np.random.default_rng(0)
    node = torch.from_numpy(rng.choice(enc.tree.decision_ids, size=batch))
    deck = np.asarray(enc.game.deck)
    cards = torch.from_numpy(np.where(rng.random((batch, enc.num_card_slots)) < 0.2, -1,
                                      rng.choice(deck, size=(batch, enc.num_card_slots))))
    bets, legal = torch.from_numpy(enc.bets)[node], torch.from_numpy(enc.legal)[node]
    return enc, (cards, bets, legal, torch.randn(batch, 3), torch.rand(batch))


def fused_rate(game_name: str, batch: int, steps: int) -> float:
    """Adam steps/s of :func:`training.common.fused_network.fit_weighted_mse` on the same kind of batch."""
    enc, (cards, bets, legal, target, weight) = sgd_batch(game_name, batch)
    net = DeepCFRNetwork(enc.group_sizes, enc.num_bet_slots, PRESETS[game_name]["width"])
    features = Features.build(cards.numpy(), bets.numpy(), enc.group_sizes)
    arrays = (target.numpy(), legal.float().numpy(), weight.numpy(), float(batch))
    fit_weighted_mse(net, features, *arrays, 1, 1e-3, 1.0)  # compile outside the clock
    start = time.perf_counter()
    fit_weighted_mse(net, features, *arrays, steps, 1e-3, 1.0)
    return steps / (time.perf_counter() - start)


def sgd_rate(game_name: str, batch: int, device: torch.device, steps: int) -> float:
    enc, batch_tensors = sgd_batch(game_name, batch)
    cards, bets, legal, target, weight = (t.to(device) for t in batch_tensors)
    net = DeepCFRNetwork(enc.group_sizes, enc.num_bet_slots, PRESETS[game_name]["width"]).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, fused=True)  # as DeepCFRTrainer.make_optimizer

    def step() -> None:
        loss = ((((net(cards, bets) - target) ** 2) * legal).sum(1) * weight).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()

    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"machine: {machine()}; torch {torch.__version__} on {args.device}, {args.threads} thread(s)"
          + (f", {torch.cuda.get_device_name()}" if args.device == "cuda" else ""))
    print("traversal throughput (external sampling, random-init value networks of the preset width)")
    print("game   | traversal infosets/s | mean rows/call | bare forward infosets/s | ratio")
    for game in ("leduc", "fhp", "holdem"):
        rate, batch, bare = traversal_rate(game, device, args.seconds)
        print(f"{game:6s} | {rate:20,.0f} | {batch:14,.0f} | {bare:23,.0f} | {rate / bare:5.0%}")
    print("SGD (value-network loss, Adam, grad clip 1): steps/s in torch | in the fused CPU kernels")
    for game, batch in (("leduc", 468), ("fhp", 10_000), ("holdem", 20_000)):
        steps = 200 if batch < 5000 else 20 if args.device == "cuda" else 4
        fused = f"{fused_rate(game, batch, steps):8.2f}" if args.device == "cpu" else "n/a (CPU only)"
        print(f"{game:6s} batch {batch:6,d}, width {PRESETS[game]['width']}: "
              f"{sgd_rate(game, batch, device, steps):8.2f} | {fused}")
    print("memory per stored sample")
    for game in ("leduc", "fhp", "holdem"):
        enc = InfosetEncoder(load_game(game))
        fields = {"node": ((), np.int32), "cards": ((enc.num_card_slots,), np.int8),
                  "target": ((3,), np.float32), "iteration": ((), np.int32)}
        size = Reservoir(1, fields).bytes_per_sample
        print(f"{game:6s}: {size} bytes/sample; the paper's 3 x 40M memories: {3 * 40e6 * size / 2**30:.2f} GiB")
    print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
