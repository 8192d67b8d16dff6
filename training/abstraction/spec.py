"""The named card abstractions: bucket counts per round, where they live, and what they cost.

An abstraction maps a player's cards in a round to a bucket: preflop (and any round marked
``None``) uses the lossless suit-isomorphism class itself; other rounds use percentile buckets
of E[HS^2] over imperfect-recall classes (hole + whole board), or, for the rounds a spec lists
in ``kmeans_rounds``, k-means on final-HS histograms (:mod:`training.abstraction.kmeans`). Abstract infosets are
(betting sequence, bucket of the current round), so their number is
``sum_r decision_sequences_r * buckets_r`` (HULH: 8*b1 + 70*b2 + 630*b3 + 5670*b4).

Files live under ``$POKERBOT_CACHE/abstractions/`` (default ``~/.cache/pokerbot/abstractions``):
``features/<game>_r<round>_{ehs,ehs2,weight}.npy`` shared by every size of a game, and
``<name>/buckets_r<round>.npy`` plus ``<name>/meta.json`` per abstraction. A solved policy is
published as ``<name>/policy.npy`` by the solver (see :mod:`training.abstraction.solver`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from protocol.betting_tree import BettingTree
from protocol.evaluator import cache_dir
from protocol.gamedef import Game, load_game


@dataclass(frozen=True)
class AbstractionSpec:
    """One named abstraction: the game and per-round bucket counts (None = lossless classes)."""

    name: str
    game: str
    buckets: tuple[int | None, ...]
    note: str = ""
    kmeans_rounds: tuple[int, ...] = ()
    """Rounds bucketed by k-means on final-HS histograms (KE) instead of E[HS^2] percentiles."""

    def load_game(self) -> Game:
        return load_game(self.game)


SPECS: dict[str, AbstractionSpec] = {
    s.name: s
    for s in (
        AbstractionSpec("abstraction_3e6", "holdem", (None, 518, 518, 518)),
        AbstractionSpec("abstraction_3e6_ke", "holdem", (None, 518, 518, 518),
                        "flop and turn: k-means on 50-bin final-HS histograms (KE); river: E[HS] percentiles",
                        kmeans_rounds=(1, 2)),
        AbstractionSpec("abstraction_3e7", "holdem", (None, 5180, 5180, 5180),
                        "river E[HS] has at most 1,981 distinct values, so at most 1,981 river buckets are non-empty"),
        AbstractionSpec("abstraction_3e8", "holdem", (None, 51800, 51800, 51800),
                        "river E[HS] has at most 1,981 distinct values, so at most 1,981 river buckets are non-empty"),
        AbstractionSpec("fhp_abstraction_4e4", "fhp", (None, 690)),
        AbstractionSpec("fhp_abstraction_3.6e6", "fhp", (None, 64260),
                        "flop HS is exact in FHP and takes at most 2,163 values, so at most 2,163 buckets are non-empty"),
        AbstractionSpec("fhp_lossless", "fhp", (None, None)),
        AbstractionSpec("leduc_lossless", "leduc", (None, None)),
        AbstractionSpec("leduc_merged", "leduc", (2, 3)),
    )
}  # fmt: skip

#: ``--size`` values of ``pokerbot train --algo abstraction`` per game.
SIZE_NAMES: dict[tuple[str, str], str] = {
    ("holdem", "3e6"): "abstraction_3e6",
    ("holdem", "3e6-ke"): "abstraction_3e6_ke",
    ("holdem", "3e7"): "abstraction_3e7",
    ("holdem", "3e8"): "abstraction_3e8",
    ("fhp", "4e4"): "fhp_abstraction_4e4",
    ("fhp", "3.6e6"): "fhp_abstraction_3.6e6",
    ("fhp", "lossless"): "fhp_lossless",
    ("leduc", "lossless"): "leduc_lossless",
    ("leduc", "merged"): "leduc_merged",
}


def abstractions_dir() -> Path:
    return cache_dir() / "abstractions"


def spec_dir(spec: AbstractionSpec) -> Path:
    return abstractions_dir() / spec.name


def round_sizes(spec: AbstractionSpec) -> tuple[int, ...]:
    """Bucket count per round, lossless rounds counted as their number of classes."""
    from training.abstraction.features import round_indexer

    game = spec.load_game()
    return tuple(b if b is not None else round_indexer(game, r).size for r, b in enumerate(spec.buckets))


def num_infosets(spec: AbstractionSpec, tree: BettingTree | None = None) -> int:
    """Abstract infosets (both players): decision sequences per round times buckets per round."""
    tree = tree or BettingTree.build(spec.load_game())
    return sum(d * b for d, b in zip(tree.decision_nodes_per_round, round_sizes(spec), strict=True))


def resolve_size(game: str, size: str) -> AbstractionSpec:
    """The abstraction named by ``--game``/``--size`` (or by its full name as ``--size``)."""
    if size in SPECS:
        return SPECS[size]
    key = (load_game(game).name.split(".")[0], size)
    name = SIZE_NAMES.get(key)
    if name is None:
        sizes = ", ".join(s for g, s in SIZE_NAMES if g == key[0]) or "none"
        raise ValueError(f"no abstraction of size {size!r} for game {game!r}; sizes: {sizes}")
    return SPECS[name]
