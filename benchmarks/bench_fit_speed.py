"""Value-network fits on the CPU: Adam steps/s and fit quality of every fit path at the FHP and
HULH presets' shapes (``training/deep_cfr/fit.py``; Brown et al. 2019, algorithm 1 losses).

The memory is real: SD-CFR with the ``fhp`` preset runs ``--memory-iterations`` iterations on the
24-card FHP (FHP's betting, 4 suits x 6 ranks: ``numRanks = 6``) and player 0's advantage memory
is split 90/10 into the fitted rows and held-out rows. Each path fits the same initial network
with the same schedule; the table prints CPU steps/s and the held-out loss (the weighted MSE of
the normalised targets over legal actions, linear-CFR weights; 1.0 = predicting 0), over all
held-out rows and over those of the newest iteration only (rows no earlier network has seen:
the fair comparison for the warm start, whose network fitted the older rows). Paths:

* ``fused-fp32``: the compiled kernels (``training/common/fused_rows.py``), the ``auto`` path on the CPU;
* ``torch-fp32``: torch autograd and Adam (the FHP preset's path before the kernels took rows);
* ``torch-bf16 autocast``: bf16 matrix products over fp32 weights (``fit_backend = "bf16"``);
* ``torch-bf16 weights``: a bf16 copy of the network does forward and backward, fp32 master
  weights take the Adam step (mixed precision, Micikevicius et al. 2018); benchmark only;
* ``torch.compile``: the torch-fp32 loop over a compiled network (compile time apart);
* larger batches with fewer steps (same samples seen) and a warm start from the previous
  iteration's network with a quarter of the steps.

HULH's preset shape (width 96, batch 20,000) and FHP's paper shape (width 96, batch 10,000) are
timed for steps/s only, on random HULH rows / the same memory. ``--leduc-iterations N`` adds
the exact exploitability of Leduc SD-CFR (its preset) after N iterations for each fit backend.
Every figure is CPU seconds of this process (1 torch / numba thread); state the load with them.
The first table is the exception: wall-clock steps/s of the compiled row fit on one and two
numba threads (each step's rows split in two, ``threads`` in the run's config), the only
figure here that is about using both cores of a 2-core machine.

    nice python benchmarks/bench_fit_speed.py [--memory-iterations 8] [--leduc-iterations 0] [--threads-only]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from bot.agents.encoding import InfosetEncoder  # noqa: E402
from bot.agents.network import DeepCFRNetwork  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402
from training.common.reservoir import Reservoir  # noqa: E402
from training.deep_cfr.config import PRESETS, SAMPLED, DeepCFRConfig  # noqa: E402
from training.deep_cfr.fit import NetworkFit, native_bf16  # noqa: E402
from training.deep_cfr.merged_memory import row_weights  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer  # noqa: E402

CPU = torch.device("cpu")


def fhp24(folder: Path) -> Path:
    """The 24-card FHP gamedef."""
    text = (Path(__file__).resolve().parents[1] / "protocol/games/fhp.limit.2p.reverse_blinds.game").read_text()
    path = folder / "fhp24.game"
    path.write_text(text.replace("numRanks = 13", "numRanks = 6"))
    return path


def real_memory(game_path: Path, folder: Path, iterations: int) -> tuple[DeepCFRTrainer, Reservoir, dict]:
    """Player 0's advantage memory after ``iterations`` SD-CFR iterations of the fhp preset, as
    (trainer, fitted rows, held-out rows)."""
    config = DeepCFRConfig(**(PRESETS["fhp"] | SAMPLED | dict(game=str(game_path), iterations=iterations, evaluate_every=0,
                                                    checkpoint_every=10_000)))
    trainer = DeepCFRTrainer.new(config, folder / "run", progress=False)
    trainer.train()
    return (trainer, *split_memory(trainer.advantage[0]))


def split_memory(memory: Reservoir, held_share: float = 0.1) -> tuple[Reservoir, dict]:
    """A memory's rows as (fitted rows, held-out rows), ``held_share`` of them held out at random (seed 0)."""
    rows = memory.stored()
    rng = np.random.default_rng(0)
    held = rng.random(len(rows["node"])) < held_share
    fitted = Reservoir(int((~held).sum()), {name: (array.shape[1:], array.dtype) for name, array in rows.items()})
    fitted.add({name: array[~held] for name, array in rows.items()}, rng)
    return fitted, {name: array[held] for name, array in rows.items()}


def held_out_loss(net: DeepCFRNetwork, rows: dict, encoder: InfosetEncoder, divisor: float) -> float:
    """Weighted MSE over legal actions of the normalised targets, per unit weight."""
    legal = torch.from_numpy(encoder.legal[rows["node"]])
    weight = torch.from_numpy(row_weights(rows, True))
    with torch.no_grad():
        out = net(torch.from_numpy(rows["cards"].astype(np.int64)), torch.from_numpy(encoder.bets[rows["node"]]))
    target = torch.from_numpy(rows["target"]) / divisor
    per_row = (((out - target) ** 2) * legal).sum(dim=1).double()
    return float((per_row * weight).sum() / (weight * legal.sum(dim=1)).sum())


class Bf16Weights(NetworkFit):
    """``torch-bf16 weights``: the torch loop on a bf16 copy of the network, fp32 master weights
    updated by Adam (the copy refreshed every step)."""

    def fit(self, net, optimizer, memory, steps, batch_size, rng, average, iteration, label="SGD"):
        work = copy.deepcopy(net).to(torch.bfloat16)
        masters, copies = list(net.parameters()), list(work.parameters())
        batches, form = self.batches(memory, steps, batch_size, rng, iteration, self.config.normalize_targets)
        rates = self.learning_rates(steps)
        losses = []
        for step, (cards, bets, legal, target, weight, denominator) in enumerate(batches):
            with torch.no_grad():
                for master, low in zip(masters, copies, strict=True):
                    low.copy_(master)
            outputs = work(cards, bets.to(torch.bfloat16)).float()
            loss = ((((outputs - target) ** 2) * legal).sum(dim=1) * weight).sum() / denominator
            work.zero_grad(set_to_none=True)
            loss.backward()
            for master, low in zip(masters, copies, strict=True):
                master.grad = low.grad.float()
            torch.nn.utils.clip_grad_norm_(masters, self.config.grad_clip)
            for group in optimizer.param_groups:
                group["lr"] = rates[step]
            optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses[-max(1, steps // 10):])), form


def timed_fit(fit: NetworkFit, net: DeepCFRNetwork, memory: Reservoir, steps: int, batch: int) -> float:
    """CPU seconds of one value fit (iteration 8's weighting) of ``net`` in place."""
    started = time.process_time()
    fit.fit(net, torch.optim.Adam(net.parameters()), memory, steps, batch, np.random.default_rng(1), average=False,
            iteration=8)
    return time.process_time() - started


def fit_table(game, memory: Reservoir, held: dict, previous: DeepCFRNetwork | None, compile_net: bool) -> None:
    """The FHP-preset table: every path on the real memory."""
    preset = PRESETS["fhp"]
    encoder = InfosetEncoder(game)
    width, steps, batch = preset["width"], preset["sgd_steps"], preset["batch_size"]

    def config(**changes) -> DeepCFRConfig:
        return DeepCFRConfig(**(preset | dict(game="fhp") | changes))

    def make(width: int = width) -> DeepCFRNetwork:
        torch.manual_seed(0)
        return DeepCFRNetwork.for_game(game, width=width, canonical_suits=True)

    rows: list[tuple[str, Callable[[], tuple[NetworkFit, DeepCFRNetwork, int, int]]]] = [
        ("fused-fp32 (auto)", lambda: (NetworkFit(config(fit_backend="fused"), encoder, CPU, None), make(), steps, batch)),
        ("torch-fp32", lambda: (NetworkFit(config(fit_backend="torch"), encoder, CPU, None), make(), steps, batch)),
        ("torch-bf16 autocast", lambda: (NetworkFit(config(fit_backend="bf16"), encoder, CPU, None), make(), steps, batch)),
        ("torch-bf16 weights", lambda: (Bf16Weights(config(fit_backend="torch"), encoder, CPU, None), make(), steps, batch)),
        ("fused-fp32, batch x4, steps / 4", lambda: (NetworkFit(config(), encoder, CPU, None), make(), steps // 4, 4 * batch)),
        ("fused-fp32, batch x16, steps / 16", lambda: (NetworkFit(config(), encoder, CPU, None), make(), steps // 16, 16 * batch)),
        ("fused-fp32, width 64, steps x3", lambda: (NetworkFit(config(width=64), encoder, CPU, None), make(64), 3 * steps, batch)),
    ]
    if previous is not None:
        rows.append(("fused-fp32, warm start, steps / 4",
                     lambda: (NetworkFit(config(), encoder, CPU, None), copy.deepcopy(previous), steps // 4, batch)))
    if compile_net:
        rows.append(("torch.compile fp32", lambda: (NetworkFit(config(fit_backend="torch"), encoder, CPU, None),
                                                    torch.compile(make()), steps, batch)))
    print(f"\nFHP preset shape (width {width}, batch {batch}, {steps} steps, lr {preset['learning_rate']} "
          f"{preset['lr_schedule']}); memory {len(memory):,} fitted rows, {len(held['node']):,} held out")
    print("| path | steps | batch | steps/s (CPU) | CPU s per fit | held-out loss | held-out, newest iteration |\n"
          "|---|---|---|---|---|---|---|")
    for name, build in rows:
        try:
            fit, net, n, b = build()
            if name.startswith("torch.compile"):
                started = time.process_time()
                timed_fit(fit, net, memory, 2, b)
                name += f" (compiling: {time.process_time() - started:.0f} CPU s)"
            seconds = timed_fit(fit, net, memory, n, b)
        except Exception as error:  # noqa: BLE001 - a path that cannot run here is a row of the table
            print(f"| {name} | - | - | failed: {type(error).__name__}: {str(error).splitlines()[0][:80]} | - | - | - |")
            continue
        net = getattr(net, "_orig_mod", net)
        newest = held["iteration"] == held["iteration"].max()
        losses = [held_out_loss(net, {k: v[rows] for k, v in held.items()}, encoder, fit.target_scale)
                  for rows in (slice(None), newest)]
        print(f"| {name} | {n} | {b:,} | {n / seconds:.1f} | {seconds:.2f} | {losses[0]:.4f} | {losses[1]:.4f} |")


def random_memory(encoder: InfosetEncoder, rows: int) -> Reservoir:
    """``rows`` random memory rows at the game's decision nodes (distinct cards in every slot)."""
    rng = np.random.default_rng(0)
    nodes = np.flatnonzero(encoder.legal.sum(axis=1) > 0)
    slots = encoder.num_card_slots
    memory = Reservoir(rows, {"node": ((), np.int32), "cards": ((slots,), np.int8), "target": ((3,), np.float32),
                              "iteration": ((), np.int32)})
    memory.add({"node": rng.choice(nodes, rows).astype(np.int32),
                "cards": np.argsort(rng.random((rows, 52), dtype=np.float32), axis=1)[:, :slots].astype(np.int8),
                "target": rng.standard_normal((rows, 3)).astype(np.float32),
                "iteration": np.ones(rows, np.int32)}, rng)
    return memory


def thread_table(steps: int, repeats: int) -> None:
    """Wall-clock Adam steps/s of the compiled row fit on one and on two threads, at the 2-core
    presets' shape (batch 2,048; widths 64 and 128; FHP's and HULH's inputs), alternating the
    two so that a change of load hits both; the final weights' largest difference between them."""
    print(f"\ncompiled row fits (fit_backend fused), batch 2,048: wall steps/s, median of {repeats}, {steps} steps each")
    for game_name, width in (("fhp", 64), ("fhp", 128), ("holdem", 64)):
        game = load_game(game_name)
        encoder = InfosetEncoder(game)
        memory = random_memory(encoder, 200_000)
        rates, nets = {1: [], 2: []}, {}
        for _ in range(repeats):
            for threads in (1, 2):
                config = DeepCFRConfig(game=game_name, width=width, fit_backend="fused", normalize_targets=True,
                                       canonical_suits=True, threads=threads)
                torch.manual_seed(0)
                net = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, width, canonical_suits=True)
                fit = NetworkFit(config, encoder, CPU, None)
                fit.fit(net, torch.optim.Adam(net.parameters()), memory, 10, 2048, np.random.default_rng(1),
                        average=False, iteration=8)  # compiled and warm
                torch.manual_seed(0)
                net = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, width, canonical_suits=True)
                started = time.perf_counter()
                fit.fit(net, torch.optim.Adam(net.parameters()), memory, steps, 2048, np.random.default_rng(1),
                        average=False, iteration=8)
                rates[threads].append(steps / (time.perf_counter() - started))
                nets[threads] = net
        one, two = float(np.median(rates[1])), float(np.median(rates[2]))
        gap = max((a - b).abs().max().item() for a, b in zip(nets[1].parameters(), nets[2].parameters(), strict=True))
        print(f"  {game_name:6s} width {width:3d}: 1 thread {one:6.1f}, 2 threads {two:6.1f} ({two / one:.2f}x); "
              f"largest weight difference {gap:.1e}")


def speed_only(game, memory: Reservoir | None, width: int, batch: int, steps: int, label: str) -> None:
    """Steps/s of fused, torch fp32 and bf16 at a paper/HULH shape."""
    encoder = InfosetEncoder(game)
    if memory is None:
        memory = random_memory(encoder, 4 * batch)
    print(f"\n{label} (width {width}, batch {batch:,}): Adam steps/s (CPU), {steps} steps each")
    for backend in ("fused", "torch", "bf16"):
        config = DeepCFRConfig(game="fhp", width=width, fit_backend=backend, normalize_targets=True)
        torch.manual_seed(0)
        net = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, width)
        fit = NetworkFit(config, encoder, CPU, None)
        seconds = timed_fit(fit, net, memory, steps, batch)
        print(f"  {fit.path:11s} {steps / seconds:7.2f} steps/s")


def leduc_exploitability(iterations: int) -> None:
    """Exact exploitability of Leduc SD-CFR (preset) after ``iterations``, per fit backend."""
    print(f"\nLeduc SD-CFR (preset), exact exploitability after {iterations} iterations")
    for backend in ("fused", "torch", "bf16"):
        config = DeepCFRConfig(**(PRESETS["leduc"] | dict(game="leduc", iterations=iterations, fit_backend=backend,
                                                          evaluate_every=iterations)))
        with tempfile.TemporaryDirectory() as tmp:
            started = time.process_time()
            records = DeepCFRTrainer.new(config, Path(tmp) / "run", progress=False).train()
            seconds = time.process_time() - started
        final = records[-1]
        value = final.get("sdcfr_exploitability_mbb", final.get("exploitability_mbb"))
        print(f"  {final['fit_backend']:11s} {value:8.2f} mbb/g; training {sum(r['training_s'] for r in records):6.1f} s "
              f"wall of fits, {seconds:6.1f} CPU s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory-iterations", type=int, default=8)
    parser.add_argument("--leduc-iterations", type=int, default=0)
    parser.add_argument("--paper-steps", type=int, default=10, help="steps per path at the paper/HULH shapes")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile row")
    parser.add_argument("--threads-only", action="store_true",
                        help="only the one- against two-thread table of the compiled row fits")
    parser.add_argument("--thread-steps", type=int, default=300, help="steps per fit in the thread table")
    parser.add_argument("--repeats", type=int, default=3, help="fits per thread count in the thread table")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{machine()}; torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"native bf16 {native_bf16()}")
    thread_table(args.thread_steps, args.repeats)
    if args.threads_only:
        return
    with tempfile.TemporaryDirectory() as tmp:
        game_path = fhp24(Path(tmp))
        started = time.process_time()
        trainer, memory, held = real_memory(game_path, Path(tmp), args.memory_iterations)
        print(f"memory: {args.memory_iterations} SD-CFR iterations of the fhp preset on the 24-card FHP, "
              f"{time.process_time() - started:.0f} CPU s")
        previous = trainer.stack_nets(trainer.stack[-2])[0] if len(trainer.stack) > 2 else None
        fit_table(trainer.game, memory, held, previous, not args.no_compile)
        speed_only(trainer.game, memory, 96, 10_000, args.paper_steps, "FHP paper shape, the same memory")
    speed_only(load_game("holdem"), None, 96, 20_000, max(2, args.paper_steps // 2), "HULH preset shape, random rows")
    if args.leduc_iterations:
        leduc_exploitability(args.leduc_iterations)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
