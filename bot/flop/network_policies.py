"""Trained network policies (SD-CFR, Deep CFR, NFSP, DREAM, OS-SD-CFR) as exact FHP policies.

``pokerbot exploit RUN --game fhp`` reads a run's bundle (:mod:`bot.agents.bundle`) here and hands the
per-flop best response (:mod:`bot.flop.best_response`) a :class:`FlopPolicy`:

* ``deep-cfr``: the average-strategy network, masked softmax (Brown et al. 2019, sec. 3);
* ``nfsp``: each seat's average-policy network Pi (Heinrich & Silver 2016);
* ``sd-cfr`` (also what DREAM and OS-SD-CFR write): the exact SD-CFR average of the stack
  (Steinberger 2019, "Single Deep Counterfactual Regret Minimization", sec. 3): at infoset I of
  player p, ``sum_t w_t pi_p^t(I) sigma^t(I) / sum_t w_t pi_p^t(I)``, with ``sigma^t`` regret
  matching on iteration t's value network, ``pi_p^t(I)`` p's own reach to I under ``sigma^t``
  (its preflop and flop actions) and ``w_t`` the stack's weights (``t``, or ``t^e`` for a run's
  ``average_exponent`` e; :mod:`bot.agents.stack_weights`); infosets no entry
  reaches play uniformly. This is :class:`bot.agents.deep_cfr.StackAverage`'s convention, per
  flop: the numerator is accumulated, and the best response's regret matching (a normalisation
  of non-negative weights, uniform where all are 0) divides it by the denominator.

**Speed.** The appendix C network is a card branch (cards only), a bet branch (betting node
only) and a trunk whose first layer is affine in the two branches' concatenation. Over a chunk
of flops the card branch runs once per distinct card row the network reads (suit-canonical rows
repeat within a flop), the bet branch once per decision node, the first trunk layer as the sum
of its card half's and bet half's products (each computed once), and only the rest of the trunk
runs over the (node, card row) grid: on the CPU in :mod:`bot.agents.network_kernels`' compiled
blocks, which also apply the strategy rule; on a GPU (``device="cuda"``) in torch, in blocks of
``row_budget`` rows. Each network is read at its own seat's decision nodes only (a network that
plays both seats, Deep CFR's average, in one pass over all of them). The best response and the
SD-CFR own-reach accumulation read the distinct rows' strategies through their index
(:class:`~bot.flop.best_response.SharedRows`), one flop at a time, instead of a
``[flops, D, H, 3]`` table written for them. ``benchmarks/bench_fhp_network_exploit.py`` (width
64, canonical flops, AMD EPYC with AVX-512, one thread, load 3.4-3.8): the exact exploitability
of a seeded Deep CFR average network in 19.4 CPU-s, best response included (9.7 per network);
of a 10-iteration SD-CFR stack in 8.1 CPU-s per network.

**Suit symmetry.** A network trained with ``canonical_suits`` (:func:`bot.agents.network.canonical_suit_cards`)
is suit-invariant, so the 1,755 canonical flops suffice (FHP); any other network is evaluated
on all 22,100 raw flops, which is exact for any policy.

**Memory.** The per-flop showdown orders (FHP all flops: 160 MB), the networks of the bundle
(SD-CFR: all of the stack, ~0.1-0.4 MB each), one chunk's distinct card rows with their
strategies at each network's nodes (FHP canonical: ~200k rows x 28 nodes x 12 bytes = 67 MB a
seat) and, for an SD-CFR stack, one best-response chunk of numerators
(:func:`bot.flop.best_response.chunk_size`: 256 MB, one buffer reused across chunks). Measured
on FHP (``benchmarks/bench_fhp_network_exploit.py``, width 64): peak RSS 0.83 GiB for a Deep
CFR average network alone, 1.03 GiB for the SD-CFR stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from numba import njit, prange

from bot.agents.bundle import bundle_root, read_bundle
from bot.agents.deep_cfr import DeepCFRBundle
from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork, strategy_from_outputs
from bot.agents.network_kernels import scatter_strategies, trunk_strategies
from bot.errors import PokerbotError
from bot.flop.best_response import FlopPolicy, SharedRows, flop_game_for, shared_table
from bot.flop.game import FlopGame, leaf_reach, reach_down
from bot.flop.policies import NETWORK_DEVICE
from bot.progress import report
from protocol.betting_tree import DECISION
from protocol.gamedef import Game


class NetworkPolicyError(PokerbotError, ValueError):
    """A network bundle that cannot be evaluated here (another game, no GPU for --device cuda)."""


#: Trunk rows evaluated at once (memory: about rows x width x 16 bytes).
ROW_BUDGET = 1 << 20
#: A seat's networks; None: that seat plays uniformly (SD-CFR's sigma^1).
NetPair = tuple[DeepCFRNetwork | None, DeepCFRNetwork | None]


class NetworkGrid:
    """A FlopGame's infosets as network inputs, and networks' strategies over them in grids of
    (decision node) x (hand, flop) rows."""

    def __init__(self, fg: FlopGame, device: str = "cpu", row_budget: int = ROW_BUDGET, compiled: bool | None = None) -> None:
        self.fg = fg
        self.device = torch.device(device)
        self.row_budget = row_budget
        #: The trunk runs in :mod:`bot.agents.network_kernels` (default: on the CPU), else in torch.
        self.compiled = self.device.type == "cpu" if compiled is None else compiled
        encoder = InfosetEncoder(fg.game, fg.tree)
        self.num_card_slots = encoder.num_card_slots
        subtrees = (fg.preflop, fg.flop)
        self.bets = [torch.from_numpy(encoder.bets[s.decision_nodes]).to(self.device) for s in subtrees]
        self.legal = [torch.from_numpy(s.legal).to(self.device) for s in subtrees]
        self.actor = [fg.tree.actor[s.decision_nodes] for s in subtrees]
        self._distinct_key: tuple | None = None
        self._trunk_buffers = (ChunkBuffer(), ChunkBuffer())  # one per network of a pair
        self._distinct_rows: tuple[torch.Tensor, np.ndarray] = (torch.empty(0), np.empty(0))

    def cards(self, round_index: int, lo: int = 0, hi: int = 1) -> torch.Tensor:
        """Card slots ``[(hi - lo) x H, slots]``: every hand on flops ``lo..hi-1`` (round 1), or
        every hand with no board (round 0)."""
        fg = self.fg
        hole = fg.hands.shape[1]
        count = hi - lo if round_index else 1
        cards = np.full((count, fg.num_hands, self.num_card_slots), -1, dtype=np.int64)
        cards[:, :, :hole] = fg.hands[None]
        if round_index:
            cards[:, :, hole : hole + fg.flops.shape[1]] = fg.flops[lo:hi, None, :]
        return torch.from_numpy(cards.reshape(-1, self.num_card_slots)).to(self.device)

    def distinct(self, net: DeepCFRNetwork, round_index: int, lo: int, hi: int) -> tuple[torch.Tensor, np.ndarray]:
        """The distinct card rows ``net`` reads on flops ``lo..hi-1`` (valid hands only) and, per
        (flop, hand) row, its index among them (-1: not a deal): suit-canonical inputs repeat
        within a flop (about 1.6 x fewer on FHP). Kept for the last chunk asked for, which every
        network of a stack reads in turn: canonicalising and the unique are paid once a chunk."""
        key = (round_index, lo, hi, net.canonical_suits)
        if self._distinct_key != key:
            valid = self.valid_rows(round_index, lo, hi)
            seen = net.cards_seen(self.cards(round_index, lo, hi)[torch.from_numpy(valid).to(self.device)])
            # one int64 key per row (slot values -1..51 in base 53): a 1-D unique, ~10x faster
            keys = (seen.cpu().numpy() + 1) @ (53 ** np.arange(seen.shape[1], dtype=np.int64))
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            row_of = np.full(len(valid), -1, dtype=np.int64)
            row_of[valid] = inverse.reshape(-1)
            self._distinct_rows = (seen[torch.from_numpy(first).to(self.device)], row_of)
            self._distinct_key = key
        return self._distinct_rows

    def valid_rows(self, round_index: int, lo: int, hi: int) -> np.ndarray:
        """Which (flop, hand) rows of flops ``lo..hi-1`` are deals (no card shared with the flop)."""
        if not round_index:
            return np.ones(self.fg.num_hands, dtype=bool)
        return self.fg.valid[lo:hi].reshape(-1) > 0

    @torch.no_grad()
    def outputs(self, net: DeepCFRNetwork, seen: torch.Tensor, bets: torch.Tensor) -> torch.Tensor:
        """``net``'s outputs ``[nodes, rows, 3]`` for every (betting node, distinct card row) pair
        in torch (the GPU path): the card and bet branches once each, the first trunk layer as
        the sum of its two halves (:meth:`DeepCFRNetwork.comb1_halves`), the rest of the trunk in blocks of ``row_budget``."""
        width = net.width
        card_part, bet_part = net.comb1_halves(seen, bets)
        out = torch.empty((len(bets), len(seen), 3), device=seen.device)
        block = max(1, self.row_budget // max(1, len(bets)))
        for start in range(0, len(seen), block):
            rows = card_part[start : start + block]
            combined = (bet_part[:, None, :] + rows[None, :, :]).reshape(-1, width)
            out[:, start : start + len(rows)] = net.head_from(combined).reshape(len(bets), len(rows), 3)
        return out

    def node_strategies(self, net: DeepCFRNetwork, seen: torch.Tensor, nodes: np.ndarray, kind: str,
                        argmax_fallback: bool, round_index: int, buffer: ChunkBuffer | None = None) -> np.ndarray:
        """float32 ``[len(nodes), rows, 3]``: ``net``'s strategy at decision rows ``nodes`` of the
        round for every distinct card row ``seen``: in :mod:`bot.agents.network_kernels`' compiled
        trunk (:attr:`compiled`; a view of ``buffer``, which the next call given it reuses), else
        in torch."""
        bets, legal = self.bets[round_index][nodes], self.legal[round_index][nodes]
        if self.compiled:
            card_part, bet_part = net.comb1_halves(seen, bets)
            out = (buffer or ChunkBuffer()).get((len(nodes), len(seen), 3))
            return trunk_strategies(net, card_part, bet_part, legal, kind, argmax_fallback, out)
        raw = self.outputs(net.to(self.device), seen, bets)
        node_legal = legal[:, None, :].expand(-1, raw.shape[1], -1).reshape(-1, 3)
        strategy = strategy_from_outputs(kind, raw.reshape(-1, 3), node_legal, argmax_fallback)
        return strategy.reshape(len(nodes), -1, 3).cpu().numpy()

    def shared_rows(self, nets: NetPair, kind: str, argmax_fallback: bool, round_index: int,
                    lo: int = 0, hi: int = 1) -> SharedRows:
        """The strategies of ``nets`` (``kind`` ``value``: regret matching; ``average``: masked
        softmax) on flops ``lo..hi-1`` (round 0: no flop), each network's over the distinct card
        rows it reads at the decision rows it plays: one group per distinct network, so a network
        that plays both seats (Deep CFR's average) runs its card branch once; None plays uniformly
        (one "distinct row" every deal reads). Views of buffers that the next call reuses."""
        legal, actor = self.legal[round_index], self.actor[round_index]
        seats = [(nets[0], np.arange(len(actor)))] if nets[0] is nets[1] else \
            [(net, np.flatnonzero(actor == player)) for player, net in enumerate(nets)]
        strategies, rows_of = [], []
        node_group, node_row = np.empty(len(actor), np.int64), np.empty(len(actor), np.int64)
        for group, ((net, nodes), buffer) in enumerate(zip(seats, self._trunk_buffers, strict=False)):
            if net is None:
                node_legal = legal[nodes].cpu().numpy().astype(np.float32)
                strategy = np.ascontiguousarray((node_legal / node_legal.sum(axis=1, keepdims=True))[:, None])
                row_of = np.where(self.valid_rows(round_index, lo, hi), 0, -1)
            else:
                seen, row_of = self.distinct(net, round_index, lo, hi)
                strategy = self.node_strategies(net, seen, nodes, kind, argmax_fallback, round_index, buffer)
            strategies.append(strategy)
            rows_of.append(row_of)
            node_group[nodes], node_row[nodes] = group, np.arange(len(nodes))
        return SharedRows(tuple(strategies), tuple(rows_of), node_group, node_row)

    def strategies(self, nets: NetPair, kind: str, argmax_fallback: bool, round_index: int,
                   lo: int = 0, hi: int = 1, out: np.ndarray | None = None) -> np.ndarray:
        """float32 ``[flops, D, H, 3]`` (round 0: one "flop"): :meth:`shared_rows` written to
        every (flop, node, hand). Hands that share a card with the flop are 0 (the best-response
        kernels never read them). Written into ``out`` when given (every entry is: a caller that
        consumes one chunk at a time reuses one buffer instead of faulting in a fresh one, ~0.3
        GB, per network)."""
        count = hi - lo if round_index else 1
        if out is None:
            out = np.empty((count, len(self.actor[round_index]), self.fg.num_hands, 3), dtype=np.float32)
        rows = self.shared_rows(nets, kind, argmax_fallback, round_index, lo, hi)
        for group, (strategy, row_of) in enumerate(zip(rows.strategies, rows.rows_of, strict=True)):
            scatter_strategies(strategy, row_of, np.flatnonzero(rows.node_group == group), out)
        return out


def network_policy(fg: FlopGame, nets: NetPair, kind: str, argmax_fallback: bool = True, device: str = "cpu") -> FlopPolicy:
    """One network per seat (Deep CFR's average network for both, NFSP's two Pi networks) as a
    policy on ``fg``'s flops; suit-invariant when every network reads canonical suits."""
    grid = NetworkGrid(fg, device)
    preflop = grid.strategies(nets, kind, argmax_fallback, 0)[0]
    buffer = ChunkBuffer()

    def tables(lo: int, hi: int) -> np.ndarray:
        report("network outputs over flops", hi, fg.num_flops)
        return grid.strategies(nets, kind, argmax_fallback, 1, lo, hi, buffer.get((hi - lo, fg.flop.num_decisions, fg.num_hands, 3)))

    def shared(lo: int, hi: int) -> SharedRows:
        report("network outputs over flops", hi, fg.num_flops)
        return grid.shared_rows(nets, kind, argmax_fallback, 1, lo, hi)

    return FlopPolicy(preflop, tables, _suit_invariant(nets), shared)


class ChunkBuffer:
    """One float32 array reused for every chunk of a policy's flop tables (the best response
    reads each chunk before asking for the next; each table is valid until the next call): a
    fresh ~0.3 GB array per chunk costs ~0.7 s of page faults on the 2-core machine."""

    def __init__(self) -> None:
        self.array = np.empty(0, np.float32)

    def get(self, shape: tuple[int, ...]) -> np.ndarray:
        """A (not zeroed) float32 array of ``shape`` over the kept memory."""
        size = int(np.prod(shape))
        if self.array.size < size:
            self.array = np.empty(size, np.float32)
        return self.array[:size].reshape(shape)


def _suit_invariant(nets: Sequence[DeepCFRNetwork | None]) -> bool:
    return all(net is None or net.canonical_suits for net in nets)


@njit(parallel=True, cache=True)
def _add_reach_weighted(arrays, strategies, rows_of, node_group, node_row, root_reach, valid, lo, weight,
                        decision_node, decision_actor, out):  # pragma: no cover - numba
    """out[i, d, h, :] += weight x own reach of d's actor at d (flop lo + i, hand h) x strategy,
    from an entry's :class:`~bot.flop.best_response.SharedRows`, expanded one flop at a time: a
    ``[flops, D, H, 3]`` table of each entry (~0.3 GB a chunk) would be written and read back."""
    num_nodes = arrays[0].shape[0]
    num_decisions, num_hands = out.shape[1], out.shape[2]
    for i in prange(out.shape[0]):
        table = np.empty((num_decisions, num_hands, 3), np.float32)
        shared_table(strategies, rows_of, node_group, node_row, i, table)
        reach = np.empty((num_nodes, 2, num_hands))
        reach_down(arrays, table, root_reach, valid[lo + i], reach)
        for d in range(num_decisions):
            node, player = decision_node[d], decision_actor[d]
            for h in range(num_hands):
                r = weight * reach[node, player, h]
                if r != 0.0:
                    for a in range(3):
                        out[i, d, h, a] += r * table[d, h, a]


def _decision_locals(subtree) -> np.ndarray:
    """Local node id of each decision row of ``subtree``."""
    nodes = np.flatnonzero(subtree.kind == DECISION)
    return nodes[np.argsort(subtree.decision[nodes])].astype(np.int64)


class FlopStackAverage:
    """The exact SD-CFR average of a stack on a FlopGame (see the module docstring): the preflop
    numerator is summed as entries are added; the flop numerator of a chunk of flops is summed
    on request over every entry added (:meth:`flop_numerator`), so memory stays one chunk."""

    def __init__(self, grid: NetworkGrid, argmax_fallback: bool = True, exponents: Sequence[float] = (1.0,)) -> None:
        self.grid, self.fg = grid, grid.fg
        self.argmax_fallback = argmax_fallback
        self.exponents = tuple(float(e) for e in exponents)
        self.preflops = [np.zeros((self.fg.preflop.num_decisions, self.fg.num_hands, 3)) for _ in self.exponents]
        self.entries: list[tuple[float, NetPair, np.ndarray]] = []
        self._pre_nodes = _decision_locals(self.fg.preflop)
        self._flop_nodes = _decision_locals(self.fg.flop)
        self._flop_actor = self.fg.tree.actor[self.fg.flop.decision_nodes].astype(np.int64)

    def add(self, weight: float, nets: NetPair) -> None:
        """Add one stack entry: its preflop part now, its flop part when chunks are requested."""
        fg = self.fg
        strategy = self.grid.strategies(nets, "value", self.argmax_fallback, 0)[0].astype(np.float64)
        _, reach = fg.preflop_reach(strategy)
        own = reach[self._pre_nodes, fg.tree.actor[fg.preflop.decision_nodes]]  # [D0, H]
        for preflop, exponent in zip(self.preflops, self.exponents, strict=True):
            preflop += weight**exponent * own[..., None] * strategy
        self.entries.append((weight, nets, leaf_reach(fg.preflop, reach)))

    @property
    def preflop(self) -> np.ndarray:
        """The preflop numerator of the first weighting (``exponents[0]``)."""
        return self.preflops[0]

    def flop_numerator(self, lo: int, hi: int, entries: Sequence[int] | None = None,
                       out: np.ndarray | None = None, weighting: int = 0) -> np.ndarray:
        """``sum_t w_t^e pi_p^t sigma^t`` ``[hi - lo, D1, H, 3]`` (``e = exponents[weighting]``) on
        flops ``lo..hi-1`` over the entries ``entries`` (default: all), added into ``out`` when given."""
        return self.flop_numerators(lo, hi, entries, None if out is None else [out], [weighting])[0]

    def flop_numerators(self, lo: int, hi: int, entries: Sequence[int] | None = None,
                        outs: Sequence[np.ndarray] | None = None,
                        weightings: Sequence[int] | None = None) -> list[np.ndarray]:
        """:meth:`flop_numerator` for several weightings (default: every one) at once, added into
        ``outs`` (one a weighting) when given: each entry's networks are read once over the
        chunk, so another weighting costs only its reach-weighted sums and its best response."""
        fg = self.fg
        chosen = list(range(len(self.exponents)) if weightings is None else weightings)
        if outs is None:
            outs = [np.zeros((hi - lo, fg.flop.num_decisions, fg.num_hands, 3), np.float32) for _ in chosen]
        for index in range(len(self.entries)) if entries is None else entries:
            weight, nets, root_reach = self.entries[index]
            rows = self.grid.shared_rows(nets, "value", self.argmax_fallback, 1, lo, hi)
            for out, k in zip(outs, chosen, strict=True):
                _add_reach_weighted(fg.flop.arrays, rows.strategies, rows.rows_of, rows.node_group, rows.node_row,
                                    root_reach, fg.valid, lo, float(weight) ** self.exponents[k], self._flop_nodes,
                                    self._flop_actor, out)
        return list(outs)

    @property
    def suit_invariant(self) -> bool:
        return _suit_invariant([net for _, nets, _ in self.entries for net in nets])

    def policy(self, weighting: int = 0) -> FlopPolicy:
        """The average under ``exponents[weighting]`` as a policy (numerators; the best response
        normalises them)."""
        total = max(1, len(self.entries))
        buffer = ChunkBuffer()

        def tables(lo: int, hi: int) -> np.ndarray:
            out = buffer.get((hi - lo, self.fg.flop.num_decisions, self.fg.num_hands, 3))
            out.fill(0.0)
            for index in range(len(self.entries)):
                self.flop_numerator(lo, hi, [index], out, weighting)
                report("SD-CFR stack over flops (networks x flops)", lo * total + (hi - lo) * (index + 1),
                       total * self.fg.num_flops)
            return out

        return FlopPolicy(self.preflops[weighting].astype(np.float32), tables, self.suit_invariant)


def stack_nets(bundle: DeepCFRBundle, entry: dict) -> NetPair:
    """One stack entry's networks (None for the uniform sigma^1)."""
    if entry.get("uniform"):
        return (None, None)
    first, second = (bundle.network(f) for f in entry["files"])
    return first, second


def bundle_policy(game: Game, path: Path, device: str = "cpu") -> tuple[FlopGame, FlopPolicy] | None:
    """The FHP policy of a network bundle at ``path`` (a run directory, its ``policy/`` or a
    ``bundle.json``): None when ``path`` holds no bundle of a network kind."""
    if bundle_root(path) is None:
        return None
    bundle = read_bundle(path)
    if bundle.kind not in ("sd-cfr", "deep-cfr", "nfsp"):
        return None
    if bundle.game.to_text() != game.to_text():
        raise NetworkPolicyError(f"{path}: a {bundle.kind} policy trained for {bundle.game.name}, not {game.name}")
    if bundle.kind == "nfsp":
        from bot.agents.nfsp import POLICY_FILE, NFSPPolicy

        nets = tuple(NFSPPolicy.load(bundle.path(POLICY_FILE), game).networks)
        fg = flop_game_for(game, _suit_invariant(nets))
        return fg, network_policy(fg, nets, "average", device=device)
    deep = DeepCFRBundle.of(bundle)
    if deep.kind == "deep-cfr":
        net = deep.network(deep.average)
        fg = flop_game_for(game, net.canonical_suits)
        return fg, network_policy(fg, (net, net), "average", device=device)
    canonical = deep.architecture.get("canonical_suits") is True or all(e.get("uniform") for e in deep.stack)
    fg = flop_game_for(game, canonical)
    average = FlopStackAverage(NetworkGrid(fg, device), deep.argmax_fallback)
    for done, entry in enumerate(deep.stack):
        average.add(float(entry["weight"]), stack_nets(deep, entry))
        report("loading the SD-CFR stack", done + 1, len(deep.stack))
    return fg, average.policy()


def path_policy(game: Game, spec: str) -> tuple[FlopGame, FlopPolicy] | None:
    """A network run or bundle at the path ``spec`` (None for anything else), its networks on
    :data:`bot.flop.policies.NETWORK_DEVICE`."""
    path = Path(spec)
    if not path.exists():
        return None
    return bundle_policy(game, path, network_device())


def network_device() -> str:
    """The torch device :data:`bot.flop.policies.NETWORK_DEVICE` asks for (``auto``: cuda when
    torch sees a GPU); a one-line error for ``cuda`` without one."""
    choice = NETWORK_DEVICE.get()
    if choice == "cuda" and not torch.cuda.is_available():
        raise NetworkPolicyError("--device cuda: torch sees no GPU here (use --device cpu)")
    return "cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu"
