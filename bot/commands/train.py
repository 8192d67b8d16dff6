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
    "abstraction": "training.abstraction.run",
}


@click.command(context_settings={"show_default": True})
@click.option("--game", help="kuhn, leduc, fhp, holdem, or a gamedef path. Required for a new run (or from the "
              "--config file): no default, as a run's cost differs by hours between games.")
@click.option("--algo", required=True, help="Training algorithm: " + ", ".join(ALGORITHMS or ["(none built)"]))
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML file of defaults (flags override).")
@click.option("--iterations", type=int, help="CFR iterations (Deep CFR / SD-CFR / abstraction) or training steps (NFSP).")
@click.option("--traversals", type=int, help="Traversals per player per iteration (Deep CFR / SD-CFR).")
@click.option("--time-budget", help="Stop after this much wall time, e.g. 90s, 10m, 2h.")
@click.option("--seed", type=int, help="Random seed (recorded in config.toml).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where networks run  [default: auto, i.e. cuda when available]")
@click.option("--size", help="Abstraction size name (abstraction algo), e.g. 3e6.")
@click.option("--threads", type=int, help="Worker threads (default: all cores).")
@click.option("--out", type=click.Path(file_okay=False), help="Run directory to create.")
@click.option("--resume", type=click.Path(file_okay=False), help="Continue the run in this directory.")
@click.option("--workers", type=int, help="Ray workers for traversals (deep-cfr, sd-cfr) or MCCFR batches "
              "(abstraction); > 1 starts a local Ray with that many CPUs (needs pip install \"pokerbot[ray]\")  [default: 1, no Ray]")
@click.option("--ray-address", help="Join this Ray cluster (e.g. 10.0.0.5:6379) instead of starting a local one.")
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
    if options["resume"] is None and options["game"] is None and options["config_path"] is None:
        raise PokerbotError("--game is required for a new run: kuhn, leduc (minutes), fhp, holdem (hours), or a gamedef path")
    if options["resume"] is not None:  # say what continues, terminal or not
        from training.rundir import RunDir

        click.echo(RunDir.open(str(options["resume"])).resume_summary(), err=True)
    if algo == "nfsp" and ((options["workers"] or 1) > 1 or options["ray_address"]):
        raise PokerbotError("--workers/--ray-address apply to deep-cfr, sd-cfr and abstraction, not nfsp")
    module = importlib.import_module(ALGORITHMS[algo])
    module.run_from_cli(options)
