"""Deep CFR and SD-CFR policy bundles: the on-disk format, the playing agent, exact strategies.

A policy bundle is a directory (a run's ``policy/``) holding ``bundle.json`` and network weight
files; it needs only this module, :mod:`bot.network` and :mod:`bot.encoding` to load (no
training code). ``bundle.json``::

    {"format": 1, "kind": "sd-cfr" | "deep-cfr", "encoder_version": 1,
     "game_name": "leduc.limit.2p", "game": "<gamedef text>",
     "architecture": {"group_sizes": [...], "bet_slots": N, "width": W},
     "argmax_fallback": true,
     "stack": [{"weight": 1, "uniform": true},                        # sd-cfr: sigma^1
               {"weight": 2, "files": ["stack/p0_t000001.pt", "stack/p1_t000001.pt"]}, ...],
     "average": "average.pt"}                                          # deep-cfr

**SD-CFR** (Steinberger 2019; DREAM paper sec. 4.4): the stack lists every iteration's value
networks per position; strategy ``sigma^t`` comes from regret matching on them. Playing samples
one stack entry per hand with probability proportional to its weight (linear CFR: the
iteration), which plays exactly the linear average strategy. Its exact average policy at an
infoset is the reach-weighted average ``sum_t w_t pi_p^t(I) sigma^t(I) / sum_t w_t pi_p^t(I)``
(:class:`StackAverage`). Networks are loaded one at a time, so a stack need not fit in memory.
**Deep CFR** plays the average-strategy network (masked softmax over legal actions).
"""

from __future__ import annotations

import json
import pickle
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bot.agent import Agent
from bot.encoding import ENCODER_VERSION, InfosetEncoder
from bot.errors import PokerbotError
from bot.network import DeepCFRNetwork, masked_softmax, regret_matching
from protocol.betting_tree import DECISION
from protocol.gamedef import Game, parse_gamedef
from protocol.matchstate import MatchState
from protocol.state import ACTIONS

BUNDLE_FORMAT = 1
BUNDLE_FILE = "bundle.json"
KINDS = ("sd-cfr", "deep-cfr")


class BundleError(PokerbotError):
    """A policy bundle that cannot be loaded (the message names the file and the problem)."""


@dataclass
class Bundle:
    """A loaded ``bundle.json`` (networks are read lazily from ``root``)."""

    root: Path
    kind: str
    game: Game
    architecture: dict
    argmax_fallback: bool
    stack: list[dict]
    average: str | None

    @classmethod
    def load(cls, path: Path) -> Bundle:
        path = Path(path)
        root = path if path.is_dir() else path.parent
        if (root / "policy" / BUNDLE_FILE).exists():  # a run directory
            root = root / "policy"
        manifest_path = root / BUNDLE_FILE
        if not manifest_path.exists():
            raise BundleError(f"{path}: no {BUNDLE_FILE} (not a Deep CFR / SD-CFR policy bundle or run)")
        try:
            data = json.loads(manifest_path.read_text())
        except json.JSONDecodeError as error:
            raise BundleError(f"{manifest_path}: invalid JSON ({error})") from None
        if data.get("format") != BUNDLE_FORMAT:
            raise BundleError(f"{manifest_path}: bundle format {data.get('format')!r}, this pokerbot reads {BUNDLE_FORMAT}")
        if data.get("encoder_version") != ENCODER_VERSION:
            raise BundleError(f"{manifest_path}: encoder version {data.get('encoder_version')!r}, this pokerbot has {ENCODER_VERSION}")
        if data.get("kind") not in KINDS:
            raise BundleError(f"{manifest_path}: unknown kind {data.get('kind')!r}")
        try:
            game = parse_gamedef(data["game"], source=str(manifest_path), name=data["game_name"])
            bundle = cls(root, data["kind"], game, data["architecture"], bool(data.get("argmax_fallback", True)),
                         list(data.get("stack", [])), data.get("average"))
        except KeyError as error:
            raise BundleError(f"{manifest_path}: missing field {error}") from None
        if bundle.kind == "sd-cfr" and not bundle.stack:
            raise BundleError(f"{manifest_path}: an sd-cfr bundle with an empty stack")
        if bundle.kind == "deep-cfr" and not bundle.average:
            raise BundleError(f"{manifest_path}: a deep-cfr bundle without an average network")
        return bundle

    def network(self, relative: str) -> DeepCFRNetwork:
        """One network of the bundle, on CPU, in eval mode."""
        arch = self.architecture
        net = DeepCFRNetwork(tuple(arch["group_sizes"]), int(arch["bet_slots"]), int(arch["width"]))
        file = self.root / relative
        try:
            state = torch.load(file, map_location="cpu", weights_only=True)
            net.load_state_dict(state)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
            raise BundleError(f"{file}: cannot load network ({str(error).splitlines()[0]})") from None
        return net.eval()

    @property
    def weights(self) -> np.ndarray:
        return np.array([float(entry["weight"]) for entry in self.stack])


def manifest(kind: str, game: Game, architecture: dict, argmax_fallback: bool,
             stack: list[dict] | None = None, average: str | None = None) -> dict:
    """The ``bundle.json`` content (the training side writes it after the weights it names)."""
    return {"format": BUNDLE_FORMAT, "kind": kind, "encoder_version": ENCODER_VERSION,
            "game_name": game.name, "game": game.to_text(),
            "architecture": architecture, "argmax_fallback": argmax_fallback, "stack": stack or [], "average": average}


# -- strategies of networks ----------------------------------------------------------------

def strategy_from_outputs(kind: str, outputs: torch.Tensor, legal: torch.Tensor, argmax_fallback: bool) -> torch.Tensor:
    """Value-network advantages -> regret matching; average-network logits -> masked softmax."""
    if kind == "value":
        return regret_matching(outputs, legal, argmax_fallback)
    return masked_softmax(outputs, legal)


class InfosetBatch:
    """Every infoset of a small game as network inputs (over :func:`bot.infosets.space_for`)."""

    def __init__(self, game: Game) -> None:
        from bot.infosets import space_for

        self.space = space_for(game)
        self.encoder = InfosetEncoder(game, self.space.tree)
        space, enc = self.space, self.encoder
        cards = np.full((space.num_infosets, enc.num_card_slots), -1, dtype=np.int64)
        hole = game.num_hole_cards
        cards[:, :hole] = space.hands[space.hand]
        rounds = space.tree.round[space.node]
        for r in range(game.num_rounds):
            rows = np.flatnonzero(rounds == r)
            width = game.board_cards_through(r)
            cards[rows, hole : hole + width] = space.boards[r][space.board[rows]]
        self.cards = torch.from_numpy(cards)
        self.bets = torch.from_numpy(enc.bets[space.node])
        self.legal = torch.from_numpy(space.legal)
        self.player = space.player

    @torch.no_grad()
    def strategy(self, nets: tuple[DeepCFRNetwork, DeepCFRNetwork] | DeepCFRNetwork | None, kind: str = "value",
                 argmax_fallback: bool = True) -> np.ndarray:
        """``[num_infosets, 3]``: each player's rows from its network (None: uniform)."""
        if nets is None:
            return self.space.uniform_strategy()
        per_player = nets if isinstance(nets, tuple) else (nets, nets)
        out = np.zeros((self.space.num_infosets, 3))
        for p, net in enumerate(per_player):
            rows = torch.from_numpy(np.flatnonzero(self.player == p))
            device = next(net.parameters()).device
            outputs = net(self.cards[rows].to(device), self.bets[rows].to(device)).float().cpu()
            out[rows.numpy()] = strategy_from_outputs(kind, outputs, self.legal[rows], argmax_fallback).double().numpy()
        return out


class StackAverage:
    """Exact SD-CFR average policy, accumulated one stack entry at a time (reach-weighted)."""

    def __init__(self, game: Game) -> None:
        from bot.infosets import space_for

        self.space = space_for(game)
        self.numerator = np.zeros((self.space.num_slots, 3))
        self.denominator = np.zeros(self.space.num_slots)

    def own_reach(self, dense: np.ndarray, player: int) -> list[np.ndarray | None]:
        """Top-down: ``player``'s own reach ``[boards, hands]`` at every decision node (its own
        action probabilities only; a new round repeats the parent board's row per child board)."""
        space, tree = self.space, self.space.tree
        reach: list[np.ndarray | None] = [None] * tree.num_nodes
        reach[0] = np.ones((len(space.boards[int(tree.round[0])]), space.num_hands))
        for node in tree.decision_ids:  # preorder: parents first
            x, rnd = reach[node], int(tree.round[node])
            block = space.node_block(dense, node) if tree.actor[node] == player else None
            for a in np.flatnonzero(tree.legal[node]):
                child = int(tree.child[node, a])
                if tree.kind[child] != DECISION:
                    continue
                y = x * block[..., a] if block is not None else x
                for r in range(rnd + 1, int(tree.round[child]) + 1):
                    y = y[space.board_parent[r]]
                reach[child] = y
        return reach

    def add(self, strategy: np.ndarray, weight: float) -> None:
        """Add ``weight * pi_p(I) * sigma(I)`` for both players' infosets."""
        space = self.space
        dense = space.to_dense(strategy)
        for player in (0, 1):
            reach = self.own_reach(dense, player)
            for node in space.tree.decision_ids:
                if space.tree.actor[node] != player:
                    continue
                r = weight * reach[node]
                space.node_block(self.numerator, node)[...] += r[..., None] * space.node_block(dense, node)
                space.node_block(self.denominator, node)[...] += r

    def strategy(self) -> np.ndarray:
        """``[num_infosets, 3]``; infosets no entry reaches get uniform play."""
        num = self.space.from_dense(self.numerator)
        den = self.space.from_dense(self.denominator)
        uniform = self.space.uniform_strategy()
        safe = np.where(den > 0, den, 1.0)[:, None]
        return np.where(den[:, None] > 0, num / safe, uniform)

    def state(self) -> dict[str, np.ndarray]:
        return {"numerator": self.numerator, "denominator": self.denominator}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        self.numerator[...] = state["numerator"]
        self.denominator[...] = state["denominator"]


def bundle_strategy(bundle: Bundle) -> np.ndarray:
    """The exact ``[num_infosets, 3]`` strategy a bundle plays (small games only)."""
    batch = InfosetBatch(bundle.game)
    if bundle.kind == "deep-cfr":
        return batch.strategy(bundle.network(bundle.average), kind="average")
    average = StackAverage(bundle.game)
    for entry in bundle.stack:  # one entry's networks in memory at a time
        nets = None if entry.get("uniform") else tuple(bundle.network(f) for f in entry["files"])
        average.add(batch.strategy(nets, argmax_fallback=bundle.argmax_fallback), float(entry["weight"]))
    return average.strategy()


# -- the agent ------------------------------------------------------------------------------

class DeepCFRAgent(Agent):
    """Plays a bundle: SD-CFR samples one stack entry per hand (prob. proportional to its
    weight, i.e. its iteration); Deep CFR plays the average network."""

    name = "deep-cfr"

    def __init__(self, game: Game, bundle: Bundle, cache_size: int = 8, seed: int = 0) -> None:
        if bundle.game.to_text() != game.to_text():
            raise BundleError(f"{bundle.root}: trained for {bundle.game.name}, not {game.name}")
        super().__init__(game)
        self.bundle = bundle
        self.name = bundle.kind
        self.encoder = InfosetEncoder(game)
        self._cache: OrderedDict[str, DeepCFRNetwork] = OrderedDict()
        self._cache_size = cache_size
        self._seed = seed
        self._entry: dict | None = None
        if bundle.kind == "sd-cfr":
            self._probabilities = bundle.weights / bundle.weights.sum()

    def _net(self, relative: str) -> DeepCFRNetwork:
        if relative in self._cache:
            self._cache.move_to_end(relative)
        else:
            self._cache[relative] = self.bundle.network(relative)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return self._cache[relative]

    def begin_hand(self, view: MatchState) -> None:
        """SD-CFR: draw this hand's stack entry (reproducible from the seed and hand number)."""
        if self.bundle.kind == "sd-cfr":
            rng = np.random.default_rng([self._seed, view.hand_number])
            self._entry = self.bundle.stack[int(rng.choice(len(self.bundle.stack), p=self._probabilities))]

    @torch.no_grad()
    def _entry_strategy(self, entry: dict | None, node: int, position: int, cards: np.ndarray) -> np.ndarray:
        """``[n, 3]`` at betting ``node`` for card rows ``cards``: the average network (deep-cfr,
        ``entry`` None) or one SD-CFR stack entry's regret matching (uniform entries: uniform)."""
        legal = torch.from_numpy(np.repeat(self.encoder.legal[node][None], len(cards), axis=0))
        if entry is not None and entry.get("uniform"):
            return (legal.double() / legal.sum(dim=1, keepdim=True)).numpy()
        if entry is None:
            net, kind = self._net(self.bundle.average), "average"
        else:
            net, kind = self._net(entry["files"][position]), "value"
        bets = torch.from_numpy(np.repeat(self.encoder.bets[node][None], len(cards), axis=0))
        outputs = net(torch.from_numpy(cards.astype(np.int64)), bets)
        return strategy_from_outputs(kind, outputs, legal, self.bundle.argmax_fallback).double().numpy()

    def action_probabilities(self, view: MatchState) -> dict[str, float]:
        """Deep CFR: the average network; SD-CFR: this hand's stack entry (drawn at begin_hand)."""
        node, cards = self.encoder.encode_view(view)
        if self.bundle.kind == "deep-cfr":
            probs = self._entry_strategy(None, node, view.position, cards[None])[0]
        else:
            if self._entry is None:  # a caller that skipped begin_hand: draw for this hand now
                self.begin_hand(view)
            probs = self._entry_strategy(self._entry, node, view.position, cards[None])[0]
        return {k: float(p) for k, p, ok in zip(ACTIONS, probs, self.encoder.legal[node], strict=True) if ok}

    def range_probabilities(self, view: MatchState, hands: np.ndarray) -> np.ndarray:
        """One batched forward per network. SD-CFR gives its average policy, not this hand's
        entry: ``sum_t w_t pi^t(h) sigma^t(h) / sum_t w_t pi^t(h)`` with ``pi^t(h)`` the
        entry's probability of the viewer's own earlier actions in ``view`` holding ``h``
        (Steinberger 2019), which is what drawing one entry per hand plays."""
        node, cards = self.encoder.encode_view(view)
        rows = np.repeat(cards[None], len(hands), axis=0)
        rows[:, : self.game.num_hole_cards] = hands
        if self.bundle.kind == "deep-cfr":
            return self._entry_strategy(None, node, view.position, rows)
        tree, visible = self.encoder.tree, self.encoder.visible
        earlier = []  # (node, action, card rows as seen then) of the viewer's own decisions
        walk = 0
        for letter in view.betting.replace("/", ""):
            action = ACTIONS.index(letter)
            if tree.actor[walk] == view.position:
                earlier.append((walk, action, np.where(visible[tree.round[walk]], rows, -1)))
            walk = int(tree.child[walk, action])
        numerator = np.zeros((len(hands), len(ACTIONS)))
        denominator = np.zeros(len(hands))
        for entry, weight in zip(self.bundle.stack, self.bundle.weights, strict=True):
            reach = np.full(len(hands), weight)
            for past, action, seen in earlier:
                reach *= self._entry_strategy(entry, past, view.position, seen)[:, action]
            numerator += reach[:, None] * self._entry_strategy(entry, node, view.position, rows)
            denominator += reach
        legal = self.encoder.legal[node].astype(np.float64)
        uniform = legal / legal.sum()  # hands no entry plays to this point
        safe = np.where(denominator > 0, denominator, 1.0)[:, None]
        return np.where(denominator[:, None] > 0, numerator / safe, uniform)

    def end_hand(self, view: MatchState) -> None:
        self._entry = None


# -- registry hooks ---------------------------------------------------------------------------

def _is_bundle_path(path: Path) -> bool:
    return (path / BUNDLE_FILE).exists() or (path / "policy" / BUNDLE_FILE).exists() or path.name == BUNDLE_FILE


def load_agent(game: Game, path: Path) -> Agent | None:
    """Registry path loader: a run directory, a ``policy/`` bundle or its ``bundle.json``."""
    if not _is_bundle_path(path):
        return None
    return DeepCFRAgent(game, Bundle.load(path))


def load_strategy(game: Game | None, path: Path) -> tuple[Game, np.ndarray] | None:
    """``pokerbot exploit`` loader: the exact strategy of a bundle or run (small games)."""
    if not _is_bundle_path(path):
        return None
    bundle = Bundle.load(path)
    if game is not None and game.to_text() != bundle.game.to_text():
        raise BundleError(f"{path}: trained for {bundle.game.name}, not {game.name}")
    return bundle.game, bundle_strategy(bundle)


def _register() -> None:
    from bot.best_response import register_strategy_loader
    from bot.registry import register_path_loader

    register_path_loader(load_agent)
    register_strategy_loader(load_strategy)


_register()
