"""Build the shipped FHP bot (``bot/shipped/fhp/``) by distilling the lossless solution.

Run from the repository root, after ``pokerbot train --algo abstraction --game fhp --size
lossless --out runs/fhp_lossless``::

    python scripts/build_fhp_shipped.py --teacher runs/fhp_lossless [--width 256 --depth 3 --minutes 30]

Teacher data: for every canonical flop and every hand that misses it, the solution's average
strategy at all 56 flop decision nodes, and as weight the acting player's own reach there
under that strategy times the flop's orbit size (what a best responder's gain at that infoset
scales with). The network (:class:`bot.flop.network.FlopNet`, suit-canonical inputs) is fitted
by reach-weighted cross-entropy with Adam; the preflop part is the solution's exact table per
suit class. The result is measured exactly (:func:`bot.flop.best_response.flop_exploitability`
on the canonical flops) and written with a manifest carrying that figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.flop.best_response import FlopPolicy, flop_exploitability, flop_game_for  # noqa: E402
from bot.flop.game import FlopGame, leaf_reach, match_strategy, reach_down  # noqa: E402
from bot.flop.network import FlopNet, FlopNetPolicy, canonical_cards, one_hot_cards  # noqa: E402
from bot.flop.policies import solve_policy  # noqa: E402
from bot.shipped import SHIPPED_ROOT, write_manifest  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402


def teacher_data(fg: FlopGame, policy: FlopPolicy) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Canonical (hand, flop) cards ``[n, 2]``, ``[n, k]``, targets ``[n, D, 3]`` (float16) and
    weights ``[n, D]`` over every canonical flop's valid hands."""
    _, pre_reach = fg.preflop_reach(policy.preflop)
    root_reach = leaf_reach(fg.preflop, pre_reach)
    nodes = np.flatnonzero(fg.flop.decision >= 0)
    actors = fg.flop.actor[nodes]
    valid_count = int(fg.valid[0].sum())
    n = fg.num_flops * valid_count
    hands = np.empty((n, 2), dtype=np.int64)
    flops = np.empty((n, fg.flops.shape[1]), dtype=np.int64)
    targets = np.empty((n, fg.flop.num_decisions, 3), dtype=np.float16)
    weights = np.empty((n, fg.flop.num_decisions), dtype=np.float32)
    strategy = np.empty((fg.flop.num_decisions, fg.num_hands, 3))
    reach = np.empty((fg.flop.num_nodes, 2, fg.num_hands))
    for c in range(fg.num_flops):
        valid = fg.valid[c] > 0
        match_strategy(np.ascontiguousarray(policy.flop(c, c + 1)[0]), fg.flop.legal, strategy)
        reach_down(fg.flop.arrays, strategy, root_reach, fg.valid[c], reach)
        rows = slice(c * valid_count, (c + 1) * valid_count)
        hands[rows] = fg.hands[valid]
        flops[rows] = fg.flops[c]
        targets[rows] = strategy[:, valid].transpose(1, 0, 2)
        weights[rows] = (reach[nodes, actors][:, valid] * fg.weights[c]).T
    weights /= weights.mean()
    hands, flops = canonical_cards(fg.game, hands, flops)
    return hands, flops, targets, weights


def train(net: FlopNet, data: tuple, legal: np.ndarray, minutes: float, batch: int, lr: float, seed: int) -> int:
    """Adam on reach-weighted cross-entropy for ``minutes`` of wall time, the learning rate on a
    cosine from ``lr`` to 0 over that time (the machine is shared: a step budget would not say
    when it ends). Returns the steps taken."""
    hands, flops, targets, weights = data
    generator = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    mask = torch.from_numpy(legal)
    started = time.monotonic()
    budget = minutes * 60.0
    step = 0
    while (elapsed := time.monotonic() - started) < budget:
        for group in optimizer.param_groups:
            group["lr"] = lr * 0.5 * (1.0 + np.cos(np.pi * elapsed / budget))
        rows = generator.integers(0, len(hands), batch)
        logits = net(one_hot_cards(hands[rows], flops[rows])).masked_fill(~mask, -1e9)
        target = torch.from_numpy(targets[rows].astype(np.float32))
        loss = -(torch.from_numpy(weights[rows]) * (target * torch.log_softmax(logits, -1)).sum(-1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % 200 == 0:
            print(f"step {step} ({step * batch / len(hands):.2f} epochs) loss {loss.item():.5f} {elapsed:.0f} s", flush=True)
    return step


def preflop_classes(fg: FlopGame, policy: FlopPolicy, size: int) -> np.ndarray:
    """The teacher's preflop strategy per suit class ``[D0, classes, 3]`` (mean over members)."""
    strategy = np.empty(policy.preflop.shape)
    match_strategy(np.ascontiguousarray(policy.preflop, dtype=np.float64), fg.preflop.legal, strategy)
    table = np.zeros((strategy.shape[0], size, 3))
    counts = np.bincount(fg.hand_class, minlength=size)
    for a in range(3):
        for d in range(strategy.shape[0]):
            table[d, :, a] = np.bincount(fg.hand_class, weights=strategy[d, :, a], minlength=size) / counts
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", required=True, type=Path, help="the lossless solve (run dir or policy folder)")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=30.0, help="training wall time")
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=SHIPPED_ROOT / "fhp")
    parser.add_argument("--init", type=Path, help="continue from this shipped folder's network (same width and depth)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    game = load_game("fhp")
    fg = flop_game_for(game, True)
    teacher = solve_policy(fg, args.teacher)
    teacher_report = flop_exploitability(fg, teacher)
    print(f"teacher: {teacher_report.mbb(teacher_report.exploitability):.3f} mbb/g (NashConv/2)", flush=True)
    data = teacher_data(fg, teacher)
    print(f"{len(data[0]):,} (hand, flop) rows of teacher data", flush=True)
    net = FlopNet(fg.flop.num_decisions, args.width, args.depth)
    if args.init is not None:
        net.load_state_dict({k: v.float() for k, v in torch.load(args.init / "flop_net.pt", weights_only=True).items()})
    steps = train(net, data, fg.flop.legal, args.minutes, args.batch, args.lr, args.seed)
    epochs = steps * args.batch / len(data[0])
    shipped = FlopNetPolicy(game, preflop_classes(fg, teacher, 169), net)
    files = shipped.save(args.out)
    report = flop_exploitability(fg, shipped.flop_policy())
    average, total = report.mbb(report.exploitability), report.mbb(report.nash_conv)
    print(f"distilled: {average:.3f} mbb/g (NashConv/2), {total:.3f} mbb/g NashConv", flush=True)
    size = sum((args.out / f).stat().st_size for f in files)
    write_manifest(args.out, {
        "kind": "flop_net", "game": game.name, "name": "pokerbot-fhp",
        "description": (f"preflop: the lossless FHP solution's exact table per suit class; flop: a {args.depth}x{args.width} "
                        f"MLP on suit-canonical cards distilled from it ({steps:,} Adam steps of {args.batch}, {epochs:.1f} epochs, "
                        f"seed {args.seed})"),
        "strength": {
            "exploitability": f"{average:.2f} mbb/g (exact, NashConv/2)",
            "nash_conv": f"{total:.2f} mbb/g (exact, total)",
            "teacher": f"{teacher_report.mbb(teacher_report.exploitability):.3f} mbb/g (the lossless solve it was distilled from)",
        },
        "width": args.width, "depth": args.depth, "bytes": size,
    }, files)  # fmt: skip
    print(f"wrote {args.out} ({size / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
