"""Resolve ``--agent``/``--opponent`` names and paths to :class:`~bot.agents.base.Agent` objects.

Names map to factories; paths are recognised by what they hold (a tabular policy JSON, a
training run directory, a policy bundle). An unknown or not-yet-built name is an
:class:`AgentNotFound` whose message lists what exists and how to build the missing one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.agents.base import Agent, CallAgent, RaiseAgent, RandomAgent
from bot.errors import PokerbotError
from bot.run_files import continue_command
from protocol.gamedef import Game

if TYPE_CHECKING:
    import numpy as np


class AgentNotFound(PokerbotError, LookupError):
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
#: ``(game or None, path) -> (game, strategy array) | None`` (None: not this loader's kind).
StrategyLoader = Callable[[Game | None, Path], "tuple[Game, np.ndarray] | None"]
#: Strategy loaders for paths, tried in order by ``load_strategy`` after the policy JSON reader.
_STRATEGY_LOADERS: list[StrategyLoader] = []


def register_name(name: str, factory: AgentFactory) -> None:
    _NAMED[name] = factory


def register_path_loader(loader: Callable[[Game, Path], Agent | None]) -> None:
    _PATH_LOADERS.append(loader)


def register_strategy_loader(loader: StrategyLoader) -> None:
    """Teach :func:`bot.evaluation.best_response.load_strategy` (and ``pokerbot exploit``) a new
    kind of path. The table lives here, beside the agent loaders, so the modules that play a kind
    register both one layer below the evaluation that reads them."""
    _STRATEGY_LOADERS.append(loader)


def strategy_loaders() -> list[StrategyLoader]:
    """Every registered strategy loader, in registration order (plugins loaded first)."""
    load_plugins()
    return list(_STRATEGY_LOADERS)


def known_names() -> list[str]:
    return sorted(_NAMED)


def factory_of(name: str) -> AgentFactory:
    """The factory registered for ``name`` (``pokerbot agents`` reads its docstring)."""
    return _NAMED[name]


def resolve_agent(spec: str, game: Game) -> Agent:
    """The agent named ``spec`` (a registered name or a path) for ``game``."""
    load_plugins()
    if spec in _NAMED:
        return _NAMED[spec](game)
    path = Path(spec)
    if path.exists():
        require_finished_run(path)
        for loader in _PATH_LOADERS:
            agent = loader(game, path)
            if agent is not None:
                return agent
        raise AgentNotFound(f"{spec}: not a policy file, run directory or policy bundle pokerbot can load")
    message = f"unknown agent {spec!r}. Known names: {', '.join(known_names())}; or give a path to a policy file or run directory."
    raise AgentNotFound(message)


def require_finished_run(path: Path) -> None:
    """A run directory (it has ``config.toml``) whose ``policy/`` is still empty has no finished
    iteration: say so, and how to continue it, rather than "not a policy"."""
    if (path / "config.toml").is_file() and not any((path / "policy").glob("*")):
        raise AgentNotFound(
            f"{path}: the run has no finished iteration yet (no policy in {path / 'policy'}); "
            f"continue it with {continue_command(path)}"
        )


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


#: Modules whose import registers more agents (each registers names or loaders).
_PLUGIN_MODULES: list[str] = [
    "bot.agents.bundle",
    "bot.agents.tabular",
    "bot.agents.nfsp",
    "bot.agents.deep_cfr",
    "bot.abstraction.agent",
    "bot.abstraction.policy",
    "bot.shipped.register",
    "bot.flop.network",
    "bot.flop.network_policies",
    "bot.flop.solve_agent",
    "bot.abstraction.compact",
]
