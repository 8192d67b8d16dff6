"""The one registry of agents: ``--agent``/``--opponent`` names and paths, exact strategies,
policy-bundle kinds, shipped-bot kinds and the flop passes' policy loaders.

Names map to factories; paths are recognised by what they hold (a tabular policy JSON, a
training run directory, a policy bundle). An unknown or not-yet-built name is an
:class:`AgentNotFound` whose message lists what exists and how to build the missing one.

The tables are filled in one place, :func:`load_plugins` (``_fill``), which names every kind
and loader and the module it comes from, in the order the path loaders are tried. The modules
that play a kind only define their loaders: none imports this registry, so the registry can
import them without an import cycle, and no table depends on which module happened to be
imported first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.agents.base import Agent, CallAgent, RaiseAgent, RandomAgent
from bot.errors import AgentNotFound, PokerbotError
from bot.run_files import continue_command
from protocol.gamedef import Game

if TYPE_CHECKING:
    import numpy as np

    from bot.agents.bundle import Bundle
    from bot.flop.best_response import FlopPolicy
    from bot.flop.game import FlopGame

__all__ = ["AgentNotFound", "PolicyNotFound", "known_names", "load_plugins", "load_strategy", "register_name",
           "register_path_loader", "register_shipped_kind", "register_strategy_loader", "resolve_agent",
           "resolve_flop_policy"]

AgentFactory = Callable[[Game], Agent]
PathLoader = Callable[[Game, Path], "Agent | None"]
#: ``(game or None, path) -> (game, strategy array) | None`` (None: not this loader's kind).
StrategyLoader = Callable[[Game | None, Path], "tuple[Game, np.ndarray] | None"]
#: A bundle kind's agent and (small games) exact strategy (:mod:`bot.agents.bundle`).
BundleAgent = Callable[[Game, "Bundle"], Agent]
BundleStrategy = Callable[["Bundle"], "np.ndarray"]
#: A shipped bot's kind (:mod:`bot.shipped`): ``(game, folder, manifest) -> agent``.
ShippedLoader = Callable[[Game, Path, dict[str, Any]], Agent]
#: ``(game, spec) -> (FlopGame, FlopPolicy) | None``: how ``pokerbot exploit`` reads a policy
#: name or path in a flop game (None: not this loader's kind).
FlopPolicyLoader = Callable[[Game, str], "tuple[FlopGame, FlopPolicy] | None"]

#: Agents by name (the built-in ones here, the rest from :func:`_fill`).
_NAMED: dict[str, AgentFactory] = {"random": RandomAgent, "call": CallAgent, "raise": RaiseAgent}
#: Loaders for paths, tried in order; each returns None when the path is not its kind.
_PATH_LOADERS: list[PathLoader] = []
#: Strategy loaders for paths, tried in order by :func:`load_strategy` after the policy JSON reader.
_STRATEGY_LOADERS: list[StrategyLoader] = []
#: Policy-bundle kind -> (agent loader, exact strategy loader or None).
_BUNDLE_KINDS: dict[str, tuple[BundleAgent, BundleStrategy | None]] = {}
#: Shipped-bot manifest kind -> loader.
_SHIPPED_KINDS: dict[str, ShippedLoader] = {}
#: The flop passes' loaders after the built-in one (:func:`bot.flop.policies.builtin_flop_policy`).
_FLOP_LOADERS: list[FlopPolicyLoader] = []


def register_name(name: str, factory: AgentFactory) -> None:
    _NAMED[name] = factory


def register_path_loader(loader: PathLoader) -> None:
    _PATH_LOADERS.append(loader)


def register_strategy_loader(loader: StrategyLoader) -> None:
    """Teach :func:`load_strategy` (and ``pokerbot exploit``) a new kind of path."""
    _STRATEGY_LOADERS.append(loader)


def register_kind(kind: str, agent: BundleAgent, strategy: BundleStrategy | None = None) -> None:
    """Teach the bundle loaders a kind: how to play it and (small games) its exact strategy."""
    _BUNDLE_KINDS[kind] = (agent, strategy)


def register_shipped_kind(kind: str, loader: ShippedLoader) -> None:
    """Register how to load a shipped folder whose manifest says ``kind``."""
    _SHIPPED_KINDS[kind] = loader


def register_flop_policy_loader(loader: FlopPolicyLoader) -> None:
    """Teach :func:`resolve_flop_policy` a new kind of policy (e.g. a shipped bot's kind)."""
    _FLOP_LOADERS.append(loader)


# -- lookups -------------------------------------------------------------------------------------

def strategy_loaders() -> list[StrategyLoader]:
    """Every registered strategy loader, in registration order."""
    load_plugins()
    return list(_STRATEGY_LOADERS)


class PolicyNotFound(PokerbotError, LookupError, ValueError):
    """A path that is not there or holds nothing :func:`load_strategy` can evaluate (``ValueError``
    as before the one error root, ``LookupError`` as a name that resolves to nothing)."""


def load_strategy(path: Path, game: Game | None = None) -> tuple[Game, np.ndarray]:
    """The game and strategy array stored at ``path`` (a policy JSON or a kind registered with
    :func:`register_strategy_loader`), for the exact best response
    (:func:`bot.evaluation.best_response.exploitability`) and ``pokerbot exploit``."""
    from bot.agents.tabular import load_policy_strategy

    loaders = strategy_loaders()
    if not path.exists():
        raise PolicyNotFound(f"{path}: no such file or directory")
    for loader in [load_policy_strategy, *loaders]:
        found = loader(game, path)
        if found is not None:
            return found
    raise PolicyNotFound(f"{path}: not a policy file or a run directory pokerbot can evaluate")


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


def bundle_loaders(bundle: Bundle) -> tuple[BundleAgent, BundleStrategy | None]:
    """The loaders of ``bundle``'s kind; an unknown kind is a one-line error."""
    from bot.agents.bundle import BUNDLE_FILE, BundleError

    load_plugins()
    if bundle.kind not in _BUNDLE_KINDS:
        raise BundleError(f"{bundle.root / BUNDLE_FILE}: unknown kind {bundle.kind!r}; known: {', '.join(sorted(_BUNDLE_KINDS))}")
    return _BUNDLE_KINDS[bundle.kind]


def load_bundle_agent(game: Game, path: Path) -> Agent | None:
    """Path loader: the agent of any bundle kind (None when ``path`` holds no bundle)."""
    from bot.agents.bundle import bundle_root, check_game, read_bundle

    if bundle_root(path) is None:
        return None
    bundle = read_bundle(path)
    check_game(bundle, game)
    return bundle_loaders(bundle)[0](game, bundle)


def load_bundle_strategy(game: Game | None, path: Path) -> tuple[Game, np.ndarray] | None:
    """``pokerbot exploit`` / ``export-policy`` loader: the exact strategy of any bundle kind."""
    from bot.agents.bundle import BundleError, bundle_root, check_game, read_bundle

    if bundle_root(path) is None:
        return None
    bundle = read_bundle(path)
    check_game(bundle, game)
    strategy = bundle_loaders(bundle)[1]
    if strategy is None:
        raise BundleError(f"{bundle.root}: a {bundle.kind} bundle has no exact strategy table")
    return bundle.game, strategy(bundle)


def load_default(game: Game) -> Agent:
    """The agent named ``default``: the bot shipped for ``game``, by its manifest's kind."""
    from bot.shipped import load_shipped

    load_plugins()
    return load_shipped(game, _SHIPPED_KINDS)


def shipped_network_factory(name: str) -> AgentFactory:
    """The factory of a network policy shipped under ``name`` (:mod:`bot.shipped.named`): its
    bundle, verified and played by its kind; another game's name is a one-line error."""
    from bot.shipped.named import shipped_network_folder, shipped_network_info

    def factory(game: Game) -> Agent:
        agent = load_bundle_agent(game, shipped_network_folder(name))
        assert agent is not None  # the name is registered only for folders holding a bundle
        agent.name = name
        return agent

    factory.__doc__ = shipped_network_info(name)["description"] or f"The network policy shipped as {name}."
    return factory


def resolve_flop_policy(game: Game, spec: str) -> tuple[FlopGame, FlopPolicy]:
    """The policy named or stored at ``spec`` as the flop passes read it, with the FlopGame to
    evaluate it on (canonical flops when the policy is suit-invariant)."""
    from bot.flop.policies import FlopPolicyError, builtin_flop_policy

    load_plugins()
    for loader in [builtin_flop_policy, *_FLOP_LOADERS]:
        found = loader(game, spec)
        if found is not None:
            return found
    raise FlopPolicyError(
        f"{spec}: not a policy pokerbot can evaluate in {game.name} (an abstraction name, 'default', "
        "a flop-solve run, a policy file, or a run directory of a registered kind)"
    )


# -- filling -------------------------------------------------------------------------------------

_FILLED = False


def load_plugins() -> None:
    """Fill the tables (once; kept lazy so importing ``bot`` stays cheap: torch and numba load
    with the modules that play networks and abstractions)."""
    global _FILLED
    if not _FILLED:
        _FILLED = True
        _fill()


def _fill() -> None:
    """Every kind and loader pokerbot has; path loaders are tried in this order."""
    from bot.abstraction import agent as abstraction_agent
    from bot.abstraction import compact
    from bot.abstraction import policy as abstraction_policy
    from bot.abstraction.spec import SPECS
    from bot.agents import deep_cfr, nfsp, tabular
    from bot.flop import network as flop_network
    from bot.flop import network_policies, solve_agent
    from bot.shipped.named import shipped_network_names

    register_path_loader(load_bundle_agent)  # a policy bundle of any kind below
    register_strategy_loader(load_bundle_strategy)
    register_path_loader(tabular.json_agent)
    register_kind("tabular", tabular.bundle_agent, tabular.bundle_strategy)
    register_kind("nfsp", nfsp.bundle_agent, nfsp.bundle_strategy)
    register_name("nfsp", nfsp.named_agent)
    register_path_loader(nfsp.agent_from_path)  # NFSP runs from before bundles
    register_strategy_loader(nfsp.strategy_from_path)
    for kind in deep_cfr.KINDS:
        register_kind(kind, deep_cfr.bundle_agent, deep_cfr.bundle_strategy_of)
    for name in SPECS:
        register_name(name, abstraction_agent.named_agent(name))
    register_kind("abstraction", abstraction_policy.bundle_agent, abstraction_policy.bundle_strategy)
    register_name("default", load_default)
    for name in shipped_network_names():
        register_name(name, shipped_network_factory(name))
    register_shipped_kind(flop_network.KIND, flop_network.load_shipped)
    register_flop_policy_loader(flop_network.default_flop_policy)
    register_flop_policy_loader(network_policies.path_policy)
    register_kind(solve_agent.KIND, solve_agent.FlopSolveAgent)
    register_shipped_kind(compact.KIND, compact.CompactAbstractionAgent)
    register_path_loader(compact.folder_agent)
