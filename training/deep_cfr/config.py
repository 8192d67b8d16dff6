"""Deep CFR and SD-CFR settings: the config dataclass (one docstring per field) and the per-game
presets (Brown et al. 2019, sec. 5.1 for FHP and HULH; Kuhn and Leduc scaled to a laptop)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.agents.stack_weights import MAX_AVERAGE_EXPONENT
from bot.errors import ConfigError
from training.contract.entry import parse_duration, resolve_device, runs_on_cpu, worker_threads
from training.contract.strength import StrengthOptions, StrengthSettings

ALGOS = ("deep-cfr", "sd-cfr")


@dataclass(frozen=True)
class DeepCFRConfig(StrengthOptions):
    """Everything a run needs; saved as the run's ``config.toml``."""

    game: str = "leduc"
    """Game name or gamedef path."""
    algo: str = "sd-cfr"
    """``deep-cfr`` (average-strategy network) or ``sd-cfr`` (stack of value networks)."""
    iterations: int = 100
    """CFR iterations T."""
    traversals: int = 1000
    """External-sampling traversals per player per iteration (K)."""
    time_budget: float | None = None
    """Stop after this many seconds of wall time (None: no limit; ``pokerbot train
    --time-budget`` takes ``90s``, ``10m``, ``2h``); the policy is still written."""
    seed: int = 0
    """Seeds every random draw (see the module docstring)."""
    device: str = "auto"
    """``auto`` (cuda if available), ``cpu`` or ``cuda``."""
    threads: int = 0
    """Torch/numba CPU threads; 0 = all cores. Small networks train fastest on 1 thread (on the
    2-core machine two torch threads made a width-64 Adam step 10x slower under load), so the Kuhn
    and Leduc presets use 1; the compiled row fits of FHP and HULH split each step's 2,048 rows
    over the threads (1.8-2.0x on an idle 2-core box, 0.8-1.15x with the other core busy), and
    the ``fhp`` and ``holdem`` presets use all cores."""
    width: int = 64
    """Hidden width of the appendix C network."""
    advantage_memory: int = 1_000_000
    """Capacity of each player's advantage memory (paper: 40M)."""
    strategy_memory: int = 1_000_000
    """Capacity of the strategy memory (paper: 40M)."""
    sgd_steps: int = 300
    """Adam steps per value-network training (paper: FHP 4,000, HULH 32,000); the floor when
    ``sgd_epochs`` is set."""
    sgd_epochs: float = 0.0
    """Grow each value-network fit with its memory: ``max(sgd_steps, ceil(sgd_epochs * rows /
    batch_size))`` Adam steps, rows being the player's advantage memory at the fit (0: always
    ``sgd_steps``). A fixed step count that fits an early memory well underfits the full one:
    on FHP, 1,200 steps of 2,048 left the curve flat at ~53 mbb/g with a 16M-row memory (0.15
    epochs a fit), and 4,800 (0.6 epochs) took the same run to 36 (docs/benchmarks/fhp-sd-cfr.md,
    "The plateau, diagnosed"). Cheap fits while the memory is small, full ones when it is full."""
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
    targets: str = "sampled"
    """Where the value networks' targets come from: ``sampled`` (external-sampling traversals, the
    paper's) or ``board`` (exact regrets over every private hand of ``boards`` sampled boards per
    player per iteration: the flop in FHP-shaped games, :mod:`training.deep_cfr.board_targets`;
    every round's cards in hold'em, :mod:`training.deep_cfr.runout_targets`)."""
    boards: int = 64
    """``targets = "board"``: boards drawn per player per iteration (``traversals`` is unused)."""
    rows_per_board: int = 2000
    """``targets = "board"``: memory rows kept per board on average, each infoset in proportion to
    how often external sampling visits it."""
    board_batch: int = 16
    """``targets = "board"``: boards walked together (one parallel pass)."""
    from_scratch: bool = True
    """Retrain value networks from scratch each iteration (False: the fine-tuning ablation)."""
    argmax_fallback: bool = True
    """Play the highest-advantage action when none is positive (False: the uniform ablation)."""
    memory_mode: str = "reservoir"
    """``reservoir`` or ``window`` (the sliding-window ablation)."""
    linear_weighting: bool = True
    """Linear CFR: weight samples by their iteration, batch weights rescaled by 2/T."""
    average_exponent: float = 1.0
    """SD-CFR: stack entry t (the policy of iteration t) weighs ``t^average_exponent`` in the
    average that plays and is measured (1: linear CFR's weights, Steinberger 2019; 2: DCFR's
    average weighting, Brown & Sandholm 2019), so later, better-fitted iterations count for more.
    The value networks and their training are the same whatever it is; with
    ``linear_weighting = false`` every entry weighs 1. ``pokerbot exploit RUN --follow
    --average-exponent E`` measures other exponents on a run as it trains."""
    normalize_targets: bool = False
    """Divide the value network's targets by their weighted RMS before each fit. Regret matching
    is invariant to scaling advantages, so the policy means the same; Adam then fits every
    iteration's regrets to the same relative precision (at Leduc's iteration ~200, 300 steps
    fit 3.5x tighter, and its strategies disagree with the exact regret-matching ones about
    1.5x less)."""
    merge_duplicates: bool = False
    """Train on the memory's distinct inputs with their weighted mean targets: the same loss as
    the paper's, with exact (full-batch) gradients when the distinct inputs fit in a batch
    (:mod:`training.deep_cfr.merged_memory`). Pays off where inputs repeat (Kuhn, Leduc)."""
    fit_backend: str = "auto"
    """How value networks train (:func:`training.deep_cfr.fit.resolve_fit_path`): ``fused`` (compiled
    fp32 kernels, CPU only, on merged or row batches; :mod:`training.common.fused_network`), ``torch``
    (autograd + torch Adam, fp32), ``bf16`` (torch with bfloat16 matrix products over fp32
    weights: pays only on CPUs with AVX512-BF16/AMX or GPUs; 3-5x slower than fp32 on AVX2), or
    ``auto`` (``fused`` on the CPU, ``torch`` on cuda). Average networks always use torch fp32.
    The path that ran is each iteration's ``fit_backend`` metric."""
    canonical_suits: bool = False
    """Feed the networks suit-canonical cards (:func:`bot.agents.network.canonical_suit_cards`: the
    suit renaming that makes the infoset's cards smallest), so every policy of the run is
    suit-invariant and its exact FHP evaluation walks the 1,755 canonical flops instead of all
    22,100. Recorded in the bundle's ``architecture``; runs without it load as before."""
    evaluate_every: int = 1
    """Exact exploitability every this many iterations on small games (0: never)."""
    average_every: int = 0
    """Deep CFR: also train and evaluate the average network every this many iterations (0: end only)."""
    checkpoint_every: int = 1
    """Write a checkpoint every this many iterations (and at the end)..."""
    checkpoint_seconds: float = 60.0
    """... or after an iteration that ends this many seconds after the last checkpoint,
    whichever comes first (0: by count only)."""
    keep_memories: bool = True
    """Keep ``memories/`` when ``pokerbot train`` ends normally (iterations or time budget
    reached). Only a run that keeps them can be extended with ``--resume``; an interrupted run
    always keeps them. The Kuhn and Leduc presets drop them: a Leduc run's memories reach
    ~750 MB and the run takes minutes to redo, while FHP/HULH runs take hours to redo."""

    def __post_init__(self) -> None:
        # time budgets in old run directories (and the benchmarks) are strings such as "10m"
        object.__setattr__(self, "time_budget", parse_duration(self.time_budget))
        self.validate()

    def validate(self) -> DeepCFRConfig:
        """Raise :class:`~bot.errors.ConfigError` naming the first invalid setting."""
        if self.algo not in ALGOS:
            raise ConfigError(f"algo must be one of {', '.join(ALGOS)}, got {self.algo!r}")
        if self.memory_mode not in ("reservoir", "window"):
            raise ConfigError(f"memory_mode must be reservoir or window, got {self.memory_mode!r}")
        if self.targets not in ("sampled", "board"):
            raise ConfigError(f"targets must be sampled or board, got {self.targets!r}")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ConfigError(f"lr_schedule must be constant or cosine, got {self.lr_schedule!r}")
        if self.fit_backend not in ("auto", "torch", "fused", "bf16"):
            raise ConfigError(f"fit_backend must be auto, torch, fused or bf16, got {self.fit_backend!r}")
        if not self.sgd_epochs >= 0:
            raise ConfigError(f"sgd_epochs must be 0 or positive, got {self.sgd_epochs}")
        if not 0 <= self.average_exponent <= MAX_AVERAGE_EXPONENT:
            raise ConfigError(f"average_exponent must be from 0 to {MAX_AVERAGE_EXPONENT:g}, got {self.average_exponent}")
        if self.fit_backend == "fused" and not runs_on_cpu(self.device):
            raise ConfigError("fit_backend = fused runs on the CPU: use --device cpu, or fit_backend = torch for cuda")
        resolve_device(self.device)
        worker_threads(self.threads)
        StrengthSettings.of(self)
        for name in ("iterations", "traversals", "width", "advantage_memory", "strategy_memory", "sgd_steps",
                     "batch_size", "average_sgd_steps", "average_batch_size", "traversal_batch", "checkpoint_every",
                     "boards", "rows_per_board", "board_batch"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        return self

    def value_fit_steps(self, rows: int) -> int:
        """Adam steps of a value-network fit on a memory of ``rows`` rows (see ``sgd_epochs``)."""
        return max(self.sgd_steps, math.ceil(self.sgd_epochs * rows / self.batch_size))


#: Overrides that put a preset back on external-sampling targets with the fixed-step fits and 4M-row
#: memories of that era (the benchmarks that measured the ES-era candidates, and any config that
#: compares against them).
SAMPLED: dict = {"targets": "sampled", "sgd_epochs": 0.0, "advantage_memory": 4_000_000}

#: Shared by the paper's FHP and HULH runs (sec. 5.1: 40M memories, 10,000 traversals). Targets
#: are normalised (``normalize_targets``): regrets in chips run to hundreds (FHP's big blind is
#: 100 chips, HULH's 10), which Adam at lr 1e-3 would spend thousands of steps scaling up to.
_PAPER = dict(iterations=450, traversals=10_000, width=96, advantage_memory=40_000_000,
              strategy_memory=40_000_000, average_sgd_steps=32_000, evaluate_every=0, normalize_targets=True,
              strength_every=1, strength_hands=100)  # no exact exploitability: a strength signal per iteration
#: The paper's settings for FHP and HULH (sec. 5.1), for machines with many cores or a GPU (pass
#: them with ``--config docs/sd-cfr-fhp-paper.toml`` / ``docs/sd-cfr-holdem-paper.toml``).
PAPER_PRESETS: dict[str, dict] = {
    "fhp": dict(_PAPER, sgd_steps=4000, batch_size=10_000, average_batch_size=10_000, traversal_batch=2000),
    "holdem": dict(_PAPER, sgd_steps=32_000, batch_size=20_000, average_batch_size=20_000, traversal_batch=500),
}
#: Per-game presets: Kuhn/Leduc scaled down to converge on a laptop in minutes, FHP and HULH to
#: make progress on 2 CPU cores (the paper's settings are PAPER_PRESETS).
PRESETS: dict[str, dict] = {
    "kuhn": dict(iterations=60, traversals=400, width=32, sgd_steps=150, batch_size=512,
                 advantage_memory=200_000, strategy_memory=200_000, average_sgd_steps=1500,
                 average_batch_size=512, traversal_batch=400, threads=1, merge_duplicates=True,
                 normalize_targets=True, keep_memories=False),
    # Leduc, tuned for exploitability per wall-clock second on 2 CPU cores. The exact-regret
    # oracle (benchmarks/bench_deep_cfr_oracle.py) reaches 5.9 mbb/g at iteration 640 with
    # K = 10,000, so iterations must be cheap and each network must fit well: a player's memory
    # holds only ~470 distinct inputs, and merge_duplicates trains on them with the exact
    # full-memory gradient (training/deep_cfr/merged_memory.py), in the compiled kernels of
    # training/common/fused_network.py (~0.3 ms a step), so 10M-row memories cost no extra SGD. Fit
    # quality decides the rest: on a late memory, regret matching on width-64 networks after
    # 600 cosine-decayed steps disagreed with the exact targets' 2.3x less than width 32 after
    # 600 constant steps (weighted L1 0.09 vs 0.21), and the 10-minute curve went from 15.7 to
    # 10.7 mbb/g at equal load. Checkpoints are incremental (training/deep_cfr/memory_log.py).
    "leduc": dict(iterations=600, traversals=10_000, width=64, sgd_steps=600, batch_size=2048, learning_rate=2e-3,
                  lr_schedule="cosine", advantage_memory=10_000_000, strategy_memory=10_000_000,
                  average_sgd_steps=3000, average_batch_size=2048, traversal_batch=5000, threads=1,
                  merge_duplicates=True, normalize_targets=True, keep_memories=False),
    # FHP on 2 CPU cores (docs/benchmarks/fhp-sd-cfr.md has its exact curves): width-64 networks on
    # suit-canonical inputs (each infoset's suits relabelled, so the policy is suit-invariant and
    # its exact evaluation walks the 1,755 canonical flops), exact exploitability every 5
    # iterations (off the training clock, training/flop/evaluation.py; `pokerbot exploit RUN
    # --follow` measures it on the other core instead). The targets are exact per sampled flop
    # (targets = "board", training/deep_cfr/board_targets.py): on external-sampling targets the
    # curve flattened at ~185 mbb/g, the targets' noise ("Fit error"); on board targets with
    # fixed 1,200-step fits at ~53 ("Exact targets per sampled flop"), which was the fits' Adam
    # steps, not the boards, the memory or the width ("The plateau, diagnosed"). So each player
    # stores 512 boards x 1,000 rows an iteration in a 16M-row memory, and each fit grows with it
    # (sgd_epochs = 0.6: 1,200 cosine-decayed steps of 2,048 while the memory is small, 4,688 once
    # it is full at iteration 32): from scratch, two hours of training reached 37.66 mbb/g at
    # iteration 87 where fixed fits stayed at ~53-55 ("A fit that grows with the memory"). All
    # cores (threads = 0): each fit step's rows split over them and the boards in parallel made
    # an iteration 1.65x faster on an idle 2-core box (docs/benchmarks/deep-cfr-throughput.md,
    # "Fits on both cores"); beside other work (`pokerbot exploit --follow`) pass --threads 1. The
    # paper's settings: PAPER_PRESETS["fhp"] (docs/sd-cfr-fhp-paper.toml).
    "fhp": dict(iterations=10_000, traversals=4000, width=64, sgd_steps=1200, sgd_epochs=0.6, batch_size=2048,
                learning_rate=2e-3, lr_schedule="cosine", advantage_memory=16_000_000, strategy_memory=4_000_000,
                average_sgd_steps=2000, average_batch_size=2048, traversal_batch=1000, threads=0, normalize_targets=True,
                canonical_suits=True, evaluate_every=5, checkpoint_every=5, checkpoint_seconds=300.0, targets="board",
                boards=512, rows_per_board=1000, board_batch=32),
    # HULH on 2 CPU cores, built from what FHP taught (above): width-64 networks on suit-canonical
    # inputs and normalised targets, each fit 1,200 cosine-decayed Adam steps of 2,048 (FHP: 4x
    # the steps on 2x the batch took the curve from ~143 to ~53 mbb/g at equal targets; compiled
    # kernels, one thread), the paper's 10,000 external-sampling traversals per player (FHP: the
    # targets' noise set the ES plateau) and 20M-row memories (27 bytes a row: ~1.6 GB in all).
    # An iteration took ~70 s here (a 2-hour run: 103 iterations) where the paper's schedule
    # (PAPER_PRESETS["holdem"], docs/sd-cfr-holdem-paper.toml: 32,000 steps of 20,000 per fit)
    # spends ~2.5 h on iteration 1's first fit. No exact exploitability: a head-to-head strength
    # signal against `default` every 5 iterations (off the training clock) over the same 8 sampled
    # boards, each exact over hands and actions (200 dealt hands a measurement gave +-360-780
    # mbb/g); Deep CFR trains its average network every 10 iterations. Curves and matches: docs/benchmarks/hulh-deep-cfr.md. 450 iterations is the
    # paper's count; --time-budget is the usual stop.
    # Fits that grow with the memory (FHP's sgd_epochs = 0.6) played level per iteration here and
    # lost at equal training clock (-13.4 +- 8.9 mbb/g): HULH's external-sampling targets, not its
    # fits, are the limit, so the fixed 1,200 steps stay. All cores (threads = 0): iteration 2 took
    # 91 s on two threads against 141 s on one on an idle 2-core box, the fits 1.63x faster
    # (docs/benchmarks/hulh-deep-cfr.md, "Both cores").
    "holdem": dict(PAPER_PRESETS["holdem"], traversals=10_000, traversal_batch=1000, width=64, sgd_steps=1200,
                   batch_size=2048, learning_rate=2e-3, lr_schedule="cosine", advantage_memory=20_000_000,
                   strategy_memory=20_000_000, average_sgd_steps=3000, average_batch_size=2048, average_every=10,
                   threads=0, canonical_suits=True, checkpoint_seconds=300.0, strength_every=5, strength_boards=8),
}
