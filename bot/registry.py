"""Resolve ``--agent``/``--opponent`` names and paths to :class:`~bot.agent.Agent` objects.

Names map to factories; paths are recognised by what they hold (a tabular policy JSON, a
training run directory, a policy bundle). An unknown or not-yet-built name is an
:class:`AgentNotFound` whose message lists what exists and how to build the missing one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.agent import Agent, CallAgent, RaiseAgent, RandomAgent
from protocol.gamedef import Game


class AgentNotFound(LookupError):
    """No agent by that name or path; the message says what exists and how to build more."""


AgentFactory = Callable[[Game], Agent]
PathLoader = Callable[[Game, Path], Agent]

#: Built-in agents by name. Other modules add theirs with :func:`register_name`.
_NAMED: dict[str, AgentFactory] = {
    "random": RandomAgent,
    "call": CallAgent,
    "raise": RaiseAgent,
}
#: Loaders for paths, tried in order; each returns None when the path is not its kind.
_PATH_LOADERS: list[Callable[[Game, Path], Agent | None]] = []
#: Names that exist only after a build step: name -> how to build it.
_BUILD_HINTS: dict[str, str] = {}


def register_name(name: str, factory: AgentFactory) -> None:
    _NAMED[name] = factory


def register_path_loader(loader: Callable[[Game, Path], Agent | None]) -> None:
    _PATH_LOADERS.append(loader)


def register_build_hint(name: str, hint: str) -> None:
    _BUILD_HINTS[name] = hint


def known_names() -> list[str]:
    return sorted(_NAMED)


def resolve_agent(spec: str, game: Game) -> Agent:
    """The agent named ``spec`` (a registered name or a path) for ``game``."""
    load_plugins()
    if spec in _NAMED:
        return _NAMED[spec](game)
    path = Path(spec)
    if path.exists():
        for loader in _PATH_LOADERS:
            agent = loader(game, path)
            if agent is not None:
                return agent
        raise AgentNotFound(f"{spec}: not a policy file, run directory or policy bundle pokerbot can load")
    message = f"unknown agent {spec!r}. Known names: {', '.join(known_names())}; or give a path to a policy file or run directory."
    if spec in _BUILD_HINTS:
        message = f"agent {spec!r} is not built yet: {_BUILD_HINTS[spec]}"
    raise AgentNotFound(message)


_PLUGINS_LOADED = False


def load_plugins() -> None:
    """Import the modules that register agents (kept lazy so importing bot stays cheap)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    import importlib

    for module in _PLUGIN_MODULES:
        importlib.import_module(module)


#: Modules whose import registers more agents (each registers names, loaders or build hints).
_PLUGIN_MODULES: list[str] = [
    "bot.tabular_policy",
    "bot.nfsp_agent",
    "bot.deep_cfr_agent",
    "bot.abstraction_agent",
    "bot.shipped.register",
    "bot.compact_abstraction",
]
