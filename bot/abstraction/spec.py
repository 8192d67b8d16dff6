"""The named card abstractions: bucket counts and recipe per round, where their files live.

An abstraction maps a player's cards in a round to a bucket (imperfect recall: hole cards plus
the whole visible board, :func:`protocol.isomorphism.round_indexer`). Each round has a *method*
(Johanson et al. 2013; built by :mod:`training.abstraction.build`):

* ``lossless``: the suit-isomorphism class itself (bucket count ``None``);
* ``ehs2``: equal-mass percentiles of E[HS^2] (Zinkevich et al. 2007; the classic baseline);
* ``ke``: k-means on 50-bin final-HS histograms, EMD as L2 between CDFs (Johanson et al. 2013, "KE");
* ``ochs``: last round only, k-means (L2) on opponent-cluster hand strength: HS against each of 8
  clusters of preflop hands (Johanson et al. 2013, "KO");
* ``pa``: potential-aware, not on the last round: k-means with (greedy) EMD over histograms of the
  *next round's buckets*, whose ground distance is the distance between those buckets' centroids
  (Ganzfried & Sandholm 2014); the next round may itself be ``pa`` (bottom-up, Johanson et al.
  2013), its buckets then compared by the EMD between their mean histograms.

A scalar feature caps the non-empty buckets at its number of distinct values (HULH river E[HS]:
1,950; FHP flop HS: 1,390), so every named size whose count exceeds that uses ``ochs`` there,
and the build checks that exactly the named count of buckets is non-empty.

Abstract infosets are (betting sequence, bucket of the current round), so their number is
``sum_r decision_sequences_r * buckets_r`` (HULH: 8*b1 + 70*b2 + 630*b3 + 5670*b4).

Files live under ``$POKERBOT_CACHE/abstractions/`` (default ``~/.cache/pokerbot/abstractions``):
shared features under ``features/``, and per abstraction ``<name>/buckets_r<round>.npy``,
``<name>/meta.json`` and the solved ``<name>/policy.npy``. Playing needs only this module,
:mod:`protocol.isomorphism` and :mod:`bot.abstraction.tables`; never the training code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bot.errors import ConfigError
from protocol.betting_tree import BettingTree
from protocol.files import cache_dir
from protocol.gamedef import Game, load_game
from protocol.isomorphism import round_indexer

METHODS = ("lossless", "ehs2", "ke", "ochs", "pa")


@dataclass(frozen=True)
class AbstractionSpec:
    """One named abstraction: the game, per-round bucket counts (None = lossless classes) and
    per-round methods (default: ``lossless`` for None, ``ehs2`` otherwise)."""

    name: str
    game: str
    buckets: tuple[int | None, ...]
    methods: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.methods and len(self.methods) != len(self.buckets):
            raise ValueError(f"{self.name}: one method per round: {self.methods} vs {self.buckets}")
        last = len(self.buckets) - 1
        for r, (b, m) in enumerate(zip(self.buckets, self.round_methods, strict=True)):
            if m not in METHODS or (m == "lossless") != (b is None):
                raise ValueError(f"{self.name}: round {r} method {m!r} with {b} buckets")
            if (m == "ochs" and r != last) or (m == "pa" and r == last):
                raise ValueError(f"{self.name}: {m} cannot bucket round {r}")
            if m == "pa" and self.round_methods[r + 1] not in ("ehs2", "ke", "ochs", "pa"):
                raise ValueError(f"{self.name}: pa needs centroids of round {r + 1} (ehs2, ke, ochs or pa)")

    @property
    def round_methods(self) -> tuple[str, ...]:
        return self.methods or tuple("lossless" if b is None else "ehs2" for b in self.buckets)

    def load_game(self) -> Game:
        return load_game(self.game)


SPECS: dict[str, AbstractionSpec] = {
    s.name: s
    for s in (
        AbstractionSpec("abstraction_3e6", "holdem", (None, 518, 518, 518)),
        AbstractionSpec("abstraction_3e6_ke", "holdem", (None, 518, 518, 518), ("lossless", "ke", "ke", "ehs2"),
                        "flop and turn: k-means on 50-bin final-HS histograms (KE); river: E[HS] percentiles"),
        AbstractionSpec("abstraction_3e6_pa", "holdem", (None, 518, 518, 518), ("lossless", "pa", "ke", "ehs2"),
                        "flop: potential-aware (EMD over turn-bucket histograms); turn KE; river E[HS] percentiles"),
        AbstractionSpec("abstraction_3e6_pa2", "holdem", (None, 518, 518, 518), ("lossless", "pa", "pa", "ehs2"),
                        "potential-aware flop and turn (bottom-up): turn by EMD over river-bucket histograms, flop "
                        "over those turn buckets; river E[HS] percentiles (abstraction_3e6's)"),
        AbstractionSpec("abstraction_1.1e7_ke", "holdem", (None, 518, 518, 1950), ("lossless", "ke", "ke", "ehs2"),
                        "abstraction_3e6_ke's KE flop and turn; river: one bucket per distinct E[HS] value (1,950)"),
        AbstractionSpec("abstraction_1.4e7_ke", "holdem", (None, 5180, 5180, 1950), ("lossless", "ke", "ke", "ehs2"),
                        "flop and turn: KE at 5,180 buckets each (ten times abstraction_1.1e7_ke's); river: one "
                        "bucket per distinct E[HS] value (1,950)"),
        AbstractionSpec("abstraction_3e7", "holdem", (None, 5180, 5180, 5180), ("lossless", "ehs2", "ehs2", "ochs"),
                        "river: k-means on OCHS-8 (E[HS] has only 1,950 river values)"),
        AbstractionSpec("abstraction_3e8", "holdem", (None, 51800, 51800, 51800), ("lossless", "ehs2", "ehs2", "ochs"),
                        "river: k-means on OCHS-8 (E[HS] has only 1,950 river values)"),
        AbstractionSpec("fhp_abstraction_4e4", "fhp", (None, 690)),
        AbstractionSpec("fhp_abstraction_3.6e6", "fhp", (None, 64260), ("lossless", "ochs"),
                        "flop: k-means on OCHS-8 (flop HS is exact in FHP and takes only 1,390 values)"),
        AbstractionSpec("fhp_lossless", "fhp", (None, None)),
        AbstractionSpec("leduc_lossless", "leduc", (None, None)),
        AbstractionSpec("leduc_merged", "leduc", (2, 3)),
    )
}  # fmt: skip

#: ``--size`` values of ``pokerbot train --algo abstraction`` per game.
SIZE_NAMES: dict[tuple[str, str], str] = {
    ("holdem", "3e6"): "abstraction_3e6",
    ("holdem", "3e6-ke"): "abstraction_3e6_ke",
    ("holdem", "3e6-pa"): "abstraction_3e6_pa",
    ("holdem", "3e6-pa2"): "abstraction_3e6_pa2",
    ("holdem", "1.1e7-ke"): "abstraction_1.1e7_ke",
    ("holdem", "1.4e7-ke"): "abstraction_1.4e7_ke",
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


def bucket_path(spec: AbstractionSpec, round_index: int) -> Path:
    return spec_dir(spec) / f"buckets_r{round_index}.npy"


def policy_path(spec: AbstractionSpec) -> Path:
    """The published average-strategy table of the named agent (float32 ``[rows, 3]``)."""
    return spec_dir(spec) / "policy.npy"


def published_meta(spec: AbstractionSpec) -> dict:
    """The published policy's ``policy.json`` (which run, how many iterations); empty when
    missing or unreadable."""
    try:
        meta = json.loads(policy_path(spec).with_name("policy.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def round_sizes(spec: AbstractionSpec) -> tuple[int, ...]:
    """Bucket count per round, lossless rounds counted as their number of classes."""
    game = spec.load_game()
    return tuple(b if b is not None else round_indexer(game, r).size for r, b in enumerate(spec.buckets))


def num_infosets(spec: AbstractionSpec, tree: BettingTree | None = None) -> int:
    """Abstract infosets (both players): decision sequences per round times buckets per round."""
    tree = tree or BettingTree.build(spec.load_game())
    return sum(d * b for d, b in zip(tree.decision_nodes_per_round, round_sizes(spec), strict=True))


def size_name(spec: AbstractionSpec) -> str:
    """The ``--size`` that names ``spec`` (its full name when it has no short one)."""
    return next((s for (_, s), n in SIZE_NAMES.items() if n == spec.name), spec.name)


def resolve_size(game: str, size: str) -> AbstractionSpec:
    """The abstraction named by ``--game``/``--size`` (or by its full name as ``--size``)."""
    if size in SPECS:
        return SPECS[size]
    key = (load_game(game).name.split(".")[0], size)
    name = SIZE_NAMES.get(key)
    if name is None:
        sizes = ", ".join(s for g, s in SIZE_NAMES if g == key[0]) or "none"
        raise ConfigError(f"no abstraction of size {size!r} for game {game!r}; sizes: {sizes}")
    return SPECS[name]
