"""The tabular CFR family on a small game (``pokerbot solve``) on a run directory.

``pokerbot solve`` goes through the run contract's one door (:mod:`training.contract.entry`,
:data:`TRAINERS`: resolution, resume rules, Ctrl-C) like every trainer; its ``--algo`` is the CFR
variant, a config field. :func:`run_solve` is the loop the command and the tests share: build the solver, run iterations in
chunks, measure exact exploitability of the average strategy every ``eval_every`` iterations,
return the average strategy and its curve. With a run directory (:class:`training.contract.rundir.RunDir`,
the layout every trainer writes) each evaluation appends a ``metrics.jsonl`` line, the solver
tables are checkpointed into ``checkpoint/`` (format number and sha256 of every file, the
previous checkpoint kept) at every evaluation and every ``checkpoint_seconds``, and
:func:`publish` writes the average strategy as a ``tabular`` policy bundle into ``policy/``.
Interrupts follow :class:`training.contract.stop.StopRequest`: the first Ctrl-C finishes the chunk in
progress and saves the checkpoint; a second abandons the chunk (the last checkpoint stands).
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from rich.console import Console
from rich.progress import TextColumn

from bot.agents.infosets import require_tabular_size
from bot.agents.tabular import save_policy_bundle
from bot.errors import ConfigError, CorruptFileError, PokerbotError
from bot.evaluation.best_response import exploitability
from bot.progress import progress_bar
from bot.run_files import ELAPSED_METRIC, SOLVE_ALGO, SOLVE_ALGORITHMS
from protocol.files import atomic_write
from protocol.gamedef import Game, load_game
from training.contract.entry import Trainer
from training.contract.loop import StepLoop
from training.contract.rundir import RunDir
from training.contract.stop import CheckpointClock, StopRequest
from training.tabular.cfr import DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA

#: MCCFR iterations per numba call between progress updates.
_MCCFR_CHUNK = 20_000
#: The solver tables inside a checkpoint directory (its format number and checksums are in
#: ``COMPLETE``, :mod:`training.contract.rundir`).
TABLES_FILE = "tables.npz"
#: What must match between config.toml and the checkpoint (a hand-edited config.toml).
_RESUME_FIELDS = ("game_name", "algo", "seed", "alpha", "beta", "gamma", "linear")
#: Settings ``--resume`` may change; the run's config.toml keeps every other one.
RESUMABLE = frozenset({"iterations", "eval_every"})


@dataclass(frozen=True)
class SolveConfig:
    """Everything that determines a solve (the run's ``config.toml``)."""

    game: str = "leduc"
    """kuhn, leduc, or a gamedef path (small games: the tables cover every infoset)."""
    algo: str = "cfr+"
    """cfr, cfr+, linear-cfr, dcfr or es-mccfr."""
    iterations: int = 1000
    """Iterations (one update per player each)."""
    seed: int = 0
    """Seed of the sampling algorithms (the full-width ones are deterministic)."""
    eval_every: int = 0
    """Measure exploitability every this many iterations (0: about 20 times per run)."""
    alpha: float = DCFR_ALPHA
    """DCFR positive-regret discount exponent."""
    beta: float = DCFR_BETA
    """DCFR negative-regret discount exponent."""
    gamma: float = DCFR_GAMMA
    """DCFR strategy-sum discount exponent."""
    linear: bool = True
    """ES-MCCFR: weight iteration t by t (Linear MCCFR)."""
    checkpoint_seconds: float = 60.0
    """Also checkpoint when this much wall time passed since the last one (0: at evaluations only)."""

    def __post_init__(self) -> None:
        if self.algo not in SOLVE_ALGORITHMS:
            raise ConfigError(f"unknown --algo {self.algo!r}; known: {', '.join(SOLVE_ALGORITHMS)}")
        if self.iterations < 1:
            raise ConfigError(f"--iterations must be at least 1, got {self.iterations}")
        if self.eval_every < 0:
            raise ConfigError(f"--eval-every must be >= 0, got {self.eval_every}")

    @property
    def evaluation_interval(self) -> int:
        return self.eval_every or max(1, self.iterations // 20)


@dataclass
class SolveResult:
    game: Game
    strategy: np.ndarray
    iterations: int
    seconds: float  # solver time, evaluations excluded
    curve: list[tuple[int, float]] = field(default_factory=list)  # (iteration, mbb/g NashConv/2)
    interrupted: bool = False
    abandoned: bool = False  # a second Ctrl-C dropped the chunk in progress


class Solver(Protocol):
    """What the loop needs of a tabular solver (:class:`training.tabular.cfr.TabularCFR`,
    :class:`training.tabular.mccfr.ExternalSamplingMCCFR`)."""

    iteration: int

    def run(self, iterations: int) -> None: ...

    def average_strategy(self) -> np.ndarray: ...

    def state(self) -> dict[str, np.ndarray]: ...

    def restore(self, state: dict[str, np.ndarray]) -> None: ...


def make_solver(game: Game, config: SolveConfig) -> Solver:
    """The solver object for ``config.algo`` (``run(n)``, ``average_strategy()``)."""
    if config.algo == "es-mccfr":
        from training.tabular.mccfr import ExternalSamplingMCCFR, MCCFRConfig

        return ExternalSamplingMCCFR(game, MCCFRConfig(linear=config.linear, seed=config.seed))
    from training.tabular.cfr import CFRConfig, TabularCFR

    return TabularCFR(game, CFRConfig(config.algo, config.alpha, config.beta, config.gamma))


def run_solve(
    config: SolveConfig,
    on_progress: Callable[[int], None] | None = None,
    on_eval: Callable[[int, float], None] | None = None,
    run: RunDir | None = None,
    resume: bool = False,
    stop: StopRequest | None = None,
    force: bool = False,
) -> SolveResult:
    """Run the solve, measuring exploitability (NashConv/2, mbb/g) every evaluation interval
    and at the end; ``on_progress`` gets the iterations done so far.

    With ``run``, every evaluation appends a metrics line and checkpoints the solver tables, as
    does every ``checkpoint_seconds`` of wall time and the end of the run; ``resume`` continues
    from the run's last verified checkpoint (same game, algorithm, seed and parameters;
    ``iterations`` may be raised). A ``stop`` request ends the run after the chunk in progress
    (checkpointed); a ``KeyboardInterrupt`` (a second Ctrl-C) abandons the chunk, the last
    checkpoint standing. Either way the result holds the average strategy of the iterations
    done and ``interrupted`` is set.
    """
    game = load_game(config.game)
    require_tabular_size(game)
    solver = make_solver(game, config)
    result = SolveResult(game, solver.average_strategy(), 0, 0.0)
    if resume:
        if run is None:
            raise PokerbotError("resuming needs a run directory")
        folder = run.resume_checkpoint(force)
        if folder is not None:
            _load_checkpoint(folder / TABLES_FILE, config, game, solver, result)
        run.truncate_metrics(solver.iteration)
    chunk = _MCCFR_CHUNK if config.algo == "es-mccfr" else 1
    interval = config.evaluation_interval
    if on_progress is not None:
        on_progress(solver.iteration)
    loop = StepLoop(stop or StopRequest(), config.iterations, None, CheckpointClock(2**62, config.checkpoint_seconds),
                    solver.iteration)

    def save() -> None:
        if run is not None:
            _save_checkpoint(run, config, game, solver, result)

    try:
        while loop.running(solver.iteration, result.seconds):
            next_eval = (solver.iteration // interval + 1) * interval
            step = min(chunk, next_eval - solver.iteration, config.iterations - solver.iteration)
            start = time.perf_counter()
            solver.run(step)
            result.seconds += time.perf_counter() - start
            if on_progress is not None:
                on_progress(solver.iteration)
            if solver.iteration % interval == 0 or solver.iteration == config.iterations:
                report = exploitability(game, solver.average_strategy())
                result.curve.append((solver.iteration, report.mbb(report.exploitability)))
                if run is not None:
                    run.append_metrics({"iteration": solver.iteration, "exploitability_mbb": result.curve[-1][1],
                                        ELAPSED_METRIC: round(result.seconds, 3)})
                    loop.checkpoint(solver.iteration, save)
                if on_eval is not None:
                    on_eval(solver.iteration, result.curve[-1][1])
            elif run is not None:
                loop.checkpoint_if_due(solver.iteration, save)
    except KeyboardInterrupt:  # abandoned mid-chunk: the tables may hold half an iteration
        result.abandoned = True
    result.interrupted = result.abandoned or solver.iteration < config.iterations
    result.iterations = solver.iteration
    result.strategy = solver.average_strategy()
    if run is not None and result.iterations and not result.abandoned:
        loop.finish(solver.iteration, save)
    return result


def _save_checkpoint(run: RunDir, config: SolveConfig, game: Game, solver: Solver, result: SolveResult) -> None:
    """The solver tables, curve and solver time as one ``.npz`` in a new checkpoint directory."""
    arrays: dict[str, Any] = dict(solver.state())
    arrays["config"] = np.array(json.dumps({**asdict(config), "game_name": game.name}))
    arrays["curve"] = np.array(result.curve, dtype=np.float64).reshape(-1, 2)
    arrays["seconds"] = np.array(result.seconds)
    with run.writing_checkpoint() as folder:
        atomic_write(folder / TABLES_FILE, lambda handle: np.savez(handle, **arrays))


def _load_checkpoint(path: Path, config: SolveConfig, game: Game, solver: Solver, result: SolveResult) -> None:
    try:
        with np.load(path, allow_pickle=False) as data:
            state = {name: data[name] for name in data.files}
        saved = json.loads(str(state.pop("config")))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        reason = str(error).splitlines()[0] if str(error) else "empty or truncated file"
        raise CorruptFileError(f"{path}: not a solve checkpoint ({reason})") from None
    current = {**asdict(config), "game_name": game.name}
    for name in _RESUME_FIELDS:
        if saved.get(name) != current[name]:
            raise PokerbotError(
                f"{path}: checkpoint was made with {name} {saved.get(name)!r}, not {current[name]!r}"
            )
    try:
        solver.restore(state)
    except (KeyError, ValueError) as error:
        raise PokerbotError(f"{path}: checkpoint does not fit this solver: {error}") from None
    result.curve = [(int(i), float(e)) for i, e in state["curve"]]
    result.seconds = float(state["seconds"])


def provenance(config: SolveConfig, result: SolveResult) -> dict[str, Any]:
    """The policy bundle's provenance: the config, iterations, solver time and the curve."""
    return {
        "algorithm": config.algo,
        "config": asdict(config),
        "seed": config.seed,
        "iterations": result.iterations,
        "solver_seconds": round(result.seconds, 3),
        "exploitability_curve_mbb": [[i, e] for i, e in result.curve],
        "interrupted": result.interrupted,
    }


def publish(run: RunDir, config: SolveConfig, result: SolveResult) -> None:
    """The average strategy as the run's ``tabular`` policy bundle (``policy/``)."""
    save_policy_bundle(run.policy_path, result.game, result.strategy, provenance(config, result))


def train(config: SolveConfig, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> SolveResult:
    """``pokerbot solve``'s run (the contract's :attr:`~training.contract.entry.Trainer.train`):
    :func:`run_solve` with a progress bar and the curve printed as it goes, then the policy
    published. A second Ctrl-C (the chunk abandoned) still publishes the iterations done, then
    leaves as the contract says (exit 130)."""
    console = Console(stderr=True)
    with progress_bar(console, TextColumn("expl {task.fields[expl]}")) as progress:
        task = progress.add_task(f"{config.algo} {config.game}", total=config.iterations, expl="-")

        def evaluated(iteration: int, mbb: float) -> None:
            progress.update(task, expl=f"{mbb:.4g} mbb/g")
            progress.console.print(f"iteration {iteration:>9,}  exploitability {mbb:.6g} mbb/g (NashConv/2)")

        result = run_solve(config, lambda done: progress.update(task, completed=done), evaluated, run, resume, stop, force)
    if result.iterations == 0:
        raise PokerbotError("interrupted before the first iteration finished; nothing written")
    publish(run, config, result)
    final = f"{result.curve[-1][1]:.6g} mbb/g" if result.curve else "not measured"
    print(f"{'interrupted: ' if result.interrupted else ''}{result.iterations:,} iterations of {config.algo} in "
          f"{result.seconds:.2f} s; exploitability {final}")
    if result.abandoned:
        raise KeyboardInterrupt
    return result


def _check_size(values: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A game too large for tables is a one-line error before the run directory exists."""
    require_tabular_size(load_game(str(values.get("game", "leduc"))))
    return values


#: ``pokerbot solve`` for :mod:`training.contract.entry` (its ``--algo`` is the CFR variant).
TRAINERS = {SOLVE_ALGO: Trainer(
    algo=SOLVE_ALGO, config_class=SolveConfig,
    flags={name: name for name in ("game", "algo", "iterations", "seed", "eval_every", "alpha", "beta", "gamma",
                                   "linear")},
    resumable=RESUMABLE, presets={}, train=train, prepare=_check_size,
)}
