"""Training beyond one process: Ray actors for Deep CFR traversals and tabular MCCFR batches.

Ray (https://docs.ray.io, 2.x) is an optional extra (``pip install "pokerbot[ray]"``) and is
imported only here, lazily: with ``--workers 1`` (the default) nothing in this package runs and
the single-process paths are unchanged. ``--workers N`` starts a local Ray instance with N CPUs;
``--ray-address ADDR`` joins an existing cluster (``ray start --head`` on one machine, ``ray start
--address ...`` on the others; pokerbot must be installed on every node).

Every remote call goes through :func:`gather`, which waits with a timeout, restarts a dead or
stuck actor once and retries its share, and otherwise raises a one-line
:class:`WorkerError`: a failed worker never hangs the driver.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.errors import PokerbotError

#: Seconds one remote share may take before its worker counts as stuck (a HULH share of the
#: paper's K = 100,000 traversals takes minutes; an hour means something is wrong).
DEFAULT_TIMEOUT_S = 3600.0

#: Ray settings of a local instance. Ray starts its worker processes ``worker_niceness`` (15)
#: steps nicer than the raylet, to keep its daemons responsive; here the actors *are* the
#: computation, and on a machine shared with other jobs nice-19 actors got a sliver of a core
#: while the driver waited on them, so they run at the priority of the command that started them.
LOCAL_SYSTEM_CONFIG = {"worker_niceness": 0}

#: Whether :func:`start` initialised Ray in this process (so :func:`stop` shuts it down).
_started_here = False


class WorkerError(PokerbotError):
    """A Ray worker failed twice on the same share, or Ray is missing or misconfigured."""


def import_ray() -> Any:
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise WorkerError('--workers/--ray-address need Ray: pip install "pokerbot[ray]"') from None
    return ray


#: Local Ray workers per core at most: more only queue on the cores (a local Ray asked for
#: 100,000 CPUs never reached an iteration).
MAX_WORKERS_PER_CORE = 4


@dataclass(frozen=True)
class Cluster:
    """Where the workers run: ``workers`` actors on a local Ray or on the cluster at ``address``."""

    workers: int = 1
    address: str | None = None

    @property
    def distributed(self) -> bool:
        return self.workers > 1 or self.address is not None

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Cluster:
        """``--workers`` / ``--ray-address`` of ``pokerbot train`` (checked, not yet started)."""
        workers = options.get("workers")
        workers = 1 if workers is None else int(workers)
        if workers < 1:
            raise WorkerError(f"--workers {workers}: must be at least 1")
        address = options.get("ray_address") or None
        most = MAX_WORKERS_PER_CORE * (os.cpu_count() or 1)
        if address is None and workers > most:
            raise WorkerError(f"--workers {workers}: a local Ray here runs at most {most} "
                              f"({MAX_WORKERS_PER_CORE} per core of {os.cpu_count() or 1}); "
                              f"join a larger cluster with --ray-address")
        cluster = cls(workers, address)
        if cluster.distributed:
            import_ray()  # fail now, before a run directory exists
        return cluster


#: The cluster of the ``pokerbot train`` run in progress (:func:`session`); one process otherwise.
_current = Cluster()


@contextmanager
def session(cluster: Cluster) -> Iterator[Cluster]:
    """Make ``cluster`` the run's cluster (:func:`current`) while the run trains; afterwards shut
    down a Ray it started. :func:`training.contract.entry.run_from_cli` wraps every run in one, so the
    algorithms' ``train`` entry points keep the run contract's signature."""
    global _current
    _current = cluster
    try:
        yield cluster
    finally:
        _current = Cluster()
        stop()


def current() -> Cluster:
    """The run's cluster (one process unless ``--workers``/``--ray-address`` asked for Ray)."""
    return _current


def start(cluster: Cluster) -> Any:
    """Start (or join) Ray once per process; returns the ``ray`` module.

    A local instance gets ``num_cpus = workers`` (one CPU per actor; the driver's fits use the
    rest of the machine), no dashboard, and actors at the driver's priority
    (:data:`LOCAL_SYSTEM_CONFIG`). Its workers import this checkout's code (its root goes
    on their ``PYTHONPATH``), so a development tree runs its own modules, not an installed copy.

    ``ray.init`` replaces the driver's SIGTERM handler with one that exits at once (and its core
    worker's C++ failure handler catches SIGTERM too), which would turn the run contract's
    "SIGTERM finishes the step and checkpoints" (:class:`training.contract.entry.StopRequest`, installed
    before the trainer starts Ray) into a kill; the handlers in place before the call are put
    back."""
    global _started_here
    ray = import_ray()
    if ray.is_initialized():  # e.g. a test's or a notebook's own instance: used, left running
        return ray
    _started_here = True
    with _signal_handlers_kept():
        try:
            if cluster.address is not None:
                ray.init(address=cluster.address, log_to_driver=False)
            else:
                root = str(Path(__file__).resolve().parents[2])
                ray.init(num_cpus=cluster.workers, include_dashboard=False, log_to_driver=False,
                         runtime_env={"env_vars": {"PYTHONPATH": root}}, _system_config=LOCAL_SYSTEM_CONFIG)
        except Exception as error:  # Ray raises bare Exception/ConnectionError for a start that failed
            _started_here = False
            where = cluster.address or "a local instance"
            raise WorkerError(f"Ray did not start ({where}): {_describe(error)}; nothing was run, "
                              "retry (a local Ray waits 30 s for its raylet, which a heavily loaded "
                              "machine can exceed)") from None
    return ray


@contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """Put SIGINT's and SIGTERM's Python handlers back after the block (main thread only: other
    threads can neither set handlers nor have had theirs replaced by Ray)."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in saved.items():
                if handler is not None:  # None: set outside Python, nothing to put back
                    signal.signal(sig, handler)


def stop() -> None:
    """Shut down the Ray instance :func:`start` started (or joined), if any."""
    global _started_here
    if _started_here:
        import ray

        ray.shutdown()
        _started_here = False


class Worker:
    """Base of the actor classes (:class:`ActorPool` runs them)."""

    def cpu_seconds(self) -> float:
        """CPU seconds this actor's process has used (all its threads): on a shared machine the
        work of a share in CPU time, which other processes' load does not inflate as it does
        wall time (``benchmarks/bench_ray_scaling.py``)."""
        return time.process_time()


class ActorPool:
    """``size`` actors of one :class:`Worker` class, each restartable once per call (see :func:`gather`)."""

    def __init__(self, actor_class: Any, size: int, args: tuple, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.ray = import_ray()
        self.remote_class = self.ray.remote(num_cpus=1, max_restarts=0)(actor_class)
        self.args = args
        self.timeout_s = timeout_s
        self.actors = [self._new_actor() for _ in range(size)]
        self.restarts = 0

    def _new_actor(self) -> Any:
        return self.remote_class.remote(*self.args)

    def __len__(self) -> int:
        return len(self.actors)

    def gather(self, submit: Callable[[int, Any], Any], prepare: Callable[[Any], None] | None = None,
               what: str = "share") -> list[Any]:
        """``submit(index, actor)`` on every actor (an ObjectRef each), then the results in index
        order. A share whose actor died or did not answer within ``timeout_s`` is retried once on
        a fresh actor (``prepare(actor)`` first re-sends its state); a second failure raises."""
        ray = self.ray
        refs = [submit(i, actor) for i, actor in enumerate(self.actors)]
        results: list[Any] = []
        for i, ref in enumerate(refs):
            try:
                results.append(ray.get(ref, timeout=self.timeout_s))
                continue
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError, ray.exceptions.WorkerCrashedError) as error:
                first = _describe(error)
            ray.kill(self.actors[i], no_restart=True)
            self.actors[i] = self._new_actor()
            self.restarts += 1
            try:
                if prepare is not None:
                    ray.get(prepare(self.actors[i]), timeout=self.timeout_s)
                results.append(ray.get(submit(i, self.actors[i]), timeout=self.timeout_s))
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError, ray.exceptions.WorkerCrashedError) as error:
                raise WorkerError(f"Ray worker {i} failed twice on its {what} ({first}; then {_describe(error)}); "
                                  "the last checkpoint stands: fix the cluster and --resume") from None
        return results

    def broadcast(self, call: Callable[[Any], Any], prepare: Callable[[Any], Any] | None = None) -> None:
        """``call(actor)`` on every actor (e.g. new weights); waits so later shares see it."""
        self.gather(lambda _i, actor: call(actor), prepare=prepare, what="update")

    def cpu_seconds(self) -> float:
        """CPU seconds all actors' processes have used so far (:meth:`Worker.cpu_seconds`)."""
        return float(sum(self.gather(lambda _i, actor: actor.cpu_seconds.remote(), what="CPU clock")))

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        self.actors = []


def _describe(error: Exception) -> str:
    """The first line of a Ray error (its full text repeats the remote traceback)."""
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"[:200]


def shares(total: int, parts: int) -> Sequence[tuple[int, int]]:
    """``parts`` contiguous ``(start, count)`` shares of ``total`` items, sizes differing by <= 1.

    >>> list(shares(10, 3))
    [(0, 3), (3, 3), (6, 4)]
    """
    bounds = [total * i // parts for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(parts)]
