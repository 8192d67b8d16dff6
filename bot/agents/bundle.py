"""One policy bundle format for every kind of trained policy, and its one loader.

A bundle is a folder (a run's ``policy/``) holding ``bundle.json`` and the files it names::

    {"format": 2, "kind": "sd-cfr" | "deep-cfr" | "nfsp" | "abstraction" | "tabular" | ...,
     "encoder_version": 1,                     # the network input encoding (bot.agents.encoding)
     "game_name": "leduc.limit.2p", "game": "<gamedef text>",
     "files": {"stack/p0_t000001.pt": "<sha256>", ...},
     "provenance": {"algorithm": ..., "config": {...}, "seed": ..., "iterations": ...},
     ...kind-specific fields (architecture, stack, average, abstraction)}

Every file is named relative to the folder (absolute paths and ``../`` are refused) and is
checked against its sha256 before anything is read from it, so a truncated or bit-flipped
weight file is a one-line error naming it instead of a bot that plays from corrupt weights.
Loaders reach a file only through :meth:`Bundle.path`, which refuses one that ``files`` does not
list: no file is ever read unhashed (a manifest with ``"files": {}`` and an edited policy beside
it is an error, not a bot). Weights are loaded with ``torch.load(weights_only=True)`` (or
``numpy.load(allow_pickle=False)``), never unpickled. Format 1 (Deep CFR and SD-CFR bundles
written before checksums) is refused by name: its files cannot be verified.

The module that plays a kind defines its agent and strategy loaders and
:mod:`bot.registry` registers them by kind, so this module knows nothing of networks or
abstractions (the registry's bundle path loaders read a bundle here, then play it by its kind).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.agents.encoding import ENCODER_VERSION
from bot.errors import AgentNotFound, CorruptFileError
from protocol.files import atomic_write_text, confined, sha256_file, verify_sha256
from protocol.gamedef import Game, parse_gamedef

if TYPE_CHECKING:
    from bot.agents.network import DeepCFRNetwork

BUNDLE_FILE = "bundle.json"
#: Format written and read (2: files with sha256 and provenance).
BUNDLE_FORMAT = 2
READABLE_FORMATS = (2,)


class BundleError(CorruptFileError):
    """A policy bundle that cannot be loaded (the message names the file and the problem)."""


@dataclass
class Bundle:
    """A verified ``bundle.json``: its folder, kind, game and the manifest's other fields."""

    root: Path
    kind: str
    game: Game
    manifest: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)

    def path(self, relative: str) -> Path:
        """A file of the bundle, confined to its folder; one that ``files`` does not list (so
        was not hashed) is refused: every loader reads its files through here."""
        if not isinstance(relative, str) or relative not in self.files:
            raise BundleError(f"{self.root / BUNDLE_FILE}: {relative!r} is not listed in 'files' (every file a bundle "
                              f"loads must be listed with its sha256)")
        return confined(self.root, relative)

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.manifest.get("provenance", {}))


def bundle_root(path: Path) -> Path | None:
    """The bundle folder at ``path``: the folder itself, a run directory's ``policy/``, or the
    folder of a ``bundle.json`` given directly; None when there is none."""
    path = Path(path)
    for candidate in (path, path / "policy"):
        if (candidate / BUNDLE_FILE).is_file():
            return candidate
    if path.name == BUNDLE_FILE and path.is_file():
        return path.parent
    return None


def stack_root(path: Path) -> Path | None:
    """The bundle folder holding the SD-CFR stack at ``path``: the bundle itself (a bundle
    folder, an SD-CFR run's ``policy/``), or, for a Deep CFR run, whose policy is its average
    network, the value networks' bundle in ``policy/stack``; None when there is no bundle."""
    path = Path(path)
    root = bundle_root(path)
    if (root is None or read_bundle(root, verify=False).kind == "deep-cfr") and (path / "policy" / "stack").is_dir():
        return path / "policy" / "stack"
    return root


def manifest(kind: str, game: Game, files: dict[str, str], provenance: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The ``bundle.json`` content of a bundle (``files``: relative name -> sha256)."""
    return {"format": BUNDLE_FORMAT, "kind": kind, "encoder_version": ENCODER_VERSION,
            "game_name": game.name, "game": game.to_text(), "files": dict(sorted(files.items())),
            "provenance": provenance, **fields}


def write_bundle(root: Path, kind: str, game: Game, files: list[str] | dict[str, str], provenance: dict[str, Any],
                 **fields: Any) -> dict[str, Any]:
    """Write ``root/bundle.json`` (atomically, after the files it names). ``files`` is a list of
    relative names (hashed now) or a name -> sha256 map of files hashed when they were written."""
    digests = files if isinstance(files, dict) else {name: sha256_file(confined(root, name)) for name in files}
    data = manifest(kind, game, digests, provenance, **fields)
    atomic_write_text(Path(root) / BUNDLE_FILE, json.dumps(data, indent=1))
    return data


def read_bundle(path: Path, verify: bool = True) -> Bundle:
    """The bundle at ``path`` (a bundle folder, a run directory or a ``bundle.json``), its format,
    encoder version, gamedef and file paths checked, and (``verify``) every file's sha256."""
    root = bundle_root(path)
    if root is None:
        raise BundleError(f"{path}: no {BUNDLE_FILE} (not a policy bundle or a run directory with one)")
    manifest_path = root / BUNDLE_FILE
    try:
        data = json.loads(manifest_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise BundleError(f"{manifest_path}: unreadable ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{manifest_path}: not a bundle manifest (a JSON object)")
    if data.get("format") == 1 and not isinstance(data.get("format"), bool):
        raise BundleError(f"{manifest_path}: bundle format 1 (written before checksums): its files cannot be "
                          f"verified, so this pokerbot does not load it; retrain the policy")
    if data.get("format") not in READABLE_FORMATS or isinstance(data.get("format"), bool):
        raise BundleError(f"{manifest_path}: bundle format {data.get('format')!r}, this pokerbot reads "
                          f"{', '.join(map(str, READABLE_FORMATS))}")
    if data.get("encoder_version", ENCODER_VERSION) != ENCODER_VERSION:
        raise BundleError(f"{manifest_path}: encoder version {data.get('encoder_version')!r}, "
                          f"this pokerbot has {ENCODER_VERSION} (retrain the policy)")
    if not isinstance(data.get("kind"), str):
        raise BundleError(f"{manifest_path}: missing field 'kind'")
    if not isinstance(data.get("game"), str) or not isinstance(data.get("game_name"), str):
        raise BundleError(f"{manifest_path}: missing or invalid fields 'game' / 'game_name'")
    game = parse_gamedef(data["game"], source=str(manifest_path), name=data["game_name"])
    files = data.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise BundleError(f"{manifest_path}: 'files' must map file names to sha256 digests")
    bundle = Bundle(root, data["kind"], game, data, files)
    for name, digest in files.items():
        target = bundle.path(name)
        if verify:
            verify_sha256(target, digest)
    return bundle


def game_difference(trained: Game, wanted: Game) -> str:
    """``trained for X, not Y`` for two different games, with what differs when the names are
    the same (a 3-player gamedef named like the 2-player one: "kuhn.limit.2p with
    num_players 3, not kuhn.limit.2p with num_players 2")."""
    if trained.name != wanted.name:
        return f"trained for {trained.name}, not {wanted.name}"
    fields = [f.name for f in dataclasses.fields(Game) if f.name != "name"
              and getattr(trained, f.name) != getattr(wanted, f.name)]
    ours = ", ".join(f"{name} {_shown(getattr(trained, name))}" for name in fields)
    theirs = ", ".join(f"{name} {_shown(getattr(wanted, name))}" for name in fields)
    return f"trained for {trained.name} with {ours}, not {wanted.name} with {theirs}"


def _shown(value: object) -> str:
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def check_game(bundle: Bundle, game: Game | None) -> None:
    """A one-line error (no agent for that game there) when ``bundle`` was trained for another
    game than ``game``."""
    if game is not None and game.to_text() != bundle.game.to_text():
        raise AgentNotFound(f"{bundle.root}: a {bundle.kind} policy {game_difference(bundle.game, game)}")


#: Hidden widths above this are refused before any memory is allocated (the paper's are 64-96).
MAX_WIDTH = 4096


def network_shape(bundle_or_arch: dict[str, Any], source: object) -> tuple[tuple[int, ...], int, int]:
    """``(group_sizes, bet_slots, width)`` of an ``architecture`` mapping, every value checked
    (a string, a negative or an absurd width is a one-line error naming ``source``)."""
    try:
        if not isinstance(bundle_or_arch["group_sizes"], list):
            raise TypeError
        groups = tuple(int(g) for g in bundle_or_arch["group_sizes"])
        bets, width = int(bundle_or_arch["bet_slots"]), int(bundle_or_arch["width"])
    except (KeyError, TypeError, ValueError):
        raise BundleError(f"{source}: 'architecture' needs group_sizes (a list), bet_slots and width") from None
    if not groups or min(groups) < 1 or max(groups) > 8 or bets < 1 or bets > 64 or not 1 <= width <= MAX_WIDTH:
        raise BundleError(f"{source}: architecture {bundle_or_arch} is out of range (width 1..{MAX_WIDTH})")
    return groups, bets, width


def load_network(architecture: dict[str, Any], weights: Path | dict[str, Any], source: object) -> DeepCFRNetwork:
    """The Deep CFR appendix C network of ``architecture`` with ``weights`` (a file read with
    ``torch.load(weights_only=True)``, or a state dict), on CPU in eval mode. The one place a
    network is built from a stored architecture: NFSP and Deep CFR bundles both come here."""
    import pickle

    import torch

    from bot.agents.network import DeepCFRNetwork

    groups, bets, width = network_shape(architecture, source)
    net = DeepCFRNetwork(groups, bets, width, canonical_suits=architecture.get("canonical_suits") is True)
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True) if isinstance(weights, Path) else weights
        net.load_state_dict(state)
    except (OSError, RuntimeError, EOFError, ValueError, KeyError, TypeError, AttributeError,
            pickle.UnpicklingError) as error:
        where = weights if isinstance(weights, Path) else source
        raise BundleError(f"{where}: cannot load network ({str(error).splitlines()[0]})") from None
    return net.eval()

