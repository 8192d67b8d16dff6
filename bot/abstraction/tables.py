"""A built abstraction at play time: its bucket tables and the row layout of its policy.

``Abstraction.load`` maps the tables lazily (``mmap_mode="r"``), so an agent touches only the
pages it reads (the HULH river table has 123,156,254 entries). ``AbstractGame`` lays the abstract
infosets out as rows of ``[rows, 3]`` tables: decision nodes of the real betting tree in
preorder, each with one row per bucket of its round; the solver
(:mod:`training.abstraction.solver`) and the agent (:mod:`bot.abstraction.agent`) share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.abstraction.cost import duration, estimate, size
from bot.abstraction.spec import AbstractionSpec, bucket_path, policy_path, size_name, spec_dir
from bot.errors import PokerbotError
from protocol.betting_tree import BettingTree
from protocol.gamedef import Game
from protocol.isomorphism import HandIndexer, round_indexer


class AbstractionMissing(PokerbotError):
    """The abstraction's tables or policy are not built; the message gives the command."""


#: Cores of the "bigger machine" a missing abstraction's message prices the solve on.
BIG_MACHINE_CORES = 64


def build_hint(spec: AbstractionSpec) -> str:
    """The one command that builds and solves ``spec``, with its estimated cost here."""
    cost = estimate(spec, built=(spec_dir(spec) / "meta.json").exists())
    return f"build it with `{train_command(spec)}` ({cost.summary()})"


def train_command(spec: AbstractionSpec) -> str:
    return f"pokerbot train --algo abstraction --game {spec.game} --size {size_name(spec)} --out runs/{spec.name}"


def missing_message(spec: AbstractionSpec) -> str:
    """One line for an abstraction agent that cannot play yet: exactly which files are missing,
    what building and solving costs on this machine, and the command for a bigger one (the
    build's numba kernels and the solver's batches use every core; two threads ran a hold'em PCS
    solve 1.89x one, and nothing wider was measured, so the bigger machine's figure is labelled
    an extrapolation; the tables can live on disk instead of in RAM)."""
    directory = spec_dir(spec)
    built = (directory / "meta.json").exists()
    cost = estimate(spec, built=built)
    if built:
        state = f"built (bucket tables in {directory}) but not solved: {policy_path(spec).name} is missing there"
    else:
        state = f"not built: no bucket tables ({directory}/buckets_r*.npy, meta.json) and no solved {policy_path(spec).name}"
    bigger = BIG_MACHINE_CORES
    return (f"agent {spec.name!r} is {state}. Cost here: {cost.summary()}. Build and solve with "
            f"`{train_command(spec)}` (add `--time-budget 2h` to stop within a sitting: the policy is published "
            f"and its convergence line says how far it is); on a bigger machine the same command with `--threads {bigger}` "
            f"(~{duration(cost.solve_seconds * 2 / bigger)} of solving if time fell linearly with cores, which only 1 to 2 "
            f"cores measured here; tables {size(cost.table_bytes)} of RAM, "
            "or `mmap_tables = true` in a `--config` TOML to keep them on disk)")  # fmt: skip


@dataclass(frozen=True, eq=False)
class Abstraction:
    """A built abstraction: per round, its indexer and bucket table (None = lossless)."""

    spec: AbstractionSpec
    game: Game
    indexers: tuple[HandIndexer, ...]
    tables: tuple[np.ndarray | None, ...]  # memory-mapped uint16/uint32 [classes] or None
    num_buckets: tuple[int, ...]

    @classmethod
    def load(cls, spec: AbstractionSpec) -> Abstraction:
        if not (spec_dir(spec) / "meta.json").exists():
            raise AbstractionMissing(missing_message(spec))
        game = spec.load_game()
        indexers = tuple(round_indexer(game, r) for r in range(game.num_rounds))
        tables = tuple(None if b is None else np.load(bucket_path(spec, r), mmap_mode="r") for r, b in enumerate(spec.buckets))
        sizes = tuple(ix.size if b is None else b for ix, b in zip(indexers, spec.buckets, strict=True))
        return cls(spec, game, indexers, tables, sizes)

    def bucket(self, round_index: int, hole: tuple[int, ...], board: tuple[int, ...]) -> int:
        """Bucket of a player's hole cards and the board visible in ``round_index``."""
        index = self.indexers[round_index].index(tuple(hole) + tuple(board))
        table = self.tables[round_index]
        return index if table is None else int(table[index])


@dataclass(eq=False)
class AbstractGame:
    """An abstraction with the real betting tree and the table row of every abstract infoset."""

    abstraction: Abstraction
    tree: BettingTree
    row_offset: np.ndarray  # int64 [nodes]: first table row of a decision node, -1 at terminals
    num_rows: int

    @classmethod
    def build(cls, abstraction: Abstraction) -> AbstractGame:
        tree = BettingTree.build(abstraction.game)
        return cls(abstraction, tree, *row_layout(tree, abstraction.num_buckets))

    def rows_of(self, node: int, bucket: int) -> int:
        return int(self.row_offset[node]) + bucket


def row_layout(tree: BettingTree, num_buckets: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """First table row of every decision node (-1 at terminals) and the number of rows, for
    ``num_buckets`` rows per node of each round: the layout of every abstraction policy."""
    row_offset = np.full(tree.num_nodes, -1, dtype=np.int64)
    sizes = np.array([num_buckets[tree.round[n]] for n in tree.decision_ids], dtype=np.int64)
    row_offset[tree.decision_ids] = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return row_offset, int(sizes.sum())
