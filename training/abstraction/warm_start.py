"""Start a solve of one abstraction from the solved tables of another (regret transfer).

Why: a finer abstraction needs many more iterations than a coarse one of the same game
(hold'em: a converged ``abstraction_3e6`` in ~68M ES iterations, ``abstraction_3e7`` still
+7.7 mbb/g from its half after 247M), yet most of what the coarse solve learned holds for the
finer buckets inside its buckets. Brown & Sandholm ("Regret Transfer and Parameter
Optimization", AAAI 2014; "Simultaneous Abstraction and Equilibrium Finding in Games", IJCAI
2015) start the finer solve from the coarser one's regrets instead of from zero.

How the tables carry over (both abstractions share the game, so the betting tree and its
decision nodes are the same; only the rows per node differ). Every isomorphism class ``c`` of
round r falls into a source bucket ``s(c)`` and a target bucket ``t(c)``. A source row's
cumulative regret (and average-strategy weight) is a sum over the deals that fell into its
bucket, so each class is given the share ``w(c) / W(s(c))`` of it (``w``: the class's raw deal
count, :func:`training.abstraction.build.round_features`; ``W``: its source bucket's), and a
target row receives the shares of its classes::

    R_target[n, t] = sum over classes c with t(c) = t of  w(c) / W(s(c)) * R_source[n, s(c)]

for every decision node n of round r. A target bucket that lies inside one source bucket (the
3e7 E[HS^2] percentiles inside the 3e6 ones) starts with that bucket's strategy exactly; one
that straddles several (an OCHS river bucket over E[HS] percentiles) with the mixture of its
classes' rows. Every source row's shares sum to one, so the table's total per node is kept.

The run then continues at the source's batch index: ES Linear MCCFR weights batch k by k
(:mod:`training.abstraction.solver`), and the source's tables are the weighted mean of its
batches' increments, so the transferred rows count as that many batches of (coarser) work and
fade as the finer solve's own batches accumulate (after as many again, they weigh one quarter).
PCS (:mod:`training.abstraction.pcs`) carries over the same way: its weightings are functions
of the batch index too (DCFR discounts the tables before batch k by factors of k - 1), so a
PCS source seeds a PCS run of the same weighting scheme, which continues at the source's batch
index. Why PCS: its finest abstraction's rows are rarely visited (abstraction_3e8's river
buckets: one board in ~860), so a cold solve spends a long time learning in each finer bucket
what its coarser parent already knows. Measured exactly on FHP (docs: abstraction solves, warm
start), that buys a lead only while the cold solve is still worse than the source; after it,
the warm run trails at every ``warm_start_weight`` tried. Sources and runs must share the
solver (and, for PCS, the scheme): the tables' scales are the solver's (ES sums sampled
regrets per deal, PCS exact regrets per board; CFR+ floors regrets at 0 where DCFR discounts
them), so a mixed carry would be a table of another algorithm's units.
The run's own iterations still start at 1 (its random streams and its convergence check are its
own); ``metrics.jsonl`` opens with a record naming the source, its iterations and batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit, prange

from bot.abstraction.spec import SPECS, published_meta
from bot.abstraction.tables import AbstractGame, Abstraction, train_command
from bot.errors import ConfigError, CorruptFileError
from bot.run_files import latest_checkpoint
from training.abstraction import checkpoint as checkpoint_files
from training.abstraction.build import round_features
from training.contract.rundir import RunDir, verify_checkpoint

#: Classes read at a time while the class-to-bucket pairs are counted (the hold'em river has 123M).
CHUNK = 1 << 23


@dataclass(frozen=True)
class WarmSource:
    """A solved run whose tables seed a new run: its abstraction and its checkpoint's tables."""

    path: Path
    abstraction: str
    regrets: np.ndarray
    average: np.ndarray
    iterations: int
    batches: int

    @staticmethod
    def check(path: str | Path, game: str, solver: str = "es-mccfr", scheme: str = "dcfr") -> tuple[RunDir, str]:
        """(the run at ``path``, its abstraction) if it can seed a run of ``game`` by ``solver``
        (for PCS, weighted by ``scheme``); a one-line error otherwise. Reads only its config, so
        a new run checks its source before it builds anything. ``path`` may also name a solved
        abstraction (``abstraction_3e7``): the run that published its policy here."""
        run = RunDir.open(published_run(path), algo="abstraction")
        config = run.config()
        name, source_solver = str(config.get("abstraction")), str(config.get("solver", "pcs"))
        if name not in SPECS:
            raise ConfigError(f"warm_start {run.path}: unknown abstraction {name!r}")
        if SPECS[name].game != game:
            raise ConfigError(f"warm_start {run.path}: solves {name} of {SPECS[name].game!r}, not of {game!r}")
        if source_solver != solver:
            raise ConfigError(f"warm_start {run.path}: solved by {source_solver!r}, this run by {solver!r}; tables "
                              "carry over between runs of one solver (their units are the solver's)")  # fmt: skip
        source_scheme = str(config.get("scheme", "dcfr"))
        if solver == "pcs" and source_scheme != scheme:
            raise ConfigError(f"warm_start {run.path}: weighted by {source_scheme!r}, this run by {scheme!r}; a PCS "
                              "run continues the batch weights of a source of its own scheme")  # fmt: skip
        return run, name

    @classmethod
    def open(cls, path: str | Path, game: str, solver: str = "es-mccfr", scheme: str = "dcfr") -> WarmSource:
        """The run at ``path``, checked (:meth:`check`), with its complete checkpoint's tables."""
        run, name = cls.check(path, game, solver, scheme)
        checkpoint = latest_checkpoint(run.path)
        if checkpoint is None:
            raise ConfigError(f"warm_start {run.path}: no complete checkpoint to start from")
        problem = verify_checkpoint(checkpoint)
        if problem is not None:
            raise CorruptFileError(f"warm_start: {problem}")
        regrets, average, state = checkpoint_files.read(checkpoint, "warm_start")
        return cls(run.path, name, regrets, average, state["iterations"], state["batches"])

    def metrics(self) -> dict:
        """The opening ``metrics.jsonl`` record of a warm-started run."""
        return {"iteration": 0, "warm_start": str(self.path), "warm_start_abstraction": self.abstraction,
                "warm_start_iterations": self.iterations, "warm_start_batches": self.batches}  # fmt: skip


def published_run(source: str | Path) -> Path:
    """``source`` as a run directory: itself, or, when it is the name of an abstraction and no
    such directory exists, the run whose solve is published under that name (``policy.json``);
    a name with no published solve is a one-line error naming the command that solves it."""
    name = str(source)
    if name not in SPECS or Path(name).exists():
        return Path(source)
    run = published_meta(SPECS[name]).get("run")
    if not isinstance(run, str):
        raise ConfigError(f"warm_start {name!r}: no solve of it is published here; `{train_command(SPECS[name])}` solves it")
    return Path(run)


def class_shares(target: Abstraction, source: Abstraction, round_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (target bucket, source bucket, share) triples of one round: the share of the source
    row each target row receives, summed over the classes the two buckets have in common."""
    size = target.indexers[round_index].size
    target_table, source_table = target.tables[round_index], source.tables[round_index]
    if target_table is None and source_table is None:  # both lossless: the same rows
        identity = np.arange(size, dtype=np.int64)
        return identity, identity, np.ones(size)
    weight = round_features(target.game, round_index).weight
    num_source = source.num_buckets[round_index]

    def buckets(table: np.ndarray | None, start: int, stop: int) -> np.ndarray:
        return np.arange(start, stop, dtype=np.int64) if table is None else np.asarray(table[start:stop], dtype=np.int64)

    keys, masses = [], []  # one pass over the tables: the deals each (target, source) pair shares
    for start in range(0, size, CHUNK):
        stop = min(size, start + CHUNK)
        key = buckets(target_table, start, stop) * num_source + buckets(source_table, start, stop)
        unique, inverse = np.unique(key, return_inverse=True)
        keys.append(unique)
        masses.append(np.bincount(inverse, weights=np.asarray(weight[start:stop], np.float64)))
    unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    pair_mass = np.bincount(inverse, weights=np.concatenate(masses))
    source_bucket = unique % num_source
    total = pair_mass / np.bincount(source_bucket, weights=pair_mass, minlength=num_source)[source_bucket]
    return unique // num_source, source_bucket, total


def transfer(target: AbstractGame, source: AbstractGame, regrets: np.ndarray, average: np.ndarray,
             source_regrets: np.ndarray, source_average: np.ndarray) -> None:  # fmt: skip
    """Fill the (zeroed) target tables from the source's (module docstring), round by round."""
    tree = target.tree
    decision = np.asarray(tree.decision_ids, dtype=np.int64)
    rounds = np.asarray(tree.round)[decision]
    for r in range(target.abstraction.game.num_rounds):
        nodes = decision[rounds == r]
        t, s, share = class_shares(target.abstraction, source.abstraction, r)
        for table, stored in ((regrets, source_regrets), (average, source_average)):
            _add_shares(table, np.asarray(stored), target.row_offset[nodes], source.row_offset[nodes], t, s, share)


@njit(cache=True, parallel=True)
def _add_shares(table, stored, target_offset, source_offset, t, s, share):  # pragma: no cover - numba
    for i in prange(target_offset.shape[0]):
        for k in range(t.shape[0]):
            row, source_row = target_offset[i] + t[k], source_offset[i] + s[k]
            for a in range(table.shape[1]):
                table[row, a] += np.float32(share[k] * stored[source_row, a])


def warm_start(path: str | Path, target: AbstractGame, regrets: np.ndarray, average: np.ndarray,
               solver: str = "es-mccfr", scheme: str = "dcfr") -> WarmSource:  # fmt: skip
    """Seed the zeroed ``regrets``/``average`` of ``target`` from the run at ``path`` (solved
    by ``solver``, PCS weighted by ``scheme``); returns the source (its batches are where the
    new run's batch index continues)."""
    source = WarmSource.open(path, target.abstraction.spec.game, solver, scheme)
    source_game = AbstractGame.build(Abstraction.load(SPECS[source.abstraction]))
    if source.regrets.shape != (source_game.num_rows, 3) or source.average.shape != source.regrets.shape:
        raise CorruptFileError(f"warm_start {source.path}: its tables ({source.regrets.shape}) do not fit "
                               f"{source.abstraction} ({source_game.num_rows} rows)")  # fmt: skip
    transfer(target, source_game, regrets, average, source.regrets, source.average)
    return source
