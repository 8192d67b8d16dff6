"""A solved card abstraction in a few megabytes: the shipped hold'em bot's format and agent.

A solved abstraction (:mod:`bot.abstraction.agent`) plays from bucket tables of hundreds of
megabytes (123M river classes) and a float32 policy of 40 MB. The compact form keeps what
decides play and drops the rest:

* **Buckets at play time** (:mod:`bot.abstraction.runtime_buckets`): preflop the 169 classes; on later
  rounds the hand's feature is computed from its cards when it is needed and mapped to the
  build's bucket by percentile upper bounds or k-means centres (``buckets.npz``, ~0.2 MB).
* **Quantised average strategy** (``policy.u8.xz``): every abstract infoset's strategy over its
  legal actions, normalised, in units of 1/255 (largest-remainder rounding, so each row sums to
  exactly 255 and each probability is off by less than 1/255); the last legal action's share is
  implied, and the byte stream is LZMA-compressed. Rows training never reached play uniformly,
  as the full agent plays them.

The folder's ``manifest.json`` (:mod:`bot.shipped`) says ``kind: compact-abstraction`` and, under
``abstraction``, the per-round methods and bucket counts; :func:`write_compact` writes all three
files, :class:`CompactAbstractionAgent` plays them. :mod:`bot.registry` registers the kind and
:func:`folder_agent` as a path loader, so ``--agent FOLDER`` plays a compact folder built anywhere.
"""

from __future__ import annotations

import lzma
from pathlib import Path
from typing import Any

import numpy as np

from bot.abstraction.agent import RowPolicyAgent
from bot.abstraction.range_buckets import RangeBucketer
from bot.abstraction.runtime_buckets import (
    CentreBuckets,
    HandBucketer,
    PercentileBuckets,
    RoundBuckets,
)
from bot.abstraction.tables import row_layout
from bot.shipped import (
    MANIFEST_NAME,
    ShippedBotError,
    read_manifest,
    write_manifest,
)
from protocol.betting_tree import BettingTree
from protocol.gamedef import Game

KIND = "compact-abstraction"
BUCKETS_FILE = "buckets.npz"
POLICY_FILE = "policy.u8.xz"
#: Probability units per row: uint8 shares summing to this.
UNITS = 255


def quantise_policy(tree: BettingTree, num_buckets: tuple[int, ...], average: np.ndarray) -> np.ndarray:
    """``[rows, 3]`` uint8 shares (sum 255 over the legal actions, 0 elsewhere) of an average
    strategy table laid out by :func:`bot.abstraction.tables.row_layout`; all-zero rows become
    uniform."""
    legal = _row_legal(tree, num_buckets)
    if average.shape != legal.shape:
        raise ValueError(f"policy of shape {average.shape} does not fit the abstraction ({legal.shape})")
    weights = np.where(legal, np.maximum(np.asarray(average, dtype=np.float64), 0.0), 0.0)
    total = weights.sum(axis=1, keepdims=True)
    weights = np.where(total > 0, weights, legal)
    exact = weights / weights.sum(axis=1, keepdims=True) * UNITS
    shares = np.floor(exact).astype(np.int64)
    remainder = np.where(legal, exact - shares, -1.0)
    deficit = UNITS - shares.sum(axis=1)
    order = np.argsort(-remainder, axis=1, kind="stable")
    for rank in range(3):
        take = deficit > rank
        shares[np.flatnonzero(take), order[take, rank]] += 1
    return shares.astype(np.uint8)


def pack_policy(tree: BettingTree, num_buckets: tuple[int, ...], shares: np.ndarray) -> bytes:
    """LZMA-compressed byte stream of every row's shares except its last legal one."""
    return lzma.compress(np.ascontiguousarray(shares[_stored(_row_legal(tree, num_buckets))]).tobytes(), preset=9)


def unpack_policy(tree: BettingTree, num_buckets: tuple[int, ...], packed: bytes) -> np.ndarray:
    """Inverse of :func:`pack_policy`: the ``[rows, 3]`` uint8 shares."""
    legal = _row_legal(tree, num_buckets)
    stored = _stored(legal)
    stream = np.frombuffer(lzma.decompress(packed), dtype=np.uint8)
    if stream.size != int(stored.sum()):
        raise ValueError(f"policy stream has {stream.size} values, the abstraction needs {int(stored.sum())}")
    shares = np.zeros(stored.shape, dtype=np.int16)
    shares[stored] = stream
    implied = UNITS - shares.sum(axis=1, dtype=np.int16)
    if (implied < 0).any():
        raise ValueError("policy stream has a row whose shares exceed 255")
    shares[legal & ~stored] = implied
    return shares.astype(np.uint8)


def _row_legal(tree: BettingTree, num_buckets: tuple[int, ...]) -> np.ndarray:
    """Legal-action mask of every table row."""
    sizes = [num_buckets[tree.round[n]] for n in tree.decision_ids]
    return np.repeat(tree.legal[tree.decision_ids], sizes, axis=0)


def _stored(legal: np.ndarray) -> np.ndarray:
    """Mask of the shares a row stores: its legal actions but the last."""
    last = 2 - np.argmax(legal[:, ::-1], axis=1)
    stored = legal.copy()
    stored[np.arange(len(stored)), last] = False
    return stored


def write_compact(folder: Path, game: Game, rounds: tuple[RoundBuckets | None, ...], methods: tuple[str, ...],
                  average: np.ndarray, manifest: dict[str, Any]) -> Path:  # fmt: skip
    """Write a compact abstraction bot into ``folder``: bucket data, quantised policy, manifest
    (``manifest`` gives name, description, strength); returns the manifest's path."""
    folder.mkdir(parents=True, exist_ok=True)
    tree = BettingTree.build(game)
    num_buckets = _num_buckets(game, rounds)
    arrays: dict[str, np.ndarray] = {}
    for r, buckets in enumerate(rounds):
        if isinstance(buckets, PercentileBuckets):
            arrays[f"r{r}_upper"] = np.asarray(buckets.upper, dtype=np.float32)
        elif isinstance(buckets, CentreBuckets):
            arrays |= buckets.to_arrays(f"r{r}_")
    np.savez_compressed(folder / BUCKETS_FILE, **arrays)
    (folder / POLICY_FILE).write_bytes(pack_policy(tree, num_buckets, quantise_policy(tree, num_buckets, average)))
    body = {"kind": KIND, "game": game.name, **manifest,
            "abstraction": {"methods": list(methods), "buckets": list(num_buckets)}}  # fmt: skip
    return write_manifest(folder, body, [BUCKETS_FILE, POLICY_FILE])


def _num_buckets(game: Game, rounds: tuple[RoundBuckets | None, ...]) -> tuple[int, ...]:
    from protocol.isomorphism import round_indexer

    counts = [round_indexer(game, 0).size]
    for buckets in rounds[1:]:
        counts.append(len(buckets.upper) if isinstance(buckets, PercentileBuckets) else len(buckets.centres))
    return tuple(counts)


def read_rounds(folder: Path, methods: list[str]) -> tuple[RoundBuckets | None, ...]:
    """The per-round bucketings stored in ``folder``'s ``buckets.npz``."""
    path = folder / BUCKETS_FILE
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as error:
        raise ShippedBotError(f"{path}: unreadable bucket data: {error}") from None
    rounds: list[RoundBuckets | None] = []
    for r, method in enumerate(methods):
        try:
            if method == "lossless" and r == 0:
                rounds.append(None)
            elif method == "ehs2":
                rounds.append(PercentileBuckets(arrays[f"r{r}_upper"]))
            elif method == "ke":
                rounds.append(CentreBuckets.from_arrays(arrays, f"r{r}_"))
            else:
                raise ShippedBotError(f"{path}: round {r} method {method!r} cannot be bucketed at play time")
        except KeyError as missing:
            raise ShippedBotError(f"{path}: round {r} ({method}) lacks {missing}") from None
        except ShippedBotError:
            raise
        except ValueError as error:  # inconsistent two-level arrays
            raise ShippedBotError(f"{path}: round {r} ({method}): {error}") from None
    return tuple(rounds)


class CompactAbstractionAgent(RowPolicyAgent):
    """Plays a compact abstraction folder: buckets computed at decision time, quantised rows."""

    def __init__(self, game: Game, folder: Path, manifest: dict[str, Any]) -> None:
        super().__init__(game)
        self.name = str(manifest.get("name", folder.name))
        info = manifest.get("abstraction")
        if not isinstance(info, dict) or not isinstance(info.get("methods"), list) or len(info["methods"]) != game.num_rounds:
            raise ShippedBotError(f"{folder}: manifest lacks the abstraction's per-round methods")
        self.bucketer = HandBucketer(game, read_rounds(folder, info["methods"]))
        self.range_bucketer = RangeBucketer(self.bucketer)
        self.tree = BettingTree.build(game)
        num_buckets = _num_buckets(game, self.bucketer.rounds)
        if list(num_buckets) != info.get("buckets"):
            raise ShippedBotError(f"{folder}: bucket data gives {list(num_buckets)} buckets, the manifest {info.get('buckets')}")
        self.row_offset, _ = row_layout(self.tree, num_buckets)
        try:
            self.shares = unpack_policy(self.tree, num_buckets, (folder / POLICY_FILE).read_bytes())
        except (OSError, ValueError, lzma.LZMAError) as error:
            raise ShippedBotError(f"{folder / POLICY_FILE}: unreadable policy: {error}") from None

    def bucket(self, round_index: int, hole: tuple[int, ...], board: tuple[int, ...]) -> int:
        return self.bucketer.bucket(round_index, hole, board)

    def row_weights(self, row: int) -> np.ndarray:
        return self.shares[row]

    def buckets(self, round_index: int, hands: np.ndarray, board: tuple[int, ...]) -> np.ndarray:
        return self.range_bucketer.buckets(round_index, hands, board)

    def rows_weights(self, rows: np.ndarray) -> np.ndarray:
        return self.shares[rows]


def folder_agent(game: Game, path: Path) -> CompactAbstractionAgent | None:
    """``--agent FOLDER``: a compact abstraction folder (its manifest says the kind)."""
    if not (path / MANIFEST_NAME).is_file():
        return None
    manifest = read_manifest(path)
    if manifest.get("kind") != KIND:
        return None
    return CompactAbstractionAgent(game, path, manifest)
