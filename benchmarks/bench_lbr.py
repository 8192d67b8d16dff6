"""Benchmark of local best response: hands per second on heads-up limit hold'em, and LBR's
values against the card-blind agents on HULH and FHP.

Run from the repository root::

    python benchmarks/bench_lbr.py                       # speed, then values (minutes)
    python benchmarks/bench_lbr.py --speed-deals 20 --fhp-deals 0 --holdem-deals 0
    python benchmarks/bench_lbr.py --network runs/sdcfr-holdem   # a trained bundle instead
    python benchmarks/bench_lbr.py --speed-deals 0 --fhp-deals 0 --holdem-deals 0 --shipped-deals 10
    python benchmarks/bench_lbr.py --speed-deals 0 --fhp-deals 0 --holdem-deals 0 --rate-deals 100 \
        --before /tmp/lbr-before      # a checkout of bcecf42: hands/s before and after
    python benchmarks/bench_lbr.py --speed-deals 0 --fhp-deals 0 --holdem-deals 0 --breakdown-deals 100

FHP ratios (``--fhp-ratio-deals``): LBR's value against FHP policies (``random``, ``call``,
``raise``; ``default``, the shipped FHP bot, is asked hand by hand and so costs seconds a deal)
over its exact best response, per seat and over both seats (LBR is a lower bound: <= 1 up to
the interval).

Rate (``--rate-deals``): LBR's hands per wall second and CPU-ms a hand (every thread and
worker process counted) against the shipped HULH bot (``default``) and ``call``, LBR in every
round, each measured in a fresh subprocess whose ``PYTHONPATH`` is this checkout and, with
``--before``, another one (e.g. the commit before a change): in one process with numba's
threads, in one process on one thread (the cost a core pays per hand), and with
``--rate-workers N`` on N worker processes (:mod:`bot.evaluation.lbr_workers`; its wall rate
with and without the workers' start-up, its CPU with it). A fresh process starts with empty
caches (the compact bot keeps the buckets of every board it met, so long runs get faster than
this rate). ``--breakdown-deals``: where the one-thread CPU goes (equities, bucket features,
nearest centres, the rest of the range queries, LBR's own Python).

Shipped bot (``--shipped-deals``): LBR against the shipped HULH bot (``default``, a compact
abstraction whose buckets are computed from the cards) with its batched ``range_probabilities``
(:mod:`bot.abstraction.range_buckets`: every hand of a board at once) and with the interface's default loop
(one ``action_probabilities`` per hand, the path before the batch existed); then a duplicate
match of the bot against ``call`` with and without AIVAT (AIVAT asks the agent only for the hand
it holds, so its cost is the pot x equity value function, not the bot).

Speed: LBR against ``call``, ``random`` and network agents (untrained default width-64
networks held in memory: a Deep CFR average network and an SD-CFR stack
of ``--stack`` iterations, whose average policy reads every entry at every earlier own decision,
both through :class:`bot.agents.range_grid.RangeGrid`; or the bundle ``--network`` names), with LBR acting in every round (preflop equities sampled)
and with ``--call-rounds 0``. Values: LBR's mbb/g with its 95% interval against ``call``,
``raise`` and ``random`` on HULH and FHP. Each line states wall seconds, CPU-ms a hand and
LBR's value (equal before and after a speed change); the machine line states the load (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

# pokerbot lbr (bot/commands/lbr.py) makes idle OpenMP threads sleep (PASSIVE);
# --spinning-threads measures the alternative, threads that keep spinning (ACTIVE)
os.environ["OMP_WAIT_POLICY"] = "ACTIVE" if "--spinning-threads" in sys.argv else "PASSIVE"

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runnable as a plain script without `pip install -e .`

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402  (one machine line for every benchmark)
from bot.agents.base import Agent  # noqa: E402
from bot.agents.deep_cfr import DeepCFRAgent  # noqa: E402
from bot.agents.network import DeepCFRNetwork  # noqa: E402
from bot.commands.lbr import single_threaded_torch  # noqa: E402
from bot.evaluation.lbr import LBRConfig, run_lbr  # noqa: E402
from bot.registry import resolve_agent  # noqa: E402
from protocol.gamedef import Game, load_game  # noqa: E402


def untrained_network_agent(game: Game, kind: str, iterations: int) -> Agent:
    """A Deep CFR / SD-CFR agent on random width-64 networks held in memory (the attributes
    :class:`bot.agents.deep_cfr.DeepCFRAgent` reads of a bundle): Deep CFR's average network,
    or an SD-CFR stack (sigma^1 uniform, then one value network per position and iteration,
    weight = iteration)."""
    torch.manual_seed(0)
    networks = {}
    if kind == "deep-cfr":
        networks["average"] = DeepCFRNetwork.for_game(game).eval()
        stack = []
    else:
        stack = [{"weight": 1, "uniform": True}]
        for t in range(2, iterations + 1):
            files = [f"p{position}_t{t}" for position in (0, 1)]
            networks.update({name: DeepCFRNetwork.for_game(game).eval() for name in files})
            stack.append({"weight": t, "files": files})
    bundle = SimpleNamespace(game=game, kind=kind, stack=stack, average="average", argmax_fallback=True,
                             root=Path("<memory>"), network=networks.__getitem__,
                             weights=np.array([float(entry["weight"]) for entry in stack]))
    return DeepCFRAgent(game, bundle)


def speed(game: Game, label: str, agent: Agent, deals: int, config: LBRConfig) -> None:
    run_lbr(game, agent, 1, 99, config)  # warm-up: numba kernels, network loads
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_lbr(game, agent, deals, 1, config)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    counters = result.counters
    print(f"  {label:30s} {2 * deals / wall:6.3g} hands/s ({2 * deals} hands, {wall:.1f} s; "
          f"{1000 * cpu / (2 * deals):.1f} CPU-ms a hand; LBR {result.overall().mean:+.1f} mbb/g; "
          f"{counters.enumerated} enumerated / {counters.sampled} sampled equities; "
          f"{result.agent_queries} range queries, {result.hands_queried / max(1, result.agent_queries):.0f} hands each)")


class OneHandAtATime(Agent):
    """``agent`` asked hand by hand: the interface's default ``range_probabilities`` loop."""

    def __init__(self, agent: Agent) -> None:
        super().__init__(agent.game)
        self.inner, self.name = agent, agent.name

    def action_probabilities(self, view):
        return self.inner.action_probabilities(view)


def range_query_cpu(game: Game, agent: Agent) -> None:
    """CPU seconds of one range query over every live hand of a fresh random board per round,
    batched and one hand at a time (the arrays are checked equal)."""
    from dataclasses import replace

    from bot.evaluation.lbr import PrivateHands
    from protocol.matchstate import MatchState

    hands = PrivateHands(game)
    rng = np.random.default_rng(5)
    print(f"Shipped bot {agent.name}: one range query over every live hand (CPU seconds of this process):")
    agent.range_probabilities(MatchState(1, 0, "cc/cc/cc/", ((), (0, 1)), ((2, 3, 4), (5,), (6,))), hands.cards[:2] + 8)  # compile
    for round_index, betting in ((1, "cc/"), (2, "cc/cc/"), (3, "cc/cc/cc/")):
        cards = tuple(int(c) for c in rng.choice(52, 2 + game.board_cards_through(round_index), replace=False))
        board = cards[2:]
        view = MatchState(1, 0, betting, ((), cards[:2]), tuple(board[game.board_cards_through(r - 1): game.board_cards_through(r)]
                                                                for r in range(1, round_index + 1)))  # fmt: skip
        rows = hands.cards[hands.disjoint(board)]
        cpu = time.process_time()
        batched = agent.range_probabilities(view, rows)
        batch_cpu = time.process_time() - cpu
        cpu = time.process_time()
        single = OneHandAtATime(agent).range_probabilities(replace(view), rows)
        single_cpu = time.process_time() - cpu
        assert np.array_equal(batched, single)
        print(f"  round {round_index}: {len(rows)} hands, batched {batch_cpu:.3f} s, one at a time {single_cpu:.3f} s "
              f"({single_cpu / batch_cpu:.0f}x; equal arrays)")


def shipped_speed(deals: int) -> None:
    """LBR hands/s against the shipped bot, batched and one hand at a time; then a duplicate
    match against ``call`` and the AIVAT pass over its hands, timed apart."""
    from bot.evaluation.aivat import aivat_values
    from bot.evaluation.match import run_in_process

    holdem = load_game("holdem")
    shipped = resolve_agent("default", holdem)
    range_query_cpu(holdem, shipped)
    print(f"Shipped bot {shipped.name}, LBR in every round ({deals} deals x 2 seats, seed 1):")
    for label, agent in (("batched range_probabilities", shipped), ("one hand at a time", OneHandAtATime(shipped))):
        speed(holdem, label, agent, deals, LBRConfig())
    agents = (shipped, resolve_agent("call", holdem))
    wall = time.perf_counter()
    result = run_in_process(holdem, agents, ("A", "B"), 10 * deals, 1, duplicate=True)
    play = time.perf_counter() - wall
    aivat_values([(h.record, h.position) for h in result.hands], agents, holdem)
    aivat = time.perf_counter() - wall - play
    hands = len(result.hands)
    print(f"  match vs call, duplicate: play {hands / play:6.2f} hands/s, AIVAT pass {hands / aivat:6.2f} hands/s, "
          f"together {hands / (play + aivat):6.2f} hands/s ({hands} hands, {play:.1f} + {aivat:.1f} s)")


RATE_SCRIPT = """
import json, resource, sys, time
try:
    from bot.registry import resolve_agent
except ImportError:  # the code before the registry moved (a --before tree of an older commit)
    from bot.agents.registry import resolve_agent
from bot.evaluation.lbr import LBRConfig, run_lbr
from protocol.gamedef import load_game
if __name__ == "__main__":
    game, name, deals, seed, workers = load_game("holdem"), sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if workers:
        from bot.evaluation.lbr_workers import run_lbr_workers
        first = []
        wall = time.perf_counter()
        result = run_lbr_workers(game, name, deals, seed, LBRConfig(), workers, resolve_agent,
                                 progress=lambda done: first or first.append((time.perf_counter(), done)))
        end = time.perf_counter()
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        steady = 2 * (deals - first[0][1]) / (end - first[0][0])
        print(json.dumps({"wall": end - wall, "cpu": cpu.ru_utime + cpu.ru_stime, "steady": steady,
                          "mbb": result.overall().mean, "chips": result.chips}))
    else:
        agent = resolve_agent(name, game)
        run_lbr(game, agent, 1, 99, LBRConfig())  # compile / load the numba kernels
        wall, cpu = time.perf_counter(), time.process_time()
        result = run_lbr(game, agent, deals, seed, LBRConfig())
        print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                          "mbb": result.overall().mean, "chips": result.chips}))
"""

#: Environment of a one-thread run: numba's and BLAS's pools cut to one thread.
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def rate(code: Path, agent_name: str, deals: int, workers: int = 0, one_thread: bool = False, seed: int = 1) -> dict:
    """One subprocess's LBR run against ``agent_name`` on HULH with ``code`` first on the path:
    in that process (``workers`` 0; ``one_thread``: numba and BLAS on one thread) or on
    ``workers`` processes (``steady``: hands/s after the first block, i.e. without start-up)."""
    env = os.environ | {"PYTHONPATH": str(code), "OMP_WAIT_POLICY": "PASSIVE"} | (ONE_THREAD if one_thread else {})
    done = subprocess.run([sys.executable, "-c", RATE_SCRIPT, agent_name, str(deals), str(seed), str(workers)],
                          env=env, cwd=code, capture_output=True, text=True)  # fmt: skip (-c puts the cwd first)
    if done.returncode:
        raise SystemExit(f"LBR rate run with PYTHONPATH={code} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def rates(deals: int, before: Path | None, workers: int) -> None:
    """Hands/s against the shipped bot and ``call``: this checkout and ``before`` in one
    process (numba's threads, then one thread), then this checkout on ``workers`` processes;
    the chips of every run are compared (the same seeds must give the same play)."""
    runs = [("after", ROOT, 0, False), ("after, 1 thread", ROOT, 0, True)]
    if before:
        runs += [("before", before, 0, False), ("before, 1 thread", before, 0, True)]
    if workers:
        runs.append((f"after, {workers} processes", ROOT, workers, False))
    print(f"LBR rate on HULH, LBR in every round ({deals} deals x 2 seats, seed 1, fresh process each):")
    for agent_name in ("default", "call"):
        chips = []
        for label, code, processes, one_thread in runs:
            load = os.getloadavg()[0]
            result = rate(code, agent_name, deals, processes, one_thread)
            chips.append(result["chips"])
            hands = 2 * deals
            steady = f", {result['steady']:.2f} hands/s after start-up" if processes else ""
            print(f"  {agent_name:8s} {label:20s} {hands / result['wall']:7.2f} hands/s wall{steady}, "
                  f"{1000 * result['cpu'] / hands:6.1f} CPU-ms a hand ({hands} hands, {result['wall']:.1f} s wall, "
                  f"{result['cpu']:.1f} s CPU{' with start-up' if processes else ''}; load {load:.2f} -> "
                  f"{os.getloadavg()[0]:.2f}); LBR {result['mbb']:+.1f} mbb/g")
        print(f"  {agent_name:8s} same chips in every deal in all {len(runs)} runs: {all(c == chips[0] for c in chips)}")


def warm_flops(agent) -> None:
    """Fill the shipped bot's flop bucket cache with every canonical flop (1,755), as a long
    LBR run ends up having it: each of its ~22,100 flops once (the cache keys on canonical
    boards)."""
    from itertools import combinations

    started = time.process_time()
    for flop in combinations(range(52), 3):
        rest = [c for c in range(52) if c not in flop][:2]
        agent.buckets(1, np.array([rest], dtype=np.int64), flop)
    print(f"  every canonical flop's buckets: {time.process_time() - started:.0f} CPU-s")


def breakdown(deals: int, warm: bool) -> None:
    """CPU-ms a hand of LBR's parts against the shipped bot, numba and BLAS on one thread, in
    this process (the board caches warmed by 20 other deals, and with ``warm`` by every
    canonical flop: a long run's state)."""
    import functools
    from collections import Counter

    import numba
    from threadpoolctl import threadpool_limits

    import bot.abstraction.range_buckets as buckets
    import bot.evaluation.lbr as lbr

    numba.set_num_threads(1)
    threadpool_limits(1)
    spent: Counter[str] = Counter()

    def timed(label: str, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            cpu = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - cpu
        return wrapper

    holdem = load_game("holdem")
    agent = resolve_agent("default", holdem)
    lbr.checkdown_equity = timed("equities (lbr_equity.checkdown_equity)", lbr.checkdown_equity)
    buckets.board_features = timed("bucket features (board_features, board_histograms)", buckets.board_features)
    buckets.board_histograms = timed("bucket features (board_features, board_histograms)", buckets.board_histograms)
    buckets.buckets_of = timed("nearest centres / percentiles (buckets_of)", buckets.buckets_of)
    agent.range_probabilities = timed("agent range queries, all", agent.range_probabilities)
    if warm:
        warm_flops(agent)
    run_lbr(holdem, agent, 20, 99, LBRConfig())
    spent.clear()
    cpu = time.process_time()
    run_lbr(holdem, agent, deals, 1, LBRConfig())
    total = time.process_time() - cpu
    hands = 2 * deals
    print(f"LBR against the shipped bot, one thread, {'every flop cached' if warm else 'fresh caches'} "
          f"({hands} hands, seed 1; load {os.getloadavg()[0]:.2f}): "
          f"{1000 * total / hands:.1f} CPU-ms a hand")
    for label, seconds in spent.most_common():
        print(f"  {label:45s} {1000 * seconds / hands:6.1f} CPU-ms a hand")
    rest = total - spent["equities (lbr_equity.checkdown_equity)"] - spent["agent range queries, all"]
    print(f"  {'LBR itself (ranges, betting, Python)':45s} {1000 * rest / hands:6.1f} CPU-ms a hand")


def fixed_flop_policy(fg, kind: str):
    """Always call, or raise where legal (else call), as FHP flop-pass tables (card-blind, so
    suit-invariant: the canonical flops are exact)."""
    from bot.flop.best_response import FlopPolicy

    def fixed(table: np.ndarray) -> np.ndarray:
        out = np.zeros_like(table)
        raising = (table[..., 2] > 0) if kind == "raise" else np.zeros(table.shape[:-1], dtype=bool)
        out[..., 2] = raising
        out[..., 1] = ~raising
        return out

    flop = fixed(fg.uniform_table(fg.flop))
    return FlopPolicy(fixed(fg.uniform_table(fg.preflop)), lambda lo, hi: np.broadcast_to(flop, (hi - lo, *flop.shape)), True)


def fhp_ratios(deals: int, agents: list[str]) -> None:
    """LBR's mbb/g against FHP policies next to their exact best response
    (:mod:`bot.flop.best_response`, canonical flops): LBR / BR per seat and over both."""
    from bot.flop.best_response import flop_exploitability, flop_game_for, uniform_policy
    from bot.registry import resolve_flop_policy

    game = load_game("fhp")
    fg = flop_game_for(game, True)
    print(f"FHP: LBR (every round, seed 0, {deals} deals x 2 seats) against the exact best response, mbb/g:")
    for name in agents:
        if name == "random":
            policy = uniform_policy(fg)
        elif name in ("call", "raise"):
            policy = fixed_flop_policy(fg, name)
        else:
            fg, policy = resolve_flop_policy(game, name)
        wall = time.perf_counter()
        exact = flop_exploitability(fg, policy)
        br_seconds = time.perf_counter() - wall
        wall = time.perf_counter()
        result = run_lbr(game, resolve_agent(name, game), deals, 0, LBRConfig())
        lbr_seconds = time.perf_counter() - wall
        cells = []
        for label, est, best in (("both", result.overall(), exact.mbb(exact.exploitability)),
                                 ("seat 0", result.seat(0), exact.mbb(exact.best_response_values[0])),
                                 ("seat 1", result.seat(1), exact.mbb(exact.best_response_values[1]))):  # fmt: skip
            cells.append(f"{label} LBR {est.mean:+.1f} ± {est.half_width:.1f} / BR {best:+.1f}"
                         + (f" = {est.mean / best:.3f}" if abs(best) > 1e-9 else ""))
        print(f"  {name:8s} " + "; ".join(cells) + f" (BR {br_seconds:.0f} s, LBR {lbr_seconds:.0f} s; load {os.getloadavg()[0]:.2f})")


def value(game_name: str, agent_name: str, deals: int, config: LBRConfig) -> None:
    game = load_game(game_name)
    wall = time.perf_counter()
    result = run_lbr(game, resolve_agent(agent_name, game), deals, 0, config)
    wall = time.perf_counter() - wall
    both, first, second = result.overall(), result.seat(0), result.seat(1)
    print(f"  {game_name:6s} {agent_name:7s} LBR {both.mean:+8.1f} ± {both.half_width:6.1f} mbb/g "
          f"(position 0 {first.mean:+.0f} ± {first.half_width:.0f}, position 1 {second.mean:+.0f} ± {second.half_width:.0f}; "
          f"{deals} hands per seat, {wall:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed-deals", type=int, default=20, help="deals per speed line (2 hands each; 0: skip)")
    parser.add_argument("--fhp-deals", type=int, default=500, help="deals per FHP value line (0: skip)")
    parser.add_argument("--holdem-deals", type=int, default=150, help="deals per HULH value line (0: skip)")
    parser.add_argument("--shipped-deals", type=int, default=0, help="deals per shipped-bot speed line (0: skip)")
    parser.add_argument("--rate-deals", type=int, default=0, help="deals per rate line vs default and call (0: skip)")
    parser.add_argument("--before", type=Path, help="--rate-deals: also measure this checkout (e.g. 513f747)")
    parser.add_argument("--rate-workers", type=int, default=2, help="--rate-deals: also on this many processes (0: skip)")
    parser.add_argument("--breakdown-deals", type=int, default=0, help="deals of the CPU breakdown vs default (0: skip)")
    parser.add_argument("--warm-flops", action="store_true", help="--breakdown-deals: every canonical flop cached first")
    parser.add_argument("--fhp-ratio-deals", type=int, default=0, help="deals per FHP LBR / exact BR line (0: skip)")
    parser.add_argument("--fhp-ratio-agents", default="random,call,raise", help="FHP policies for --fhp-ratio-deals")
    parser.add_argument("--stack", type=int, default=5, help="iterations of the untrained SD-CFR bundle")
    parser.add_argument("--network", help="a Deep CFR / SD-CFR bundle or run for HULH instead of the untrained one")
    parser.add_argument("--spinning-threads", action="store_true", help="OMP_WAIT_POLICY=ACTIVE instead of PASSIVE")
    parser.add_argument("--torch-threads", type=int, default=0, help="torch threads (0: one, as pokerbot lbr uses)")
    args = parser.parse_args()
    single_threaded_torch()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    print(machine() + f"; torch threads {torch.get_num_threads()}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'default')}")
    holdem = load_game("holdem")
    agents = [("call", resolve_agent("call", holdem)), ("random", resolve_agent("random", holdem))]
    if args.network:
        agents.append((f"network {args.network}", resolve_agent(args.network, holdem)))
    else:
        agents.append(("untrained Deep CFR network", untrained_network_agent(holdem, "deep-cfr", 1)))
        agents.append((f"untrained SD-CFR, {args.stack} its", untrained_network_agent(holdem, "sd-cfr", args.stack)))
    for config, title in ((LBRConfig(), "LBR in every round (preflop: 1,000 sampled boards)"),
                          (LBRConfig(call_rounds=frozenset({0})), "LBR calls preflop (--call-rounds 0)"))[: 2 * bool(args.speed_deals)]:
        print(f"HULH speed, {title}:")
        for label, agent in agents:
            speed(holdem, label, agent, args.speed_deals, config)
    if args.shipped_deals:
        shipped_speed(args.shipped_deals)
    if args.rate_deals:
        rates(args.rate_deals, args.before, args.rate_workers)
    if args.breakdown_deals:
        breakdown(args.breakdown_deals, args.warm_flops)
    if args.fhp_ratio_deals:
        fhp_ratios(args.fhp_ratio_deals, args.fhp_ratio_agents.split(","))
    for game_name, deals in (("fhp", args.fhp_deals), ("holdem", args.holdem_deals)):
        if deals:
            print(f"LBR values on {game_name} (LBR in every round, seed 0, {deals} deals x 2 seats):")
            for agent_name in ("call", "raise", "random"):
                value(game_name, agent_name, deals, LBRConfig())


if __name__ == "__main__":
    main()
