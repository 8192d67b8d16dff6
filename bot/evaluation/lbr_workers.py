"""Local best response on several processes: one worker per core, the same chips as one process.

An LBR deal (:mod:`bot.evaluation.lbr`) depends only on the seed and its number: the cards come
from :func:`protocol.dealing.deal_hand`, the agent's actions and sampled runouts from generators
seeded by (seed, deal, seat), and the agent's caches change its cost, never its answers. So the
deals can be played anywhere and in any order and put back in order: :func:`run_lbr_workers`
hands blocks of :data:`BLOCK` deals to a pool of worker processes and appends their chips as
the blocks come back in deal order, so a run, its ``--json`` file, its progress and its Ctrl-C
behave as :func:`bot.evaluation.lbr.run_lbr`'s, with the same numbers.

Each worker is a fresh (spawned) interpreter that resolves the agent by name (with the
``resolve`` function the caller passes, e.g. :func:`bot.registry.resolve_agent`, which sits in a
layer above this one and is pickled by reference); processes rather
than threads because the per-decision Python (the betting walk, the range bookkeeping) holds
the GIL, and spawned rather than forked because numba's GNU OpenMP thread pool is not
fork-safe once the parent has used it. A worker's numba and BLAS pools are cut to one thread:
the workers already fill the cores, and a second thread per worker only contends.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict

from bot.agents.base import Agent
from bot.evaluation.lbr import LBRConfig, LBRResult, Responder
from bot.evaluation.lbr_equity import EquityCounters
from protocol.gamedef import Game

#: Deals per task: small enough for a smooth progress bar and a quick stop on Ctrl-C, large
#: enough that the pool's messages cost nothing next to the deals (~10-50 ms each on HULH).
BLOCK = 4

#: Deals per worker from which ``--workers 0`` starts one per core: a spawned worker takes a few
#: seconds to import and load its agent, which short runs would not win back.
MIN_DEALS_PER_WORKER = 100

_responder: Responder | None = None


def auto_workers(deals: int) -> int:
    """One process per CPU core when each gets :data:`MIN_DEALS_PER_WORKER` deals, else 1."""
    cores = os.cpu_count() or 1
    return cores if deals >= MIN_DEALS_PER_WORKER * cores else 1


Resolve = Callable[[str, Game], Agent]
"""Agent name or path -> agent (:func:`bot.registry.resolve_agent`)."""


def _start_worker(game: Game, agent_spec: str, config: LBRConfig, resolve: Resolve) -> None:
    """Pool initializer: one thread for numba and BLAS, Ctrl-C left to the parent, the agent."""
    import numba
    from threadpoolctl import threadpool_limits

    global _responder
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    numba.set_num_threads(1)
    threadpool_limits(1)
    _responder = Responder(game, resolve(agent_spec, game), config)


def _play_block(task: tuple[int, int, int]) -> tuple[list[tuple[float, float]], dict, int, int]:
    """(chips of deals ``start .. stop - 1``, their equity counters, range queries, hands queried)."""
    seed, start, stop = task
    responder = _responder
    assert responder is not None
    responder.counters, responder.agent_queries, responder.hands_queried = EquityCounters(), 0, 0
    chips = [(responder.play(seed, deal, 0), responder.play(seed, deal, 1)) for deal in range(start, stop)]
    return chips, asdict(responder.counters), responder.agent_queries, responder.hands_queried


def run_lbr_workers(game: Game, agent_spec: str, deals: int, seed: int, config: LBRConfig, workers: int,
                    resolve: Resolve, result: LBRResult | None = None,
                    progress: Callable[[int], None] | None = None) -> LBRResult:  # fmt: skip
    """:func:`bot.evaluation.lbr.run_lbr` against the agent ``agent_spec`` names, its deals
    played by ``workers`` processes; the same result, chip for chip."""
    if result is None:
        result = LBRResult(game, agent_spec, seed, config)
    tasks = [(seed, start, min(start + BLOCK, deals)) for start in range(result.deals, deals, BLOCK)]
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, _start_worker, (game, agent_spec, config, resolve)) as pool:
        try:
            for chips, counters, queries, hands in pool.imap(_play_block, tasks):
                result.chips.extend(chips)
                for name, value in counters.items():
                    setattr(result.counters, name, getattr(result.counters, name) + value)
                result.agent_queries += queries
                result.hands_queried += hands
                if progress is not None:
                    progress(len(chips))
        except KeyboardInterrupt:
            pool.terminate()
            result.interrupted = True
    result.seconds += time.perf_counter() - started
    return result
