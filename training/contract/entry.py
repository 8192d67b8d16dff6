"""The run contract every trainer follows: the one door of ``pokerbot train --algo ...`` (every
algorithm, the full-width flop solve ``flop-cfr`` included) and ``pokerbot solve``.

A trainer registers a :class:`Trainer` (its config class, flags, presets and train function) in
its module's ``TRAINERS``; :data:`ALGORITHMS` says which module. The contract names no trainer:
one resolver turns the command's options into an algorithm's frozen config dataclass, the same
way for every algorithm:

* **Precedence**: the game's preset < the ``--config`` TOML file < explicit flags. A preset is
  used only when the game *is* one of the shipped games (by its rules, so the ACPC's own
  ``holdem.limit.2p.reverse_blinds.game`` counts); any other gamedef starts from the config
  class's defaults, and the run records that as a note.
* **Errors before anything is created**: an unknown game, an unknown TOML key, a flag that does
  not apply to the algorithm and a bad value are one-line :class:`~bot.errors.ConfigError`\\ s
  naming them, raised before the run directory exists.
* **Resume**: ``--resume RUN`` keeps the run's ``config.toml``; only the fields in the
  algorithm's ``resumable`` set may be changed by flags (more iterations, a new time budget,
  another device or thread count); any other flag, and ``--config``, is refused by name.
* **Shared field types**: ``time_budget`` is seconds (``None`` = no limit; the flag takes
  ``90s``/``10m``/``2h``/``1h30m``, and old run directories' strings are converted);
  ``threads`` 0 = all cores; ``device`` ``auto`` = cuda when torch sees one. Options that run
  on the CPU only (NFSP's ``fused``, Deep CFR's ``fit_backend = fused``) are turned off when the
  device resolves to cuda, with a note, rather than refused.
* **One interrupt policy** (:class:`StopRequest`, :mod:`training.contract.stop`): the first Ctrl-C or
  SIGTERM lets the step in progress finish for up to ``STOP_GRACE_SECONDS``, then checkpoints,
  writes the policy and exits 0 with the command that continues the run; a step still running then (an SGD fit of
  hours on hold'em) is abandoned (:class:`StepAbandoned`: the last checkpoint stands, said so,
  exit 0). The time budget is held the same way, inside a step too. A second signal abandons
  the step at once (exit 130).
* **One writer**: the run directory is locked (:mod:`training.contract.lock`) before anything is
  written; a new run that fails before any progress (a bad game, a full disk) leaves nothing.
* **Checkpoints by time or count**, whichever comes first (:class:`CheckpointClock`).

Checkpoint integrity (format number, sha256 of every file, the previous checkpoint kept as a
fallback) is :mod:`training.contract.rundir`'s job; the policy bundle is :mod:`bot.agents.bundle`'s.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bot.errors import ConfigError, UnsupportedGameError
from bot.run_files import SOLVE_ALGO, continue_command
from protocol.gamedef import GAME_ALIASES, Game, load_game
from training.contract import cluster as distributed
from training.contract.rundir import RunDir, read_toml
from training.contract.stop import (  # noqa: F401 (trainers' import)
    CheckpointClock,
    RunInterrupted,
    StepAbandoned,
    StopRequest,
    parse_duration,
)

#: Algorithm -> the module whose ``TRAINERS`` attribute describes it: every ``pokerbot train
#: --algo`` (:data:`bot.run_files.TRAIN_ALGORITHMS`) and ``pokerbot solve``'s tabular CFR
#: (:data:`bot.run_files.SOLVE_ALGO`).
ALGORITHMS: dict[str, str] = {
    "nfsp": "training.nfsp.trainer",
    "deep-cfr": "training.deep_cfr.trainer",
    "sd-cfr": "training.deep_cfr.trainer",
    "dream": "training.deep_cfr.dream",
    "os-sd-cfr": "training.deep_cfr.dream",
    "distil": "training.deep_cfr.distil",
    "abstraction": "training.abstraction.run",
    "flop-cfr": "training.flop.trainer",
    SOLVE_ALGO: "training.tabular.solve",
}

#: Algorithms whose work ``--workers``/``--ray-address`` spread over Ray actors
#: (:mod:`training.contract.cluster`); the others run in one process.
DISTRIBUTED_ALGOS = ("deep-cfr", "sd-cfr", "abstraction")

#: ``pokerbot train`` options that map onto config fields (the rest steer the command itself); a
#: trainer's own :attr:`Trainer.flags` count too (``pokerbot solve``'s ``--eval-every``, say).
#: Every one is read for every algorithm, so a flag another algorithm owns (``--teacher`` for
#: anything but distil) is a one-line error, not silently dropped.
CONFIG_FLAGS = ("game", "iterations", "traversals", "time_budget", "seed", "device", "threads", "size", "preset",
                "teacher", "warm_start")


class Train(Protocol):
    """An algorithm's training entry point: run (or continue) ``config`` in ``run``."""

    def __call__(self, config: Any, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> Any: ...


@dataclass(frozen=True)
class Trainer:
    """What the contract needs to know about one training algorithm."""

    algo: str
    """The ``--algo`` name."""
    config_class: type
    """The frozen dataclass of the run's settings (validated in ``__post_init__``)."""
    flags: Mapping[str, str]
    """``pokerbot train`` option -> config field, for the options that apply to this algorithm."""
    resumable: frozenset[str]
    """Config fields that ``--resume`` may change; every other field is fixed by the run."""
    presets: Mapping[str, dict[str, Any]]
    """Settings per shipped game alias (kuhn, leduc, fhp, holdem)."""
    train: Train
    """Runs or continues the config in a run directory (``force``: a run with no usable
    checkpoint starts over instead of stopping with an error)."""
    prepare: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None
    """``(values, options) -> values`` for fields that are not plain flags (abstraction: the
    ``--game``/``--size`` pair becomes the abstraction's name)."""
    cpu_only: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    """field -> (value that needs the CPU, value used instead on cuda)."""
    route: Callable[[Mapping[str, Any]], Mapping[str, Any] | None] | None = None
    """``options -> options | None``: options of this ``--algo`` that name another algorithm's
    work (``--algo abstraction --game fhp --size lossless`` is FHP itself, solved by
    ``flop-cfr``), as the options to run instead (their ``algo`` the other's); None: this one's."""


def load_trainer(algo: str) -> Trainer:
    """The :class:`Trainer` of an ``--algo`` name (imports the algorithm lazily: torch loads here)."""
    if algo not in ALGORITHMS:
        raise ConfigError(f"unknown --algo {algo!r}; known: {', '.join(sorted(ALGORITHMS))}")
    trainers: dict[str, Trainer] = importlib.import_module(ALGORITHMS[algo]).TRAINERS
    return trainers[algo]


# -- field types ---------------------------------------------------------------------------------

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(requested: str) -> str:
    """``cpu`` or ``cuda``: ``auto`` is cuda when torch sees a device; ``cuda`` without one is
    a one-line error."""
    if requested not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {requested!r}")
    import torch

    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is available to torch here")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def runs_on_cpu(requested: str) -> bool:
    """Whether ``device`` (auto/cpu/cuda) means the CPU here, without failing for a ``cuda``
    that is not available (so a CPU-only option is named before the missing device)."""
    if requested not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {requested!r}")
    return requested == "cpu" or (requested == "auto" and resolve_device("auto") == "cpu")


def worker_threads(threads: int) -> int:
    """The ``threads`` setting as a count: 0 = all cores."""
    if threads < 0:
        raise ConfigError(f"threads must be 0 (all cores) or positive, got {threads}")
    return threads or os.cpu_count() or 1


def require_trainable(game: Game) -> None:
    """A one-line :class:`UnsupportedGameError` for a game no trainer here handles (every one
    trains two-player limit games), raised before a run directory is created."""
    if game.num_players != 2:
        raise UnsupportedGameError(f"{game.name}: a {game.num_players}-player game; pokerbot trains and solves "
                                   f"heads-up (2-player) games only")
    if not game.is_limit:
        raise UnsupportedGameError(f"{game.name}: a no-limit game; pokerbot trains and solves limit games only")


def shipped_alias(game: Game) -> str | None:
    """kuhn / leduc / fhp / holdem when ``game`` has that shipped game's rules, else None."""
    for alias, stem in GAME_ALIASES.items():
        shipped = load_game(stem)
        if dataclasses.replace(shipped, name="") == dataclasses.replace(game, name=""):
            return "holdem" if alias == "hulh" else alias
    return None


# -- resolution ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Resolved:
    """A resolved config and the notes about how it was reached (saved with the run)."""

    config: Any
    notes: tuple[str, ...] = ()


def _given(trainer: Trainer, options: Mapping[str, Any]) -> dict[str, Any]:
    """The config flags given (None: not given), ``--time-budget`` checked (0 is an error, not
    "no limit")."""
    names = (*CONFIG_FLAGS, *(name for name in trainer.flags if name not in CONFIG_FLAGS))
    given = {name: options[name] for name in names if options.get(name) is not None}
    if "time_budget" in given:
        given["time_budget"] = parse_duration(given["time_budget"])
    return given


def _field_names(config_class: type) -> set[str]:
    return {f.name for f in dataclasses.fields(config_class)}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


#: Seeds: what numpy's and the dealer's generators take (``--seed`` has the same range).
SEED_RANGE = (0, 2**32 - 1)


def check_types(config_class: type, values: Mapping[str, Any], source: str) -> None:
    """A one-line :class:`ConfigError` naming the key whose value has the wrong type for its
    field (``width = "abc"``), judged by the field's default (bool, int, float or str); and a
    seed outside :data:`SEED_RANGE`. The one place a TOML value or flag is typed before the
    config class compares it."""
    defaults = {f.name: f.default for f in dataclasses.fields(config_class)}
    for key, value in values.items():
        default = defaults.get(key, dataclasses.MISSING)
        if default is None or default is dataclasses.MISSING:
            continue
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, float):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif isinstance(default, str):
            ok = isinstance(value, str)
        else:
            continue
        if not ok:
            raise ConfigError(f"{source}: {key} = {value!r} must be {type(default).__name__}, like its default {default!r}")
    seed = values.get("seed")
    if isinstance(seed, int) and not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise ConfigError(f"{source}: seed {seed} is out of range ({SEED_RANGE[0]} to {SEED_RANGE[1]:,})")


def build_config(trainer: Trainer, values: dict[str, Any], device_notes: bool = True, source: str = "config") -> Resolved:
    """The config from ``values`` (names and types checked, shared field types converted,
    CPU-only options turned off on cuda with a note); ``source`` names where the values came
    from in errors."""
    known = _field_names(trainer.config_class)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown {trainer.algo} config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    values = dict(values)
    if "time_budget" in values:
        values["time_budget"] = parse_duration(values["time_budget"], stored=True)
    check_types(trainer.config_class, values, f"{trainer.algo} {source}")
    notes: list[str] = []
    if trainer.cpu_only and device_notes:
        default = {f.name: f.default for f in dataclasses.fields(trainer.config_class)}.get("device", "cpu")
        device = resolve_device(str(values.get("device", default)))
        if device != "cpu":
            for name, (cpu_value, other) in trainer.cpu_only.items():
                if values.get(name) == cpu_value:
                    values[name] = other
                    notes.append(f"{name} = {other!r}: {name} = {cpu_value!r} runs on the CPU only and the device is {device}")
    try:
        return Resolved(trainer.config_class(**values), tuple(notes))
    except TypeError as error:  # a TOML value of the wrong type reaching a comparison
        raise ConfigError(f"{trainer.algo} config: {error}") from None


def preset(algo: str, game: str) -> dict[str, Any]:
    """The settings a new ``algo`` run on ``game`` starts from, ``game`` included: the game's
    preset when it is a shipped game (by its rules), else none (the config's defaults)."""
    trainer = load_trainer(algo)
    alias = shipped_alias(load_game(game))
    values = dict(trainer.presets.get(alias, {})) if alias is not None else {}
    return values | ({"game": game} if "game" in _field_names(trainer.config_class) else {})


def config_of(algo: str, values: Mapping[str, Any]) -> Any:
    """``values`` as ``algo``'s config, checked as a ``--config`` file is (names, types, values):
    for scripts and tests that build a config without a command, e.g.
    ``config_of("nfsp", preset("nfsp", "leduc") | {"num_envs": 32})``."""
    return build_config(load_trainer(algo), dict(values)).config


def resolve_new(trainer: Trainer, options: Mapping[str, Any]) -> Resolved:
    """A new run's config: preset < ``--config`` TOML < flags (see the module docstring)."""
    given = _given(trainer, options)
    stray = sorted(set(given) - set(trainer.flags) - {"game"})
    if stray:
        raise ConfigError(f"{', '.join(_flag(s) for s in stray)} does not apply to --algo {trainer.algo}")
    from_file: dict[str, Any] = {}
    config_path = options.get("config_path")
    if config_path:
        from_file = read_toml(Path(config_path))
        if "time_budget" in from_file:
            from_file["time_budget"] = parse_duration(from_file["time_budget"])
    known = _field_names(trainer.config_class)
    if "game" in known or "game" in from_file:
        file_game = from_file.get("game")
        game_name = str(given.get("game") or file_game or "leduc")
        if file_game is not None and given.get("game") is not None and str(file_game) != game_name:
            raise ConfigError(f"{config_path} is for game {file_game!r} but --game is {game_name!r}; "
                              f"pass --game {file_game} or leave --game out")
    else:
        game_name = str(given.get("game") or "leduc")
    game = load_game(game_name)  # an unknown game or bad gamedef fails here, before any directory
    require_trainable(game)
    alias = shipped_alias(game)
    notes: list[str] = []
    values: dict[str, Any] = {}
    if alias is not None:
        values.update(trainer.presets.get(alias, {}))
    else:
        notes.append(f"{game.name} is not a shipped game: no tuned preset, the {trainer.algo} defaults apply")
    if "game" in known:
        values["game"] = game_name
    values.update(from_file)
    for option, value in given.items():
        if option in trainer.flags:
            values[trainer.flags[option]] = value
    if trainer.prepare is not None:
        values = trainer.prepare(values, dict(options))
    resolved = build_config(trainer, values, source=f"{config_path} / flags" if config_path else "flags")
    return Resolved(resolved.config, tuple(notes) + resolved.notes)


def resolve_resume(trainer: Trainer, run: RunDir, options: Mapping[str, Any]) -> Resolved:
    """The config of a run being continued: its ``config.toml`` with the resumable flags applied."""
    if options.get("config_path"):
        raise ConfigError("--config cannot change a run on --resume (its config.toml is kept)")
    given = _given(trainer, options)
    refused = sorted(option for option in given
                     if option not in trainer.flags or trainer.flags[option] not in trainer.resumable)
    if refused:
        allowed = sorted(_flag(o) for o, f in trainer.flags.items() if f in trainer.resumable)
        raise ConfigError(f"{', '.join(_flag(r) for r in refused)} cannot change a run on --resume "
                          f"(its config.toml is kept; --resume takes {', '.join(allowed)})")
    values = run.config() | {trainer.flags[option]: value for option, value in given.items()}
    return build_config(trainer, values, source=f"{run.path / 'config.toml'} / flags")


# -- the command ---------------------------------------------------------------------------------

def standing(run: RunDir) -> str:
    """What a resume of ``run`` continues from, after a step was abandoned."""
    checkpoint = run.checkpoint_path
    if checkpoint is None:
        return "no checkpoint was written yet, so a resume starts the run over"
    return f"the last checkpoint ({checkpoint}) stands; iterations after it are done again on resume"


def run_from_cli(options: Mapping[str, Any], algo: str | None = None) -> None:
    """``pokerbot train`` (``algo``: ``options["algo"]``) and ``pokerbot solve`` (``algo``:
    :data:`~bot.run_files.SOLVE_ALGO`; its ``--algo`` is a config flag): resolve (and validate)
    everything, then create or open the run directory and train. Options that are None were
    not given. Ctrl-C follows :class:`StopRequest`."""
    requested = algo or str(options["algo"])
    trainer = load_trainer(requested)
    routed = trainer.route(options) if trainer.route is not None else None
    if routed is not None:
        options = routed
        trainer = load_trainer(str(routed["algo"]))
    cluster = distributed.Cluster.from_options(options)
    if cluster.distributed and trainer.algo not in DISTRIBUTED_ALGOS:
        raise ConfigError(f"--workers/--ray-address apply to {', '.join(DISTRIBUTED_ALGOS)}, not {trainer.algo}")
    if options.get("resume"):
        if options.get("out"):
            raise ConfigError("give either --out (a new run) or --resume (an existing one), not both")
        run = RunDir.open(options["resume"], algo=requested)
        run.lock()  # before anything is read for the resume or written
        run.check_game()
        resolved = resolve_resume(trainer, run, options)
        run.save_config(resolved.config, algo=trainer.algo)
        resume = True
    elif options.get("out"):
        resolved = resolve_new(trainer, options)
        run = RunDir.create(options["out"], resolved.config, algo=trainer.algo, notes=resolved.notes)
        resume = False
    else:
        raise ConfigError("give --out RUN_DIR for a new run or --resume RUN_DIR to continue one")
    for note in resolved.notes:
        print(f"note: {note}", file=sys.stderr)
    hint = continue_command(run.path, run.algo or trainer.algo)
    stop = StopRequest()
    try:
        with stop, distributed.session(cluster):
            trainer.train(resolved.config, run, resume, stop, force=bool(options.get("force")))
    except KeyboardInterrupt:
        raise RunInterrupted(f"interrupted; the last checkpoint stands; continue with: {hint}") from None
    except StepAbandoned as abandoned:
        print(f"{abandoned.reason}: the step in progress would have run on for more than {stop.grace:.0f} s, so it was "
              f"abandoned; {standing(run)}; continue with: {hint}", file=sys.stderr)
        return
    except Exception:
        if not resume:
            run.discard()  # nothing to resume: a retry finds no half-made run
        raise
    if stop.requested:
        print(f"stopped on request; checkpoint saved; continue with: {hint}", file=sys.stderr)
    print(f"run directory: {run.path} (policy in {run.policy_path})")
