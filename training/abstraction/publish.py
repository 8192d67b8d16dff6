"""Publishing a solve as a named abstraction agent's policy (the table ``--opponent NAME``
plays, ``$POKERBOT_CACHE/abstractions/<name>/policy.npy`` with its ``policy.json``), for the two
solvers that publish one: the abstraction run loop (:mod:`training.abstraction.run`) and the
full-width FHP solve (:mod:`training.flop.trainer`, as ``fhp_lossless``).

A run that was stopped early does not replace the named policy unasked (a 90-second trial cut
short with Ctrl-C must not take the place of a finished solve); it says whose policy stays and the
command that finishes it. A finished run replaces it and says whose it replaced, so ``--resume``
of that other run publishes it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from bot.abstraction.spec import AbstractionSpec, policy_path, published_meta
from protocol.files import atomic_link_or_copy, atomic_write, atomic_write_text
from training.contract.rundir import RunDir


def publish_named(spec: AbstractionSpec, run: RunDir, algo: str, iterations: int,
                  content: Path | Callable[[BinaryIO], None], interrupted: bool, meta: dict | None = None) -> str:  # fmt: skip
    """Write the named policy unless ``interrupted``: the run's own file ``content`` (hard-linked
    where it can be: :func:`protocol.files.atomic_link_or_copy`) or what the function ``content``
    writes into an open binary file. Returns the line that says what happened. ``policy.json``
    gets ``meta`` plus the run and its iterations (what
    :func:`bot.abstraction.spec.published_meta` readers show)."""
    target = policy_path(spec)
    shown = published_meta(spec) if target.exists() else {}
    known = "run" in shown and isinstance(shown.get("iterations"), int)
    previous = f"{shown['run']} ({shown['iterations']:,} iterations)" if known else None
    if interrupted:
        kept = f"{spec.name!r} is still {previous}" if previous else f"{spec.name!r} stays unpublished"
        return (f"stopped early: the policy is in {run.policy_path}; {kept} "
                f"(`pokerbot train --algo {algo} --resume {run.path}` finishes this run and publishes it)")
    own = {"abstraction": spec.name, "iterations": iterations, "run": str(run.path.resolve())}
    if isinstance(content, Path):
        atomic_link_or_copy(content, target)
    else:
        atomic_write(target, content)
    atomic_write_text(target.with_name("policy.json"), json.dumps((meta or {}) | own))
    line = f"policy published as {spec.name!r} ({target})"
    if previous and shown.get("run") != own["run"]:
        line += f", replacing {previous} (`--resume` that run to publish it again)"
    return line
