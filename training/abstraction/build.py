"""Build (once, cached on disk) and load the bucket tables of a named abstraction.

``build_abstraction(spec)`` computes the per-round features it needs (shared by every size of a
game and memory-mapped: the HULH river has 123,156,254 classes), cuts them into percentile
buckets and writes ``buckets_r<round>.npy`` and ``meta.json`` under the abstraction's directory
(see :mod:`training.abstraction.spec`). Every file is written to a temporary name and renamed,
so an interrupted build leaves no half file behind and is simply re-run. ``Abstraction.load``
maps the tables lazily (``mmap_mode="r"``): an agent touches only the pages it reads.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.errors import PokerbotError
from protocol.gamedef import Game
from training.abstraction.buckets import percentile_buckets
from training.abstraction.features import RoundFeatures, compute_round_features, round_indexer
from training.abstraction.isomorphism import HandIndexer
from training.abstraction.kmeans import kmeans_buckets
from training.abstraction.spec import SIZE_NAMES, AbstractionSpec, abstractions_dir, spec_dir

FORMAT_VERSION = 1
HIST_BINS = 50
"""Bins of the final-HS histograms that k-means rounds cluster (Johanson et al. 2013 use 50)."""
FEATURE_NAMES = ("ehs", "ehs2", "weight")

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; phase names what is being built."""


class AbstractionMissing(PokerbotError):
    """The abstraction's tables or policy are not built; the message gives the command."""


def features_paths(game: Game, round_index: int, hist_bins: int = 0) -> dict[str, Path]:
    """Cache files of a round's features (plus its ``hist_bins``-bin histograms when > 0)."""
    stem = game.name.split(".")[0]
    base = abstractions_dir() / "features"
    paths = {f: base / f"{stem}_r{round_index}_{f}_v{FORMAT_VERSION}.npy" for f in FEATURE_NAMES}
    if hist_bins:
        paths["hist"] = base / f"{stem}_r{round_index}_hist{hist_bins}_v{FORMAT_VERSION}.npy"
    return paths


def _atomic_npy(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        np.save(handle, array)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def round_features(game: Game, round_index: int, progress: Progress | None = None, hist_bins: int = 0) -> RoundFeatures:
    """E[HS], E[HS^2], weights (and, with ``hist_bins``, final-HS histograms) of a round's
    classes, computed once and cached (memory-mapped)."""
    paths = features_paths(game, round_index, hist_bins)
    if not all(p.exists() for p in paths.values()):
        size = round_indexer(game, round_index).size
        tmp = {f: p.with_name(f"{p.name}.{os.getpid()}.tmp") for f, p in paths.items()}
        paths["ehs"].parent.mkdir(parents=True, exist_ok=True)
        kinds = {"ehs": (np.float32, (size,)), "ehs2": (np.float32, (size,)), "weight": (np.uint8, (size,)),
                 "hist": (np.uint16, (size, hist_bins))}  # fmt: skip
        arrays = {f: np.lib.format.open_memmap(tmp[f], mode="w+", dtype=kinds[f][0], shape=kinds[f][1]) for f in paths}
        phase = f"features {game.name.split('.')[0]} round {round_index}"
        compute_round_features(game, round_index, RoundFeatures(**arrays),
                               None if progress is None else lambda d, t: progress(phase, d, t))  # fmt: skip
        for f, array in arrays.items():
            array.flush()
            del array
            os.replace(tmp[f], paths[f])
    loaded = {f: np.load(p, mmap_mode="r") for f, p in paths.items()}
    return RoundFeatures(**loaded)


def _bucket_path(spec: AbstractionSpec, round_index: int) -> Path:
    return spec_dir(spec) / f"buckets_r{round_index}.npy"


def build_abstraction(spec: AbstractionSpec, progress: Progress | None = None, force: bool = False) -> Path:
    """Build the bucket tables of ``spec`` (a no-op when they exist); returns its directory."""
    directory = spec_dir(spec)
    meta_path = directory / "meta.json"
    if meta_path.exists() and not force:
        return directory
    game = spec.load_game()
    started = time.monotonic()
    effective = []
    for r, count in enumerate(spec.buckets):
        if count is None:
            effective.append(round_indexer(game, r).size)
            continue
        if r in spec.kmeans_rounds:
            features = round_features(game, r, progress, hist_bins=HIST_BINS)
            phase = f"k-means round {r}"
            table = kmeans_buckets(features.hist, features.weight, count, seed=r,
                                   progress=None if progress is None else lambda d, t, phase=phase: progress(phase, d, t))  # fmt: skip
        else:
            features = round_features(game, r, progress)
            table = percentile_buckets(features.ehs2, features.weight, count)
        effective.append(int(len(np.unique(table))))
        _atomic_npy(_bucket_path(spec, r), table)
    meta = {
        "format": FORMAT_VERSION,
        "name": spec.name,
        "game": game.name,
        "buckets": [b for b in spec.buckets],
        "non_empty_buckets": effective,
        "feature": [
            "lossless suit-isomorphism classes" if b is None
            else f"k-means on {HIST_BINS}-bin final-HS histograms" if r in spec.kmeans_rounds
            else "E[HS^2] percentiles"
            for r, b in enumerate(spec.buckets)
        ],  # fmt: skip
        "build_seconds": round(time.monotonic() - started, 1),
    }
    directory.mkdir(parents=True, exist_ok=True)
    tmp = meta_path.with_name("meta.json.tmp")
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, meta_path)
    return directory


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
        tables = tuple(None if b is None else np.load(_bucket_path(spec, r), mmap_mode="r") for r, b in enumerate(spec.buckets))
        sizes = tuple(ix.size if b is None else b for ix, b in zip(indexers, spec.buckets, strict=True))
        return cls(spec, game, indexers, tables, sizes)

    def bucket(self, round_index: int, hole: tuple[int, ...], board: tuple[int, ...]) -> int:
        """Bucket of a player's hole cards and the board visible in ``round_index``."""
        index = self.indexers[round_index].index(tuple(hole) + tuple(board))
        table = self.tables[round_index]
        return index if table is None else int(table[index])


def build_hint(spec: AbstractionSpec) -> str:
    """The one command that builds and solves ``spec``, with its estimated cost."""
    from training.abstraction.estimate import estimate

    size = next((s for (_, s), n in SIZE_NAMES.items() if n == spec.name), spec.name)
    return (f"build it with `pokerbot train --algo abstraction --game {spec.game} --size {size} "
            f"--out runs/{spec.name}` ({estimate(spec).summary()})")  # fmt: skip


def policy_path(spec: AbstractionSpec) -> Path:
    """The published average-strategy table of the named agent (float32 ``[rows, 3]``)."""
    return spec_dir(spec) / "policy.npy"
