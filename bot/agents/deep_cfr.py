"""Deep CFR and SD-CFR policies: the bundle fields, the playing agent, exact strategies.

A Deep CFR or SD-CFR policy is a bundle (:mod:`bot.agents.bundle`: ``bundle.json`` with the gamedef,
the sha256 of every file and the run's provenance) whose kind-specific fields are::

    "architecture": {"group_sizes": [...], "bet_slots": N, "width": W},
    "argmax_fallback": true,
    "stack": [{"weight": 1, "uniform": true},                        # sd-cfr: sigma^1
              {"weight": 2, "files": ["stack/p0_t000001.pt", "stack/p1_t000001.pt"]}, ...],
    "average": "average.pt"                                          # deep-cfr

**SD-CFR** (Steinberger 2019; DREAM paper sec. 4.4): the stack lists every iteration's value
networks per position; strategy ``sigma^t`` comes from regret matching on them. Playing samples
one stack entry per hand with probability proportional to its weight (linear CFR: the
iteration; ``t^e`` for a run trained with ``average_exponent`` e, :mod:`bot.agents.stack_weights`),
which plays exactly that average strategy. Its exact average policy at an
infoset is the reach-weighted average ``sum_t w_t pi_p^t(I) sigma^t(I) / sum_t w_t pi_p^t(I)``
(:class:`StackAverage`). Networks are loaded one at a time, so a stack need not fit in memory.
**Deep CFR** plays the average-strategy network (masked softmax over legal actions).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bot.agents.base import Agent
from bot.agents.board_grid import network_grid, seat_grids
from bot.agents.bundle import (
    Bundle,
    BundleError,
    game_difference,
    load_network,
    read_bundle,
)
from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, strategy_from_outputs
from bot.agents.range_grid import RangeGrid
from bot.progress import report
from protocol.betting_tree import DECISION
from protocol.gamedef import Game
from protocol.matchstate import MatchState
from protocol.state import ACTIONS

KINDS = ("sd-cfr", "deep-cfr")
#: Stack entries above this are refused as implausible before anything is loaded: an entry is
#: one iteration (the paper's longest run has 450), and each holds two networks on disk.
MAX_STACK_ENTRIES = 100_000
#: An agent keeps up to this many networks loaded: all of a 500-iteration stack (~270 MB at
#: HULH's width 64); a longer stack keeps the 8 most recently used.
CACHE_NETWORKS = 1000


def check_stack(stack: list[dict], bundle: Bundle, source: object) -> None:
    """One-line :class:`BundleError` for a stack no training run writes: too long, a weight
    that is not a positive finite number (or weights whose sum overflows), an entry that is
    neither uniform nor two listed network files, or one file in two entries."""
    if len(stack) > MAX_STACK_ENTRIES:
        raise BundleError(f"{source}: a stack of {len(stack):,} entries is implausible (at most "
                          f"{MAX_STACK_ENTRIES:,}: one per iteration)")
    seen: set[str] = set()
    total = 0.0
    for index, entry in enumerate(stack):
        weight = entry.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight < float("inf"):
            raise BundleError(f"{source}: stack entry {index} has weight {weight!r}; weights are positive finite numbers")
        total += float(weight)
        if entry.get("uniform") is True:
            continue
        files = entry.get("files")
        if not isinstance(files, list) or len(files) != 2 or not all(isinstance(f, str) for f in files):
            raise BundleError(f"{source}: stack entry {index} needs 'files': two network files (one per player)")
        for name in files:
            bundle.path(name)  # listed (hashed) in 'files', inside the bundle
            if name in seen:
                raise BundleError(f"{source}: {name!r} appears in two stack entries")
            seen.add(name)
    if not total < float("inf"):
        raise BundleError(f"{source}: the stack's weights sum past the largest number")


@dataclass
class DeepCFRBundle:
    """A Deep CFR / SD-CFR bundle's fields (networks are read lazily, verified, from ``root``)."""

    bundle: Bundle
    architecture: dict
    argmax_fallback: bool
    stack: list[dict]
    average: str | None

    @classmethod
    def load(cls, path: Path) -> DeepCFRBundle:
        return cls.of(read_bundle(path))

    @classmethod
    def of(cls, bundle: Bundle) -> DeepCFRBundle:
        source = bundle.root / "bundle.json"
        data = bundle.manifest
        if bundle.kind not in KINDS:
            raise BundleError(f"{source}: a {bundle.kind} bundle, not a Deep CFR / SD-CFR one")
        stack, average = data.get("stack", []), data.get("average")
        if not isinstance(stack, list) or not all(isinstance(e, dict) for e in stack):
            raise BundleError(f"{source}: 'stack' must be a list of entries")
        check_stack(stack, bundle, source)
        if not isinstance(data.get("architecture"), dict):
            raise BundleError(f"{source}: missing field 'architecture'")
        if bundle.kind == "sd-cfr" and not stack:
            raise BundleError(f"{source}: an sd-cfr bundle with an empty stack")
        if bundle.kind == "deep-cfr" and not isinstance(average, str):
            raise BundleError(f"{source}: a deep-cfr bundle without an average network")
        return cls(bundle, data["architecture"], bool(data.get("argmax_fallback", True)), stack, average)

    @property
    def root(self) -> Path:
        return self.bundle.root

    @property
    def kind(self) -> str:
        return self.bundle.kind

    @property
    def game(self) -> Game:
        return self.bundle.game

    def network(self, relative: str) -> DeepCFRNetwork:
        """One network of the bundle, on CPU, in eval mode."""
        return load_network(self.architecture, self.bundle.path(relative), self.root / "bundle.json")

    @property
    def weights(self) -> np.ndarray:
        return np.array([float(entry["weight"]) for entry in self.stack])


# -- strategies of networks ----------------------------------------------------------------

class InfosetBatch:
    """Every infoset of a small game as network inputs (over :func:`bot.agents.infosets.space_for`)."""

    def __init__(self, game: Game) -> None:
        from bot.agents.infosets import space_for

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
    def outputs(self, nets: tuple[DeepCFRNetwork, DeepCFRNetwork] | DeepCFRNetwork) -> torch.Tensor:
        """Raw network outputs ``[num_infosets, 3]`` (float32, CPU): each player's rows from its net."""
        per_player = nets if isinstance(nets, tuple) else (nets, nets)
        out = torch.zeros((self.space.num_infosets, 3))
        for p, net in enumerate(per_player):
            rows = torch.from_numpy(np.flatnonzero(self.player == p))
            device = next(net.parameters()).device
            out[rows] = net(self.cards[rows].to(device), self.bets[rows].to(device)).float().cpu()
        return out

    def strategy(self, nets: tuple[DeepCFRNetwork, DeepCFRNetwork] | DeepCFRNetwork | None, kind: str = "value",
                 argmax_fallback: bool = True) -> np.ndarray:
        """``[num_infosets, 3]``: each player's rows from its network (None: uniform)."""
        if nets is None:
            return self.space.uniform_strategy()
        return strategy_from_outputs(kind, self.outputs(nets), self.legal, argmax_fallback).double().numpy()


class StackAverage:
    """Exact SD-CFR average policy, accumulated one stack entry at a time (reach-weighted)."""

    def __init__(self, game: Game) -> None:
        from bot.agents.infosets import space_for

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


def bundle_strategy(bundle: DeepCFRBundle) -> np.ndarray:
    """The exact ``[num_infosets, 3]`` strategy a bundle plays (small games only); the stack's
    progress goes to :func:`bot.progress.report` (a few hundred entries take minutes)."""
    batch = InfosetBatch(bundle.game)
    if bundle.kind == "deep-cfr":
        return batch.strategy(bundle.network(bundle.average), kind="average")
    average = StackAverage(bundle.game)
    for done, entry in enumerate(bundle.stack):  # one entry's networks in memory at a time
        nets = None if entry.get("uniform") else tuple(bundle.network(f) for f in entry["files"])
        average.add(batch.strategy(nets, argmax_fallback=bundle.argmax_fallback), float(entry["weight"]))
        report("averaging the SD-CFR stack", done + 1, len(bundle.stack))
    return average.strategy()


# -- the agent ------------------------------------------------------------------------------

class DeepCFRAgent(Agent):
    """Plays a bundle: SD-CFR samples one stack entry per hand (prob. proportional to its
    weight, i.e. its iteration); Deep CFR plays the average network."""

    name = "deep-cfr"

    def __init__(self, game: Game, bundle: DeepCFRBundle, cache_size: int | None = None, seed: int = 0) -> None:
        """``cache_size``: networks kept loaded (None: all of the policy's networks when they are
        at most :data:`CACHE_NETWORKS`, else 8). A range query (LBR) runs every stack entry at every
        decision, so an 8-network cache reloaded (and re-verified) every network of a longer stack
        each time: 11.2 of 44.4 s in a profile of ``pokerbot lbr`` on a 21-entry HULH stack."""
        if bundle.game.to_text() != game.to_text():
            raise BundleError(f"{bundle.root}: {game_difference(bundle.game, game)}")
        super().__init__(game)
        self.bundle = bundle
        self.name = bundle.kind
        self.encoder = InfosetEncoder(game)
        self._cache: OrderedDict[str, DeepCFRNetwork] = OrderedDict()
        if cache_size is None:
            networks = 2 * sum(not entry.get("uniform") for entry in bundle.stack) + (bundle.average is not None)
            cache_size = networks if networks <= CACHE_NETWORKS else 8
        self._cache_size = max(1, cache_size)
        self._seed = seed
        self._entry: dict | None = None
        self._range_grid = RangeGrid(self.encoder)
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

    def draw_entry(self, key: int) -> dict:
        """SD-CFR: the stack entry for ``key`` (a hand's number, or a board's index), drawn with
        probability proportional to its weight, reproducibly from the seed."""
        rng = np.random.default_rng([self._seed, key])
        return self.bundle.stack[int(rng.choice(len(self.bundle.stack), p=self._probabilities))]

    def begin_hand(self, view: MatchState) -> None:
        """SD-CFR: draw this hand's stack entry (reproducible from the seed and hand number)."""
        if self.bundle.kind == "sd-cfr":
            self._entry = self.draw_entry(view.hand_number)

    def board_strategies(self, board: np.ndarray, hands: np.ndarray, nodes: np.ndarray, key: int) -> np.ndarray:
        """float32 ``[len(nodes), len(hands), 3]``: the strategy at decision ``nodes`` of every row
        of ``hands`` on ``board`` in one grid (:mod:`bot.agents.board_grid`): Deep CFR's average
        network, or the SD-CFR stack entry :meth:`draw_entry` draws for ``key`` (a board's index).
        Averaged over boards that is what drawing one entry per hand plays, so the board match's
        estimate stays unbiased; the draw adds its variance to the boards'."""
        if self.bundle.kind == "deep-cfr":
            return network_grid(self._net(self.bundle.average), "average", self.bundle.argmax_fallback, self.encoder,
                                hands, board, nodes)  # fmt: skip
        entry = self.draw_entry(key)
        nets = (None, None) if entry.get("uniform") else tuple(self._net(f) for f in entry["files"])
        return seat_grids(nets, "value", self.bundle.argmax_fallback, self.encoder, hands, board, nodes)

    @torch.no_grad()
    def _entry_strategy(self, entry: dict | None, node: int, position: int, cards: np.ndarray) -> np.ndarray:
        """``[n, 3]`` at betting ``node`` for card rows ``cards``: the average network (deep-cfr,
        ``entry`` None) or one SD-CFR stack entry's regret matching (uniform entries: uniform)."""
        if entry is not None and entry.get("uniform"):
            return self._uniform(node, len(cards))
        name, kind = self._network_of(entry, position)
        legal = torch.from_numpy(np.repeat(self.encoder.legal[node][None], len(cards), axis=0))
        bets = torch.from_numpy(np.repeat(self.encoder.bets[node][None], len(cards), axis=0))
        outputs = self._net(name)(torch.from_numpy(cards.astype(np.int64)), bets)
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
        """Every hand's strategy from :class:`~bot.agents.range_grid.RangeGrid` (card halves and
        node strategies kept across queries). SD-CFR gives its average policy, not this hand's
        entry: ``sum_t w_t pi^t(h) sigma^t(h) / sum_t w_t pi^t(h)`` with ``pi^t(h)`` the
        entry's probability of the viewer's own earlier actions in ``view`` holding ``h``
        (Steinberger 2019), which is what drawing one entry per hand plays."""
        node = self.encoder.encode_view(view)[0]
        hands = np.asarray(hands, dtype=np.int64)
        board = view.board_flat
        if self.bundle.kind == "deep-cfr":
            return self._grid_strategy(None, node, view.position, board, hands)
        tree = self.encoder.tree
        earlier = []  # (node, action, its round's board) of the viewer's own decisions
        walk = 0
        for letter in view.betting.replace("/", ""):
            action = ACTIONS.index(letter)
            if tree.actor[walk] == view.position:
                earlier.append((walk, action, board[: self.game.board_cards_through(int(tree.round[walk]))]))
            walk = int(tree.child[walk, action])
        numerator = np.zeros((len(hands), len(ACTIONS)))
        denominator = np.zeros(len(hands))
        for entry, weight in zip(self.bundle.stack, self.bundle.weights, strict=True):
            reach = np.full(len(hands), weight)
            for past, action, seen in earlier:
                reach *= self._grid_strategy(entry, past, view.position, seen, hands)[:, action]
            numerator += reach[:, None] * self._grid_strategy(entry, node, view.position, board, hands)
            denominator += reach
        uniform = self._uniform(node, 1)[0]  # hands no entry plays to this point
        safe = np.where(denominator > 0, denominator, 1.0)[:, None]
        return np.where(denominator[:, None] > 0, numerator / safe, uniform)

    def _grid_strategy(self, entry: dict | None, node: int, position: int, board: tuple[int, ...],
                       hands: np.ndarray) -> np.ndarray:
        """:meth:`_entry_strategy` of every row of ``hands`` through the range grid."""
        if entry is not None and entry.get("uniform"):
            return self._uniform(node, len(hands))
        name, kind = self._network_of(entry, position)
        return self._range_grid.strategies(name, self._net(name), kind, self.bundle.argmax_fallback, node, board, hands)

    def _network_of(self, entry: dict | None, position: int) -> tuple[str, str]:
        """(network file, kind) playing ``position``: the average network (deep-cfr, ``entry``
        None) or the stack entry's value network."""
        return (self.bundle.average, "average") if entry is None else (entry["files"][position], "value")

    def _uniform(self, node: int, count: int) -> np.ndarray:
        """``[count, 3]`` float64, uniform over ``node``'s legal actions (a uniform stack entry)."""
        legal = self.encoder.legal[node].astype(np.float64)
        return np.broadcast_to(legal / legal.sum(), (count, len(ACTIONS)))

    def end_hand(self, view: MatchState) -> None:
        self._entry = None


def bundle_agent(game: Game, bundle: Bundle) -> DeepCFRAgent:
    """An ``sd-cfr`` or ``deep-cfr`` bundle's agent (the kinds :mod:`bot.registry` registers)."""
    return DeepCFRAgent(game, DeepCFRBundle.of(bundle))


def bundle_strategy_of(bundle: Bundle) -> np.ndarray:
    """An ``sd-cfr`` or ``deep-cfr`` bundle's exact strategy (small games)."""
    return bundle_strategy(DeepCFRBundle.of(bundle))
