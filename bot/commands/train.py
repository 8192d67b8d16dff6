"""``pokerbot train``: one entry point for every training algorithm.

The command parses the options every algorithm shares and hands them to the algorithm's
``run_from_cli(options)`` in ``training`` (imported lazily: torch loads only here). Each
algorithm resolves its preset, the optional TOML config and these flags into its frozen config,
saves it in the run directory, and trains (or resumes).
"""

from __future__ import annotations

import importlib

import click

from bot.errors import PokerbotError

#: --algo value -> module in ``training`` with ``run_from_cli(options: dict) -> None``.
ALGORITHMS: dict[str, str] = {
    "nfsp": "training.nfsp",
    "deep-cfr": "training.deep_cfr",
    "sd-cfr": "training.deep_cfr",
    "dream": "training.dream",
    "os-sd-cfr": "training.dream",
    "abstraction": "training.abstraction.run",
}


@click.command(context_settings={"show_default": True})
@click.option("--game", help="kuhn, leduc, fhp, holdem, or a gamedef path  [default: the --config file's game, else leduc]")
@click.option("--algo", required=True, help="Training algorithm: " + ", ".join(ALGORITHMS or ["(none built)"]))
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML file of defaults (flags override).")
@click.option("--iterations", type=int, help="CFR iterations (Deep CFR / SD-CFR / abstraction) or training steps (NFSP).")
@click.option("--traversals", type=int, help="Traversals per player per iteration (Deep CFR / SD-CFR).")
@click.option("--time-budget", help="Stop after this much wall time, e.g. 90s, 10m, 2h.")
@click.option("--seed", type=int, help="Random seed (recorded in config.toml).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where networks run  [default: auto, i.e. cuda when available]")
@click.option("--preset", type=click.Choice(["tuned", "paper"]), help="DREAM / OS-SD-CFR: the game's preset table  [default: tuned]")
@click.option("--size", help="Abstraction size name (abstraction algo), e.g. 3e6.")
@click.option("--threads", type=int, help="Worker threads (default: all cores).")
@click.option("--out", type=click.Path(file_okay=False), help="Run directory to create.")
@click.option("--resume", type=click.Path(file_okay=False), help="Continue the run in this directory.")
def train(**options: object) -> None:
    """Train a policy; writes a run directory (config.toml, metrics.jsonl, checkpoints, policy).

    Options left out are None, so each algorithm resolves them as preset < --config file < flag.
    """
    algo = str(options["algo"])
    if algo not in ALGORITHMS:
        known = ", ".join(sorted(ALGORITHMS)) or "none yet"
        raise PokerbotError(f"unknown --algo {algo!r}; known: {known}")
    if options["out"] is None and options["resume"] is None:
        raise PokerbotError("give --out RUN_DIR for a new run or --resume RUN_DIR to continue one")
    module = importlib.import_module(ALGORITHMS[algo])
    module.run_from_cli(options)
