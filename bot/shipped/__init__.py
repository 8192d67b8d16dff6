"""The bots that ship inside the package: the agent named ``default`` for each target game.

A shipped bot is a folder ``bot/shipped/<alias>/`` (``fhp``, ``holdem``) holding a
``manifest.json`` and the small data files it names. The manifest says which *kind* of policy
the folder holds; the module that knows that kind defines its loader and
:mod:`bot.registry` registers it by kind (and passes the table to :func:`load_shipped`),
so this module needs no knowledge of networks or abstractions.

Manifest fields (format 1): ``format``, ``kind``, ``game`` (the gamedef's name), ``name`` (what
tables and the TUI call the bot), ``description`` (one line: what it is and how it was made),
``strength`` (measured figures, each a short string, e.g. ``{"exploitability": "12.3 mbb/g
(exact, NashConv/2)"}``), and ``files``: file name -> sha256 of its bytes, checked on load so
a damaged install is a one-line error rather than a bot that plays from corrupt weights.

The game is matched by its rules, not its name: a gamedef read from the reference dealer's own
``holdem.limit.2p.reverse_blinds.game`` file gets the shipped hold'em bot too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bot.agents.base import Agent
from bot.errors import AgentNotFound, PokerbotError
from protocol.gamedef import GAME_ALIASES, Game, load_game

SHIPPED_ROOT = Path(__file__).resolve().parent
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
#: The shipped folders, by the game alias they serve.
SHIPPED_GAMES = ("holdem", "fhp")

ShippedLoader = Callable[[Game, Path, dict[str, Any]], Agent]


class ShippedBotError(PokerbotError, ValueError):
    """A shipped bot's folder is damaged (missing file, checksum mismatch, unknown kind)."""


def _same_rules(a: Game, b: Game) -> bool:
    return dataclasses.replace(a, name="") == dataclasses.replace(b, name="")


def shipped_alias(game: Game) -> str | None:
    """The alias (``holdem``, ``fhp``) whose rules ``game`` has, if a bot ships for it."""
    for alias in SHIPPED_GAMES:
        if _same_rules(game, load_game(GAME_ALIASES[alias])):
            return alias
    return None


def shipped_folder(game: Game) -> Path | None:
    """The folder of the bot shipped for ``game``, or None when none ships."""
    alias = shipped_alias(game)
    if alias is None:
        return None
    folder = SHIPPED_ROOT / alias
    return folder if (folder / MANIFEST_NAME).is_file() else None


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a shipped folder, with its format and every file's sha256 verified."""
    path = folder / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ShippedBotError(f"{path}: unreadable shipped-bot manifest: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ShippedBotError(f"{path}: not a format-{MANIFEST_FORMAT} shipped-bot manifest")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise ShippedBotError(f"{path}: 'files' must map file names to sha256 digests")
    for name, digest in files.items():
        file = folder / name
        if Path(name).name != name or not file.is_file():
            raise ShippedBotError(f"{path}: shipped file {name!r} is missing")
        if hashlib.sha256(file.read_bytes()).hexdigest() != digest:
            raise ShippedBotError(f"{file}: checksum mismatch (the shipped bot is damaged; reinstall pokerbot)")
    return manifest


def shipped_manifest(game: Game) -> dict[str, Any] | None:
    """The verified manifest of ``game``'s shipped bot, or None when none ships."""
    folder = shipped_folder(game)
    return None if folder is None else read_manifest(folder)


def load_shipped(game: Game, kinds: Mapping[str, ShippedLoader]) -> Agent:
    """The shipped bot for ``game`` (the agent named ``default``), loaded by its manifest's kind
    from ``kinds`` (the registry's table)."""
    folder = shipped_folder(game)
    if folder is None:
        games = ", ".join(a for a in SHIPPED_GAMES if (SHIPPED_ROOT / a / MANIFEST_NAME).is_file())
        raise AgentNotFound(f"no bot ships for {game.name} (shipped: {games or 'none'}); name an agent or a policy path")
    manifest = read_manifest(folder)
    loader = kinds.get(manifest.get("kind", ""))
    if loader is None:
        raise ShippedBotError(f"{folder / MANIFEST_NAME}: unknown shipped-bot kind {manifest.get('kind')!r}")
    agent = loader(game, folder, manifest)
    agent.name = str(manifest.get("name", "default"))
    return agent


def write_manifest(folder: Path, manifest: dict[str, Any], files: list[str]) -> Path:
    """Write ``folder``'s manifest with the sha256 of each of ``files`` (used by the scripts
    that build a shipped bot); returns the manifest's path."""
    digests = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in files}
    body = {"format": MANIFEST_FORMAT, **manifest, "files": digests}
    path = folder / MANIFEST_NAME
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    return path
