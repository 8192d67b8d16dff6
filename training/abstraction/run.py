"""``pokerbot train --algo abstraction``: build a named card abstraction, then solve it.

One command does everything from a fresh clone: print the estimated memory, disk and time;
build (or reuse) the cached bucket tables; run batches of the solver (``solver``: Public Chance
Sampling, :mod:`training.abstraction.pcs`, by default; ES Linear MCCFR,
:mod:`training.abstraction.solver`, by name) with a progress bar until ``--iterations`` or
``--time-budget``; write ``metrics.jsonl`` (iterations, work per second, exploitability
where it is exact: Kuhn, Leduc, FHP), atomic checkpoints every ``checkpoint_seconds`` and on
Ctrl-C (:mod:`training.contract.entry`'s policy), and publish the average strategy as the named agent's
policy (``$POKERBOT_CACHE/abstractions/<name>/policy.npy``) and as the run's policy bundle
(``<run>/policy/``: ``average.npy`` and ``bundle.json`` of kind ``abstraction``).
``--resume RUN`` continues from the last checkpoint (a later ``--iterations`` extends the run).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numba
import numpy as np

from bot.abstraction.cost import default_solver, estimate, size
from bot.abstraction.policy import AVERAGE_FILE
from bot.abstraction.spec import (
    SPECS,
    AbstractionSpec,
    policy_path,
    resolve_size,
    spec_dir,
)
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.agents.bundle import write_bundle
from bot.errors import ConfigError, CorruptFileError
from bot.progress import budget_deadline, progress_bar
from bot.run_files import ELAPSED_METRIC
from protocol.files import atomic_write
from training.abstraction import checkpoint as checkpoint_files
from training.abstraction import convergence
from training.abstraction.batches import SOLVERS, BatchSolver, ESSolver, PCSSolver
from training.abstraction.build import build_abstraction, cached_feature_rounds
from training.abstraction.exploitability import (
    exact_exploitability_report,
    has_exact_exploitability,
)
from training.abstraction.pcs import SCHEMES
from training.abstraction.publish import publish_named
from training.abstraction.resources import (
    available_memory,
    check_build_fits,
    check_run_fits,
    check_tables_fit,
)
from training.abstraction.row_layout import RowLayout
from training.abstraction.solver import Pruning
from training.abstraction.warm_start import WarmSource, warm_start
from training.contract import cluster as distributed
from training.contract.entry import CheckpointClock, StopRequest, Trainer, parse_duration
from training.contract.loop import StepLoop
from training.contract.rundir import RunDir
from training.flop.trainer import route_lossless

#: Boards of the default convergence check where exploitability is not exact (200 measured
#: +-0.9 to +-1.7 mbb/g on abstraction_3e6 solves, +-1.5 to +-3.5 on abstraction_3e7; the check
#: took 13 s on two threads for 3e6 and ~1 min on one for 3e7).
DEFAULT_CONVERGENCE_BOARDS = 200


@dataclass(frozen=True)
class AbstractionConfig:
    """One abstraction solve (stored as the run's config.toml)."""

    abstraction: str
    """Name of the abstraction (see ``bot.abstraction.spec.SPECS``)."""
    solver: str = "pcs"
    """``pcs`` (Public Chance Sampling: one sampled board per iteration, every hand updated) or
    ``es-mccfr`` (external-sampling Linear MCCFR: one sampled deal per iteration). A new run
    without one in its config file takes the game's measured winner
    (:func:`bot.abstraction.cost.default_solver`: ES on hold'em, PCS elsewhere)."""
    scheme: str = "dcfr"
    """PCS regret/average weighting: ``dcfr``, ``linear`` or ``cfr+`` (:mod:`training.abstraction.pcs`)."""
    iterations: int | None = None
    """Stop after this many iterations (PCS: one board, both players' passes; ES: one traversal
    per seat); default from the estimate."""
    time_budget: float | None = None
    """Stop after this many seconds of solving (whichever of the two comes first)."""
    seed: int = 0
    """Seeds the deals and the opponent samples of every traversal."""
    threads: int = 0
    """Traversal threads; 0 = all cores."""
    batch: int = 0
    """Iterations per batch (the unit of iteration weighting and logging); 0 = the solver's
    default (:meth:`training.abstraction.batches.ESSolver.default_batch`, 20,000 iterations or one per 200
    rows; :meth:`training.abstraction.batches.PCSSolver.default_batch`)."""
    checkpoint_seconds: float = 600.0
    """Wall time between checkpoints (longer than the trainers' 60 s: the tables of the large
    abstractions are gigabytes)."""
    eval_every: int = 0
    """Measure exact exploitability every this many iterations (0 = at the end): Kuhn and Leduc
    by the dense best response, FHP-shaped games over the canonical flops (~15-30 CPU s each)."""
    merge_every: int = 0
    """With ``--workers``: iterations (all workers together) between merges of the workers'
    tables; 0 = once per batch. Shorter rounds mean less stale regrets (see
    :mod:`training.abstraction.ray_mccfr` and :mod:`training.abstraction.ray_pcs`) and more
    table transfers."""
    convergence_boards: int | None = None
    """Boards of the convergence check at the end: the final average against the one at half
    the run's target, head to head (:mod:`training.abstraction.convergence`). None: 200 where
    the exploitability is not exact (hold'em), 0 (skipped) where it is."""
    mmap_tables: bool = False
    """Keep the two tables in memory-mapped files in the run directory (``tables/``) instead of
    RAM: for abstraction_3e8 (7.9 GB) on a machine with less memory; pages stream from disk."""
    warm_start: str | None = None
    """A solved run of another abstraction of the same game by this run's solver (and PCS
    scheme), its directory: a new run starts from its tables carried over bucket by bucket and
    continues its batch weights (:mod:`training.abstraction.warm_start`); ignored by
    ``--resume``, which has its own tables."""
    warm_start_weight: float = 1.0
    """How many of the source's batches the carried tables count as, as a fraction (1: all;
    the run's batch index starts there). Measured for ES: 1 on FHP 4e4 -> 3.6e6; a much
    coarser source (Leduc merged -> lossless) does better near 1/16; for PCS on FHP 4e4 ->
    3.6e6, 1/16 of those tried at 45 CPU-s, still behind a cold start (docs: abstraction,
    warm start)."""
    prune_ratio: float = 0.0
    """``es-mccfr`` only: negative-regret pruning (:class:`training.abstraction.solver.Pruning`):
    most traversals skip the traverser's actions whose regret is below minus this many times the
    row's positive regret; 0 = never prune."""
    prune_from_batch: int = 1
    """The first batch that prunes (early regrets are noise; docs: abstraction, pruning)."""
    prune_full_share: float = 0.05
    """The share of traversals that explore every action (pruned actions' regrets are updated
    there, boosted by its inverse so their expected increments are unbiased)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_budget", parse_duration(self.time_budget))
        if self.abstraction not in SPECS:
            raise ConfigError(f"unknown abstraction {self.abstraction!r}; known: {', '.join(SPECS)}")
        if self.solver not in SOLVERS:
            raise ConfigError(f"unknown solver {self.solver!r}; known: {', '.join(SOLVERS)}")
        if self.scheme not in SCHEMES:
            raise ConfigError(f"unknown PCS scheme {self.scheme!r}; known: {', '.join(SCHEMES)}")
        if self.batch < 0 or (self.iterations is not None and self.iterations < 1) or self.merge_every < 0 \
                or (self.convergence_boards or 0) < 0:
            raise ConfigError("iterations must be positive (batch, merge_every, convergence_boards: 0 or more)")
        if self.convergence_boards == 1:
            raise ConfigError("convergence_boards = 1 gives no interval: 0 (no check) or at least 2")
        if not 0 <= self.warm_start_weight <= 1:
            raise ConfigError(f"warm_start_weight {self.warm_start_weight}: a fraction between 0 and 1")
        if self.prune_ratio < 0 or self.prune_from_batch < 1 or not 0 < self.prune_full_share <= 1:
            raise ConfigError("prune_ratio must be 0 (off) or more, prune_from_batch 1 or more, prune_full_share in (0, 1]")
        if self.prune_ratio and self.solver != "es-mccfr":
            raise ConfigError(f"prune_ratio needs solver = \"es-mccfr\" (this run's solver is {self.solver!r})")
        if not 0 <= self.threads <= numba.config.NUMBA_NUM_THREADS:
            raise ConfigError(f"--threads {self.threads}: between 1 and {numba.config.NUMBA_NUM_THREADS} (numba's threads here)")


def _abstraction_name(values: dict, options: dict) -> dict:
    """``--game``/``--size`` (or the TOML's ``abstraction``) -> the abstraction's name."""
    if options.get("size"):
        values["abstraction"] = resolve_size(str(options.get("game") or "leduc"), str(options["size"])).name
    elif "abstraction" not in values:
        raise ConfigError("--algo abstraction needs --size (e.g. --game holdem --size 3e6, or --size fhp_abstraction_4e4)")
    if "solver" not in values and values["abstraction"] in SPECS:  # an unknown name fails in the config
        values["solver"] = default_solver(SPECS[values["abstraction"]])
    return values


def _train(config: AbstractionConfig, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> np.ndarray:
    return train(config, run, resume, stop, force)


#: ``--algo abstraction`` for :mod:`training.contract.entry` (``--game`` and ``--size`` name the abstraction).
TRAINERS = {"abstraction": Trainer(
    algo="abstraction", config_class=AbstractionConfig,
    flags={"iterations": "iterations", "time_budget": "time_budget", "seed": "seed", "threads": "threads",
           "size": "abstraction", "warm_start": "warm_start"},
    resumable=frozenset({"iterations", "time_budget", "threads"}),
    presets={}, train=_train, prepare=_abstraction_name, route=route_lossless,
)}


def train(config: AbstractionConfig, run: RunDir, resume: bool = False, stop: StopRequest | None = None,
          force: bool = False) -> np.ndarray:
    """Build the abstraction, solve it, publish the policy; returns the average-strategy table.
    A stop request (Ctrl-C) or the time budget ends the batch after the kernel call in progress
    (PCS: ~0.5 s; ES: the whole batch), then checkpoints and publishes."""
    from rich.console import Console

    console = Console(stderr=True)
    spec = SPECS[config.abstraction]
    if config.warm_start is not None and not resume:  # before anything is built or printed
        WarmSource.check(config.warm_start, spec.game, config.solver, config.scheme)
    built = (spec_dir(spec) / "meta.json").exists()
    cost = estimate(spec, config.iterations, cached_feature_rounds(spec), built, config.solver)
    console.print(f"[bold]{spec.name}[/] ({spec.game}, buckets {spec.buckets}): {cost.summary()}")
    if spec.note:
        console.print(f"note: {spec.note}")
    if not built:
        check_build_fits(spec.name, cost.disk_bytes, spec_dir(spec))
    with progress_bar(console, transient=True) as bar:
        task = bar.add_task("building abstraction", total=None)

        def building(phase: str, done: int, total: int) -> None:
            """The build's progress; also where a stop request ends it. A build has no
            checkpoint (its k-means runs up to ~50 minutes), so after the grace period the build
            is abandoned at its next progress report, as the contract promises (it ran on to
            its end before); the features and rounds it finished stay cached for the next run."""
            bar.update(task, description=phase, completed=done, total=total)
            if stop is not None:
                stop.check()

        build_abstraction(spec, building)
    ag = AbstractGame.build(Abstraction.load(spec))
    threads = config.threads or numba.config.NUMBA_NUM_THREADS
    target = config.iterations or cost.iterations
    check_tables_fit(spec.name, cost.table_bytes, run.path / "tables" if config.mmap_tables else None)
    check_run_fits(spec.name, cost.table_bytes, run.path, policy_path(spec))
    stored = _stored_tables(run, ag, resume, force)  # a corrupt checkpoint fails before any worker starts
    solver, pool = _solver(config, ag, threads, console)
    layout = solver.layout
    regrets, average, state = _tables(run, ag, config.mmap_tables, layout, stored)
    if config.warm_start is not None and state["batches"] == 0:
        carried = time.monotonic()
        with progress_bar(console, transient=True) as bar:
            bar.add_task(f"warm start: carrying {config.warm_start}'s tables over", total=None)
            # canonical rows, then this solve's layout
            source = warm_start(config.warm_start, ag, regrets, average, config.solver, config.scheme)
            layout.adopt(regrets)
            layout.adopt(average)
        carried = time.monotonic() - carried
        state["batches"] = round(source.batches * config.warm_start_weight)
        run.append_metrics(source.metrics() | {"warm_start_s": round(carried, 2)})
        console.print(f"warm start from {source.abstraction} ({source.path}: {source.iterations:,} iterations, "
                      f"{source.batches:,} batches) in {carried:.0f} s; this run's batches "
                      f"continue from {state['batches'] + 1:,}")
    batch = config.batch or solver.default_batch()
    with progress_bar(console, transient=True) as bar:
        bar.add_task(f"{solver.label}: compiling the kernels (cached after the first run)", total=None)
        solver.compile(regrets, average)
    started, trained_before = time.monotonic(), state["seconds"]
    boards = config.convergence_boards
    boards = (0 if has_exact_exploitability(ag) else DEFAULT_CONVERGENCE_BOARDS) if boards is None else boards
    half, taken = convergence.half_mark(target, config.time_budget), convergence.snapshot(run.path)
    if boards and (refused := convergence.refused_ahead(taken, half, state["iterations"], state["seconds"], target,
                                                        config.time_budget)):  # fmt: skip
        console.print(refused)

    def training_seconds() -> float:
        """The run's training clock: earlier sittings' solve seconds plus this one's, so a
        ``--time-budget`` given to ``--resume`` is the run's total, as for every other algorithm."""
        return trained_before + time.monotonic() - started

    with nullcontext(stop) if stop is not None else StopRequest() as stop:
        loop = StepLoop(stop, target, config.time_budget, CheckpointClock(2**62, config.checkpoint_seconds))
        with progress_bar(console, transient=True) as bar:
            task = bar.add_task(solver.label, total=target, completed=state["iterations"],
                                deadline=budget_deadline(config.time_budget, trained_before, started))  # fmt: skip

            def keep_going(done: int) -> bool:
                rate = (state["iterations"] + done - first_of_run) / max(time.monotonic() - started, 1e-9)
                bar.update(task, completed=state["iterations"] + done, description=f"{solver.label} {rate:,.1f} it/s")
                return not stop.requested and not out_of_time()

            def out_of_time() -> bool:
                return config.time_budget is not None and training_seconds() >= config.time_budget

            first_of_run = state["iterations"]
            while loop.running(state["iterations"], training_seconds()):
                count = min(batch, target - state["iterations"])
                t0 = time.monotonic()
                touched, done = solver.run_batch(regrets, average, state["iterations"] + 1, count, state["batches"] + 1, keep_going)
                seconds = time.monotonic() - t0
                state["iterations"] += done
                state["batches"] += 1
                state["seconds"] += seconds
                record = {"iteration": state["iterations"], "batch": state["batches"], "nodes_touched": touched,
                          "nodes_per_s": round(touched / seconds), "iterations_per_s": round(done / seconds, 2),
                          ELAPSED_METRIC: round(state["seconds"], 2)} | (pool.metrics() if pool else {})  # fmt: skip
                if config.eval_every and state["iterations"] % config.eval_every < done:
                    record |= exact_exploitability_report(ag, layout.canonical(average), bar)
                run.append_metrics(record)
                if boards and convergence.due(taken, half, state["iterations"], training_seconds()):
                    taken = convergence.take_snapshot(run.path, layout.canonical(average), state["iterations"],
                                                      training_seconds())
                loop.checkpoint_if_due(state["iterations"], lambda: checkpoint_files.write(run, layout, regrets, average, state))
    trained = training_seconds()  # at the last batch's end, as the half snapshot's clock is
    loop.finish(state["iterations"], lambda: checkpoint_files.write(run, layout, regrets, average, state))
    average = layout.canonical(average)  # the rest of the run reads it in the files' layout
    with progress_bar(console, transient=True) as bar:
        final = exact_exploitability_report(ag, average, bar)
    if final:
        run.append_metrics({"iteration": state["iterations"], "final": True} | final)
        console.print(f"exploitability {final['exploitability_mbb']:.3f} mbb/g (NashConv/2, exact in the full game)")
    published = _publish(run, spec, config, average, state, interrupted=stop.requested)
    console.print(f"{state['iterations']:,} iterations in {state['seconds']:.0f} s; {published}")
    if boards:
        convergence.final_check(spec, run, state["iterations"], trained, half, boards, config.seed, threads,
                                console, interrupted=stop.requested)  # fmt: skip
    return average


def _solver(config: AbstractionConfig, ag: AbstractGame, threads: int, console) -> tuple[BatchSolver, object]:
    """The configured solver, and the Ray pool (for its metrics) when batches run on workers."""
    if config.solver == "pcs":
        if distributed.current().distributed:  # batches on Ray workers (training/abstraction/ray_pcs.py)
            from training.abstraction.ray_pcs import RayPCSSolver

            solver = RayPCSSolver(ag, config.seed, config.scheme, distributed.current(), config.merge_every)
            console.print(f"PCS batches on {len(solver)} Ray workers")
            return solver, solver
        return PCSSolver(ag, config.seed, threads, config.scheme, _traversal_layout(config, ag, console)), None
    if distributed.current().distributed:  # batches on Ray workers (training/abstraction/ray_mccfr.py)
        from training.abstraction.ray_mccfr import RayMCCFR

        if config.prune_ratio:
            raise ConfigError("prune_ratio is not available with --workers (Ray workers run unpruned batches)")
        pool = RayMCCFR(ag.abstraction.spec.name, distributed.current(), config.merge_every)
        console.print(f"ES Linear MCCFR batches on {len(pool)} Ray workers")
        return ESSolver(ag, config.seed, threads, pool.run_batch), pool
    pruning = Pruning(config.prune_ratio, config.prune_from_batch, config.prune_full_share) if config.prune_ratio else None
    return ESSolver(ag, config.seed, threads, pruning=pruning, layout=_traversal_layout(config, ag, console)), None


def _traversal_layout(config: AbstractionConfig, ag: AbstractGame, console) -> RowLayout | None:
    """The traversal layout (:mod:`training.abstraction.row_layout`) when its conversions fit:
    each one (a warm start's, a checkpoint's) holds one more table in RAM beside the run's two.
    Memory-mapped tables stay canonical (they are there because RAM is short); so does a run
    whose RAM, before its tables are allocated, is short of three tables, and it says so (None:
    canonical)."""
    if config.mmap_tables:
        return None
    spare, table = available_memory(), ag.num_rows * 3 * 4
    if spare < 3 * table:
        console.print(f"solving in the canonical row layout (slower on large tables): the traversal layout's "
                      f"conversions need {size(table)} of RAM beyond the two tables, {size(max(spare - 2 * table, 0))} "
                      "available")  # fmt: skip
        return None
    return RowLayout.traversal_of(ag)


def _stored_tables(run: RunDir, ag: AbstractGame, resume: bool, force: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, dict] | None:  # fmt: skip
    """``--resume``'s verified checkpoint (tables memory-mapped read-only, and the run's counters),
    or None when the run starts from zero tables; a one-line error when it is unusable."""
    checkpoint = run.resume_checkpoint(force) if resume else None
    if checkpoint is None:
        return None
    stored_regrets, stored_average, state = checkpoint_files.read(checkpoint, "--resume")
    if stored_regrets.shape != (ag.num_rows, 3):
        raise CorruptFileError(f"{checkpoint}: tables of shape {stored_regrets.shape} do not fit this abstraction "
                               f"({(ag.num_rows, 3)})")  # fmt: skip
    return stored_regrets, stored_average, state


def _tables(run: RunDir, ag: AbstractGame, mmap: bool, layout: RowLayout,
            stored: tuple[np.ndarray, np.ndarray, dict] | None) -> tuple[np.ndarray, np.ndarray, dict]:  # fmt: skip
    """The solve's two tables in ``layout``: zero, or filled from ``stored`` (:func:`_stored_tables`);
    and the run's counters."""
    shape = (ag.num_rows, 3)
    if mmap:
        (run.path / "tables").mkdir(exist_ok=True)
        regrets, average = (np.lib.format.open_memmap(run.path / "tables" / f"{n}.npy", mode="w+", dtype=np.float32, shape=shape)
                            for n in ("regrets", "average"))  # fmt: skip
    else:
        regrets, average = np.zeros(shape, dtype=np.float32), np.zeros(shape, dtype=np.float32)
    if stored is None:
        return regrets, average, {"iterations": 0, "batches": 0, "seconds": 0.0}
    stored_regrets, stored_average, state = stored
    layout.fill(regrets, stored_regrets)
    layout.fill(average, stored_average)
    run.truncate_metrics(state["iterations"])
    return regrets, average, state


def _publish(run: RunDir, spec: AbstractionSpec, config: AbstractionConfig, average: np.ndarray, state: dict,
             interrupted: bool) -> str:  # fmt: skip
    """Write the average strategy as the run's policy bundle and, unless the run was stopped
    early, as the named agent's policy (:func:`training.abstraction.publish.publish_named`).
    Returns the line that says which."""
    own = run.policy_path / AVERAGE_FILE
    atomic_write(own, lambda h: np.save(h, average))
    provenance = {"algorithm": "abstraction", "config": {k: v for k, v in asdict(config).items() if v is not None},
                  "seed": config.seed, "iterations": state["iterations"]}
    write_bundle(run.policy_path, "abstraction", spec.load_game(), [AVERAGE_FILE], provenance, abstraction=spec.name)
    solver = {"solver": config.solver} | ({"scheme": config.scheme} if config.solver == "pcs" else {})
    return publish_named(spec, run, "abstraction", state["iterations"], own, interrupted, meta=solver)
