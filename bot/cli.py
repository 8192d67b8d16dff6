"""The ``pokerbot`` command line: one click group; each command lives in ``bot/commands``.

Commands are imported lazily so ``pokerbot --help`` and small commands start fast (torch and
numba load only for the commands that need them). Errors a user can cause (bad files, names,
options, protocol lines, damaged files) are :class:`~bot.errors.PokerbotError` subclasses and
print one line on stderr and exit 2 (set ``POKERBOT_DEBUG=1`` for the traceback). So does an
``OSError`` that is the machine's state (disk full, no permission, read-only file system:
:data:`protocol.files.ENVIRONMENT_ERRNOS`) from a writer that did not name its path itself.
Nothing else is caught: a ``KeyError`` or ``IndexError`` is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from bot.errors import PokerbotError
from protocol.files import ENVIRONMENT_ERRNOS, output_error

#: command name -> "module:attribute" of its click command.
COMMANDS: dict[str, str] = {
    "agents": "bot.commands.agents:agents",
    "games": "bot.commands.games:games",
    "match": "bot.commands.match:match",
    "report": "bot.commands.report:report",
    "connect": "bot.commands.connect:connect",
    "dealer": "bot.commands.dealer:dealer",
    "train": "bot.commands.train:train",
    "solve": "bot.commands.solve:solve",
    "exploit": "bot.commands.exploit:exploit",
    "lbr": "bot.commands.lbr:lbr",
    "play": "bot.commands.play:play",
    "export-policy": "bot.commands.export_policy:export_policy",
    "watch": "bot.commands.watch:watch",
}

class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attribute)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except PokerbotError as error:
            if os.environ.get("POKERBOT_DEBUG"):
                raise
            click.echo(f"error: {error}", err=True)
            sys.exit(getattr(error, "exit_code", 2))
        except OSError as error:
            if os.environ.get("POKERBOT_DEBUG") or error.errno not in ENVIRONMENT_ERRNOS:
                raise
            click.echo(f"error: {output_error(error.filename or 'a file', error)}", err=True)
            sys.exit(2)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pokerbot")
def main() -> None:
    """pokerbot: Deep CFR poker AI for ACPC limit games (Kuhn, Leduc, FHP, heads-up limit hold'em)."""
