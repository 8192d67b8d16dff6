"""``pokerbot solve``: tabular CFR family on a small game, written as a policy file.

The loop is :func:`training.solve.run_solve` (imported when the command runs: the CLI's one
documented exception to ``bot`` not importing ``training``, shared with ``train``). The command
adds a rich progress bar, prints the curve as it goes, and writes the policy JSON with the run's
config in ``meta``; the solver tables go to ``OUT.ckpt.npz`` so ``--resume`` continues a run;
Ctrl-C follows the run contract's policy (finish the chunk, checkpoint, write the policy).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import TextColumn

from bot.errors import PokerbotError
from bot.progress import progress_bar

#: ``--algo`` values (``training.solve.SOLVE_ALGORITHMS``; a test keeps the two equal).
ALGORITHM_NAMES = ("cfr", "cfr+", "linear-cfr", "dcfr", "es-mccfr")


@click.command(context_settings={"show_default": True})
@click.option("--game", default="leduc", help="kuhn, leduc, or a gamedef path of a small game (the default is not holdem, as elsewhere: hold'em and FHP are too large to tabulate).")
@click.option("--algo", default="cfr+", help="One of: " + ", ".join(ALGORITHM_NAMES) + ".")
@click.option("--iterations", default=1000, type=int, help="Iterations (one update per player each).")
@click.option("--out", type=click.Path(dir_okay=False), help="Policy JSON to write (a resumed solve: the one it continues).")
@click.option("--seed", default=0, type=int, help="Seed (es-mccfr sampling; recorded in the file).")
@click.option("--eval-every", default=0, type=int, help="Exact exploitability every N iterations (0: ~20 times).")
@click.option("--alpha", default=1.5, type=float, help="DCFR positive-regret discount exponent.")
@click.option("--beta", default=0.0, type=float, help="DCFR negative-regret discount exponent.")
@click.option("--gamma", default=2.0, type=float, help="DCFR strategy-sum discount exponent.")
@click.option("--linear/--no-linear", default=True, help="es-mccfr: linear weighting of iterations.")
@click.option("--resume", is_flag=False, flag_value="", default=None, metavar="OUT",
              help="Continue the solve whose policy is OUT, from OUT.ckpt.npz (written at every evaluation), as "
                   "train --resume RUN_DIR continues a run; a bare --resume continues --out.")
def solve(**options) -> None:
    """Solve a small game with tabular CFR and write the average strategy as a policy file.

    The solver tables are checkpointed to OUT.ckpt.npz at every evaluation; --resume continues
    from there (raise --iterations to go further)."""
    from bot.infosets import require_tabular_size
    from bot.tabular_policy import save_policy
    from protocol.gamedef import load_game
    from training.run import StopRequest
    from training.solve import SolveConfig, checkpoint_path, meta, run_solve

    out_option, resume_option = options.pop("out"), options.pop("resume")
    if out_option and resume_option and Path(out_option) != Path(resume_option):
        raise PokerbotError(f"--resume {resume_option} and --out {out_option} name different policies; give one")
    if not (out_option or resume_option):
        raise PokerbotError("give --out POLICY.json for a new solve, or --resume POLICY.json to continue one")
    out = Path(out_option or resume_option)
    resume = resume_option is not None
    config = SolveConfig(**options)
    require_tabular_size(load_game(config.game))  # before the progress bar: a clean one-line error
    console = Console(stderr=True)
    with progress_bar(console, TextColumn("expl {task.fields[expl]}")) as progress:
        task = progress.add_task(f"{config.algo} {config.game}", total=config.iterations, expl="-")

        def evaluated(iteration: int, mbb: float) -> None:
            progress.update(task, expl=f"{mbb:.4g} mbb/g")
            progress.console.print(f"iteration {iteration:>9,}  exploitability {mbb:.6g} mbb/g (NashConv/2)")

        with StopRequest(progress.console.file) as stop:
            result = run_solve(
                config, lambda done: progress.update(task, completed=done), evaluated,
                checkpoint_path(out), resume, stop,
            )
    if result.iterations == 0:
        raise PokerbotError("interrupted before the first iteration finished; nothing written")
    save_policy(out, result.game, result.strategy, meta(config, result))
    final = f"{result.curve[-1][1]:.6g} mbb/g" if result.curve else "not measured"
    click.echo(
        f"{'interrupted: ' if result.interrupted else ''}{result.iterations:,} iterations of "
        f"{config.algo} in {result.seconds:.2f} s; exploitability {final}; policy written to {out}"
    )
    if result.abandoned:
        raise click.exceptions.Exit(130)
    if result.interrupted:
        click.echo("stopped on request; checkpoint saved; continue with the same command and --resume", err=True)
