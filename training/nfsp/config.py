"""NFSP settings: the config dataclass (one docstring per field) and the per-game presets, with
the tuning history of the Leduc preset (docs/benchmarks/nfsp-leduc.md has the measurements)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.errors import ConfigError
from training.contract.entry import parse_duration, resolve_device, runs_on_cpu, worker_threads
from training.contract.strength import StrengthOptions, StrengthSettings


@dataclass(frozen=True)
class NFSPConfig(StrengthOptions):
    """Everything that defines an NFSP run (saved as the run's ``config.toml``)."""

    game: str = "leduc"
    """Game name or gamedef path."""
    seed: int = 0
    """Seed of every random choice (deals, exploration, policy sampling, minibatches, weights)."""
    steps: int = 20_000
    """Self-play steps: one action in each of the ``num_envs`` parallel hands, then learning."""
    time_budget: float | None = None
    """Stop after this many seconds of training (None = no limit; ``pokerbot train
    --time-budget`` takes ``90s``, ``10m``, ``2h``)."""
    num_envs: int = 128
    """Hands played in parallel."""
    width: int = 64
    """Width of the appendix C network (all four networks)."""
    eta: float = 0.1
    """Anticipatory parameter: per hand, probability of acting with the best response."""
    eta_final: float = -1.0
    """Anneal eta linearly from ``eta`` to this value over ``eta_anneal_steps`` self-play steps,
    then keep it (-1 = constant eta). Why: each seat's Q learns a best response to what the
    other seat plays, the mixture ``eta * BR + (1 - eta) * Pi`` (the paper's anticipatory
    dynamics, sec. 4), not to Pi itself, so the fixed point of a large eta is biased away from
    fictitious play's; a large eta early fills M_SL fast, a small one late removes most of the
    bias. Still algorithm 1, with a time-varying eta."""
    eta_anneal_steps: int = 0
    """Self-play steps of the eta anneal (with ``eta_final``)."""
    rl_vs_average: bool = False
    """Store in M_RL only the transitions of hands in which the *other* seat followed its
    average policy Pi, so Q estimates a best response to Pi_-i itself, the best response of
    fictitious play (Heinrich & Silver 2016, sec. 3), instead of to the eta-mixture (see
    ``eta_final``). A departure from algorithm 1 (which stores every own transition); off by
    default. The learning rhythm still counts every closed transition."""
    rl_capacity: int = 200_000
    """Circular replay memory M_RL per player (transitions)."""
    sl_capacity: int = 2_000_000
    """Reservoir memory M_SL per player (state, best-response action) pairs."""
    sl_averaging: str = "uniform"
    """How M_SL weighs best-response rows over time. uniform: the paper's reservoir, so Pi fits
    the plain average of every past best response (fictitious play's step 1/t). linear: a row
    from self-play step s is kept with probability proportional to s + 1 (weighted reservoir,
    :mod:`training.common.reservoir`), so Pi averages best responses weighted by when they were played,
    as Linear CFR weights iterations (Brown & Sandholm 2019), and the poor best responses of the
    first minutes fade as s/t. Still generalised weakened fictitious play (Leslie & Collins
    2006: steps 2/(t+1) tend to zero and sum to infinity)."""
    optimizer: str = "sgd"
    """sgd (the paper) or adam."""
    rl_lr: float = 0.1
    """Learning rate of the Q networks."""
    rl_lr_decay_steps: int = 0
    """Decay the Q learning rate as ``rl_lr / sqrt(1 + steps / rl_lr_decay_steps)`` (the
    epsilon schedule's form); 0 keeps it constant."""
    q_loss: str = "mse"
    """mse (the paper) or huber (Mnih et al. 2015's clipped error: smooth L1 on the TD error;
    minibatch Q steps only, as it does not merge over repeated rows)."""
    sl_lr: float = 0.005
    """Learning rate of the average-policy networks."""
    batch_size: int = 128
    """Minibatch size of every update."""
    learn_every: int = 128
    """New transitions of a player between its learning rounds."""
    updates_per_learn: int = 2
    """Q-network minibatch updates in each learning round."""
    sl_updates_per_learn: int = 2
    """Average-policy updates in each learning round (the paper: 2, as for Q)."""
    target_update_every: int = 300
    """Q updates between refits of the target network."""
    eps_start: float = 0.06
    """Initial exploration of the epsilon-greedy best response."""
    eps_decay_steps: int = 1_000
    """Self-play steps after which epsilon has fallen to eps_start / sqrt(2)."""
    double_dqn: bool = True
    """Pick the bootstrap action with the online network (double DQN) rather than the target."""
    sl_full_batch: bool = False
    """Supervised step on the exact objective: one full batch over M_SL's distinct inputs with
    their action counts as targets (:mod:`training.nfsp.counts`; small games only) instead of a
    ``batch_size`` minibatch of rows. Same loss, no sampling noise."""
    rl_full_batch: bool = False
    """DQN step on the exact objective: the squared TD error over all of M_RL, merged over its
    distinct (state, action) pairs and next states (:func:`exact_q_loss`; small games only)
    instead of a ``batch_size`` minibatch. Same loss and gradient, no sampling noise."""
    fused: bool = False
    """Run the exact SL and Q steps (``sl_full_batch``, ``rl_full_batch``) in the compiled
    kernels of :mod:`training.common.fused_network` instead of torch autograd: the same loss, gradient,
    clip and SGD update (``tests/training/nfsp/test_nfsp_fused.py``), several times cheaper per step on Leduc's
    few hundred distinct inputs, so more exact Q steps per learning round cost the same time.
    CPU and SGD only; the torch networks share the kernels' weight buffer (no copies)."""
    grad_clip: float = 10.0
    """Gradient-norm clip of every update (0 = none)."""
    eval_every: int = 1_000
    """Steps between exploitability evaluations (small games) and metrics lines."""
    checkpoint_every: int = 1_000
    """Steps between checkpoints (Ctrl-C also checkpoints after the step in progress)..."""
    checkpoint_seconds: float = 60.0
    """... or this many seconds of wall time since the last one, whichever comes first (0: by
    count only): a Leduc preset's 1,000 steps take 14-24 s here, FHP's far longer."""
    device: str = "auto"
    """auto (cuda when torch sees one), cpu or cuda."""
    threads: int = 1
    """Torch intra-op threads on CPU (0 = all cores). One is fastest here: minibatches of 128-256 rows through a
    64-wide network are too small to split, and on a loaded 2-core machine two threads made
    self-play 14x slower (measured: 100 Kuhn steps 22.7 s with 2 threads, 1.6 s with 1)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_budget", parse_duration(self.time_budget))  # old runs: 0.0 = none
        worker_threads(self.threads)
        positive = ("steps", "num_envs", "width", "rl_capacity", "sl_capacity", "batch_size", "learn_every",
                    "updates_per_learn", "sl_updates_per_learn", "target_update_every", "eps_decay_steps", "eval_every", "checkpoint_every")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"nfsp config: {name} must be positive, got {getattr(self, name)}")
        if self.strength_every % self.eval_every:
            raise ConfigError(f"nfsp config: strength_every ({self.strength_every}) must be a multiple of eval_every ({self.eval_every})")
        StrengthSettings.of(self)
        if not 0.0 <= self.eta <= 1.0:
            raise ConfigError(f"nfsp config: eta must be in [0, 1], got {self.eta}")
        if self.eta_final != -1.0 and not 0.0 <= self.eta_final <= 1.0:
            raise ConfigError(f"nfsp config: eta_final must be in [0, 1] or -1 (constant eta), got {self.eta_final}")
        if self.eta_anneal_steps < 0 or (self.eta_final != -1.0 and self.eta_anneal_steps == 0):
            raise ConfigError("nfsp config: eta_final needs eta_anneal_steps > 0")
        if not 0.0 <= self.eps_start <= 1.0:
            raise ConfigError(f"nfsp config: eps_start must be in [0, 1], got {self.eps_start}")
        if self.sl_averaging not in ("uniform", "linear"):
            raise ConfigError(f"nfsp config: sl_averaging must be uniform or linear, got {self.sl_averaging!r}")
        if self.optimizer not in ("sgd", "adam"):
            raise ConfigError(f"nfsp config: optimizer must be sgd or adam, got {self.optimizer!r}")
        if self.q_loss not in ("mse", "huber"):
            raise ConfigError(f"nfsp config: q_loss must be mse or huber, got {self.q_loss!r}")
        if self.q_loss == "huber" and self.rl_full_batch:
            raise ConfigError("nfsp config: q_loss = huber needs minibatch Q steps (set rl_full_batch = false)")
        if self.rl_lr_decay_steps < 0:
            raise ConfigError(f"nfsp config: rl_lr_decay_steps must be >= 0, got {self.rl_lr_decay_steps}")
        if self.fused and (not runs_on_cpu(self.device) or self.optimizer != "sgd"
                           or not (self.sl_full_batch or self.rl_full_batch)):
            raise ConfigError("nfsp config: fused needs device = cpu, optimizer = sgd and an exact step "
                              "(sl_full_batch or rl_full_batch)")
        resolve_device(self.device)


#: NFSP paper, sec. 5.1 (Leduc): M_RL 200k circular, M_SL 2M reservoir, plain SGD at 0.1 (RL)
#: and 0.005 (SL), 2 updates of 128 per network every 128 steps, target refit every 300
#: updates, epsilon from 0.06 decaying to 0, eta 0.1 (all equal to the NFSPConfig defaults).
LEDUC_PAPER = {"steps": 200_000, "eval_every": 1_000, "checkpoint_every": 1_000}
#: Leduc tuned for wall clock on one CPU core; docs/benchmarks/nfsp-leduc.md has the four rounds of
#: measurements behind each setting. In short: exact full-batch SL and Q steps (no sampling noise;
#: SGD can then take larger rates) in the compiled kernels (``fused``), eta 0.5 annealed to 0.1
#: (more best-response rows early, less eta-mixture bias late), exploration from 0.03, width 32,
#: 4x larger batches and learning rounds, a 1M-transition M_RL (its per-(state, action) means
#: were Q's main error) and linear averaging in M_SL (the first minutes' poor best responses fade):
#: 37 mbb/g first reached after 1,189 s, seed 0.
LEDUC_TUNED = LEDUC_PAPER | {
    "sl_full_batch": True, "sl_updates_per_learn": 1, "sl_lr": 0.05, "eta": 0.5, "eps_start": 0.03, "width": 32,
    "num_envs": 512, "batch_size": 512, "learn_every": 512,
    "rl_full_batch": True, "updates_per_learn": 8, "target_update_every": 50, "fused": True,
    "rl_capacity": 1_000_000, "eta_final": 0.1, "eta_anneal_steps": 50_000, "sl_averaging": "linear",
}
#: NFSP paper, sec. 5.3 (limit Texas hold'em; FHP uses it too): M_RL 600k, M_SL 30M, SGD 0.1 / 0.01, 2 updates
#: of 256 every 256 steps, target refit every 1,000 updates, epsilon from 0.08, eta 0.1. The
#: network is the Deep CFR paper's (width 96 ~ its 98,948 parameters) instead of the NFSP
#: paper's 1024-512-1024-512 MLP, as in the Deep CFR paper's comparison (its footnote 4).
_HOLDEM = {
    "width": 96, "rl_capacity": 600_000, "sl_capacity": 30_000_000, "sl_lr": 0.01,
    "batch_size": 256, "learn_every": 256, "target_update_every": 1_000, "eps_start": 0.08,
    "eps_decay_steps": 10_000, "steps": 2_000_000, "eval_every": 1_000, "checkpoint_every": 10_000,
    # a strength signal every ~5 minutes of self-play here (1,000 steps: 20-65 s on one loaded core)
    "strength_every": 10_000, "strength_hands": 100,
}
PRESETS: dict[str, dict] = {
    # Kuhn: small networks and Adam so a laptop run converges in seconds (tests use it).
    "kuhn": {"width": 32, "num_envs": 64, "optimizer": "adam", "rl_lr": 1e-3, "sl_lr": 1e-3,
             "rl_capacity": 20_000, "sl_capacity": 200_000, "batch_size": 128, "learn_every": 64,
             "target_update_every": 100, "eps_decay_steps": 200, "steps": 3_000, "eval_every": 250,
             "checkpoint_every": 1_000, "sl_full_batch": True},
    "leduc": LEDUC_TUNED,
    "fhp": _HOLDEM,
    "holdem": _HOLDEM,
}

