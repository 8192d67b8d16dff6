"""Tabular policy files: one probability distribution per information set, as JSON.

Format 1::

    {"game": "leduc.limit.2p", "format": 1,
     "policy": {"Ks||r": {"f": 0.1, "c": 0.6, "r": 0.3}, ...},
     "meta": {...}}                      # optional: how the file was made (config, seed, ...)

Keys are :meth:`bot.agents.infosets.InfosetSpace.key` strings; each value gives probabilities of the
legal actions only (a legal letter left out means 0). Loading is strict, because a policy that
silently misses infosets or carries illegal actions would give wrong exploitability and wrong
play: every problem is one :class:`PolicyFileError` line naming the file and the key.

The same file is the payload of a policy bundle of kind ``tabular`` (:mod:`bot.agents.bundle`: a
folder with ``bundle.json`` naming ``policy.json`` and its sha256, the gamedef text and the
provenance), which is what ``pokerbot solve`` writes into its run directory's ``policy/``; the
bundle's gamedef lets a policy of a custom game load without ``--game``.

:mod:`bot.registry` registers :func:`json_agent` as a path loader, so ``--agent
leduc.json`` plays the file with :class:`TabularPolicyAgent`, and the ``tabular`` bundle kind.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from bot.agents.base import Agent
from bot.agents.bundle import Bundle, write_bundle
from bot.agents.infosets import SUM_TOLERANCE, InfosetSpace, require_tabular_size, space_for
from bot.errors import PokerbotError
from protocol.files import atomic_write_text
from protocol.gamedef import Game, GamedefError, load_game
from protocol.matchstate import MatchState
from protocol.state import ACTIONS

FORMAT = 1
#: The policy file inside a ``tabular`` bundle.
BUNDLE_POLICY_FILE = "policy.json"
_TOP_LEVEL = {"game", "format", "policy", "meta"}


class PolicyFileError(PokerbotError):
    """A policy file that cannot be used; the message names the file and the offending key."""


def policy_dict(space: InfosetSpace, strategy: np.ndarray) -> dict[str, dict[str, float]]:
    """``{key: {letter: probability}}`` over the legal letters of every infoset."""
    strategy = space.check_strategy(strategy)
    return {
        key: {letter: float(p) for letter, p, ok in zip(ACTIONS, row, legal, strict=True) if ok}
        for key, row, legal in zip(space.keys, strategy, space.legal, strict=True)
    }


def save_policy(path: Path, game: Game, strategy: np.ndarray, meta: dict | None = None) -> None:
    """Write a policy file atomically (temporary file, fsync, rename)."""
    document: dict = {"game": game.name, "format": FORMAT, "policy": policy_dict(space_for(game), strategy)}
    if meta is not None:
        document["meta"] = meta
    atomic_write_text(Path(path), json.dumps(document, indent=0))


def save_policy_bundle(root: Path, game: Game, strategy: np.ndarray, provenance: dict) -> dict:
    """Write a ``tabular`` policy bundle into the folder ``root``: ``policy.json`` (this module's
    format), then ``bundle.json`` naming it with its sha256; returns the manifest."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    save_policy(root / BUNDLE_POLICY_FILE, game, strategy)
    return write_bundle(root, "tabular", game, [BUNDLE_POLICY_FILE], provenance)


def load_policy(path: Path, game: Game | None = None) -> tuple[Game, np.ndarray]:
    """The game and strategy array ``[num_infosets, 3]`` of a policy file (strict)."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise PolicyFileError(f"{path}: not valid JSON: {error}") from None
    except RecursionError:  # the JSON parser recurses once per nesting level
        raise PolicyFileError(f"{path}: JSON nested too deeply to be a policy file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyFileError(f"{path}: cannot read: {error}") from None
    if not isinstance(document, dict):
        raise PolicyFileError(f"{path}: expected a JSON object with game, format and policy")
    unknown = set(document) - _TOP_LEVEL
    missing = {"game", "format", "policy"} - set(document)
    if unknown or missing:
        problem = f"unknown field {sorted(unknown)[0]!r}" if unknown else f"missing field {sorted(missing)[0]!r}"
        raise PolicyFileError(f"{path}: {problem} (a policy file has game, format, policy, meta)")
    if document["format"] != FORMAT or isinstance(document["format"], bool):
        raise PolicyFileError(f"{path}: format {document['format']!r} is not supported (only {FORMAT})")
    game = _resolve_game(path, document["game"], game)
    try:
        require_tabular_size(game)
    except ValueError as error:
        raise PolicyFileError(f"{path}: {error}") from None
    policy = document["policy"]
    if not isinstance(policy, dict):
        raise PolicyFileError(f"{path}: 'policy' must be an object of infoset key -> probabilities")
    return game, _strategy_of(path, space_for(game), policy)


def _resolve_game(path: Path, name: object, game: Game | None) -> Game:
    if not isinstance(name, str):
        raise PolicyFileError(f"{path}: 'game' must be a game name, got {name!r}")
    if game is not None:
        if game.name != name:
            raise PolicyFileError(f"{path}: policy is for game {name!r}, not {game.name!r}")
        return game
    try:
        return load_game(name)
    except GamedefError as error:
        raise PolicyFileError(f"{path}: {error} (for a custom gamedef, name its file with --game)") from None


def _strategy_of(path: Path, space: InfosetSpace, policy: dict) -> np.ndarray:
    strategy = np.zeros((space.num_infosets, len(ACTIONS)))
    seen = np.zeros(space.num_infosets, dtype=bool)
    for key, row in policy.items():
        try:
            index = space.index(key)
        except KeyError:
            raise PolicyFileError(f"{path}: unknown infoset key {key!r} for {space.game.name}") from None
        if not isinstance(row, dict):
            raise PolicyFileError(f"{path}: key {key!r}: expected an object of action -> probability")
        for letter, p in row.items():
            if letter not in ACTIONS:
                raise PolicyFileError(f"{path}: key {key!r}: unknown action {letter!r} (actions are f, c, r)")
            column = ACTIONS.index(letter)
            if not space.legal[index, column]:
                raise PolicyFileError(f"{path}: key {key!r}: action {letter!r} is illegal there")
            if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) or p < 0:
                raise PolicyFileError(f"{path}: key {key!r}: probability of {letter!r} must be a number >= 0, got {p!r}")
            strategy[index, column] = p
        total = strategy[index].sum()
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise PolicyFileError(f"{path}: key {key!r}: probabilities sum to {float(total):.9g}, not 1")
        strategy[index] /= total
        seen[index] = True
    if not seen.all():
        absent = np.flatnonzero(~seen)
        raise PolicyFileError(
            f"{path}: missing infoset {space.key(int(absent[0]))!r} ({len(absent)} of {space.num_infosets} missing)"
        )
    return strategy


def load_policy_strategy(game: Game | None, path: Path) -> tuple[Game, np.ndarray] | None:
    """Strategy loader for :func:`bot.evaluation.best_response.load_strategy`: ``.json`` files only."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    return load_policy(path, game)


class TabularPolicyAgent(Agent):
    """Plays a strategy array over :func:`bot.agents.infosets.space_for` ``(game)``, e.g. a policy file."""

    name = "tabular"

    def __init__(self, game: Game, strategy: np.ndarray, name: str | None = None) -> None:
        super().__init__(game)
        self.space = space_for(game)
        self.strategy = self.space.check_strategy(strategy)
        if name is not None:
            self.name = name

    @classmethod
    def from_file(cls, path: Path, game: Game | None = None) -> TabularPolicyAgent:
        loaded_game, strategy = load_policy(path, game)
        return cls(loaded_game, strategy, name=Path(path).stem)

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        index = self.space.index(InfosetSpace.make_key(view.own_hole_cards, view.board, view.betting))
        legal = self.space.legal[index]
        return {a: float(p) for a, p, ok in zip(ACTIONS, self.strategy[index], legal, strict=True) if ok}


def json_agent(game: Game, path: Path) -> Agent | None:
    """``--agent FILE.json``: a tabular policy file (None for any other path)."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    return TabularPolicyAgent.from_file(path, game)


def bundle_strategy(bundle: Bundle) -> np.ndarray:
    """A ``tabular`` bundle's strategy."""
    return load_policy(bundle.path(BUNDLE_POLICY_FILE), bundle.game)[1]


def bundle_agent(game: Game, bundle: Bundle) -> Agent:
    """A ``tabular`` bundle's agent."""
    return TabularPolicyAgent(game, bundle_strategy(bundle))
