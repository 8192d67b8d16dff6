"""Benchmark of match throughput: hands per second in-process and over the wire (our dealer and
two of our clients on loopback TCP), for cheap agents and a solved Leduc policy.

Run from the repository root::

    python benchmarks/bench_match.py                     # random vs call on every game
    python benchmarks/bench_match.py --policy leduc.json # + a tabular Leduc policy vs random

Wall seconds and this process's CPU seconds are printed (the machine may be shared; the wire
figures include the dealer and both client threads, all in this process, so CPU seconds cover
them). AIVAT's throughput (Leduc: exact value function, tables included; FHP/HULH: pot ×
equity) and variance reduction are measured too.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runnable as a plain script without `pip install -e .`

from benchmarks.bench_cfr_leduc import machine  # noqa: E402  (one machine line for every benchmark)
from bot.evaluation.aivat import aivat_values  # noqa: E402
from bot.evaluation.match import run_in_process, run_wire  # noqa: E402
from bot.registry import resolve_agent  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402


def timed(work) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def bench(game_name: str, a: str, b: str, hands: int, wire_hands: int) -> None:
    game = load_game(game_name)
    agents = (resolve_agent(a, game), resolve_agent(b, game))
    names = ("A", "B")
    run_in_process(game, agents, names, 50, 0)  # warm-up (numba evaluator, imports)
    wall, cpu, _ = timed(lambda: run_in_process(game, agents, names, hands, 1))
    print(
        f"{game_name:7s} {a} vs {b}: in-process {hands / wall:8,.0f} hands/s wall, {hands / cpu:8,.0f} hands/CPU-s ({hands:,} hands)"
    )
    factories = (lambda: resolve_agent(a, game), lambda: resolve_agent(b, game))
    wall, cpu, _ = timed(lambda: run_wire(game, factories, names, wire_hands, 1))
    print(
        f"{game_name:7s} {a} vs {b}: wire       {wire_hands / wall:8,.0f} hands/s wall, {wire_hands / cpu:8,.0f} hands/CPU-s ({wire_hands:,} hands)"
    )


def bench_aivat(game_name: str, a: str, b: str, hands: int) -> None:
    game = load_game(game_name)
    agents = (resolve_agent(a, game), resolve_agent(b, game))
    result = run_in_process(game, agents, ("A", "B"), hands, 2)
    records = [(h.record, h.position) for h in result.hands]
    wall, cpu, values = timed(lambda: aivat_values(records, agents, game))
    factor = float(np.var(result.chips, ddof=1) / np.var(values, ddof=1))
    print(
        f"{game_name:7s} AIVAT ({Path(a).name} vs {b}): {hands / wall:8,.0f} hands/s wall, "
        f"{hands / cpu:8,.0f} hands/CPU-s; variance x{factor:.2f} lower"
    )


def bench_processes(game_name: str, a: str, b: str, hands: int) -> None:
    """`pokerbot dealer` and two `pokerbot connect` processes, timed from launch to the SCORE
    line (process start-up included)."""
    cli = str(Path(sys.executable).with_name("pokerbot"))
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        dealer = subprocess.Popen(
            [cli, "dealer", "bench", game_name, str(hands), "1", "A", "B", "-q"],
            cwd=scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert dealer.stdout is not None
        ports = dealer.stdout.readline().split()
        clients = [
            subprocess.Popen(
                [cli, "connect", "127.0.0.1", port, "--game", game_name, "--agent", agent],
                stdout=subprocess.DEVNULL,
            )
            for port, agent in zip(ports, (a, b), strict=True)
        ]
        dealer.communicate()
        for client in clients:
            client.wait()
        wall = time.perf_counter() - start
    print(
        f"{game_name:7s} {a} vs {b}: 3 processes {hands / wall:8,.0f} hands/s wall ({hands:,} hands, start-up included)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=5000, help="in-process hands per game")
    parser.add_argument("--wire-hands", type=int, default=1000, help="hands over the wire per game")
    parser.add_argument(
        "--policy", help="a solved Leduc policy: a pokerbot solve run directory (pokerbot solve --game leduc --out RUN) or an older policy JSON"
    )
    args = parser.parse_args()
    print(machine())
    for game_name in ("kuhn", "leduc", "fhp", "holdem"):
        bench(game_name, "random", "call", args.hands, args.wire_hands)
    bench_processes("holdem", "random", "call", 4 * args.wire_hands)
    if args.policy:
        bench("leduc", args.policy, "random", args.hands, args.wire_hands)
    bench_aivat("leduc", args.policy or "random", "random", args.hands)
    bench_aivat("fhp", "random", "call", args.hands // 2)
    bench_aivat("holdem", "random", "call", args.hands // 2)


if __name__ == "__main__":
    main()
