"""``pokerbot agents``: every agent name, what it is, where it plays, whether it exists here,
how strong it measured, and the command and cost to build the ones that do not exist yet (the
catalogue is :mod:`bot.catalogue`; this module prints it).
"""

from __future__ import annotations

import textwrap

import click

from bot.catalogue import GAMES, WIDTH, agent_infos, run_paths


@click.command(context_settings={"show_default": True})
@click.option("--game", type=click.Choice([*GAMES, "hulh"]), default=None,
              help="Only the agents that play this game (default: every game).")
def agents(game: str | None) -> None:
    """List every agent name: what it is, its game, whether it is built, its measured strength,
    and the command and cost to build it. Any policy file or run directory is an agent too."""
    if game == "hulh":
        game = "holdem"
    for info in agent_infos(game):
        click.echo("\n".join(info.lines()))
    for alias in GAMES if game is None else (game,):
        paths = run_paths(alias)
        if paths:
            listed = ", ".join(f"{p} ({'found' if found else 'absent'})" for p, found in paths)
            text = f"pokerbot play --game {alias} also looks for: {listed}"
            click.echo("\n".join(textwrap.wrap(text, WIDTH, subsequent_indent="    ", break_on_hyphens=False)))
