"""``pokerbot connect HOST PORT``: an agent joins an ACPC dealer as a client (§10 checklist)."""

from __future__ import annotations

import click
from rich.console import Console

from bot.catalogue import AGENT_HELP
from bot.commands.options import SEED
from bot.evaluation.match import require_playable, run_as_client
from bot.registry import resolve_agent
from protocol.acpc_client import DEFAULT_READ_TIMEOUT
from protocol.gamedef import load_game


@click.command()
@click.argument("host")
@click.argument("port", type=click.IntRange(1, 65535))
@click.option(
    "--game",
    default="holdem",
    show_default=True,
    help="The dealer's gamedef: kuhn, leduc, fhp, holdem or a path (e.g. the reference dealer's "
    "holdem.limit.2p.reverse_blinds.game: a game is recognised by its rules).",
)
@click.option(
    "--agent",
    "agent_spec",
    default="default",
    show_default=True,
    help=AGENT_HELP + " Default: the bot shipped for the game.",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seeds the agent's action sampling (per hand and position).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_READ_TIMEOUT,
    show_default=True,
    help="Seconds to wait for the dealer's next line before giving up.",
)
def connect(host: str, port: int, game: str, agent_spec: str, seed: int, timeout: float) -> None:
    """Play every hand the dealer at HOST PORT deals, until it closes the connection."""
    loaded = load_game(game)
    require_playable(loaded)
    agent = resolve_agent(agent_spec, loaded)
    summary = run_as_client(loaded, agent, host, port, seed, read_timeout=timeout)
    Console().print(f"match over: {summary.line()}")
