"""Network policies that ship inside the package under names of their own (``holdem_deep_cfr``),
beside the ``default`` bot of each game.

Each is a policy bundle (:mod:`bot.agents.bundle`: every file sha256-checked before it is read)
in ``bot/shipped/named/<name>/``; the folder name is the agent name. Its ``bundle.json`` carries
one extra field, written by ``scripts/ship_network.py`` from a training run::

    "shipped": {"description": "one line: what it is and how it was trained",
                "strength": {"vs default": "+12.3 ± 4.5 mbb/g (AIVAT + duplicate, ...)", ...}}

:mod:`bot.registry` registers every folder as a name, so the policy plays wherever an agent does
(``pokerbot play --opponent``, ``match``, ``connect --agent``, ``lbr``); ``pokerbot agents`` lists
it with those figures. Listing reads only the manifests, so it stays instant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.shipped import SHIPPED_ROOT

NAMED_ROOT = SHIPPED_ROOT / "named"
MANIFEST = "bundle.json"


def shipped_network_names(root: Path | None = None) -> list[str]:
    """The names of the shipped network policies (folders holding a ``bundle.json``)."""
    root = root or NAMED_ROOT
    if not root.is_dir():
        return []
    return sorted(folder.name for folder in root.iterdir() if (folder / MANIFEST).is_file())


def shipped_network_folder(name: str, root: Path | None = None) -> Path:
    return (root or NAMED_ROOT) / name


def shipped_network_info(name: str, root: Path | None = None) -> dict[str, Any]:
    """``{"game_name", "description", "strength"}`` from the folder's manifest (files unverified:
    loading the agent verifies them); an unreadable manifest gives empty fields."""
    try:
        data = json.loads((shipped_network_folder(name, root) / MANIFEST).read_text())
    except (OSError, ValueError):
        data = {}
    shipped = data.get("shipped") if isinstance(data, dict) else None
    shipped = shipped if isinstance(shipped, dict) else {}
    strength = shipped.get("strength") if isinstance(shipped.get("strength"), dict) else {}
    return {"game_name": str(data.get("game_name", "")) if isinstance(data, dict) else "",
            "description": str(shipped.get("description", "")), "strength": {str(k): str(v) for k, v in strength.items()}}


#: The size limit of a shipped network policy (the package carries it to every install).
MAX_SHIPPED_BYTES = 10_000_000


def ship_network(source: Path, name: str, description: str, strength: dict[str, str], root: Path | None = None) -> Path:
    """Copy the policy bundle at ``source`` (a run directory or bundle folder; verified first) to
    ``root/name`` with its figures in the ``shipped`` field; returns the folder. Only the files the
    bundle lists are copied (a Deep CFR bundle lists its average network, not the value-network
    stack beside it); over :data:`MAX_SHIPPED_BYTES` is a one-line error, nothing written."""
    import shutil

    from bot.agents.bundle import BundleError, read_bundle
    from protocol.files import atomic_write_text, confined

    if not name.isidentifier():
        raise BundleError(f"{name!r}: a shipped name is letters, digits and underscores (it is an agent name)")
    bundle = read_bundle(source)
    total = sum(bundle.path(f).stat().st_size for f in bundle.files)
    if total > MAX_SHIPPED_BYTES:
        raise BundleError(f"{bundle.root}: {total / 1e6:.1f} MB of policy files, over the {MAX_SHIPPED_BYTES / 1e6:.0f} MB "
                          f"a shipped network may take")
    folder = shipped_network_folder(name, root)
    if folder.exists():
        shutil.rmtree(folder)
    for relative in bundle.files:
        target = confined(folder, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(bundle.path(relative), target)
    manifest = {**bundle.manifest, "shipped": {"description": description, "strength": dict(strength)}}
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1))
    return folder
