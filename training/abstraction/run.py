"""``pokerbot train --algo abstraction``: build a named card abstraction, then solve it.

One command does everything from a fresh clone: print the estimated memory, disk and time;
build (or reuse) the cached bucket tables; run batches of ES Linear MCCFR
(:mod:`training.abstraction.solver`) with a progress bar until ``--iterations`` or
``--time-budget``; write ``metrics.jsonl`` (iterations, nodes touched per second, exploitability
where the full game fits: Kuhn, Leduc), atomic checkpoints every ``checkpoint_seconds`` and on
Ctrl-C, and publish the average strategy as the named agent's policy
(``$POKERBOT_CACHE/abstractions/<name>/policy.npy``, plus ``<run>/policy/average.npy``).
``--resume RUN`` continues from the last checkpoint (a later ``--iterations`` extends the run).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from bot.abstraction_cost import estimate
from bot.abstraction_spec import SPECS, policy_path, resolve_size, spec_dir
from bot.abstraction_tables import AbstractGame, Abstraction
from bot.errors import PokerbotError
from bot.progress import progress_bar
from training import flop_solve
from training.abstraction.build import build_abstraction, cached_feature_rounds
from training.abstraction.solver import run_batch
from training.rundir import RunDir, atomic_write, config_to_dict, parse_duration, read_toml

#: Games whose full infoset space fits in memory, so exploitability is measured exactly.
EXACT_GAMES = ("kuhn", "leduc")


@dataclass(frozen=True)
class AbstractionConfig:
    """One abstraction solve (stored as the run's config.toml)."""

    abstraction: str
    """Name of the abstraction (see ``bot.abstraction_spec.SPECS``)."""
    iterations: int | None = None
    """Stop after this many iterations (one traversal per seat each); default from the estimate."""
    time_budget: float | None = None
    """Stop after this many seconds of solving (whichever of the two comes first)."""
    seed: int = 0
    """Seeds the deals and the opponent samples of every traversal."""
    threads: int = 0
    """Traversal threads; 0 = all cores."""
    batch: int = 20_000
    """Iterations per Linear-CFR batch (the unit of linear weighting, logging and stopping)."""
    checkpoint_seconds: float = 600.0
    """Wall time between checkpoints."""
    eval_every: int = 0
    """Measure exact exploitability every this many iterations (Kuhn/Leduc only; 0 = at the end)."""
    mmap_tables: bool = False
    """Keep the two tables in memory-mapped files in the run directory (``tables/``) instead of
    RAM: for abstraction_3e8 (7.9 GB) on a machine with less memory; pages stream from disk."""


def make_config(values: dict) -> AbstractionConfig:
    known = set(AbstractionConfig.__dataclass_fields__)
    unknown = set(values) - known
    if unknown:
        raise PokerbotError(f"unknown abstraction config keys: {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    config = AbstractionConfig(**values)
    if config.abstraction not in SPECS:
        raise PokerbotError(f"unknown abstraction {config.abstraction!r}; known: {', '.join(SPECS)}")
    if config.batch < 1 or (config.iterations is not None and config.iterations < 1):
        raise PokerbotError("batch and iterations must be positive")
    if not 0 <= config.threads <= numba.config.NUMBA_NUM_THREADS:
        raise PokerbotError(f"--threads {config.threads}: between 1 and {numba.config.NUMBA_NUM_THREADS} (numba's threads here)")
    return config


def run_from_cli(options: dict) -> None:
    """Resolve flags (< ``--config`` TOML < flags), then build and solve, or resume."""
    for flag in ("traversals",):
        if options.get(flag) is not None:
            raise PokerbotError(f"--{flag} does not apply to --algo abstraction")
    flags: dict = {}
    if options.get("iterations") is not None:
        flags["iterations"] = int(options["iterations"])
    if options.get("time_budget") is not None:
        flags["time_budget"] = parse_duration(options["time_budget"])
    if options.get("threads"):
        flags["threads"] = int(options["threads"])
    if options.get("resume"):
        if options.get("seed") is not None or options.get("config_path") or options.get("size"):
            raise PokerbotError("--seed, --size and --config cannot change a run on --resume (its config.toml is kept)")
        run = RunDir.open(options["resume"])
        if flop_solve.is_flop_run(run.config()):
            flop_solve.run_from_cli(options, flags, run.config())
            return
        config = make_config(run.config() | flags)
        atomic_write(run.path / "config.toml", lambda h: h.write(_toml(config)))
        train(config, run, resume=True)
        return
    if not options.get("size"):
        raise PokerbotError("--algo abstraction needs --size (e.g. --game holdem --size 3e6, or --size fhp_abstraction_4e4)")
    if resolve_size(str(options.get("game") or "leduc"), str(options["size"])).name == flop_solve.LOSSLESS_NAME:
        flop_solve.run_from_cli(options, flags)  # full-width CFR on the real game, not sampled buckets
        return
    values: dict = {}
    if options.get("config_path"):
        values |= read_toml(Path(options["config_path"]))
    values["abstraction"] = resolve_size(str(options.get("game") or "leduc"), str(options["size"])).name
    if options.get("seed") is not None:
        flags["seed"] = int(options["seed"])
    config = make_config(values | flags)
    run = RunDir.create(options["out"], config)
    train(config, run)


def _toml(config: AbstractionConfig) -> bytes:
    import tomli_w

    return tomli_w.dumps(config_to_dict(config)).encode()


def train(config: AbstractionConfig, run: RunDir, resume: bool = False) -> np.ndarray:
    """Build the abstraction, solve it, publish the policy; returns the average-strategy table."""
    from rich.console import Console

    console = Console(stderr=True)
    spec = SPECS[config.abstraction]
    cost = estimate(spec, config.iterations, cached_feature_rounds(spec), (spec_dir(spec) / "meta.json").exists())
    console.print(f"[bold]{spec.name}[/] ({spec.game}, buckets {spec.buckets}): {cost.summary()}")
    if spec.note:
        console.print(f"note: {spec.note}")
    with progress_bar(console, transient=True) as bar:
        task = bar.add_task("building abstraction", total=None)
        build_abstraction(spec, lambda phase, done, total: bar.update(task, description=phase, completed=done, total=total))
    ag = AbstractGame.build(Abstraction.load(spec))
    threads = config.threads or numba.config.NUMBA_NUM_THREADS
    target = config.iterations or cost.iterations
    regrets, average, state = _load_or_init(run, ag, resume, config.mmap_tables)
    started = time.monotonic()
    last_checkpoint = started
    interrupted = False
    try:
        with progress_bar(console, transient=True) as bar:
            task = bar.add_task("ES Linear MCCFR", total=target, completed=state["iterations"])
            while state["iterations"] < target:
                if config.time_budget is not None and time.monotonic() - started >= config.time_budget:
                    break
                count = min(config.batch, target - state["iterations"])
                t0 = time.monotonic()
                touched = run_batch(ag, regrets, average, config.seed, state["iterations"] + 1, count, state["batches"] + 1, threads)
                seconds = time.monotonic() - t0
                state["iterations"] += count
                state["batches"] += 1
                state["seconds"] += seconds
                record = {"iteration": state["iterations"], "batch": state["batches"], "nodes_touched": touched,
                          "nodes_per_s": round(touched / seconds), "iterations_per_s": round(count / seconds),
                          "wall_s": round(state["seconds"], 2)}  # fmt: skip
                if config.eval_every and state["iterations"] % config.eval_every < count:
                    record |= _exploitability(ag, average)
                run.append_metrics(record)
                bar.update(task, completed=state["iterations"])
                if time.monotonic() - last_checkpoint >= config.checkpoint_seconds:
                    _checkpoint(run, regrets, average, state)
                    last_checkpoint = time.monotonic()
    except KeyboardInterrupt:
        interrupted = True
    _checkpoint(run, regrets, average, state)
    final = _exploitability(ag, average)
    if final:
        run.append_metrics({"iteration": state["iterations"], "final": True} | final)
        console.print(f"exploitability {final['exploitability_mbb']:.3f} mbb/g (NashConv/2, exact in the full game)")
    _publish(run, spec, average, state)
    console.print(f"{state['iterations']:,} iterations in {state['seconds']:.0f} s; policy published as {spec.name!r} ({policy_path(spec)})")
    if interrupted:
        raise PokerbotError(f"interrupted; continue with --resume {run.path}")
    return average


def _load_or_init(run: RunDir, ag: AbstractGame, resume: bool, mmap: bool) -> tuple[np.ndarray, np.ndarray, dict]:
    checkpoint = run.checkpoint_path if resume else None
    if resume and checkpoint is None:
        raise PokerbotError(f"{run.path} has no checkpoint to resume from")
    shape = (ag.num_rows, 3)
    if mmap:
        (run.path / "tables").mkdir(exist_ok=True)
        regrets, average = (np.lib.format.open_memmap(run.path / "tables" / f"{n}.npy", mode="w+", dtype=np.float32, shape=shape)
                            for n in ("regrets", "average"))  # fmt: skip
    else:
        regrets, average = np.zeros(shape, dtype=np.float32), np.zeros(shape, dtype=np.float32)
    if checkpoint is None:
        return regrets, average, {"iterations": 0, "batches": 0, "seconds": 0.0}
    for table, name in ((regrets, "regrets"), (average, "average")):
        stored = np.load(checkpoint / f"{name}.npy", mmap_mode="r")
        if stored.shape != shape:
            raise PokerbotError(f"{checkpoint}: {name} table of shape {stored.shape} does not fit this abstraction ({shape})")
        table[:] = stored
    state = json.loads((checkpoint / "state.json").read_text())
    run.truncate_metrics(state["iterations"])
    return regrets, average, state


def _checkpoint(run: RunDir, regrets: np.ndarray, average: np.ndarray, state: dict) -> None:
    with run.writing_checkpoint() as directory:
        np.save(directory / "regrets.npy", regrets)
        np.save(directory / "average.npy", average)
        (directory / "state.json").write_text(json.dumps(state))


def _exploitability(ag: AbstractGame, average: np.ndarray) -> dict:
    if ag.abstraction.game.name.split(".")[0] not in EXACT_GAMES:
        return {}
    from bot.best_response import exploitability
    from training.abstraction.strategy import full_game_strategy

    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    return {"exploitability_mbb": report.mbb(report.exploitability), "nash_conv_mbb": report.mbb(report.nash_conv)}


def _publish(run: RunDir, spec, average: np.ndarray, state: dict) -> None:
    """Write the average strategy into the run and as the named agent's policy (atomically)."""
    run.policy_path.mkdir(parents=True, exist_ok=True)
    own = run.policy_path / "average.npy"
    atomic_write(own, lambda h: np.save(h, average))
    meta = {"abstraction": spec.name, "iterations": state["iterations"], "run": str(run.path.resolve())}
    atomic_write(run.policy_path / "meta.json", lambda h: h.write(json.dumps(meta).encode()))
    target = policy_path(spec)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(own, tmp)
    os.replace(tmp, target)
    atomic_write(target.with_name("policy.json"), lambda h: h.write(json.dumps(meta).encode()))

