"""``pokerbot solve``: tabular CFR family on a small game, written as a policy file.

:func:`run_solve` is the loop the CLI and the tests share: build the solver, run iterations in
chunks, measure exact exploitability of the average strategy every ``eval_every`` iterations,
return the average strategy and its curve. The command adds a rich progress bar, prints the
curve as it goes, and writes the policy JSON with the run's config in ``meta``; the solver
tables go to ``OUT.ckpt.npz`` so ``--resume`` continues a run; Ctrl-C saves the policy and the
checkpoint reached so far.
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.progress import (
    TextColumn,
)

from bot.best_response import exploitability
from bot.errors import PokerbotError
from bot.infosets import require_tabular_size
from bot.progress import progress_bar
from protocol.files import atomic_write
from protocol.gamedef import Game, load_game

SOLVE_ALGORITHMS = ("cfr", "cfr+", "linear-cfr", "dcfr", "es-mccfr")
#: MCCFR iterations per numba call between progress updates.
_MCCFR_CHUNK = 20_000
#: What must match for ``--resume`` (iterations and eval_every may change).
_RESUME_FIELDS = ("game_name", "algo", "seed", "alpha", "beta", "gamma", "linear")


@dataclass(frozen=True)
class SolveConfig:
    """Everything that determines a solve (stored in the policy file's ``meta``)."""

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
    alpha: float = 1.5
    """DCFR positive-regret discount exponent."""
    beta: float = 0.0
    """DCFR negative-regret discount exponent."""
    gamma: float = 2.0
    """DCFR strategy-sum discount exponent."""
    linear: bool = True
    """ES-MCCFR: weight iteration t by t (Linear MCCFR)."""

    def __post_init__(self) -> None:
        if self.algo not in SOLVE_ALGORITHMS:
            raise PokerbotError(f"unknown --algo {self.algo!r}; known: {', '.join(SOLVE_ALGORITHMS)}")
        if self.iterations < 1:
            raise PokerbotError(f"--iterations must be at least 1, got {self.iterations}")
        if self.eval_every < 0:
            raise PokerbotError(f"--eval-every must be >= 0, got {self.eval_every}")

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


def make_solver(game: Game, config: SolveConfig):
    """The solver object for ``config.algo`` (``run(n)``, ``average_strategy()``)."""
    if config.algo == "es-mccfr":
        from training.mccfr import ExternalSamplingMCCFR, MCCFRConfig

        return ExternalSamplingMCCFR(game, MCCFRConfig(linear=config.linear, seed=config.seed))
    from training.cfr import CFRConfig, TabularCFR

    return TabularCFR(game, CFRConfig(config.algo, config.alpha, config.beta, config.gamma))


def run_solve(
    config: SolveConfig,
    on_progress: Callable[[int], None] | None = None,
    on_eval: Callable[[int, float], None] | None = None,
    checkpoint: Path | None = None,
    resume: bool = False,
) -> SolveResult:
    """Run the solve, measuring exploitability (NashConv/2, mbb/g) every evaluation interval
    and at the end; ``on_progress`` gets the iterations done so far.

    With ``checkpoint``, the solver tables are saved there at every evaluation and when the run
    stops; ``resume`` continues from that file (same game, algorithm, seed and parameters;
    ``iterations`` may be raised). Ctrl-C stops the run early: the result then holds the
    average strategy of the iterations done and ``interrupted`` is set.
    """
    game = load_game(config.game)
    require_tabular_size(game)
    solver = make_solver(game, config)
    result = SolveResult(game, solver.average_strategy(), 0, 0.0)
    if resume:
        if checkpoint is None:
            raise PokerbotError("resuming needs a checkpoint path")
        _load_checkpoint(checkpoint, config, game, solver, result)
    chunk = _MCCFR_CHUNK if config.algo == "es-mccfr" else 1
    interval = config.evaluation_interval
    if on_progress is not None:
        on_progress(solver.iteration)
    try:
        while solver.iteration < config.iterations:
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
                if checkpoint is not None:
                    _save_checkpoint(checkpoint, config, game, solver, result)
                if on_eval is not None:
                    on_eval(solver.iteration, result.curve[-1][1])
    except KeyboardInterrupt:
        result.interrupted = True
    result.iterations = solver.iteration
    result.strategy = solver.average_strategy()
    if checkpoint is not None and result.iterations:
        _save_checkpoint(checkpoint, config, game, solver, result)
    return result


def checkpoint_path(out: Path) -> Path:
    """Where ``pokerbot solve --out OUT`` keeps its solver tables: ``OUT.ckpt.npz``."""
    return out.with_name(out.name + ".ckpt.npz")


def _save_checkpoint(path: Path, config: SolveConfig, game: Game, solver, result: SolveResult) -> None:
    """Write the solver tables atomically (temporary file, fsync, rename)."""
    arrays = dict(solver.state())
    arrays["config"] = np.array(json.dumps({**asdict(config), "game_name": game.name}))
    arrays["curve"] = np.array(result.curve, dtype=np.float64).reshape(-1, 2)
    arrays["seconds"] = np.array(result.seconds)
    atomic_write(path, lambda handle: np.savez(handle, **arrays))


def _load_checkpoint(path: Path, config: SolveConfig, game: Game, solver, result: SolveResult) -> None:
    if not path.is_file():
        raise PokerbotError(f"{path}: no checkpoint to resume (solve writes it next to --out)")
    try:
        with np.load(path, allow_pickle=False) as data:
            state = {name: data[name] for name in data.files}
        saved = json.loads(str(state.pop("config")))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise PokerbotError(f"{path}: not a solve checkpoint: {error}") from None
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


def _meta(config: SolveConfig, result: SolveResult) -> dict:
    return {
        "config": asdict(config),
        "iterations_done": result.iterations,
        "solver_seconds": round(result.seconds, 3),
        "exploitability_curve_mbb": [[i, e] for i, e in result.curve],
        "interrupted": result.interrupted,
    }


@click.command(context_settings={"show_default": True})
@click.option("--game", default="leduc", help="kuhn, leduc, or a gamedef path of a small game.")
@click.option("--algo", default="cfr+", help="One of: " + ", ".join(SOLVE_ALGORITHMS) + ".")
@click.option("--iterations", default=1000, type=int, help="Iterations (one update per player each).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Policy JSON to write.")
@click.option("--seed", default=0, type=int, help="Seed (es-mccfr sampling; recorded in the file).")
@click.option("--eval-every", default=0, type=int, help="Exact exploitability every N iterations (0: ~20 times).")
@click.option("--alpha", default=1.5, type=float, help="DCFR positive-regret discount exponent.")
@click.option("--beta", default=0.0, type=float, help="DCFR negative-regret discount exponent.")
@click.option("--gamma", default=2.0, type=float, help="DCFR strategy-sum discount exponent.")
@click.option("--linear/--no-linear", default=True, help="es-mccfr: linear weighting of iterations.")
@click.option("--resume", is_flag=True, help="Continue from OUT.ckpt.npz (written at every evaluation).")
def solve(**options) -> None:
    """Solve a small game with tabular CFR and write the average strategy as a policy file.

    The solver tables are checkpointed to OUT.ckpt.npz at every evaluation; --resume continues
    from there (raise --iterations to go further)."""
    from bot.tabular_policy import save_policy

    out = Path(options.pop("out"))
    resume = bool(options.pop("resume"))
    config = SolveConfig(**options)
    require_tabular_size(load_game(config.game))  # before the progress bar: a clean one-line error
    console = Console(stderr=True)
    with progress_bar(console, TextColumn("expl {task.fields[expl]}")) as progress:
        task = progress.add_task(f"{config.algo} {config.game}", total=config.iterations, expl="-")

        def evaluated(iteration: int, mbb: float) -> None:
            progress.update(task, expl=f"{mbb:.4g} mbb/g")
            progress.console.print(f"iteration {iteration:>9,}  exploitability {mbb:.6g} mbb/g (NashConv/2)")

        result = run_solve(
            config, lambda done: progress.update(task, completed=done), evaluated,
            checkpoint_path(out), resume,
        )
    if result.iterations == 0:
        raise PokerbotError("interrupted before the first iteration finished; nothing written")
    save_policy(out, result.game, result.strategy, _meta(config, result))
    final = f"{result.curve[-1][1]:.6g} mbb/g" if result.curve else "not measured"
    click.echo(
        f"{'interrupted: ' if result.interrupted else ''}{result.iterations:,} iterations of "
        f"{config.algo} in {result.seconds:.2f} s; exploitability {final}; policy written to {out}"
    )
    if result.interrupted:
        raise click.exceptions.Exit(130)
