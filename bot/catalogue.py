"""The agent catalogue: every agent name, what it is, where it plays, whether it exists here,
how strong it measured, the command and cost to build it, and which candidates ``pokerbot
play`` tries per game, strongest first. ``pokerbot agents`` prints it, ``pokerbot play`` picks
its opponent from it and the commands' ``--help`` texts name its agents.

Names come from the registry (:mod:`bot.registry`), so an agent a plugin registers is listed
too; what this module knows about a kind (the shipped bot's manifest, an abstraction's spec
and cost estimate, NFSP's run directory) only adds detail. Nothing is loaded: status comes
from which files exist, so the listing is instant even for multi-GB agents. It sits above the
agent kinds it describes (``shipped``, ``abstraction``) and below the commands that use it.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

from bot.registry import factory_of, known_names, load_plugins
from bot.run_files import CONFIG_FILE, RunDirError, read_toml
from protocol.gamedef import load_game

#: The games ``--game`` accepts here, target games first.
GAMES = ("holdem", "fhp", "leduc", "kuhn")
#: Built-in baselines (the registry's own names), the shipped bot and NFSP; the abstraction
#: names come from :data:`bot.abstraction.spec.SPECS`. ``tests/bot/commands/test_cli_newcomer.py`` checks
#: that this covers every registered name, so the ``--help`` texts stay complete.
BASELINES = ("random", "call", "raise")
WIDTH = 80


def agent_names() -> list[str]:
    """Every agent name, for ``--help`` texts (no plugin import: ``--help`` stays instant)."""
    from bot.abstraction.spec import SPECS
    from bot.shipped.named import shipped_network_names

    return ["default", *BASELINES, "nfsp", *shipped_network_names(), *SPECS]


#: The ``--agent``/``--opponent`` help of match, play, connect and lbr.
AGENT_HELP = (
    "A name, or a path (policy file, run directory, policy bundle). Names: "
    + ", ".join(agent_names())
    + ". `pokerbot agents` says which are built, their strength and build cost."
)


@dataclass(frozen=True)
class AgentInfo:
    """One name's entry in the listing."""

    name: str
    what: str
    games: str
    status: str
    strength: str = ""
    build: str = ""
    cost: str = ""

    def lines(self) -> list[str]:
        head = f"{self.name}  [{self.games}]  {self.status}"
        body = [self.what]
        body += [f"strength: {self.strength}"] if self.strength else []
        body += [f"build: {self.build}"] if self.build else []
        body += [f"cost: {self.cost}"] if self.cost else []
        wrapped = textwrap.wrap(head, WIDTH, subsequent_indent="      ")
        for line in body:
            wrapped += textwrap.wrap(line, WIDTH, initial_indent="    ", subsequent_indent="      ",
                                     break_on_hyphens=False)
        return wrapped


def _shipped(games: tuple[str, ...]) -> AgentInfo:
    from bot.shipped import SHIPPED_GAMES, shipped_manifest

    statuses, strengths, whats = [], [], []
    for alias in (g for g in SHIPPED_GAMES if g in games):
        manifest = shipped_manifest(load_game(alias))
        if manifest is None:
            statuses.append(f"{alias}: not shipped yet")
            continue
        statuses.append(f"{alias}: shipped ({manifest.get('name', 'default')})")
        whats.append(f"{alias}: {manifest.get('description', '')}")
        figures = "; ".join(f"{k} {v}" for k, v in dict(manifest.get("strength", {})).items())
        strengths.append(f"{alias}: {figures or 'not measured'}")
    what = "The bot that ships inside pokerbot for the game (no training needed)."
    served = ", ".join(g for g in SHIPPED_GAMES if g in games)
    return AgentInfo("default", " ".join([what, *whats]), served or ", ".join(games),
                     "; ".join(statuses) or f"no bot ships for {', '.join(games)}", "; ".join(strengths))


def abstraction_info(name: str) -> AgentInfo:
    from bot.abstraction.cost import default_solver, duration, estimate, size
    from bot.abstraction.spec import SPECS, policy_path, published_meta, size_name, spec_dir

    spec = SPECS[name]
    built = (spec_dir(spec) / "meta.json").exists()
    solved = policy_path(spec).exists()
    status = "built" if solved else "buckets built, not solved" if built else "not built"
    buckets = "/".join("lossless" if b is None else f"{b:,}" for b in spec.buckets)
    methods = "/".join(m for m in spec.round_methods if m != "lossless")
    what = f"Card abstraction, buckets per round {buckets}" + (f" ({methods})" if methods else "")
    if solved:
        meta = published_meta(spec)
        solver = _solver_name(meta)
        what += f", solved by {solver}." if solver else ", solved."
        return AgentInfo(name, what, spec.game, status, _abstraction_strength(meta))
    what += f", solved by {SOLVER_NAMES[default_solver(spec)]}."
    cost = estimate(spec, built=built)
    seconds = cost.feature_seconds + cost.cluster_seconds + cost.solve_seconds
    hours = f"~{duration(seconds)}" if seconds >= 60 else "under a minute"  # start-up included
    return AgentInfo(name, what, spec.game, status, "",
                     f"pokerbot train --algo abstraction --game {spec.game} --size {size_name(spec)} --out runs/{spec.name}",
                     f"{hours} on this 2-core machine ({cost.iterations:,} iterations), "
                     f"{size(cost.table_bytes)} RAM, {size(cost.disk_bytes)} disk")


#: The abstraction solvers (``solver`` in an abstraction run's config) by their names in prose.
SOLVER_NAMES = {"pcs": "public chance sampling", "es-mccfr": "ES Linear MCCFR"}


def _solver_name(meta: dict) -> str | None:
    """Which solver wrote the published policy: the full-width flop solve (``fhp_lossless``,
    training/flop/trainer.py) publishes a meta with ``solver = "flop_cfr"``; an abstraction run's
    meta names its ``solver`` and ``scheme`` (policies published before it did: the run's
    ``config.toml``). None when neither records it."""
    if meta.get("solver") == "flop_cfr":
        config = meta.get("config", {})
        return f"full-width {str(config.get('algo', 'cfr')).upper()} over every flop"
    settings = meta
    if "solver" not in meta:
        try:
            settings = read_toml(Path(str(meta.get("run", ""))) / CONFIG_FILE)
        except RunDirError:
            return None
    solver = str(settings.get("solver"))
    if solver == "pcs":
        return f"{SOLVER_NAMES[solver]} ({str(settings.get('scheme', 'dcfr')).upper()})"
    return SOLVER_NAMES.get(solver)


def _abstraction_strength(meta: dict) -> str:
    """What the published policy's meta and its run's metrics record (exploitability where the
    solver could measure it exactly)."""
    if not meta:
        return "not measured"
    text = f"{meta.get('iterations', meta.get('iteration', 0)):,} iterations"
    measured = meta.get("state", {}).get("exploitability_mbb") if isinstance(meta.get("state"), dict) else None
    metrics = Path(str(meta.get("run", ""))) / "metrics.jsonl"
    checked = None
    if metrics.is_file():
        lines = metrics.read_text().splitlines()
        records = [json.loads(line) for line in lines if "exploitability_mbb" in line]
        if records:
            measured = records[-1]["exploitability_mbb"]
        checks = [json.loads(line) for line in lines if "vs_half_mbb" in line]
        checked = checks[-1] if checks else None
    if measured is not None:
        text += f"; exploitability {measured:.3g} mbb/g (exact, NashConv/2)"
    if checked is not None:  # hold'em: the convergence check (training/abstraction/convergence.py)
        verdict = "converged" if checked.get("converged") else "not converged"
        text += (f"; {checked['vs_half_mbb']:+.1f} ± {checked['vs_half_ci95']:.1f} mbb/g against its average at "
                 f"{checked['half_iteration']:,} iterations ({verdict})")
    return text


#: What an NFSP run costs and reaches, measured (docs/algorithms/nfsp.md, docs/benchmarks/hulh-deep-cfr.md).
NFSP_COST = ("Leduc: 37 mbb/g exact after ~20 min of one core; hold'em: LBR +2,781 mbb/g after 2 h of one core "
             "(Deep CFR given the same CPU beats it by +469 ± 25 over 450 sampled boards); FHP: not measured")


def _nfsp(games: tuple[str, ...]) -> AgentInfo:
    from bot.agents.nfsp import default_run_dir, policy_file

    built = [g for g in games if policy_file(default_run_dir(load_game(g))) is not None]
    status = f"built for {', '.join(built)}" if built else "not built"
    missing = [g for g in games if g not in built]
    build = (f"pokerbot train --algo nfsp --game {missing[0]} --out runs/nfsp-{missing[0]}" if missing else "")
    return AgentInfo("nfsp", "Neural Fictitious Self-Play (Heinrich & Silver 2016): the average policy of "
                     "runs/nfsp-<game> ($POKERBOT_RUNS overrides runs/).", ", ".join(games), status, "",
                     build, NFSP_COST if build else "")


def _shipped_networks(games: tuple[str, ...]) -> list[AgentInfo]:
    """The network policies shipped under their own names (:mod:`bot.shipped.named`) that play
    one of ``games``."""
    from bot.shipped.named import shipped_network_info, shipped_network_names

    aliases = {load_game(g).name: g for g in games}
    infos = []
    for name in shipped_network_names():
        info = shipped_network_info(name)
        if info["game_name"] in aliases:
            strength = "; ".join(f"{k} {v}" for k, v in info["strength"].items()) or "not measured"
            infos.append(AgentInfo(name, info["description"], aliases[info["game_name"]], "shipped", strength))
    return infos


def _generic(name: str) -> AgentInfo:
    doc = (factory_of(name).__doc__ or "").strip().splitlines()
    kind = "Baseline: " if name in BASELINES else ""
    return AgentInfo(name, kind + (doc[0] if doc else "(no description)"), "any game", "built in")


def agent_infos(game: str | None = None) -> list[AgentInfo]:
    """One entry per registered name (those that play ``game`` when it is given): the shipped
    bot, the baselines, NFSP, then the abstractions by game and size."""
    from bot.abstraction.spec import SPECS
    from bot.shipped.named import shipped_network_names

    load_plugins()
    games = GAMES if game is None else (game,)
    stems = [load_game(g).name for g in games]
    infos = [_shipped(games)] if "default" in known_names() else []
    infos += [_generic(name) for name in BASELINES]
    infos += [_nfsp(games)] if "nfsp" in known_names() else []
    infos += _shipped_networks(games)
    infos += [abstraction_info(name) for stem in stems for name, spec in SPECS.items() if spec.load_game().name == stem]
    listed = {info.name for info in infos} | set(SPECS) | set(shipped_network_names())
    infos += [_generic(name) for name in known_names() if name not in listed]  # a plugin's own names
    return infos


def run_paths(game: str) -> list[tuple[str, bool]]:
    """The run directories ``pokerbot play`` also looks for, and whether each exists here."""
    return [(p, Path(p).exists()) for p in STRONGEST_FIRST.get(game, []) if "/" in p]


#: Candidates per game, strongest first: the shipped bot, then registered names and the run
#: directories the train commands write, in the order measured here (docs/benchmarks/hulh-table.md,
#: docs/benchmarks/hulh-deep-cfr.md): in hold'em the solved abstractions beat the 2-core networks
#: by ~170-240 mbb/g and a converged smaller one beats a less converged larger one; SD-CFR (its
#: stack or the shipped network distilled from it) beats Deep CFR's average network, which beats
#: NFSP. Lossless abstractions and tabular CFR+ solves are near-exact.
STRONGEST_FIRST: dict[str, list[str]] = {
    "holdem": ["default", "abstraction_3e6", "abstraction_3e7", "abstraction_3e8", "holdem_sd_cfr", "runs/sd-cfr-holdem",
               "holdem_deep_cfr", "runs/deep-cfr-holdem", "nfsp"],
    "fhp": ["default", "fhp_lossless", "runs/sd-cfr-fhp", "runs/deep-cfr-fhp", "fhp_abstraction_3.6e6", "fhp_abstraction_4e4", "nfsp"],
    "leduc": ["default", "leduc_lossless", "runs/cfr-leduc", "runs/cfr-leduc.json", "runs/sd-cfr-leduc", "runs/deep-cfr-leduc", "leduc_merged", "nfsp"],
    "kuhn": ["default", "runs/cfr-kuhn", "runs/cfr-kuhn.json", "runs/sd-cfr-kuhn", "runs/deep-cfr-kuhn", "nfsp"],
}
#: Per game, the cheapest real opponent among the candidates: an abstraction name (its build
#: command and estimated cost come from ``pokerbot agents``) or a command with its measured cost
#: on the 2-core development machine (docs/getting-started.md).
CHEAPEST: dict[str, str | tuple[str, str]] = {
    "holdem": "abstraction_3e6",
    "fhp": "fhp_abstraction_4e4",
    "leduc": ("pokerbot solve --game leduc --out runs/cfr-leduc", "a CFR+ solve to 0.12 mbb/g, 4 s of CPU"),
    "kuhn": ("pokerbot solve --game kuhn --out runs/cfr-kuhn", "a CFR+ solve to 0.09 mbb/g, 1 s of CPU"),
}


def cheapest_hint(alias: str) -> str:
    """``The cheapest real opponent is <what>, <cost>: <command>``."""
    entry = CHEAPEST[alias]
    if isinstance(entry, str):
        info = abstraction_info(entry)
        entry = (info.build or f"pokerbot play --game {alias} --opponent {entry}", f"{entry}, {info.cost or info.status}")
    command, cost = entry
    return f"The cheapest real opponent is {cost}: {command}"
