"""The tabular CFR family on a small game (``pokerbot solve``'s loop).

:func:`run_solve` is the loop the CLI and the tests share: build the solver, run iterations in
chunks, measure exact exploitability of the average strategy every ``eval_every`` iterations,
return the average strategy and its curve. The solver tables go to a checkpoint file (format
number inside, checked on load; the zip format's CRC-32 catches damaged members) at every
evaluation and every ``checkpoint_seconds``, so ``--resume`` continues a run. Interrupts follow
:class:`training.run.StopRequest`: the first Ctrl-C finishes the chunk in progress and saves
the checkpoint; a second abandons the chunk (the last checkpoint stands).
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bot.best_response import exploitability
from bot.errors import ConfigError, CorruptFileError, PokerbotError
from bot.infosets import require_tabular_size
from protocol.files import atomic_write
from protocol.gamedef import Game, load_game
from training.run import CheckpointClock, StopRequest

SOLVE_ALGORITHMS = ("cfr", "cfr+", "linear-cfr", "dcfr", "es-mccfr")
#: MCCFR iterations per numba call between progress updates.
_MCCFR_CHUNK = 20_000
#: Format number stored in solve checkpoints.
CHECKPOINT_FORMAT = 1
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
    stop: StopRequest | None = None,
) -> SolveResult:
    """Run the solve, measuring exploitability (NashConv/2, mbb/g) every evaluation interval
    and at the end; ``on_progress`` gets the iterations done so far.

    With ``checkpoint``, the solver tables are saved there at every evaluation and when the run
    stops; ``resume`` continues from that file (same game, algorithm, seed and parameters;
    ``iterations`` may be raised); it is also saved every ``checkpoint_seconds``. A ``stop``
    request ends the run after the chunk in progress (checkpointed); a ``KeyboardInterrupt``
    (a second Ctrl-C) abandons the chunk, the last checkpoint standing. Either way the result
    holds the average strategy of the iterations done and ``interrupted`` is set.
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
    clock = CheckpointClock(2**62, config.checkpoint_seconds)
    saved = solver.iteration
    try:
        while solver.iteration < config.iterations:
            if stop is not None and stop.requested:
                result.interrupted = True
                break
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
                    saved = solver.iteration
                    clock.saved()
                if on_eval is not None:
                    on_eval(solver.iteration, result.curve[-1][1])
            elif checkpoint is not None and clock.due(solver.iteration):
                _save_checkpoint(checkpoint, config, game, solver, result)
                saved = solver.iteration
                clock.saved()
    except KeyboardInterrupt:  # abandoned mid-chunk: the tables may hold half an iteration
        result.interrupted = result.abandoned = True
        saved = solver.iteration if solver.iteration == saved else -1
    result.iterations = solver.iteration
    result.strategy = solver.average_strategy()
    if checkpoint is not None and result.iterations and saved not in (-1, solver.iteration):
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
    arrays["format"] = np.array(CHECKPOINT_FORMAT)
    atomic_write(path, lambda handle: np.savez(handle, **arrays))


def _load_checkpoint(path: Path, config: SolveConfig, game: Game, solver, result: SolveResult) -> None:
    if not path.is_file():
        raise PokerbotError(f"{path}: no checkpoint to resume (solve writes it next to --out)")
    try:
        with np.load(path, allow_pickle=False) as data:
            state = {name: data[name] for name in data.files}
        saved = json.loads(str(state.pop("config")))
        version = int(state.pop("format", CHECKPOINT_FORMAT))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        reason = str(error).splitlines()[0] if str(error) else "empty or truncated file"
        raise CorruptFileError(f"{path}: not a solve checkpoint ({reason})") from None
    if version != CHECKPOINT_FORMAT:
        raise CorruptFileError(f"{path}: solve checkpoint format {version}, this pokerbot reads {CHECKPOINT_FORMAT}")
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


def meta(config: SolveConfig, result: SolveResult) -> dict:
    """The policy file's ``meta``: the config, iterations, solver time and the curve."""
    return {
        "config": asdict(config),
        "iterations_done": result.iterations,
        "solver_seconds": round(result.seconds, 3),
        "exploitability_curve_mbb": [[i, e] for i, e in result.curve],
        "interrupted": result.interrupted,
    }
