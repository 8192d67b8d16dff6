"""``pokerbot dealer``: our ACPC dealer with the reference dealer's arguments (§8).

``pokerbot dealer MATCHNAME GAMEDEF HANDS SEED NAME1 NAME2 [options]``; prints the ports line
then the SCORE line on stdout, header/traffic/warnings on stderr, writes ``MATCHNAME.log``;
exits 0 after a complete match, 1 after a fatal error (timeout, disconnect, bad version).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bot.commands.options import SEED
from bot.errors import PokerbotError
from protocol.dealer import Dealer, DealerOptions
from protocol.gamedef import load_game


def _ports(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        ports = tuple(int(p) if p else 0 for p in text.split(","))
    except ValueError:
        raise click.BadParameter(
            f"ports must be numbers separated by commas, got {text!r}"
        ) from None
    if any(not 0 <= p < 65536 for p in ports):
        raise click.BadParameter(f"ports must be 0..65535, got {text!r}")
    return ports


@click.command(context_settings={"allow_interspersed_args": True})
@click.argument("match_name")
@click.argument("gamedef")
@click.argument("hands", type=click.IntRange(min=1))
@click.argument("seed", type=SEED)
@click.argument("names", nargs=-1, required=True)
@click.option(
    "-p", "ports", help="Ports per seat, comma separated (0 or missing: drawn from the seed)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind (0.0.0.0 for every interface).",
)
@click.option("-f", "fixed_seats", is_flag=True, help="Fixed seats (no rotation).")
@click.option("-L/-l", "write_log", default=True, help="Write MATCHNAME.log (default) / don't.")
@click.option("-T/-t", "write_tlog", default=False, help="Write MATCHNAME.tlog / don't (default).")
@click.option("-a", "append", is_flag=True, help="Append to the log files.")
@click.option("-q", "quiet", is_flag=True, help="Quiet: no TO/FROM traffic on stderr.")
@click.option(
    "--t_response",
    type=int,
    default=600000,
    show_default=True,
    help="ms allowed per reply (also for the version line).",
)
@click.option(
    "--t_hand",
    type=int,
    default=600000,
    show_default=True,
    help="ms one player may use in one hand.",
)
@click.option(
    "--t_per_hand",
    type=int,
    default=7000,
    show_default=True,
    help="Average ms per hand; the match budget is this × hands.",
)
@click.option(
    "--start_timeout",
    type=int,
    default=-1,
    show_default=True,
    help="ms for all seats to connect (negative: forever).",
)
def dealer(
    match_name: str, gamedef: str, hands: int, seed: int, names: tuple[str, ...], **options
) -> None:
    """Deal a match to ACPC clients, as the reference dealer does."""
    options["ports"] = _ports(options["ports"])
    folder = Path(match_name).parent
    if (options["write_log"] or options["write_tlog"]) and not folder.is_dir():
        raise PokerbotError(f"match name {match_name}: folder {folder} does not exist")
    game = load_game(gamedef)
    server = Dealer(DealerOptions(match_name, gamedef, game, hands, seed, tuple(names), **options))
    try:
        server.listen()
    except OSError as error:  # a fixed port in use: fatal, as in the reference (exit 1)
        click.echo(f"ERROR: {error}", err=True)
        sys.exit(1)
    sys.exit(server.run())
