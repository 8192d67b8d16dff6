"""A built abstraction at play time: its bucket tables and the row layout of its policy.

``Abstraction.load`` maps the tables lazily (``mmap_mode="r"``), so an agent touches only the
pages it reads (the HULH river table has 123,156,254 entries). ``AbstractGame`` lays the abstract
infosets out as rows of ``[rows, 3]`` tables: decision nodes of the real betting tree in
preorder, each with one row per bucket of its round; the solver
(:mod:`training.abstraction.solver`) and the agent (:mod:`bot.abstraction_agent`) share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.abstraction_cost import estimate
from bot.abstraction_spec import AbstractionSpec, bucket_path, size_name, spec_dir
from bot.errors import PokerbotError
from protocol.betting_tree import BettingTree
from protocol.gamedef import Game
from protocol.isomorphism import HandIndexer, round_indexer


class AbstractionMissing(PokerbotError):
    """The abstraction's tables or policy are not built; the message gives the command."""


def build_hint(spec: AbstractionSpec) -> str:
    """The one command that builds and solves ``spec``, with its estimated cost."""
    cost = estimate(spec, built=(spec_dir(spec) / "meta.json").exists()).summary()
    return f"build it with `pokerbot train --algo abstraction --game {spec.game} --size {size_name(spec)} --out runs/{spec.name}` ({cost})"


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
            raise AbstractionMissing(f"abstraction {spec.name!r} is not built: {build_hint(spec)}")
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
