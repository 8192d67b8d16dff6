"""``pokerbot solve``: tabular CFR family on a small game, written as a run directory.

The loop is :func:`training.tabular.solve.run_solve` (imported when the command runs: the CLI's one
documented exception to ``bot`` not importing ``training``, shared with ``train``). Like every
trainer it writes a run directory (:mod:`training.contract.rundir`: ``config.toml``, ``metrics.jsonl``,
verified ``checkpoint/``, and the average strategy as a ``tabular`` policy bundle in
``policy/``), and ``--resume RUN`` continues one, as ``train --resume RUN`` does. The command
adds a rich progress bar and prints the curve as it goes; Ctrl-C follows the run contract's
policy (finish the chunk, checkpoint, write the policy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import TextColumn

from bot.commands.options import NON_NEGATIVE, POSITIVE, SEED
from bot.errors import ConfigError, PokerbotError
from bot.progress import progress_bar
from bot.run_files import SOLVE_ALGORITHMS

#: The options that are solve settings (the rest steer the command).
SETTINGS = ("game", "algo", "iterations", "seed", "eval_every", "alpha", "beta", "gamma", "linear")


def old_form_error(out: str | None, resume: str | None) -> str | None:
    """The one-line message for the options of the solve that wrote ``OUT.json`` beside
    ``OUT.json.ckpt.npz`` (before it wrote a run directory), else None."""
    changed = "solve writes a run directory now (config.toml, metrics.jsonl, checkpoint/, policy/)"
    if resume == "":
        return f"--resume needs the run directory: pokerbot solve --resume RUN_DIR ({changed})"
    if resume is not None and (Path(resume).is_file() or resume.endswith(".json")):
        return (f"--resume {resume}: a policy file of the older solve, whose .ckpt.npz cannot be continued; "
                f"{changed}: start one with --out RUN_DIR")
    if out is not None and out.endswith(".json"):
        return f"--out {out}: {changed}, not a .json policy file; name a directory, e.g. --out {out[:-5]}"
    return None


@click.command(context_settings={"show_default": True})
@click.option("--game", default="leduc", help="kuhn, leduc, or a gamedef path of a small game (the default is not holdem, as elsewhere: hold'em and FHP are too large to tabulate).")
@click.option("--algo", default="cfr+", help="One of: " + ", ".join(SOLVE_ALGORITHMS) + ".")
@click.option("--iterations", default=1000, type=POSITIVE, help="Iterations (one update per player each).")
@click.option("--out", help="Run directory to create (config.toml, metrics.jsonl, checkpoint/, policy/).")
@click.option("--seed", default=0, type=SEED, help="Seed (es-mccfr sampling; recorded in config.toml).")
@click.option("--eval-every", default=0, type=NON_NEGATIVE, help="Exact exploitability every N iterations (0: ~20 times).")
@click.option("--alpha", default=1.5, type=float, help="DCFR positive-regret discount exponent.")
@click.option("--beta", default=0.0, type=float, help="DCFR negative-regret discount exponent.")
@click.option("--gamma", default=2.0, type=float, help="DCFR strategy-sum discount exponent.")
@click.option("--linear/--no-linear", default=True, help="es-mccfr: linear weighting of iterations.")
@click.option("--resume", is_flag=False, flag_value="", default=None, metavar="RUN_DIR",
              help="Continue the solve in this run directory, as train --resume does (may change --iterations, --eval-every).")
@click.pass_context
def solve(context: click.Context, out: str | None, resume: str | None, **options: Any) -> None:
    """Solve a small game with tabular CFR; writes a run directory whose policy/ is the average
    strategy (a tabular policy bundle).

    The solver tables are checkpointed at every evaluation and every minute; --resume RUN_DIR
    continues from there (raise --iterations to go further)."""
    from bot.agents.infosets import require_tabular_size
    from bot.run_files import SOLVE_ALGO
    from protocol.gamedef import load_game
    from training.contract.entry import require_trainable
    from training.contract.rundir import RunDir
    from training.tabular.solve import SolveConfig, resume_config

    problem = old_form_error(out, resume)
    if problem is not None:
        raise ConfigError(problem)
    if out and resume:
        raise ConfigError("give either --out (a new run) or --resume (an existing one), not both")
    if resume:
        run = RunDir.open(resume, algo=SOLVE_ALGO)
        run.lock()  # one writer; what is resumed is said once the checkpoint is verified
        run.check_game()
        given = {name: options[name] for name in SETTINGS
                 if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT}
        config = resume_config(run, given)
        run.save_config(config)
    elif out:
        config = SolveConfig(**{name: options[name] for name in SETTINGS})
        game = load_game(config.game)
        require_trainable(game)  # before anything is created: one-line errors
        require_tabular_size(game)
        run = RunDir.create(out, config, algo=SOLVE_ALGO)
    else:
        raise ConfigError("give --out RUN_DIR for a new solve or --resume RUN_DIR to continue one")
    try:
        solve_in(run, config, bool(resume))
    except Exception:
        if not resume:
            run.discard()  # nothing to resume (a full disk, say): a retry finds no half-made run
        raise


def solve_in(run: Any, config: Any, resume: bool) -> None:
    """Run (or continue) ``config`` (a ``training.tabular.solve.SolveConfig``) in ``run`` (a
    ``training.contract.rundir.RunDir``; ``bot`` imports ``training`` only inside commands) with a
    progress bar, then publish its policy."""
    from training.contract.entry import StopRequest
    from training.tabular.solve import publish, run_solve

    console = Console(stderr=True)
    with progress_bar(console, TextColumn("expl {task.fields[expl]}")) as progress:
        task = progress.add_task(f"{config.algo} {config.game}", total=config.iterations, expl="-")

        def evaluated(iteration: int, mbb: float) -> None:
            progress.update(task, expl=f"{mbb:.4g} mbb/g")
            progress.console.print(f"iteration {iteration:>9,}  exploitability {mbb:.6g} mbb/g (NashConv/2)")

        with StopRequest(progress.console.file) as stop:
            result = run_solve(config, lambda done: progress.update(task, completed=done), evaluated, run, resume, stop)
    if result.iterations == 0:
        raise PokerbotError("interrupted before the first iteration finished; nothing written")
    publish(run, config, result)
    final = f"{result.curve[-1][1]:.6g} mbb/g" if result.curve else "not measured"
    click.echo(
        f"{'interrupted: ' if result.interrupted else ''}{result.iterations:,} iterations of "
        f"{config.algo} in {result.seconds:.2f} s; exploitability {final}; run directory {run.path} "
        f"(policy in {run.policy_path})"
    )
    if result.abandoned:
        raise click.exceptions.Exit(130)
    if result.interrupted:
        click.echo(f"stopped on request; checkpoint saved; continue with: pokerbot solve --resume {run.path}", err=True)
