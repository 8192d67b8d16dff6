"""``pokerbot solve``: tabular CFR family on a small game, written as a run directory.

The command hands the options it was given to :func:`training.contract.entry.run_from_cli`,
the one door every trainer goes through (imported when the command runs: the CLI's one
documented exception to ``bot`` not importing ``training``, shared with ``train``): the same
resolution, ``--resume`` rules and Ctrl-C policy (finish the chunk, checkpoint, write the
policy, exit 0) as ``pokerbot train``. The solve is :mod:`training.tabular.solve`; like every
trainer it writes a run directory (``config.toml``, ``metrics.jsonl``, verified ``checkpoint/``,
and the average strategy as a ``tabular`` policy bundle in ``policy/``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bot.commands.options import NON_NEGATIVE, POSITIVE, SEED
from bot.errors import ConfigError
from bot.run_files import SOLVE_ALGO, SOLVE_ALGORITHMS


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
    from training.contract.entry import run_from_cli

    problem = old_form_error(out, resume)
    if problem is not None:
        raise ConfigError(problem)
    if not out and not resume:
        raise ConfigError("give --out RUN_DIR for a new solve or --resume RUN_DIR to continue one")
    given = {name: value for name, value in options.items()
             if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT}
    run_from_cli(given | {"out": out, "resume": resume}, algo=SOLVE_ALGO)
