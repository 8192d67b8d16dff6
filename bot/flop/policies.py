"""Policies of every kind as :class:`bot.flop.best_response.FlopPolicy` objects.

The flop passes read a policy as a preflop table ``[D0, H, 3]`` and flop tables ``[flops, D1,
H, 3]`` computed chunk by chunk. This module adapts what the project stores:

* a strategy array over :func:`bot.agents.infosets.space_for` (tabular files, small games): any policy,
  evaluated on every raw flop (flops in the infoset space's board order);
* a card abstraction's table (``fhp_abstraction_4e4``, ``fhp_lossless``, ...): rows per (node,
  bucket of the suit-isomorphism class), suit-invariant, so the canonical flops suffice;
* the full-width solve's own tables (``<run>/policy``): canonical flops directly;
* canonical tables read on raw flops (:func:`expand_canonical`): each raw flop is a suit
  renaming of one canonical flop, and the hand is renamed with it.
"""

from __future__ import annotations

import itertools
import json
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bot.agents.infosets import space_for
from bot.errors import PokerbotError
from bot.flop.best_response import FlopPolicy, FlopTables, flop_game_for
from bot.flop.game import FlopGame
from bot.run_files import CONFIG_FILE, RunDirError, latest_checkpoint, read_toml, run_format_problem
from protocol.cards import NUM_SUITS
from protocol.gamedef import Game

if TYPE_CHECKING:
    from bot.abstraction.tables import AbstractGame


class FlopPolicyError(PokerbotError, ValueError):
    """A stored policy that does not fit the game (shape, game, files)."""


def hand_lookup(fg: FlopGame) -> np.ndarray:
    """Hand row of each ordered card pair ``[52, 52]`` (-1 off the deck)."""
    lookup = np.full((52, 52), -1, dtype=np.int64)
    rows = np.arange(fg.num_hands)
    lookup[fg.hands[:, 0], fg.hands[:, 1]] = rows
    lookup[fg.hands[:, 1], fg.hands[:, 0]] = rows
    return lookup


def suit_maps(canonical: FlopGame, raw_flops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each raw flop: the canonical flop it is a suit renaming of, and the row each hand
    becomes under that renaming (``[B]``, ``[B, H]``): the strategy of hand h on the raw flop
    is the canonical flop's strategy of ``hand_map[b, h]``."""
    game = canonical.game
    suits = list(range(NUM_SUITS - game.num_suits, NUM_SUITS))
    key_of = {tuple(f): i for i, f in enumerate(canonical.flops.tolist())}
    lookup = hand_lookup(canonical)
    index = np.full(len(raw_flops), -1, dtype=np.int64)
    hand_map = np.zeros((len(raw_flops), canonical.num_hands), dtype=np.int64)
    for perm in itertools.permutations(suits):
        rename = np.arange(52)
        for old, new in zip(suits, perm, strict=True):
            rename[old::NUM_SUITS] = np.arange(new, 52, NUM_SUITS)[: len(rename[old::NUM_SUITS])]
        renamed = -np.sort(-rename[raw_flops], axis=1)
        for b in np.flatnonzero(index < 0):
            found = key_of.get(tuple(renamed[b].tolist()))
            if found is not None:
                index[b] = found
                hand_map[b] = lookup[rename[canonical.hands[:, 0]], rename[canonical.hands[:, 1]]]
    if np.any(index < 0):
        raise ValueError("a raw flop is no suit renaming of any canonical flop")
    return index, hand_map


def expand_canonical(canonical: FlopGame, policy: FlopPolicy, raw: FlopGame) -> FlopPolicy:
    """A canonical-flop policy read on ``raw``'s flops (every raw flop), hands renamed."""
    index, hand_map = suit_maps(canonical, raw.flops)

    def tables(lo: int, hi: int) -> np.ndarray:
        out = np.empty((hi - lo, raw.flop.num_decisions, raw.num_hands, 3), dtype=np.float32)
        for i, b in enumerate(range(lo, hi)):
            out[i] = policy.flop(int(index[b]), int(index[b]) + 1)[0][:, hand_map[b]]
        return out

    return FlopPolicy(policy.preflop, tables, policy.suit_invariant)


def strategy_policy(fg: FlopGame, strategy: np.ndarray, suit_invariant: bool = False) -> FlopPolicy:
    """A strategy array ``[num_infosets, 3]`` over :func:`bot.agents.infosets.space_for` as a policy on
    ``fg``'s flops (small games: the dense table is built)."""
    space = space_for(fg.game)
    dense = space.to_dense(space.check_strategy(strategy)).astype(np.float32)
    pre = np.stack([space.node_block(dense, n)[0] for n in fg.preflop.decision_nodes])
    board_row = {tuple(b): i for i, b in enumerate(space.boards[1].tolist())}
    rows = np.array([board_row[tuple(f)] for f in fg.flops.tolist()])
    blocks = [space.node_block(dense, n) for n in fg.flop.decision_nodes]

    def tables(lo: int, hi: int) -> np.ndarray:
        return np.stack([block[rows[lo:hi]] for block in blocks], axis=1)

    return FlopPolicy(pre, tables, suit_invariant)


def abstraction_policy(fg: FlopGame, name: str) -> FlopPolicy:
    """A solved card abstraction (``fhp_abstraction_4e4``, ``fhp_lossless``, ...) on ``fg``'s
    flops: each (node, hand, flop) reads its bucket's row. Suit-invariant."""
    from bot.abstraction.agent import AbstractionAgent

    agent = AbstractionAgent(fg.game, name)
    return abstract_game_policy(fg, agent.abstract_game, agent.policy)


def abstract_game_policy(fg: FlopGame, ag: AbstractGame, policy: np.ndarray) -> FlopPolicy:
    """A strategy table over ``ag``'s rows (``[rows, 3]``, any non-negative weights: a solve's
    running average sum too) on ``fg``'s flops. Suit-invariant, as every abstraction is: its
    buckets are functions of the suit-isomorphism class."""
    abstraction = ag.abstraction

    def buckets(round_index: int, cards: np.ndarray) -> np.ndarray:
        index = abstraction.indexers[round_index].index_batch(cards)
        table = abstraction.tables[round_index]
        return index if table is None else np.asarray(table[index], dtype=np.int64)

    def rows(nodes: np.ndarray, bucket: np.ndarray) -> np.ndarray:
        return np.asarray(policy[ag.row_offset[nodes][:, None] + bucket[None, :]], dtype=np.float32)

    pre = rows(fg.preflop.decision_nodes, buckets(0, fg.hands))
    k = fg.flops.shape[1]

    def tables(lo: int, hi: int) -> np.ndarray:
        out = np.empty((hi - lo, fg.flop.num_decisions, fg.num_hands, 3), dtype=np.float32)
        for i, c in enumerate(range(lo, hi)):
            valid = fg.valid[c] > 0
            cards = np.concatenate([fg.hands, np.broadcast_to(fg.flops[c], (fg.num_hands, k))], axis=1)
            bucket = np.zeros(fg.num_hands, dtype=np.int64)
            bucket[valid] = buckets(1, cards[valid])
            out[i] = rows(fg.flop.decision_nodes, bucket)
        return out

    return FlopPolicy(pre * fg.preflop.legal[:, None, :], _legal_only(fg, tables), True)


def _legal_only(fg: FlopGame, tables: FlopTables) -> FlopTables:
    """Tables with illegal actions zeroed (stored rows may carry weight there)."""
    legal = fg.flop.legal[None, :, None, :]
    return lambda lo, hi: tables(lo, hi) * legal


def is_solve_policy(path: Path) -> bool:
    """Whether ``path`` is a full-width flop solve (its run directory or ``policy/`` folder)."""
    return _solve_folder(path) is not None


def _solve_folder(path: Path) -> tuple[Path, str] | None:
    """The folder holding a solve's ``average.npy`` and the game it solved: ``policy/`` once
    published, else the run's last checkpoint (so a running solve can be measured)."""
    for folder in (path, path / "policy"):
        meta = folder / "meta.json"
        if meta.is_file() and (folder / "average.npy").is_file():
            try:
                meta_json = json.loads(meta.read_text())
            except (OSError, json.JSONDecodeError):
                return None
            if meta_json.get("solver") == "flop_cfr":
                return folder, str(meta_json.get("game"))
    config = path / CONFIG_FILE
    if config.is_file() and "flop_cfr" in config.read_text():
        from protocol.gamedef import load_game

        problem = run_format_problem(path)
        if problem is not None:
            raise RunDirError(problem)
        checkpoint = latest_checkpoint(path)
        if checkpoint is not None:
            return checkpoint, load_game(str(read_toml(config).get("game", "fhp"))).name
    return None


def solve_policy(fg: FlopGame, path: Path) -> FlopPolicy:
    """The average strategy of a full-width flop solve stored at ``path`` (canonical flops)."""
    found = _solve_folder(path)
    if found is None:
        raise FlopPolicyError(f"{path}: not a flop-solve run or policy folder")
    folder, game_name = found
    if game_name != fg.game.name:
        raise FlopPolicyError(f"{path}: solved {game_name!r}, not {fg.game.name!r}")
    average = np.load(folder / "average.npy", mmap_mode="r")
    pre = np.load(folder / "pre_average.npy")
    expected = (fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3)
    if not fg.canonical or average.shape != expected:
        raise FlopPolicyError(f"{path}: tables of shape {average.shape}, expected {expected} (canonical flops)")
    return FlopPolicy(pre, lambda lo, hi: np.asarray(average[lo:hi]), True)


def policy_strategy(fg: FlopGame, policy: FlopPolicy) -> np.ndarray:
    """The inverse of :func:`strategy_policy`: a policy over every raw flop of ``fg`` as a
    strategy array ``[num_infosets, 3]`` over :func:`bot.agents.infosets.space_for` (small games)."""
    from bot.flop.game import match_strategy

    if fg.canonical:
        raise ValueError("policy_strategy needs the all-flops FlopGame")
    space = space_for(fg.game)
    dense = np.zeros((space.num_slots, 3))
    pre = np.empty(policy.preflop.shape)
    match_strategy(np.ascontiguousarray(policy.preflop, dtype=np.float64), fg.preflop.legal, pre)
    for d, node in enumerate(fg.preflop.decision_nodes):
        space.node_block(dense, node)[0] = pre[d]
    board_row = {tuple(b): i for i, b in enumerate(space.boards[1].tolist())}
    flop = np.empty((fg.flop.num_decisions, fg.num_hands, 3))
    for c in range(fg.num_flops):
        match_strategy(np.ascontiguousarray(policy.flop(c, c + 1)[0], dtype=np.float64), fg.flop.legal, flop)
        row = board_row[tuple(fg.flops[c].tolist())]
        for d, node in enumerate(fg.flop.decision_nodes):
            space.node_block(dense, node)[row] = flop[d]
    return space.from_dense(dense)


#: ``auto`` (cuda when torch sees a GPU), ``cpu`` or ``cuda``: where loaders of network policies
#: run the networks (``pokerbot exploit --device``).
NETWORK_DEVICE: ContextVar[str] = ContextVar("flop_network_device", default="auto")


def builtin_flop_policy(game: Game, spec: str) -> tuple[FlopGame, FlopPolicy] | None:
    """The kinds this module reads (``random``, an abstraction name, a flop-solve run, a policy
    file); None for another (:func:`bot.registry.resolve_flop_policy` tries the others)."""
    from bot.abstraction.spec import SPECS

    canonical = flop_game_for(game, True)
    if spec == "random":
        from bot.flop.best_response import uniform_policy

        return canonical, uniform_policy(canonical)
    if spec in SPECS and SPECS[spec].load_game().name == game.name:
        return canonical, abstraction_policy(canonical, spec)
    path = Path(spec)
    if path.exists() and is_solve_policy(path):
        return canonical, solve_policy(canonical, path)
    if path.suffix.lower() == ".json" and path.is_file():
        from bot.agents.tabular import load_policy

        _, strategy = load_policy(path, game)
        raw = flop_game_for(game, False)
        return raw, strategy_policy(raw, strategy)
    return None
