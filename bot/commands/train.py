"""``pokerbot train``: one entry point for every training algorithm.

The command hands its options to :func:`training.contract.entry.run_from_cli`, the run contract every
algorithm follows (preset < ``--config`` TOML < flags, everything validated before the run
directory is created, one Ctrl-C policy, verified checkpoints). ``training`` is imported inside
the command only: torch loads when a run starts, not for ``pokerbot --help``.
"""

from __future__ import annotations

from pathlib import Path

import click

from bot.commands.options import NON_NEGATIVE, POSITIVE, SEED
from bot.errors import PokerbotError
from bot.run_files import (
    CONFIG_FILE,
    SOLVE_ALGO,
    SOLVE_ALGORITHMS,
    TRAIN_ALGORITHMS,
    continue_command,
    recorded_algo,
    run_format_problem,
)


@click.command(context_settings={"show_default": True})
@click.option("--game", help="kuhn, leduc, fhp, holdem, or a gamedef path. Required for a new run (or from the "
              "--config file): no default, as a run's cost differs by hours between games.")
@click.option("--algo", help="Training algorithm: " + ", ".join(TRAIN_ALGORITHMS) + ". Required for a new run; "
              "--resume reads it from the run.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML file of settings (flags override it, it overrides the game's preset).")
@click.option("--iterations", type=POSITIVE, help="CFR iterations (Deep CFR / SD-CFR / abstraction / flop-cfr) or self-play steps (NFSP).")
@click.option("--traversals", type=POSITIVE, help="Traversals per player per iteration (Deep CFR / SD-CFR).")
@click.option("--time-budget", help="Stop after this much training time, e.g. 90s, 10m, 2h.")
@click.option("--seed", type=SEED, help="Random seed (recorded in config.toml).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where networks run  [default: auto, i.e. cuda when available]")
@click.option("--preset", type=click.Choice(["tuned", "paper"]), help="DREAM / OS-SD-CFR: the game's preset table  [default: tuned]")
@click.option("--size", help="Abstraction size (--algo abstraction), e.g. 3e6.")
@click.option("--teacher", help="--algo distil: the SD-CFR stack to distil (a Deep CFR run's policy/stack, or the run).")
@click.option("--warm-start", help="--algo abstraction: start from the solve of another abstraction of the game by the "
              "same solver (its run directory, or its name when it is solved here, e.g. abstraction_3e7).")
@click.option("--threads", type=NON_NEGATIVE, help="CPU threads; 0 = all cores  [default: the preset's]")
@click.option("--out", type=click.Path(file_okay=False), help="Run directory to create.")
@click.option("--resume", type=click.Path(file_okay=False), help="Continue the run in this directory (may change --iterations, --time-budget, --device, --threads).")
@click.option("--workers", type=POSITIVE, help="Ray workers for traversals (deep-cfr, sd-cfr) or solver batches "
              "(abstraction: PCS or ES MCCFR); > 1 starts a local Ray with that many CPUs (needs pip install \"pokerbot[ray]\")  [default: 1, no Ray]")
@click.option("--ray-address", help="Join this Ray cluster (e.g. 10.0.0.5:6379) instead of starting a local one.")
@click.option("--force", is_flag=True, help="With --resume: start the run over when it has no usable checkpoint.")
@click.option("--watch", is_flag=True, help="Train in the background and follow the run in `pokerbot watch`.")
def train(**options: object) -> None:
    """Train a policy; writes a run directory (config.toml, metrics.jsonl, checkpoints, policy bundle).

    Settings come from the game's preset, then the --config file, then the flags. Ctrl-C (or
    SIGTERM) finishes the step in progress and checkpoints; --resume continues the run.
    """
    if options["algo"] is None:
        options["algo"] = algo_to_resume(options["resume"])
    if options["algo"] in SOLVE_ALGORITHMS:  # a tabular solver: its own command, for small games only
        raise PokerbotError(f"--algo {options['algo']} is a tabular solver: pokerbot solve --algo {options['algo']} "
                            "--game kuhn|leduc (train's algorithms: " + ", ".join(TRAIN_ALGORITHMS) + ")")
    if options["algo"] not in TRAIN_ALGORITHMS:
        raise PokerbotError(f"unknown --algo {options['algo']!r}; known: {', '.join(TRAIN_ALGORITHMS)}")
    if options["resume"] is None and options["game"] is None and options["config_path"] is None:
        raise PokerbotError("--game is required for a new run: kuhn, leduc (minutes), fhp, holdem (hours), or a gamedef path")
    if options.pop("watch"):
        from bot.commands.watch import train_and_watch

        train_and_watch("training.contract.entry", options)
        return
    from training.contract.entry import run_from_cli

    run_from_cli(options)


def algo_to_resume(resume: object) -> str:
    """The ``--algo`` of a command that left it out: the one the ``--resume`` run recorded in its
    ``run.json``, so the continue line every run prints needs nothing but the run. A new run, a
    tabular solve and a run too old to record its algorithm are one-line errors saying what to
    give instead."""
    if resume is None:
        raise PokerbotError("--algo is required for a new run: " + ", ".join(TRAIN_ALGORITHMS))
    path = Path(str(resume))
    if not (path / CONFIG_FILE).is_file():
        raise PokerbotError(f"{path} is not a run directory (no {CONFIG_FILE})")
    problem = run_format_problem(path)
    if problem is not None:
        raise PokerbotError(problem)
    algo = recorded_algo(path)
    if algo is None:
        raise PokerbotError(f"{path} does not record its algorithm (a run made before run.json): give --algo, one of "
                            + ", ".join(TRAIN_ALGORITHMS))
    if algo == SOLVE_ALGO:
        raise PokerbotError(f"{path} is a solve run; resume it with {continue_command(path, algo)}")
    return algo
