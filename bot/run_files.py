"""A run directory's layout and its read-only reading, below the trainers that write it.

``training.contract.rundir`` creates and writes run directories; ``bot`` (resolving ``--agent RUN``) and
``tui`` (``pokerbot watch``) only read them. The names of the files, which command continues a
run, and how a checkpoint or config is read live here, so the readers import this layer and
never the training package (the design's arrows: protocol <- bot <- training, tui over bot).
"""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

from protocol.errors import CorruptFileError, PokerbotError

RUN_FILE = "run.json"
#: The ``format`` of ``run.json`` and of checkpoint markers this pokerbot writes and reads.
RUN_FORMAT = 1
#: The run's lock (``training.contract.lock``): who writes the run now.
LOCK_FILE = "lock"
CONFIG_FILE = "config.toml"
METRICS_FILE = "metrics.jsonl"
STATUS_FILE = "status.json"
CHECKPOINT_DIR = "checkpoint"
POLICY_DIR = "policy"
#: Marker written last into a checkpoint directory: the format and every file's sha256.
COMPLETE_FILE = "COMPLETE"
#: The metric every trainer logs for the seconds a run has trained so far (summed over resumes;
#: each trainer says what it counts: Deep CFR-family iterations with their checkpoints, NFSP
#: self-play steps, abstraction, tabular and full-width flop solver iterations; evaluations are
#: off the clock).
ELAPSED_METRIC = "elapsed_s"
#: Older names of the same metric, read from run directories written before it was one name.
METRIC_ALIASES = {"train_seconds": ELAPSED_METRIC, "wall_s": ELAPSED_METRIC, "solve_s": ELAPSED_METRIC}
#: The ``run.json`` algorithm of runs that ``pokerbot solve`` (tabular CFR) writes and continues.
SOLVE_ALGO = "solve"
#: ``pokerbot train --algo`` names (:data:`training.contract.entry.ALGORITHMS` maps each to its
#: module; a test keeps the two equal). Here, below the CLI and the trainers, so ``--help``
#: lists them without importing the training package.
TRAIN_ALGORITHMS = ("abstraction", "deep-cfr", "distil", "dream", "flop-cfr", "nfsp", "os-sd-cfr", "sd-cfr")
#: The full-width CFR variants of :mod:`training.tabular.cfr`.
CFR_VARIANTS = ("cfr", "cfr+", "linear-cfr", "dcfr")
#: ``pokerbot solve --algo`` names: the CFR variants, then external-sampling MCCFR.
SOLVE_ALGORITHMS = (*CFR_VARIANTS, "es-mccfr")


def recorded_algo(path: Path) -> str | None:
    """The algorithm ``run.json`` records (None for runs made before it, or none readable: the
    caller that needs it reports the damage)."""
    try:
        return str(json.loads((Path(path) / RUN_FILE).read_text())["algo"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def continue_command(path: Path, algo: str | None = None) -> str:
    """The command that continues the run at ``path``: ``pokerbot solve --resume RUN`` for a
    tabular solve, else ``pokerbot train [--algo A] --resume RUN``."""
    algo = algo if algo is not None else recorded_algo(path)
    if algo == SOLVE_ALGO:
        return f"pokerbot solve --resume {path}"
    return f"pokerbot train {f'--algo {algo} ' if algo else ''}--resume {path}"


def run_format_problem(path: Path) -> str | None:
    """What is wrong with the run's ``run.json`` format (one line), or None when this pokerbot
    reads it (runs made before ``run.json`` have none and pass)."""
    file = Path(path) / RUN_FILE
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return f"{file}: damaged (expected {{\"format\": {RUN_FORMAT}, \"algo\": ...}})"
    version = data.get("format") if isinstance(data, dict) else None
    if version != RUN_FORMAT or isinstance(version, bool):
        return (f"{file}: run format {version!r}, this pokerbot reads format {RUN_FORMAT} "
                f"(a run written by another pokerbot version, or a damaged file)")
    return None


def canonical_metrics(record: Any) -> Any:
    """A ``metrics.jsonl`` record with old metric names (:data:`METRIC_ALIASES`) under today's
    (a record holding both keeps today's value); a value that is not a record is returned as it
    is, for the caller to refuse."""
    if not isinstance(record, dict):
        return record
    renamed = {key: value for key, value in record.items() if key not in METRIC_ALIASES}
    for old, new in METRIC_ALIASES.items():
        if old in record:
            renamed.setdefault(new, record[old])
    return renamed


class RunDirError(PokerbotError, OSError):
    """A run directory that cannot be created, read or resumed (the message names the path)."""


def parse_metrics(path: Path) -> list[dict[str, Any]]:
    """Every record of a ``metrics.jsonl``. Only the *last* line may be torn (a kill while it
    was written: dropped, and the next resume rewrites the file without it); a damaged or
    non-object line before it is a one-line error naming the line, so a resume never rewrites
    the file without the records after it."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        raise RunDirError(f"{path}: cannot read ({error.strerror or error})") from None
    # what follows the last newline is a torn line from a kill mid-write (append_metrics writes
    # a line with its newline at once, so only the last line can lack one): dropped
    lines = text.split("\n")[:-1]
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise CorruptFileError(f"{path}: line {number} is damaged ({line[:40]!r}...); the lines after it are "
                                   f"kept: repair or delete that line, then resume") from None
        if not isinstance(record, dict):
            raise CorruptFileError(f"{path}: line {number} is not a JSON object ({line[:40]!r})")
        records.append(canonical_metrics(record))
    return records


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file (a run's ``config.toml``, a ``--config`` file); damage is a one-line error."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise RunDirError(f"{path}: invalid TOML ({error})") from None
    except OSError as error:
        raise RunDirError(f"{path}: cannot read ({error.strerror or error})") from None


def load_torch(path: Path) -> Any:
    """``torch.load(weights_only=True)`` on CPU; a damaged or empty file is a one-line error."""
    import torch

    if Path(path).is_file() and Path(path).stat().st_size == 0:
        raise CorruptFileError(f"{path}: empty file (cut off while being written?)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, IndexError, KeyError, zipfile.BadZipFile,
            pickle.UnpicklingError) as error:
        raise RunDirError(f"{path}: cannot load checkpoint file ({str(error).splitlines()[0]})") from None


def latest_checkpoint(path: Path) -> Path | None:
    """The newest checkpoint directory of the run at ``path`` with its COMPLETE marker
    (``checkpoint/``, else ``checkpoint.old/`` while the trainer swaps them), or None before
    the first one; not verified (``training.contract.rundir.verify_checkpoint`` checks the checksums)."""
    for name in (CHECKPOINT_DIR, CHECKPOINT_DIR + ".old"):
        candidate = Path(path) / name
        if (candidate / COMPLETE_FILE).exists():
            return candidate
    return None
