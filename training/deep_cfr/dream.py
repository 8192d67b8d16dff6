"""DREAM and OS-SD-CFR (Steinberger, Lerer & Brown 2020, "DREAM: Deep Regret minimization with
Advantage baselines and Model-free learning", secs. 5-6).

Both are Single Deep CFR with outcome sampling instead of external sampling: each iteration ``t``
and each player ``i`` in turn plays ``K`` trajectories (:mod:`training.deep_cfr.outcome_sampling`; the
traverser explores with ``epsilon``, the opponent follows ``sigma^t``), adds the sampled
advantages to ``i``'s reservoir memory with their importance weights ``1 / x_i^xi(I)`` (sec. 5.1;
times ``t`` under linear CFR), and trains ``i``'s value network from scratch as SD-CFR does. The
policy is the SD-CFR stack (a standard ``sd-cfr`` policy bundle, so ``match``, ``play`` and
``exploit`` load it), and on Kuhn/Leduc the exact SD-CFR average is measured every iteration.
**OS-SD-CFR** uses no baseline. **DREAM** adds the learned history-action baseline ``Q_i``
(:mod:`training.deep_cfr.q_baseline`): its trajectory steps go to ``B_i^q`` and it is fine-tuned by
expected SARSA after ``i``'s trajectories of each iteration, then used as the baseline of eq. 6
in the next iteration's trajectories.

Everything else (memories, fits, the exact average, stack files, checkpoints, ``--resume``) is
:class:`training.deep_cfr.trainer.DeepCFRTrainer`'s: this module only changes how samples are collected.
The optional Deep CFR average network of sec. 5.3 is not implemented (the stack is exact).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np
import torch

from bot.errors import ConfigError
from protocol.gamedef import load_game
from training.common.reservoir import FieldSpec
from training.contract.entry import StopRequest, Trainer, shipped_alias
from training.contract.rundir import Progress, RunDir, read_toml
from training.deep_cfr.config import PRESETS as SD_CFR_PRESETS
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.files import config_dict
from training.deep_cfr.outcome_sampling import sample_trajectories
from training.deep_cfr.q_baseline import QBaseline
from training.deep_cfr.streams import Stream
from training.deep_cfr.trainer import DeepCFRTrainer
from training.deep_cfr.traversal import deal_batch

ALGOS = ("dream", "os-sd-cfr")
#: Preset tables: ``tuned`` (wall clock on one CPU core) and ``paper`` (sec. 6.2's settings).
PRESET_NAMES = ("tuned", "paper")


@dataclass(frozen=True)
class DreamConfig(DeepCFRConfig):
    """:class:`~training.deep_cfr.trainer.DeepCFRConfig` plus outcome sampling and the Q baseline;
    ``traversals`` counts trajectories per player per iteration."""

    algo: str = "dream"
    """``dream`` (learned Q baseline) or ``os-sd-cfr`` (no baseline)."""
    preset: str = "tuned"
    """The preset table the run started from (``tuned`` or ``paper``; recorded, not re-read)."""
    epsilon: float = 0.6
    """Exploration at the traverser's nodes, eq. 3 (Lanctot et al. 2009's outcome sampling
    used 0.6; the DREAM paper sweeps it in fig. 3 and its text gives no single value)."""
    q_memory: int = 200_000
    """Capacity of each circular buffer ``B_i^q`` (paper: 200,000)."""
    q_sgd_steps: int = 1000
    """Adam minibatches of ``Q_i`` per iteration (paper: 1,000)."""
    q_batch_size: int = 512
    """Minibatch size of ``Q_i`` (paper: 512)."""
    q_learning_rate: float = 1e-3
    """Adam learning rate of ``Q_i`` (paper: 0.001; gradient-norm clip ``grad_clip``)."""

    def validate(self) -> DreamConfig:
        """Raise :class:`~bot.errors.ConfigError` naming the first invalid setting."""
        if self.algo not in ALGOS:
            raise ConfigError(f"algo must be one of {', '.join(ALGOS)}, got {self.algo!r}")
        if self.preset not in PRESET_NAMES:
            raise ConfigError(f"preset must be one of {', '.join(PRESET_NAMES)}, got {self.preset!r}")
        if not 0.0 < self.epsilon <= 1.0:
            raise ConfigError(f"epsilon must be in (0, 1], got {self.epsilon}")
        for name in ("q_memory", "q_sgd_steps", "q_batch_size"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        self.sd_cfr_config()  # validates the shared settings
        return self

    def sd_cfr_config(self) -> DeepCFRConfig:
        """The SD-CFR settings the shared trainer runs with (policy = the stack)."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(DeepCFRConfig)}
        return DeepCFRConfig(**{**shared, "algo": "sd-cfr"})


#: Tuned for wall clock on one CPU core (docs/algorithms/dream.md): the
#: SD-CFR presets' exact-objective fits (merged duplicate inputs, the fused numba kernels), the
#: Q baseline fine-tuned for fewer minibatches (fig. 3 right: few are needed), and more
#: trajectories per iteration than the paper's 900. Leduc's 25,000 match the SD-CFR preset's
#: 10,000 external-sampling traversals in nodes touched per iteration, as the paper matched its
#: runs (sec. 6.2): a trajectory visits 4.06 decision nodes, a traversal 10.38 (uniform play;
#: the paper measured a ratio of 2.6).
PRESETS: dict[str, dict] = {
    "kuhn": SD_CFR_PRESETS["kuhn"] | dict(iterations=80, traversals=2000, traversal_batch=2000,
                                          q_memory=20_000, q_sgd_steps=100, q_batch_size=256),
    "leduc": SD_CFR_PRESETS["leduc"] | dict(iterations=1000, traversals=25_000, traversal_batch=25_000,
                                            advantage_memory=10_000_000, q_sgd_steps=100, q_batch_size=512),
    # FHP on 2 CPU cores: the SD-CFR FHP preset's suit-canonical inputs and exact exploitability
    # every 5 iterations off the clock, with width-32 networks, 2,500 trajectories (Leduc's ratio
    # to the SD-CFR preset's external-sampling traversals of the time) and Leduc's short Q fine-tuning.
    # Its networks, fits and memory stay as it was measured (docs/benchmarks/dream-fhp.md); it
    # samples trajectories (outcome sampling), not the SD-CFR preset's exact per-flop targets.
    "fhp": SD_CFR_PRESETS["fhp"] | dict(width=32, sgd_steps=200, sgd_epochs=0.0, traversals=2_500, traversal_batch=2_500,
                                        q_sgd_steps=100, q_batch_size=512, targets="sampled", batch_size=1024,
                                        advantage_memory=4_000_000),
}
#: Sec. 6.2: value networks as SD-CFR's (from scratch, Adam 0.001, clip 1; D = 64 in all games),
#: Leduc: 900 trajectories, 2M advantage buffers, 3,000 batches of 2,048; FHP: 50,000
#: trajectories, 40M buffers, 10,000 batches (of 10,000 rows, the Deep CFR paper's FHP batch);
#: Q: 1,000 batches of 512, buffer 200,000.
PAPER_PRESETS: dict[str, dict] = {
    "leduc": dict(iterations=1000, traversals=900, traversal_batch=900, width=64, advantage_memory=2_000_000,
                  strategy_memory=2_000_000, sgd_steps=3000, batch_size=2048, threads=1),
    "fhp": dict(iterations=450, traversals=50_000, traversal_batch=10_000, width=64, advantage_memory=40_000_000,
                strategy_memory=40_000_000, sgd_steps=10_000, batch_size=10_000, evaluate_every=0,
                normalize_targets=True, strength_every=1, strength_hands=100),
}
PRESETS["holdem"] = PAPER_PRESETS["fhp"]  # no cheaper settings measured there


class DreamStream(IntEnum):
    """DREAM's random streams, after :class:`training.deep_cfr.trainer.Stream`'s."""

    Q_INIT = 6
    """Initial weights of the Q baselines (iteration 0)."""
    Q_BATCHES = 7
    """Minibatches of a Q fine-tuning."""


class DreamTrainer(DeepCFRTrainer):
    """The SD-CFR loop with outcome-sampling trajectories and, for DREAM, the Q baselines."""

    config_class = DreamConfig

    def __init__(self, config: DreamConfig, run: RunDir, progress: bool = True) -> None:
        self.dream = config
        super().__init__(config.sd_cfr_config(), run, progress)
        self.nodes_touched = 0
        self.baselines: list[QBaseline] | None = None
        if config.algo == "dream":
            torch.manual_seed(int(self.rng(0, 0, DreamStream.Q_INIT).integers(2**62)))
            self.baselines = [QBaseline(self.encoder, p, config.width, config.q_memory, config.q_learning_rate,
                                        config.grad_clip, self.device) for p in (0, 1)]

    def memory_fields(self) -> FieldSpec:
        return super().memory_fields() | {"weight": ((), np.float32)}

    def collect_samples(self, player: int, progress: Progress, record: dict) -> int:
        """``K`` outcome-sampling trajectories of ``player`` into its advantage memory (and
        ``B^q``), then DREAM's Q fine-tuning; returns the decision nodes visited."""
        cfg, t = self.dream, self.iteration
        rng, reservoir_rng = self.rng(t, player, Stream.TRAVERSAL), self.rng(t, player, Stream.RESERVOIR)
        baseline = None if self.baselines is None else self.baselines[player]
        done = evaluated = 0
        while done < cfg.traversals:
            n = min(cfg.traversal_batch, cfg.traversals - done)
            deals = deal_batch(self.encoder, n, rng)
            result = sample_trajectories(self.encoder, deals, player, self.strategy_fn, rng, cfg.epsilon,
                                         None if baseline is None else baseline.baseline(deals))
            rows = result.advantage
            rows["iteration"] = np.full(len(rows["node"]), t, dtype=np.int32)
            self.advantage[player].add(rows, reservoir_rng)
            if baseline is not None:
                baseline.add(result.transitions, deals)
            evaluated += result.infosets_evaluated
            done += n
            progress.advance_iteration(done + player * cfg.traversals, 2 * cfg.traversals, f"iteration {t}: trajectories p{player}")
        if baseline is not None:
            started = time.perf_counter()
            progress.advance_iteration(1, 1, f"iteration {t}: Q baseline p{player}")
            record[f"q_loss_p{player}"] = baseline.train(cfg.q_sgd_steps, cfg.q_batch_size, self.strategy_fn,
                                                         self.rng(t, player, DreamStream.Q_BATCHES))
            record[f"q_training_s_p{player}"] = time.perf_counter() - started
        self.nodes_touched += evaluated
        record["nodes_touched"] = self.nodes_touched
        return evaluated

    def provenance(self) -> dict:
        return {"algorithm": self.dream.algo, "config": config_dict(self.dream), "seed": self.dream.seed,
                "iterations": self.iteration}

    def extra_checkpoint_state(self) -> dict:
        state: dict = {"nodes_touched": self.nodes_touched}
        if self.baselines is not None:
            state["q_baselines"] = [b.state() for b in self.baselines]
        return state

    def load_extra_checkpoint_state(self, state: dict) -> None:
        self.nodes_touched = int(state["nodes_touched"])
        if self.baselines is not None:
            for baseline, saved in zip(self.baselines, state["q_baselines"], strict=True):
                baseline.load_state(saved)


#: ``pokerbot train`` option -> config field (``--preset`` picks the preset table).
FLAGS = {"game": "game", "iterations": "iterations", "traversals": "traversals", "time_budget": "time_budget",
         "seed": "seed", "device": "device", "threads": "threads", "preset": "preset"}


def _prepare(algo: str):
    """The contract's ``prepare``: the algorithm, and with ``--preset paper`` (or ``preset =
    "paper"`` in the TOML) the paper's table under the TOML file and the flags instead of the tuned
    one (:func:`training.contract.entry.resolve_new` merged the tuned table already)."""

    def prepare(values: dict, options: dict) -> dict:
        values = values | {"algo": algo}
        if values.get("preset", "tuned") != "paper":
            return values
        alias = shipped_alias(load_game(str(values["game"])))
        if alias not in PAPER_PRESETS:
            raise ConfigError(f"the DREAM paper gives settings for {' and '.join(PAPER_PRESETS)} only, not "
                              f"{values['game']!r}; leave --preset out or pass --config")
        explicit = read_toml(Path(options["config_path"])) if options.get("config_path") else {}
        explicit |= {field: options[flag] for flag, field in FLAGS.items() if options.get(flag) is not None}
        return PAPER_PRESETS[alias] | explicit | {"game": values["game"], "algo": algo, "preset": "paper"}

    return prepare


def _train(config: DreamConfig, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> DreamTrainer:
    """The contract's entry (:func:`training.contract.entry.run_from_cli`)."""
    trainer = DreamTrainer.continue_run(config, run, force=force) if resume else DreamTrainer.start(config, run)
    trainer.train(stop)
    return trainer


#: ``--algo dream`` and ``--algo os-sd-cfr`` for :mod:`training.contract.entry`.
TRAINERS = {
    algo: Trainer(
        algo=algo, config_class=DreamConfig, flags=FLAGS,
        resumable=frozenset({"iterations", "time_budget", "device", "threads"}),
        presets=PRESETS, train=_train, prepare=_prepare(algo),
        cpu_only={"fit_backend": ("fused", "torch")},
    )
    for algo in ALGOS
}
