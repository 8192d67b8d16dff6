"""``pokerbot train --algo flop-cfr --game fhp``: the full-width FHP solve (``--algo abstraction
--game fhp --size lossless`` names the same run: the lossless "abstraction" of FHP is FHP).

A trainer of the run contract like the others (:data:`TRAINERS`; config resolution, Ctrl-C and
``--resume`` are :mod:`training.contract.entry`'s, the loop's stopping rules and checkpoint
timing :class:`training.contract.loop.StepLoop`'s). Around :class:`training.flop.cfr.FlopCFR`:
a rich progress bar that moves flop by flop inside an iteration (with the ETA and the last
exact exploitability), exact exploitability of the average strategy every ``eval_every``
iterations (off the solve clock: ``elapsed_s`` counts only CFR time; ``nodes_touched`` per
iteration), ``metrics.jsonl``, atomic checkpoints every ``checkpoint_seconds`` and at the end,
and publication of the average strategy:

* ``<run>/policy/``: ``pre_average.npy`` and ``average.npy`` (the solver's own tables over the
  canonical flops, read by :func:`bot.flop.policies.solve_policy` for exact evaluation);
* the agent named ``fhp_lossless``: the same strategy as rows of the lossless abstraction
  (decision node x suit-isomorphism class of hole cards + board), which
  :class:`bot.abstraction.agent.AbstractionAgent` plays.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
from rich.console import Console
from rich.progress import TextColumn

from bot.abstraction.spec import SPECS, resolve_size
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.agents.bundle import write_bundle
from bot.errors import ConfigError, PokerbotError
from bot.flop.game import flop_shape_error
from bot.flop.solve_agent import FLOP_FILE, PREFLOP_FILE
from bot.flop.solve_agent import KIND as FLOP_SOLVE_KIND
from bot.progress import budget_deadline, progress_bar
from bot.run_files import CONFIG_FILE, ELAPSED_METRIC, read_toml
from protocol.files import atomic_write
from protocol.gamedef import load_game
from training.abstraction.publish import publish_named
from training.contract.entry import Trainer
from training.contract.loop import StepLoop
from training.contract.rundir import RunDir
from training.contract.stop import CheckpointClock, StopRequest
from training.flop.cfr import FlopCFR, FlopCFRConfig
from training.tabular.cfr import DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA

#: The abstraction name the full-width solve publishes.
LOSSLESS_NAME = "fhp_lossless"
#: Key that marks a run directory as a flop solve (for ``--resume``).
SOLVER_KEY = "flop_cfr"


@dataclass(frozen=True)
class FlopSolveConfig:
    """One full-width flop solve (the run's config.toml)."""

    game: str = "fhp"
    """The game (FHP, or a flop-hold'em-shaped gamedef path)."""
    flop_cfr: str = "dcfr"
    """``cfr+`` or ``dcfr`` (DCFR reached a reduced deck's 0.5 mbb/g in half CFR+'s iterations)."""
    average_exponent: float = 2.0
    """CFR+: average weight t^k."""
    alpha: float = DCFR_ALPHA
    beta: float = DCFR_BETA
    gamma: float = DCFR_GAMMA
    iterations: int = 1000
    """Stop after this many iterations (``--iterations``)."""
    time_budget: float | None = None
    """Stop after this many seconds of solving."""
    target_mbb: float = 0.0
    """Stop once the measured exploitability (NashConv/2) is below this (0: never)."""
    eval_every: int = 25
    """Exact exploitability every this many iterations (and at the end)."""
    checkpoint_seconds: float = 600.0
    """Wall time between checkpoints."""
    threads: int = 0
    """numba threads; 0 = all cores."""
    seed: int = 0
    """Recorded for the record: full-width CFR is deterministic."""

    def __post_init__(self) -> None:
        self.cfr_config()  # validates the variant
        if self.iterations < 1 or self.eval_every < 1:
            raise ConfigError("iterations and eval_every must be positive")

    def cfr_config(self) -> FlopCFRConfig:
        return FlopCFRConfig(self.flop_cfr, self.average_exponent, self.alpha, self.beta, self.gamma, True)


def _check_shape(values: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A game of another shape than flop hold'em is a one-line error before the run exists."""
    game = load_game(str(values.get("game", "fhp")))
    problem = flop_shape_error(game)
    if problem is not None:
        raise ConfigError(f"{game.name}: --algo flop-cfr solves flop hold'em-shaped games ({problem}), which this is not")
    return values


def route_lossless(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """``--algo abstraction`` options that name this solve (the abstraction trainer's
    :attr:`~training.contract.entry.Trainer.route`): ``--size lossless`` of FHP (its lossless
    abstraction is the game itself, so there is nothing to sample: full-width CFR solves it), or
    ``--resume`` of a run this solve wrote; as ``--algo flop-cfr`` options, else None."""
    resume = options.get("resume")
    if resume:
        config = Path(resume) / CONFIG_FILE
        if not (config.is_file() and SOLVER_KEY in read_toml(config)):
            return None
    else:
        size, game = options.get("size"), options.get("game")
        if not (size and game and resolve_size(str(game), str(size)).name == LOSSLESS_NAME):
            return None
    return {**options, "algo": "flop-cfr", "size": None}


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def solve(config: FlopSolveConfig, run: RunDir, resume: bool = False, stop: StopRequest | None = None,
          force: bool = False, console: Console | None = None) -> FlopCFR:
    """Run (or continue) the solve to its stopping rule; checkpoint and publish on the way out.

    Interrupts follow the run contract (:class:`~training.contract.stop.StopRequest`): the
    first Ctrl-C or SIGTERM lets the iteration in progress finish (for up to the grace period),
    then the solve checkpoints, publishes and returns; an iteration still running after the
    grace period, or at a second signal, is abandoned (:class:`StepAbandoned`,
    ``KeyboardInterrupt``) and the last checkpoint stands: a half-done iteration's tables are
    never saved."""
    console = console or Console(stderr=True)
    if config.threads:
        numba.set_num_threads(config.threads)
    solver = FlopCFR(load_game(config.game), config.cfr_config())
    restored = _restore(run, solver, force) if resume else None
    state = restored or {"iteration": 0, "solve_s": 0.0, "eval_s": 0.0, "exploitability_mbb": None}
    fg = solver.fg
    console.print(f"{config.game}: {fg.num_flops:,} flops x {fg.flop.num_decisions} flop decision nodes x "
                  f"{fg.num_hands:,} hands; tables {solver.table_bytes / 2**30:.2f} GiB; "
                  f"{config.flop_cfr}, {numba.get_num_threads()} threads")  # fmt: skip
    status = TextColumn("{task.fields[status]}")

    def advance(bar: Any, task: Any, start: int) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            bar.update(task, completed=start + done / total)
            stop.check()  # abandons the iteration once past the grace period

        return report

    def save() -> None:
        _checkpoint(run, solver, state)

    with nullcontext(stop) if stop is not None else StopRequest() as stop:
        loop = StepLoop(stop, config.iterations, config.time_budget, CheckpointClock(2**62, config.checkpoint_seconds),
                        solver.iteration if restored else None)
        with progress_bar(console, status) as bar:
            task = bar.add_task("flop CFR", total=config.iterations, completed=solver.iteration, status=_status(state),
                                deadline=budget_deadline(config.time_budget, state["solve_s"], time.monotonic()))  # fmt: skip
            while loop.running(solver.iteration, state["solve_s"]) and not _reached_target(config, state):
                t0 = time.monotonic()
                solver.iterate(advance(bar, task, solver.iteration))
                state["solve_s"] += time.monotonic() - t0
                state["iteration"] = solver.iteration
                # unrounded seconds: a small game's iterations take milliseconds on a fast CPU
                record = {"iteration": solver.iteration, ELAPSED_METRIC: state["solve_s"], "iteration_s": time.monotonic() - t0,
                          "nodes_touched": solver.nodes_per_iteration, "rss_gb": round(_rss_gb(), 3)}
                if solver.iteration % config.eval_every == 0 or solver.iteration >= config.iterations:
                    record |= _evaluate(solver, state, bar, task)
                run.append_metrics(record)
                bar.update(task, completed=solver.iteration, status=_status(state))
                loop.checkpoint_if_due(solver.iteration, save)
    loop.finish(solver.iteration, save)
    console.print(publish(run, solver, state, interrupted=stop.requested))
    console.print(f"{solver.iteration:,} iterations, {state['solve_s']:.0f} s solving; {_status(state)}")
    return solver


def _reached_target(config: FlopSolveConfig, state: dict) -> bool:
    """The stopping rule the flop solve adds to the loop's: the measured exploitability."""
    measured = state["exploitability_mbb"]
    return measured is not None and measured < config.target_mbb


def _status(state: dict) -> str:
    measured = state["exploitability_mbb"]
    return "exploitability: not measured yet" if measured is None else f"exploitability {measured:.3f} mbb/g"


def _evaluate(solver: FlopCFR, state: dict, bar, task) -> dict:
    t0 = time.monotonic()
    bar.update(task, status="measuring exploitability")
    report = solver.exploitability()
    seconds = time.monotonic() - t0
    state["eval_s"] += seconds
    state["exploitability_mbb"] = report.mbb(report.exploitability)
    return {"exploitability_mbb": report.mbb(report.exploitability), "nash_conv_mbb": report.mbb(report.nash_conv),
            "game_value": report.game_value, "eval_s": round(seconds, 2)}  # fmt: skip


def _checkpoint(run: RunDir, solver: FlopCFR, state: dict) -> None:
    with run.writing_checkpoint() as directory:
        for name, table in solver.tables().items():
            np.save(directory / f"{name}.npy", table)
        (directory / "state.json").write_text(json.dumps(state))


def _restore(run: RunDir, solver: FlopCFR, force: bool = False) -> dict | None:
    """The solve's state from the run's verified checkpoint (the tables loaded into ``solver``);
    None when the run starts over (nothing to lose, or ``force``)."""
    checkpoint = run.resume_checkpoint(force)
    if checkpoint is None:
        run.truncate_metrics(0)
        return None
    try:
        state = json.loads((checkpoint / "state.json").read_text())
        solver.restore(lambda name: np.load(checkpoint / f"{name}.npy", mmap_mode="r"), int(state["iteration"]))
    except (OSError, ValueError, KeyError) as error:
        raise PokerbotError(f"{checkpoint}: damaged checkpoint: {error}") from None
    run.truncate_metrics(solver.iteration)
    return state


def publish(run: RunDir, solver: FlopCFR, state: dict, interrupted: bool = False) -> str:
    """Write the average strategy into the run, and as the ``fhp_lossless`` agent's policy when
    the game is FHP and the run was not stopped early
    (:func:`training.abstraction.publish.publish_named`); returns the line that says which."""
    run.policy_path.mkdir(parents=True, exist_ok=True)
    atomic_write(run.policy_path / PREFLOP_FILE, lambda h: np.save(h, solver.pre_average))
    atomic_write(run.policy_path / FLOP_FILE, lambda h: np.save(h, solver.average))
    meta = {"solver": SOLVER_KEY, "game": solver.fg.game.name, "iteration": solver.iteration,
            "config": asdict(solver.config), "state": state, "run": str(run.path.resolve())}  # fmt: skip
    atomic_write(run.policy_path / "meta.json", lambda h: h.write(json.dumps(meta).encode()))
    provenance = {"algorithm": f"full-width {solver.config.algo}", "config": asdict(solver.config),
                  "iterations": solver.iteration, "exploitability_mbb": state["exploitability_mbb"]}  # fmt: skip
    write_bundle(run.policy_path, FLOP_SOLVE_KIND, solver.fg.game, [PREFLOP_FILE, FLOP_FILE], provenance)
    spec = SPECS[LOSSLESS_NAME]
    if solver.fg.game.name != spec.load_game().name:
        return f"the policy is in {run.policy_path}"
    from training.abstraction.build import build_abstraction

    build_abstraction(spec)  # lossless rounds: only the meta file
    return publish_named(spec, run, "flop-cfr", solver.iteration, lambda h: np.save(h, lossless_rows(solver)), interrupted,
                         meta)  # fmt: skip


def lossless_rows(solver: FlopCFR) -> np.ndarray:
    """The average strategy as ``fhp_lossless`` rows (float32 ``[rows, 3]``): each (node, class
    of hole cards + board) row gets the normalised average of a canonical representative."""
    from bot.flop.game import match_strategy

    fg = solver.fg
    ag = AbstractGame.build(Abstraction.load(SPECS[LOSSLESS_NAME]))
    rows = np.zeros((ag.num_rows, 3), dtype=np.float32)
    pre = np.empty(solver.pre_average.shape)
    match_strategy(solver.pre_average, fg.preflop.legal, pre)
    pre_class = ag.abstraction.indexers[0].index_batch(fg.hands)
    for d, node in enumerate(fg.preflop.decision_nodes):
        rows[ag.row_offset[node] + pre_class] = pre[d]
    indexer = ag.abstraction.indexers[1]
    offsets = ag.row_offset[fg.flop.decision_nodes]
    strategy = np.empty(solver.average.shape[1:])
    for c in range(fg.num_flops):
        valid = fg.valid[c] > 0
        hands = fg.hands[valid]
        cards = np.concatenate([hands, np.broadcast_to(fg.flops[c], (len(hands), fg.flops.shape[1]))], axis=1)
        classes = indexer.index_batch(cards)
        match_strategy(solver.average[c], fg.flop.legal, strategy)
        rows[offsets[:, None] + classes[None, :]] = strategy[:, valid]
    return rows


#: ``--algo flop-cfr`` for :mod:`training.contract.entry` (no presets: one game, the defaults).
TRAINERS = {"flop-cfr": Trainer(
    algo="flop-cfr", config_class=FlopSolveConfig,
    flags={"game": "game", "iterations": "iterations", "time_budget": "time_budget", "seed": "seed",
           "threads": "threads"},
    resumable=frozenset({"iterations", "time_budget", "threads"}),
    presets={}, train=solve, prepare=_check_shape,
)}
