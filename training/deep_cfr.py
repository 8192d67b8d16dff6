"""Deep CFR (Brown et al. 2019, algorithm 1) and Single Deep CFR (Steinberger 2019).

One loop serves both (``algo``): each iteration ``t`` and each player ``p`` in turn runs ``K``
external-sampling traversals (:mod:`training.traversal`, batched), adds the sampled instantaneous
regrets to ``p``'s advantage memory and (Deep CFR only) the opponent's strategy vectors to the
strategy memory (each row stores ``t``), then trains ``p``'s value network from scratch on the advantage memory
(MSE over legal actions, weighted by ``t * 2 / T`` under linear CFR, sec. 5.2; Adam 1e-3,
gradient-norm clip 1). Deep CFR then fits the average-strategy network on the strategy memory;
SD-CFR instead keeps every value network (written to ``policy/stack/`` as it is trained) and its
policy is the stack.

Strategy indexing: traversals of iteration ``t`` play ``sigma^t`` = regret matching on the value
networks trained so far (``sigma^1`` uniform). The SD-CFR stack therefore lists ``sigma^1``
(uniform, weight 1) and the networks trained at iterations ``1..T`` (weights ``2..T+1``): the
linear average of ``sigma^1..sigma^{T+1}``, the last of which needs no further traversal.

For small games (Kuhn, Leduc) the exact SD-CFR average policy is accumulated each iteration
(:class:`bot.deep_cfr_agent.StackAverage`) and its exploitability logged; Deep CFR's average
network is evaluated whenever it is trained.

Randomness: every random draw of iteration ``t``/player ``p`` comes from generators seeded by
``(seed, t, p, purpose)``, so a resumed run repeats exactly what the killed one would have done.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from bot.deep_cfr_agent import BUNDLE_FILE, InfosetBatch, StackAverage, manifest
from bot.encoding import InfosetEncoder
from bot.errors import PokerbotError
from bot.network import DeepCFRNetwork, masked_softmax, regret_matching
from protocol.gamedef import Game, load_game
from training import distributed, plots
from training.fused_network import Features, fit_weighted_mse
from training.input_keys import InputKeys
from training.memory_log import MEMORY_DIR, MemoryLog
from training.merged_memory import MergedRows, MergedTable, merge_rows
from training.reservoir import Reservoir
from training.rundir import (
    Progress,
    RunDir,
    RunDirError,
    atomic_write,
    load_torch,
    parse_duration,
    read_toml,
    save_torch,
)
from training.traversal import TraversalResult, deal_batch, traverse

if TYPE_CHECKING:
    from training.distributed.ray_traversal import RayTraversals

ALGOS = ("deep-cfr", "sd-cfr")
#: Games whose exact exploitability is cheap enough to log during training.
SMALL_GAMES = ("kuhn", "leduc")


@dataclass(frozen=True)
class DeepCFRConfig:
    """Everything a run needs; saved as the run's ``config.toml``."""

    game: str = "leduc"
    """Game name or gamedef path."""
    algo: str = "sd-cfr"
    """``deep-cfr`` (average-strategy network) or ``sd-cfr`` (stack of value networks)."""
    iterations: int = 100
    """CFR iterations T."""
    traversals: int = 1000
    """External-sampling traversals per player per iteration (K)."""
    time_budget: str | None = None
    """Stop after this much wall time (``90s``, ``10m``, ``2h``); the policy is still written."""
    seed: int = 0
    """Seeds every random draw (see the module docstring)."""
    device: str = "auto"
    """``auto`` (cuda if available), ``cpu`` or ``cuda``."""
    threads: int = 0
    """Torch/numba CPU threads; 0 = all cores. Small networks train fastest on 1 thread (on the
    2-core machine two threads made a width-64 Adam step 10x slower under load), so the Kuhn and
    Leduc presets use 1."""
    width: int = 64
    """Hidden width of the appendix C network."""
    advantage_memory: int = 1_000_000
    """Capacity of each player's advantage memory (paper: 40M)."""
    strategy_memory: int = 1_000_000
    """Capacity of the strategy memory (paper: 40M)."""
    sgd_steps: int = 300
    """Adam steps per value-network training (paper: FHP 4,000, HULH 32,000)."""
    batch_size: int = 2048
    """Minibatch size of value-network training (paper: FHP 10,000, HULH 20,000)."""
    average_sgd_steps: int = 2000
    """Adam steps of the average-strategy network (Deep CFR)."""
    average_batch_size: int = 2048
    """Minibatch size of the average-strategy network."""
    learning_rate: float = 1e-3
    """Adam learning rate (paper: 0.001)."""
    lr_schedule: str = "constant"
    """``constant`` (the paper) or ``cosine``: each fit decays the rate from ``learning_rate`` to
    0 along a half cosine. Full-batch fits (Leduc) end near a minimum instead of oscillating
    around it at the final rate: on a late Leduc memory, 600 cosine steps matched the regret-
    matching strategy of the exact targets 1.4x closer than 600 constant ones."""
    grad_clip: float = 1.0
    """Gradient-norm clip (paper: 1)."""
    traversal_batch: int = 2048
    """Traversals advanced together in one batch."""
    from_scratch: bool = True
    """Retrain value networks from scratch each iteration (False: the fine-tuning ablation)."""
    argmax_fallback: bool = True
    """Play the highest-advantage action when none is positive (False: the uniform ablation)."""
    memory_mode: str = "reservoir"
    """``reservoir`` or ``window`` (the sliding-window ablation)."""
    linear_weighting: bool = True
    """Linear CFR: weight samples by their iteration, batch weights rescaled by 2/T."""
    normalize_targets: bool = False
    """Divide the value network's targets by their weighted RMS before each fit. Regret matching
    is invariant to scaling advantages, so the policy means the same; Adam then fits every
    iteration's regrets to the same relative precision (at Leduc's iteration ~200, 300 steps
    fit 3.5x tighter, and its strategies disagree with the exact regret-matching ones about
    1.5x less)."""
    merge_duplicates: bool = False
    """Train on the memory's distinct inputs with their weighted mean targets: the same loss as
    the paper's, with exact (full-batch) gradients when the distinct inputs fit in a batch
    (:mod:`training.merged_memory`). Pays off where inputs repeat (Kuhn, Leduc)."""
    fit_backend: str = "auto"
    """How value networks train on merged batches: ``torch`` (autograd + torch Adam), ``fused``
    (the same maths and update rule in compiled numba kernels, :mod:`training.fused_network`;
    CPU only, needs ``merge_duplicates``; ~4x faster steps on Leduc), or ``auto`` (``fused``
    exactly when the device is the CPU and ``merge_duplicates`` is on). Average networks and
    row batches always use torch."""
    evaluate_every: int = 1
    """Exact exploitability every this many iterations on small games (0: never)."""
    average_every: int = 0
    """Deep CFR: also train and evaluate the average network every this many iterations (0: end only)."""
    checkpoint_every: int = 1
    """Write a checkpoint every this many iterations (and at the end)."""
    keep_memories: bool = True
    """Keep ``memories/`` when ``pokerbot train`` ends normally (iterations or time budget
    reached). Only a run that keeps them can be extended with ``--resume``; an interrupted run
    always keeps them. The Kuhn and Leduc presets drop them: a Leduc run's memories reach
    ~750 MB and the run takes minutes to redo, while FHP/HULH runs take hours to redo."""

    def validate(self) -> DeepCFRConfig:
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {', '.join(ALGOS)}, got {self.algo!r}")
        if self.memory_mode not in ("reservoir", "window"):
            raise ValueError(f"memory_mode must be reservoir or window, got {self.memory_mode!r}")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"lr_schedule must be constant or cosine, got {self.lr_schedule!r}")
        if self.fit_backend not in ("auto", "torch", "fused"):
            raise ValueError(f"fit_backend must be auto, torch or fused, got {self.fit_backend!r}")
        if self.fit_backend == "fused" and not self.merge_duplicates:
            raise ValueError("fit_backend = fused trains on merged batches: it needs merge_duplicates = true")
        if self.fit_backend == "fused" and self.device == "cuda":
            raise ValueError("fit_backend = fused runs on the CPU: use --device cpu, or fit_backend = torch for cuda")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda: no CUDA device is available to torch here")
        for name in ("iterations", "traversals", "width", "advantage_memory", "strategy_memory", "sgd_steps",
                     "batch_size", "average_sgd_steps", "average_batch_size", "traversal_batch", "checkpoint_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        parse_duration(self.time_budget)
        return self


#: Shared by the paper's FHP and HULH runs (sec. 5.1: 40M memories, 10,000 traversals). Targets
#: are normalised (``normalize_targets``): regrets in chips run to hundreds (FHP's big blind is
#: 100 chips, HULH's 10), which Adam at lr 1e-3 would spend thousands of steps scaling up to.
_PAPER = dict(iterations=450, traversals=10_000, width=96, advantage_memory=40_000_000,
              strategy_memory=40_000_000, average_sgd_steps=32_000, evaluate_every=0, normalize_targets=True)
#: Per-game presets. FHP/HULH are the paper's settings (sec. 5.1); Kuhn/Leduc are scaled down to
#: converge on a laptop in minutes.
PRESETS: dict[str, dict] = {
    "kuhn": dict(iterations=60, traversals=400, width=32, sgd_steps=150, batch_size=512,
                 advantage_memory=200_000, strategy_memory=200_000, average_sgd_steps=1500,
                 average_batch_size=512, traversal_batch=400, threads=1, merge_duplicates=True,
                 normalize_targets=True, keep_memories=False),
    # Leduc, tuned for exploitability per wall-clock second on 2 CPU cores. The exact-regret
    # oracle (benchmarks/bench_deep_cfr_oracle.py) reaches 5.9 mbb/g at iteration 640 with
    # K = 10,000, so iterations must be cheap and each network must fit well: a player's memory
    # holds only ~470 distinct inputs, and merge_duplicates trains on them with the exact
    # full-memory gradient (training/merged_memory.py), in the compiled kernels of
    # training/fused_network.py (~0.3 ms a step), so 10M-row memories cost no extra SGD. Fit
    # quality decides the rest: on a late memory, regret matching on width-64 networks after
    # 600 cosine-decayed steps disagreed with the exact targets' 2.3x less than width 32 after
    # 600 constant steps (weighted L1 0.09 vs 0.21), and the 10-minute curve went from 15.7 to
    # 10.7 mbb/g at equal load. Checkpoints are incremental (training/memory_log.py).
    "leduc": dict(iterations=600, traversals=10_000, width=64, sgd_steps=600, batch_size=2048, learning_rate=2e-3,
                  lr_schedule="cosine", advantage_memory=10_000_000, strategy_memory=10_000_000,
                  average_sgd_steps=3000, average_batch_size=2048, traversal_batch=5000, threads=1,
                  merge_duplicates=True, normalize_targets=True, keep_memories=False),
    "fhp": dict(_PAPER, sgd_steps=4000, batch_size=10_000, average_batch_size=10_000, traversal_batch=2000),
    "holdem": dict(_PAPER, sgd_steps=32_000, batch_size=20_000, average_batch_size=20_000, traversal_batch=500),
}


def resolve_config(options: dict) -> DeepCFRConfig:
    """Preset for the game < ``--config`` TOML < explicit flags."""
    values: dict = {}
    file_values: dict = {}
    if options.get("config_path"):
        file_values = read_toml(Path(options["config_path"]))
        unknown = set(file_values) - {f.name for f in dataclasses.fields(DeepCFRConfig)}
        if unknown:
            raise ValueError(f"{options['config_path']}: unknown setting(s) {', '.join(sorted(unknown))}")
    game = options.get("game") or file_values.get("game") or "leduc"
    values.update(PRESETS.get(Path(str(game)).stem.split(".")[0], {}))
    values.update(file_values)
    flags = {"game": "game", "algo": "algo", "iterations": "iterations", "traversals": "traversals",
             "time_budget": "time_budget", "seed": "seed", "device": "device", "threads": "threads"}
    for option, name in flags.items():
        if options.get(option) is not None:
            values[name] = options[option]
    return DeepCFRConfig(**values).validate()


@dataclass(frozen=True)
class MergedProblem:
    """One fit's loss over a memory's distinct inputs, in numpy, for either training backend."""

    merged: MergedRows
    target: np.ndarray
    """Weighted mean targets (normalised if asked), float32 ``[distinct, 3]``."""
    weight: np.ndarray
    """Per distinct input: its loss weight (linear weighting and ``2 / T`` included)."""
    denominator: float
    picks: np.ndarray | None
    """``weighted`` form: the rows of every step ``[steps, batch]``; ``None``: ``full``."""
    form: str

    def torch_batches(self, device: torch.device, bets: torch.Tensor, legal: torch.Tensor, steps: int):
        """``steps`` batches ``(cards, bets, legal, target, weight, denominator)`` on ``device``."""
        node = torch.from_numpy(self.merged.node.astype(np.int64)).to(device)
        cards = torch.from_numpy(self.merged.cards).to(device)
        target = torch.from_numpy(self.target).to(device)
        weight = torch.from_numpy(self.weight).to(device)
        if self.picks is None:
            full = (cards, bets[node], legal[node], target, weight, self.denominator)
            return (full for _ in range(steps))
        picks = torch.from_numpy(self.picks).to(device)
        return ((cards[p], bets[node[p]], legal[node[p]], target[p], weight[p], self.denominator) for p in picks)


class DeepCFRTrainer:
    """The training loop over a run directory (create with :meth:`new` or :meth:`resume`)."""

    def __init__(self, config: DeepCFRConfig, run: RunDir, progress: bool = True) -> None:
        self.config = config
        self.run = run
        self.show_progress = progress
        self.game: Game = load_game(config.game)
        self.encoder = InfosetEncoder(self.game)
        self.device = torch.device("cuda" if config.device == "cuda" or (config.device == "auto" and torch.cuda.is_available()) else "cpu")
        if config.fit_backend == "fused" and self.device.type != "cpu":
            raise ValueError("fit_backend = fused runs on the CPU, but --device auto chose cuda: pass --device cpu")
        #: Value networks train in training.fused_network's kernels (see ``fit_backend``).
        self.fused_fit = config.merge_duplicates and self.device.type == "cpu" and config.fit_backend != "torch"
        threads = config.threads or os.cpu_count() or 1
        torch.set_num_threads(threads)
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        fields = {"node": ((), np.int32), "cards": ((self.encoder.num_card_slots,), np.int8),
                  "target": ((3,), np.float32), "iteration": ((), np.int32)}
        self.advantage = [Reservoir(config.advantage_memory, fields, config.memory_mode) for _ in (0, 1)]
        self.strategy_memory = Reservoir(config.strategy_memory, fields, config.memory_mode)
        #: SD-CFR never trains an average network, so it keeps no strategy memory (Steinberger 2019).
        self.keeps_strategy_memory = config.algo == "deep-cfr"
        names = ("advantage_p0", "advantage_p1", "strategy")[: 3 if self.keeps_strategy_memory else 2]
        self.memory_logs = [MemoryLog(run.path / MEMORY_DIR, name) for name in names]
        self.input_keys = InputKeys.for_encoder(self.encoder)
        if config.merge_duplicates and self.input_keys.size <= MergedTable.MAX_KEYS:
            for memory in self.memories:  # merged batches without re-merging the memory per fit
                memory.listener = MergedTable(self.input_keys, config.linear_weighting)
        self.bets = torch.from_numpy(self.encoder.bets).to(self.device)
        self.legal = torch.from_numpy(self.encoder.legal).to(self.device)
        self.nets: list[DeepCFRNetwork | None] = [None, None]
        self.optimizers: list[torch.optim.Optimizer | None] = [None, None]
        self.iteration = 0
        self.elapsed = 0.0
        enumerable = self.game.name.split(".")[0] in SMALL_GAMES
        self.small = enumerable and config.evaluate_every > 0
        self.average = StackAverage(self.game) if self.small else None
        self.batch = InfosetBatch(self.game) if enumerable else None
        #: Small games: sigma^t at every infoset, refreshed after each fit, so traversals look
        #: strategies up instead of running the network on every visited node (~80% of a Leduc
        #: traversal), and the SD-CFR average reuses it. ``infoset_of_key``: input key -> row.
        self.current_strategy: np.ndarray | None = None
        if self.batch is not None:
            self.current_strategy = self.batch.space.uniform_strategy()
            self.infoset_of_key = np.full(self.input_keys.size, -1, dtype=np.int64)
            self.infoset_of_key[self.input_keys.keys(self.batch.space.node, self.batch.cards.numpy())] = (
                np.arange(self.batch.space.num_infosets))
        if self.average is not None:
            self.average.add(self.batch.strategy(None), 1.0)  # sigma^1 = uniform, weight 1
        self.stack: list[dict] = [{"weight": 1, "uniform": True}]
        #: Ray traversal workers (``--workers N``/``--ray-address``); None: traverse in-process.
        self.traversal_pool: RayTraversals | None = None
        #: Where iterations and fits report how far they are (:meth:`train` sets the display).
        self.progress: Progress | _Silent = _Silent()

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def new(cls, config: DeepCFRConfig, out: str | Path, progress: bool = True) -> DeepCFRTrainer:
        run = RunDir.create(out, config)
        trainer = cls(config, run, progress)
        print(f"{config.algo} on {trainer.game.name}: network {trainer.make_net().num_parameters():,} parameters, "
              f"{trainer.advantage[0].bytes_per_sample} bytes per stored sample, device {trainer.device}")
        return trainer

    @classmethod
    def resume(cls, path: str | Path, options: dict | None = None, progress: bool = True) -> DeepCFRTrainer:
        run = RunDir.open(path)
        config = DeepCFRConfig(**run.config()).validate()
        algo = (options or {}).get("algo")
        if algo is not None and algo != config.algo:
            raise ValueError(f"{path} is a {config.algo} run; resume it with --algo {config.algo}")
        overrides = {k: v for k, v in (options or {}).items() if k in ("iterations", "time_budget", "device", "threads") and v is not None}
        if overrides:  # extending a run (more iterations, a new budget) is allowed; nothing else
            config = dataclasses.replace(config, **overrides).validate()
            run.save_config(config)
        trainer = cls(config, run, progress)
        trainer.load_checkpoint()
        return trainer

    def make_net(self) -> DeepCFRNetwork:
        return DeepCFRNetwork(self.encoder.group_sizes, self.encoder.num_bet_slots, self.config.width)

    def make_optimizer(self, net: DeepCFRNetwork) -> torch.optim.Optimizer:
        """Adam (paper: lr 0.001). ``fused``: one kernel per step instead of ~5 ops per parameter
        tensor; on the small Leduc network that is ~0.7 ms of a ~4 ms step (same update rule)."""
        return torch.optim.Adam(net.parameters(), lr=self.config.learning_rate, fused=True)

    def rng(self, iteration: int, player: int, purpose: int) -> np.random.Generator:
        return np.random.default_rng([self.config.seed, iteration, player, purpose])

    # -- strategies -------------------------------------------------------------------------------

    @torch.no_grad()
    def strategy_fn(self, player: int, nodes: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """sigma^t of ``player`` at a batch of infosets (uniform before its first network)."""
        if self.current_strategy is not None:
            rows = self.infoset_of_key[self.input_keys.keys(nodes, cards)]
            if len(rows) and rows.min() < 0:
                raise RuntimeError("traversal reached an input that is not an infoset of the enumerated game")
            return self.current_strategy[rows]
        net = self.nets[player]
        legal = self.encoder.legal[nodes]
        if net is None:
            return legal / legal.sum(axis=1, keepdims=True)
        node_t = torch.from_numpy(nodes.astype(np.int64)).to(self.device)
        cards_t = torch.from_numpy(cards).to(self.device)
        advantages = net(cards_t, self.bets[node_t])
        return regret_matching(advantages, self.legal[node_t], self.config.argmax_fallback).cpu().numpy()

    # -- training ---------------------------------------------------------------------------------

    def _fit(self, net: DeepCFRNetwork, optimizer: torch.optim.Optimizer, memory: Reservoir, steps: int,
             batch_size: int, rng: np.random.Generator, average: bool, label: str = "SGD") -> tuple[float, str]:
        """Weighted MSE over legal actions (Brown et al. 2019, algorithm 1 losses).

        Returns the mean loss of the last 10% of steps and the batch form used: ``rows`` (uniform
        minibatches of memory rows, the paper), or with ``merge_duplicates`` ``full`` (every
        distinct input each step: the exact full-memory gradient) or ``weighted`` (distinct
        inputs drawn by total weight); see :mod:`training.merged_memory`. Value networks on
        merged batches train in the compiled kernels of :mod:`training.fused_network` when
        ``fit_backend`` resolves to ``fused`` (a fresh Adam state, like ``optimizer`` here).
        Torch steps are reported to the progress display as ``label`` (FHP/HULH fits take
        minutes); a fused fit is one compiled call of well under a second on the small games."""
        cfg = self.config
        normalize = cfg.normalize_targets and not average
        if self.fused_fit and not average:
            return self._fit_fused(net, self._merged_problem(memory, steps, batch_size, rng, normalize), steps)
        batches, form = self._batches(memory, steps, batch_size, rng, normalize)
        net.train()
        rates = self.learning_rates(steps).tolist()
        tail_from = _tail_start(steps)
        losses = []
        parameters = list(net.parameters())  # once: ``net.parameters()`` walks the modules each call
        full_batch_features = None  # the full form repeats one batch: its inputs are embedded once
        for step, (cards, bets, legal, target, weight, denominator) in enumerate(batches):
            if form == "full":
                full_batch_features = full_batch_features or net.input_features(cards, bets)
                outputs = net.forward_features(full_batch_features)
            else:
                outputs = net(cards, bets)
            if average:
                outputs = masked_softmax(outputs, legal).nan_to_num(0.0)
            per_row = ((outputs - target) ** 2 * legal).sum(dim=1)
            loss = (per_row * weight).sum() / denominator
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, cfg.grad_clip, foreach=True)
            for group in optimizer.param_groups:
                group["lr"] = rates[step]
            optimizer.step()
            if step >= tail_from:  # read back only then, so a step costs no synchronisation
                losses.append(loss.item())
            self.progress.advance_iteration(step + 1, steps, label)
        net.eval()
        return float(np.mean(losses)), form

    def learning_rates(self, steps: int) -> np.ndarray:
        """The learning rate of each of a fit's ``steps`` (see ``lr_schedule``)."""
        rate = self.config.learning_rate
        if self.config.lr_schedule == "cosine":
            return rate * 0.5 * (1.0 + np.cos(np.pi * np.arange(steps) / steps))
        return np.full(steps, rate)

    def _fit_fused(self, net: DeepCFRNetwork, problem: MergedProblem, steps: int) -> tuple[float, str]:
        """:meth:`_fit` of a value network in :func:`training.fused_network.fit_weighted_mse`."""
        cfg = self.config
        features = Features.build(problem.merged.cards, self.encoder.bets[problem.merged.node], self.encoder.group_sizes)
        losses = fit_weighted_mse(net, features, problem.target, self.encoder.legal[problem.merged.node],
                                  problem.weight, problem.denominator, steps, self.learning_rates(steps), cfg.grad_clip,
                                  picks=problem.picks, threads=cfg.threads or os.cpu_count() or 1)
        net.eval()
        return float(np.mean(losses[_tail_start(steps):])), problem.form

    def _batches(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator,
                 normalize: bool = False) -> tuple[Iterable[tuple], str]:
        """``steps`` torch batches ``(cards, bets, legal, target, weight, denominator)`` and their form."""
        if self.config.merge_duplicates:
            problem = self._merged_problem(memory, steps, batch_size, rng, normalize)
            return problem.torch_batches(self.device, self.bets, self.legal, steps), problem.form
        return self._row_batches(memory, steps, batch_size, rng, normalize), "rows"

    def _merged_problem(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator,
                        normalize: bool) -> MergedProblem:
        """The memory's loss over its distinct inputs (:mod:`training.merged_memory`).

        Linear CFR weights a row by its iteration times ``2 / T`` (sec. 5.2). ``full`` when the
        distinct inputs fit in a batch; otherwise ``weighted``: every step's rows are drawn at
        once with probability proportional to their total weight. ``normalize`` divides the
        targets by their weighted RMS over legal actions (see ``normalize_targets``)."""
        cfg = self.config
        scale = 2.0 / max(self.iteration, 1) if cfg.linear_weighting else 1.0
        if memory.listener is not None:
            merged = memory.listener.merged()
        else:
            merged = merge_rows(memory.stored(), self.input_keys, cfg.linear_weighting)
        divisor = _rms(merged.target, self.encoder.legal[merged.node], merged.weight) if normalize else 1.0
        target = (merged.target / divisor).astype(np.float32)
        if len(merged) <= batch_size:
            return MergedProblem(merged, target, (merged.weight * scale).astype(np.float32), merged.rows, None, "full")
        probabilities = merged.weight.astype(np.float64) / merged.weight.sum()
        picks = rng.choice(len(merged), size=(steps, batch_size), p=probabilities)
        weight = np.full(len(merged), scale * float(merged.weight.sum()) / merged.rows, np.float32)
        return MergedProblem(merged, target, weight, batch_size, picks, "weighted")

    def _row_batches(self, memory: Reservoir, steps: int, batch_size: int, rng: np.random.Generator, normalize: bool):
        """``steps`` uniform minibatches of memory rows ``(cards, bets, legal, target, weight,
        denominator)`` on the device, the paper's form. Indices for all steps are drawn at once
        and gathered from zero-copy torch views of the memory, so a step costs no numpy round
        trip."""
        cfg, device = self.config, self.device
        scale = 2.0 / max(self.iteration, 1) if cfg.linear_weighting else 1.0
        stored = {name: torch.from_numpy(array) for name, array in memory.stored().items()}
        picks = torch.from_numpy(rng.integers(0, len(memory), size=(steps, batch_size)))
        divisor = 1.0
        if normalize:
            raw = memory.stored()
            weights = raw["iteration"].astype(np.float64) if cfg.linear_weighting else np.ones(len(memory))
            divisor = _rms(raw["target"], self.encoder.legal[raw["node"]], weights)
        for p in picks:
            node = stored["node"][p].long().to(device)
            iteration = stored["iteration"][p].to(device, torch.float32)
            weight = iteration * scale if cfg.linear_weighting else torch.ones_like(iteration)
            yield (stored["cards"][p].to(device), self.bets[node], self.legal[node],
                   stored["target"][p].to(device) / divisor, weight, batch_size)

    def train_value_net(self, player: int) -> tuple[float, str]:
        """Fit ``player``'s value network on its advantage memory; (tail loss, batch form)."""
        cfg = self.config
        torch.manual_seed(int(self.rng(self.iteration, player, 2).integers(2**62)))
        if cfg.from_scratch or self.nets[player] is None:
            net = self.make_net().to(self.device)
            optimizer = self.make_optimizer(net)
        else:
            net, optimizer = self.nets[player], self.optimizers[player]
        fitted = self._fit(net, optimizer, self.advantage[player], cfg.sgd_steps, cfg.batch_size,
                           self.rng(self.iteration, player, 3), average=False,
                           label=f"iteration {self.iteration}: SGD p{player}")
        self.nets[player], self.optimizers[player] = net, optimizer
        return fitted

    def train_average_net(self) -> tuple[DeepCFRNetwork, float, str]:
        cfg = self.config
        torch.manual_seed(int(self.rng(self.iteration, 2, 4).integers(2**62)))
        net = self.make_net().to(self.device)
        optimizer = self.make_optimizer(net)
        loss, form = self._fit(net, optimizer, self.strategy_memory, cfg.average_sgd_steps, cfg.average_batch_size,
                               self.rng(self.iteration, 2, 5), average=True, label="average network SGD")
        return net, loss, form

    # -- one iteration ----------------------------------------------------------------------------

    def run_iteration(self, progress: Progress) -> dict:
        cfg = self.config
        self.iteration += 1
        t = self.iteration
        record: dict = {"iteration": t}
        traversal_s = training_s = 0.0
        evaluated = 0
        for player in (0, 1):
            started = time.perf_counter()
            reservoir_rng = self.rng(t, player, 1)
            for result, done in self.traversal_results(t, player):
                for rows, memory in ((result.advantage, self.advantage[player]), (result.strategy, self.strategy_memory)):
                    if memory is self.strategy_memory and not self.keeps_strategy_memory:
                        continue
                    rows["iteration"] = np.full(len(rows["node"]), t, dtype=np.int32)
                    memory.add(rows, reservoir_rng)
                evaluated += result.infosets_evaluated
                progress.advance_iteration(done, cfg.traversals, f"iteration {t}: traversals p{player}")
            traversal_s += time.perf_counter() - started
            started = time.perf_counter()
            record[f"loss_p{player}"], record[f"batch_form_p{player}"] = self.train_value_net(player)
            self.refresh_strategy(player)
            training_s += time.perf_counter() - started
            record[f"advantage_samples_p{player}"] = self.advantage[player].seen
            record[f"advantage_fill_p{player}"] = len(self.advantage[player]) / self.advantage[player].capacity
        if self.keeps_strategy_memory:
            record["strategy_samples"] = self.strategy_memory.seen
            record["strategy_fill"] = len(self.strategy_memory) / self.strategy_memory.capacity
        record["infosets_per_s"] = evaluated / traversal_s if traversal_s else 0.0
        self.save_stack_entry()
        started = time.perf_counter()
        if self.average is not None:
            self.accumulate_average()
            if t % cfg.evaluate_every == 0:
                record.update(self.evaluate_stack())
        if cfg.algo == "deep-cfr" and cfg.average_every and t % cfg.average_every == 0:
            record.update(self.finish_average())
        record["traversal_s"] = traversal_s
        record["training_s"] = training_s
        record["fit_backend"] = "fused" if self.fused_fit else "torch"
        record["evaluation_s"] = time.perf_counter() - started
        record.update(self.traversal_pool.metrics() if self.traversal_pool is not None else {})
        return record

    def traversal_results(self, t: int, player: int) -> Iterator[tuple[TraversalResult, int]]:
        """Iteration ``t``'s K traversals for ``player``: each batch's memory inserts and the
        traversals done so far; on Ray workers when :attr:`traversal_pool` is set
        (:mod:`training.distributed.ray_traversal`), else here in batches of ``traversal_batch``."""
        if self.traversal_pool is not None:
            yield from self.traversal_pool.results(self, t, player)
            return
        rng = self.rng(t, player, 0)
        done = 0
        while done < self.config.traversals:
            n = min(self.config.traversal_batch, self.config.traversals - done)
            done += n
            yield traverse(self.encoder, deal_batch(self.encoder, n, rng), player, self.strategy_fn, rng), done

    def accumulate_average(self) -> None:
        """Add this iteration's networks to the exact SD-CFR average (small games)."""
        assert self.average is not None and self.batch is not None
        weight = float(self.stack[-1]["weight"])
        self.average.add(self.current_strategy.copy(), weight)

    def refresh_strategy(self, player: int) -> None:
        """Recompute ``player``'s rows of :attr:`current_strategy` from its network (small games)."""
        if self.current_strategy is None or self.nets[player] is None:
            return
        net = self.nets[player]
        rows = self.batch.player == player
        self.current_strategy[rows] = self.batch.strategy((net, net), argmax_fallback=self.config.argmax_fallback)[rows]

    def evaluate_stack(self) -> dict:
        """Exact exploitability of the SD-CFR average so far."""
        from bot.best_response import exploitability

        assert self.average is not None
        report = exploitability(self.game, self.average.strategy())
        return {"sdcfr_exploitability_mbb": report.mbb(report.exploitability)}

    def finish_average(self) -> dict:
        """Deep CFR: fit the average-strategy network, save it as the policy, measure it."""
        net, loss, form = self.train_average_net()
        self.run.policy_path.mkdir(parents=True, exist_ok=True)
        save_torch(self.run.policy_path / "average.pt", net.cpu().state_dict())
        net.to(self.device)
        record: dict = {"average_loss": loss, "average_batch_form": form}
        if self.small:
            from bot.best_response import exploitability

            report = exploitability(self.game, self.batch.strategy(net, kind="average"))
            record["average_exploitability_mbb"] = report.mbb(report.exploitability)
        self.write_manifest(average="average.pt")
        return record

    # -- policy bundle and checkpoints ------------------------------------------------------------------

    def save_stack_entry(self) -> None:
        """Stream this iteration's value networks to ``policy/stack/`` (SD-CFR's policy)."""
        t = self.iteration
        weight = t + 1 if self.config.linear_weighting else 1
        files = [f"stack/p{p}_t{t:06d}.pt" for p in (0, 1)]
        if self.config.algo == "sd-cfr":
            (self.run.policy_path / "stack").mkdir(parents=True, exist_ok=True)
            for p, file in enumerate(files):
                save_torch(self.run.policy_path / file, self.nets[p].state_dict())
        self.stack.append({"weight": weight, "files": files, "iteration": t})
        if self.config.algo == "sd-cfr":
            self.write_manifest()

    def write_manifest(self, average: str | None = None) -> None:
        self.run.policy_path.mkdir(parents=True, exist_ok=True)
        stack = self.stack if self.config.algo == "sd-cfr" else []
        data = manifest(self.config.algo, self.game, self.make_net().architecture(), self.config.argmax_fallback, stack, average)
        atomic_write(self.run.policy_path / BUNDLE_FILE, lambda h: h.write(json.dumps(data, indent=1).encode()))

    def drop_memories(self) -> None:
        """Delete ``memories/`` (a finished run that need not be extended: see ``keep_memories``)."""
        shutil.rmtree(self.run.path / MEMORY_DIR, ignore_errors=True)

    @property
    def memories(self) -> list[Reservoir]:
        """The memories in the order of ``memory_logs``."""
        return [*self.advantage, self.strategy_memory][: len(self.memory_logs)]

    def save_checkpoint(self) -> None:
        """Networks, optimizers, counters and the SD-CFR average in ``checkpoint/``; memories as
        incremental row files (:mod:`training.memory_log`) whose chains the state records."""
        chains = [log.checkpoint(memory, self.iteration) for log, memory in zip(self.memory_logs, self.memories, strict=True)]
        with self.run.writing_checkpoint() as folder:
            state: dict = {
                "iteration": self.iteration,
                "elapsed": self.elapsed,
                "memory_chains": json.dumps(chains),
                "stack": json.dumps(self.stack),
                "nets": [None if n is None else n.state_dict() for n in self.nets],
                "optimizers": [None if o is None else o.state_dict() for o in self.optimizers],
            }
            if self.average is not None:
                state["average"] = {k: torch.from_numpy(v) for k, v in self.average.state().items()}
            tables = [m.listener.state() for m in self.memories if m.listener is not None]
            if tables:  # saved, not rebuilt on resume: a rebuild could round differently
                state["merged_tables"] = [{k: torch.from_numpy(v) for k, v in t.items()} for t in tables]
            save_torch(folder / "state.pt", state)
        MemoryLog.prune(self.run.path / MEMORY_DIR, self.memory_logs)

    def load_checkpoint(self) -> None:
        folder = self.run.checkpoint_path
        if folder is None:
            MemoryLog.prune(self.run.path / MEMORY_DIR, [])
            self.run.truncate_metrics(0)
            return  # killed before the first checkpoint: start over in the same directory
        state = load_torch(folder / "state.pt")
        chains = json.loads(state["memory_chains"])
        if any(chains) and not (self.run.path / MEMORY_DIR).is_dir():
            raise RunDirError(f"{self.run.path}: this run finished and dropped its memories (keep_memories = false), "
                              "so it cannot be extended; start a new run with keep_memories = true in a --config file")
        for log, memory, chain in zip(self.memory_logs, self.memories, chains, strict=True):
            log.restore(memory, chain)
        MemoryLog.prune(self.run.path / MEMORY_DIR, self.memory_logs)  # a killed iteration's rows
        saved_tables = iter(state.get("merged_tables", []))
        for memory in self.memories:
            if memory.listener is not None:
                saved = next(saved_tables, None)
                if saved is None:  # a checkpoint from before merged tables: sum the rows once
                    memory.listener.insert(memory.stored())
                else:
                    memory.listener.load_state({k: v.numpy() for k, v in saved.items()})
        self.iteration = int(state["iteration"])
        self.elapsed = float(state["elapsed"])
        self.stack = json.loads(state["stack"])
        for p in (0, 1):
            if state["nets"][p] is not None:
                net = self.make_net().to(self.device)
                net.load_state_dict(state["nets"][p])
                self.nets[p] = net.eval()
                self.refresh_strategy(p)
                if state["optimizers"][p] is not None:
                    optimizer = self.make_optimizer(net)
                    optimizer.load_state_dict(state["optimizers"][p])
                    self.optimizers[p] = optimizer
        if self.average is not None and "average" in state:
            self.average.load_state({k: v.numpy() for k, v in state["average"].items()})
        if self.config.algo == "sd-cfr":
            self.write_manifest()  # drop stack entries of the iteration the kill interrupted
        self.run.truncate_metrics(self.iteration)

    # -- the loop ---------------------------------------------------------------------------------

    def train(self) -> list[dict]:
        """Run until ``iterations`` or the time budget; returns this session's metric records."""
        cfg = self.config
        budget = parse_duration(cfg.time_budget)
        progress = Progress(cfg.iterations, self.iteration + 1, budget) if self.show_progress else _Silent()
        self.progress = progress
        records = []
        try:
            while self.iteration < cfg.iterations and (budget is None or self.elapsed < budget):
                started = time.perf_counter()
                progress.start_iteration(self.iteration + 1)
                record = self.run_iteration(progress)
                self.elapsed += time.perf_counter() - started
                record["elapsed_s"] = self.elapsed
                self.run.append_metrics(record)  # first: a resume drops lines past the checkpoint
                records.append(record)
                if self.iteration % cfg.checkpoint_every == 0 or self.iteration >= cfg.iterations:
                    started = time.perf_counter()
                    self.save_checkpoint()
                    self.elapsed += time.perf_counter() - started  # wall clock: shows in the next line
                progress.end_iteration(self.iteration, _summary(record))
            if cfg.algo == "deep-cfr" and self.iteration > 0:
                final = self.finish_average()
                self.run.append_metrics({"iteration": self.iteration, "final": True, **final})
                records.append(final)
        finally:
            progress.close()
            self.progress = _Silent()
        if self.small:
            plot_exploitability(self.run)
        return records


def _tail_start(steps: int) -> int:
    """First step of a fit's last 10%, whose mean loss is the fit's reported loss."""
    return steps - max(1, steps // 10)


def _rms(target: np.ndarray, legal: np.ndarray, weight: np.ndarray) -> float:
    """Weighted root mean square of ``target`` over legal actions (1.0 for an all-zero memory)."""
    squares = (target.astype(np.float64) ** 2 * legal).sum(axis=1)
    value = float(np.sqrt((weight * squares).sum() / max((weight * legal.sum(axis=1)).sum(), 1e-30)))
    return value if value > 0 else 1.0


class _Silent:
    def start_iteration(self, *args) -> None: ...
    def advance_iteration(self, *args) -> None: ...
    def end_iteration(self, *args) -> None: ...
    def close(self) -> None: ...


def _summary(record: dict) -> str:
    parts = [f"loss {record['loss_p0']:.4g}/{record['loss_p1']:.4g}",
             f"traverse {record['traversal_s']:.1f}s", f"train {record['training_s']:.1f}s"]
    for key, label in (("sdcfr_exploitability_mbb", "SD-CFR"), ("average_exploitability_mbb", "avg net")):
        if key in record:
            parts.append(f"{label} {record[key]:.1f} mbb/g")
    return ", ".join(parts)


def plot_exploitability(run: RunDir) -> Path | None:
    """``exploitability.png``: exact exploitability (mbb/g, NashConv/2) against wall time."""
    records = [r for r in run.read_metrics() if "elapsed_s" in r]
    curves = {label: ([r["elapsed_s"] for r in records if key in r], [r[key] for r in records if key in r])
              for key, label in (("sdcfr_exploitability_mbb", "SD-CFR average (exact)"),
                                 ("average_exploitability_mbb", "Deep CFR average network"))}
    curves = {label: xy for label, xy in curves.items() if xy[0]}
    if not curves:
        return None
    return plots.plot_exploitability(run.path / "exploitability.png", [("wall-clock seconds (training)", curves)])


def run_from_cli(options: dict) -> None:
    """``pokerbot train --algo deep-cfr|sd-cfr`` entry point (see :mod:`bot.commands.train`)."""
    cluster = distributed.Cluster.from_options(options)
    if options.get("resume"):
        trainer = DeepCFRTrainer.resume(options["resume"], options)
    else:
        config = resolve_config(options)
        trainer = DeepCFRTrainer.new(config, options["out"])
    try:
        if cluster.distributed:
            from training.distributed.ray_traversal import RayTraversals

            trainer.traversal_pool = RayTraversals(trainer, cluster)
        trainer.train()
    except KeyboardInterrupt:
        raise PokerbotError(f"interrupted; continue with: pokerbot train --algo {trainer.config.algo} --resume {trainer.run.path}") from None
    finally:
        distributed.stop()  # only a Ray this run started
    if not trainer.config.keep_memories:
        trainer.drop_memories()
        print(f"dropped {trainer.run.path / MEMORY_DIR} (keep_memories = false: the run cannot be extended)")
    print(f"run directory: {trainer.run.path} (policy in {trainer.run.policy_path})")


