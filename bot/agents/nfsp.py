"""The trained NFSP average policy as a playable agent, and the ``nfsp`` opponent name.

NFSP plays and is evaluated with its average-policy networks Pi, one per seat (Heinrich &
Silver 2016, sec. 4: the average policy is the one that approaches a Nash equilibrium; the
best-response networks only drive learning). A run's ``policy/`` is a bundle of kind ``nfsp``
(:mod:`bot.agents.bundle`: ``bundle.json`` with the gamedef, provenance and the file's sha256) whose one
file ``nfsp_policy.pt`` holds both seats' Pi weights, the network architecture, the encoder
version and the gamedef text; it loads with ``torch.load(weights_only=True)`` and needs no
training code. Run directories from before bundles (no ``bundle.json``) still load, unverified.

Where trained NFSP policies live: ``--opponent nfsp`` means the run directory
``$POKERBOT_RUNS/nfsp-<game>`` (``POKERBOT_RUNS`` defaults to ``runs`` under the current
directory; ``<game>`` is the short name: kuhn, leduc, fhp, holdem). Any NFSP run directory or
bundle can also be given by path.
"""

from __future__ import annotations

import os
import pickle
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from bot.agents.base import Agent
from bot.agents.board_grid import seat_grids
from bot.agents.bundle import (
    Bundle,
    bundle_root,
    check_game,
    game_difference,
    load_network,
    read_bundle,
)
from bot.agents.deep_cfr import InfosetBatch
from bot.agents.encoding import ENCODER_VERSION, InfosetEncoder
from bot.agents.network import DeepCFRNetwork, masked_softmax
from bot.agents.range_grid import RangeGrid
from bot.errors import AgentNotFound
from protocol.gamedef import GAME_ALIASES, Game, parse_gamedef
from protocol.matchstate import MatchState
from protocol.state import ACTIONS

#: File name of the bundle inside a run directory's ``policy/``.
POLICY_FILE = "nfsp_policy.pt"
#: Bundle format number (bump when the layout changes).
BUNDLE_FORMAT = 1


def short_game_name(game: Game) -> str:
    """kuhn / leduc / fhp / holdem for the shipped games, else the gamedef's name."""
    for alias, stem in GAME_ALIASES.items():
        if stem == game.name:
            return alias
    return game.name


def default_run_dir(game: Game) -> Path:
    """Where ``--opponent nfsp`` looks for ``game``'s trained NFSP run."""
    return Path(os.environ.get("POKERBOT_RUNS", "runs")) / f"nfsp-{short_game_name(game)}"


def train_hint(game: Game) -> str:
    name = short_game_name(game)
    return f"train one with: pokerbot train --algo nfsp --game {name} --out {default_run_dir(game)}"


class NFSPPolicy:
    """Both seats' average-policy networks over one game's infoset encoding."""

    def __init__(self, game: Game, networks: list[DeepCFRNetwork], encoder: InfosetEncoder | None = None) -> None:
        if len(networks) != 2:
            raise ValueError(f"an NFSP policy has one network per seat, got {len(networks)}")
        self.game = game
        self.networks = networks
        self.encoder = encoder if encoder is not None else InfosetEncoder(game)
        self._device = next(networks[0].parameters()).device
        self._bets = torch.from_numpy(self.encoder.bets).to(self._device)
        self._legal = torch.from_numpy(self.encoder.legal).to(self._device)

    @torch.inference_mode()
    def probabilities(self, player: int, nodes: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """Pi's action probabilities ``[n, 3]`` for seat ``player`` (zero on illegal actions)."""
        node_index = torch.from_numpy(np.asarray(nodes, dtype=np.int64)).to(self._device)
        card_tensor = torch.from_numpy(np.asarray(cards, dtype=np.int8)).to(self._device)
        logits = self.networks[player](card_tensor, self._bets[node_index])
        return masked_softmax(logits, self._legal[node_index]).double().cpu().numpy()

    def strategy(self) -> np.ndarray:
        """The profile as an ``[num_infosets, 3]`` array over :func:`bot.agents.infosets.space_for`
        (small games; what exact best response evaluates), each seat's rows from its network."""
        return self.infosets.strategy(tuple(self.networks), kind="average")

    @cached_property
    def infosets(self) -> InfosetBatch:
        """Every infoset of a small game as network inputs (built on first use)."""
        return InfosetBatch(self.game)

    def bundle(self) -> dict:
        """The ``weights_only``-loadable bundle (see the module docstring)."""
        return {
            "format": BUNDLE_FORMAT,
            "algorithm": "nfsp",
            "encoder_version": ENCODER_VERSION,
            "game_name": self.game.name,
            "gamedef": self.game.to_text(),
            "architecture": self.networks[0].architecture(),
            "networks": [{k: v.detach().cpu() for k, v in n.state_dict().items()} for n in self.networks],
        }

    @classmethod
    def load(cls, path: Path, game: Game | None = None) -> NFSPPolicy:
        """Read a bundle; ``game`` (when given) must be the game it was trained for."""
        try:
            bundle = torch.load(path, map_location="cpu", weights_only=True)
        except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError) as error:
            raise AgentNotFound(f"{path}: cannot read NFSP policy ({str(error).splitlines()[0]})") from None
        if not isinstance(bundle, dict) or bundle.get("algorithm") != "nfsp" or not isinstance(bundle.get("networks"), list):
            raise AgentNotFound(f"{path}: not an NFSP policy bundle")
        if bundle.get("format") != BUNDLE_FORMAT or bundle.get("encoder_version") != ENCODER_VERSION:
            raise AgentNotFound(
                f"{path}: NFSP bundle format {bundle.get('format')} / encoder {bundle.get('encoder_version')}; "
                f"this pokerbot reads format {BUNDLE_FORMAT} / encoder {ENCODER_VERSION} (retrain it)"
            )
        missing = sorted({"game_name", "gamedef", "architecture", "networks"} - set(bundle))
        if missing:
            raise AgentNotFound(f"{path}: NFSP policy bundle lacks {', '.join(missing)} (damaged or too old; retrain it)")
        trained_for = parse_gamedef(bundle["gamedef"], source=str(path), name=bundle["game_name"])
        if game is not None and trained_for.to_text() != game.to_text():
            raise AgentNotFound(f"{path}: NFSP policy {game_difference(trained_for, game)}")
        game = game or trained_for
        networks = [load_network(bundle["architecture"], weights, path) for weights in bundle["networks"]]
        return cls(game, networks)


def policy_file(path: Path) -> Path | None:
    """The bundle at ``path`` (the file itself, a run directory, or its ``policy/``), if any."""
    for candidate in (path, path / POLICY_FILE, path / "policy" / POLICY_FILE):
        if candidate.is_file() and candidate.name == POLICY_FILE:
            return candidate
    return None


class NFSPAgent(Agent):
    """Plays the average policy of its seat."""

    name = "nfsp"

    def __init__(self, game: Game, policy: NFSPPolicy) -> None:
        super().__init__(game)
        self.policy = policy
        self._range_grid = RangeGrid(policy.encoder)

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        node, cards = self.policy.encoder.encode_view(view)
        probabilities = self.policy.probabilities(view.position, np.array([node]), cards[None, :])[0]
        legal = self.policy.encoder.legal[node]
        return {kind: float(probabilities[i]) for i, kind in enumerate(ACTIONS) if legal[i]}

    def range_probabilities(self, view: MatchState, hands: np.ndarray) -> np.ndarray:
        """The seat's average network over every hand, through :class:`~bot.agents.range_grid.RangeGrid`."""
        node = self.policy.encoder.encode_view(view)[0]
        net = self.policy.networks[view.position]
        return self._range_grid.strategies(view.position, net, "average", False, node, view.board_flat, hands)

    def board_strategies(self, board: np.ndarray, hands: np.ndarray, nodes: np.ndarray, key: int) -> np.ndarray:
        """float32 ``[len(nodes), len(hands), 3]``: each seat's Pi at its decision ``nodes`` for
        every row of ``hands`` on ``board``, in one grid (:mod:`bot.agents.board_grid`); ``key``
        is unused (the policy draws nothing)."""
        return seat_grids(self.policy.networks, "average", False, self.policy.encoder, hands, board, nodes)


def named_agent(game: Game) -> Agent:
    """The agent named ``nfsp``: the policy trained in the game's default run directory."""
    run = default_run_dir(game)
    found = policy_file(run)
    if found is None:
        raise AgentNotFound(f"agent 'nfsp' is not built for {game.name} (no policy in {run}): {train_hint(game)}")
    if bundle_root(run) is not None:
        bundle = read_bundle(run)
        check_game(bundle, game)
        return bundle_agent(game, bundle)
    return NFSPAgent(game, NFSPPolicy.load(found, game))


def agent_from_path(game: Game, path: Path) -> Agent | None:
    """Run directories from before bundles (a bundle is :mod:`bot.agents.bundle`'s to load)."""
    found = None if bundle_root(path) is not None else policy_file(path)
    return None if found is None else NFSPAgent(game, NFSPPolicy.load(found, game))


def strategy_from_path(game: Game | None, path: Path) -> tuple[Game, np.ndarray] | None:
    """The exact strategy of an NFSP run from before bundles (None for any other path)."""
    found = None if bundle_root(path) is not None else policy_file(path)
    if found is None:
        return None
    policy = NFSPPolicy.load(found, game)
    return policy.game, policy.strategy()


def _bundle_policy(bundle: Bundle, game: Game | None = None) -> NFSPPolicy:
    return NFSPPolicy.load(bundle.path(POLICY_FILE), game)


def bundle_agent(game: Game, bundle: Bundle) -> Agent:
    """An ``nfsp`` bundle's agent."""
    return NFSPAgent(game, _bundle_policy(bundle, game))


def bundle_strategy(bundle: Bundle) -> np.ndarray:
    """An ``nfsp`` bundle's exact strategy (small games)."""
    return _bundle_policy(bundle).strategy()
