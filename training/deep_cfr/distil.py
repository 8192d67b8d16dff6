"""``pokerbot train --algo distil``: an SD-CFR stack distilled into one average-strategy network.

SD-CFR plays its stack's exact average (Steinberger 2019), which beats the Deep CFR average
network trained beside it, but every range query (LBR, the board match's grids) runs every
entry at every own earlier decision: a 178-entry hold'em stack costs ~1 CPU-s a hand in LBR
where one network costs ~5 ms. Distillation (Hinton, Vinyals & Dean 2015; the FHP bot is the
lossless solve distilled the same way) fits one network of the Deep CFR architecture to the
stack's exact average: the result is an ordinary ``deep-cfr`` bundle that every command plays.

Two phases, one run directory:

1. **Samples**: :class:`~training.deep_cfr.stack_teacher.StackTeacher` plays ``hands_per_chunk``
   hands at a time (the stack's average mixed with ``exploration`` of uniform play) and keeps every
   decision with the exact average there as its target. Each chunk is a file of its own,
   ``samples/chunk_NNNNN.npz``, drawn from ``seed`` and its index alone, so a resumed run adds the
   missing chunks and nothing else.
2. **Fit**: Adam on the KL divergence from the target to the network's masked softmax (the
   average network's output), minibatches of ``batch_size`` from the training chunks (every
   ``held_out_every``-th chunk is held out), the learning rate on a cosine to 0 over ``steps``.
   Every ``eval_every`` steps a metrics line gives the held-out KL and the share of held-out
   infosets whose most likely action differs from the teacher's. The checkpoint holds the
   network, Adam's state and the step; step ``s``'s minibatch is drawn from ``(seed, s)``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from bot.agents.bundle import read_bundle, stack_root, write_bundle
from bot.agents.deep_cfr import DeepCFRBundle
from bot.agents.encoding import InfosetEncoder
from bot.agents.network import DeepCFRNetwork
from bot.errors import ConfigError
from bot.run_files import ELAPSED_METRIC, load_torch
from protocol.files import atomic_write, atomic_write_text, sha256_file
from protocol.gamedef import load_game
from training.contract.entry import (
    CheckpointClock,
    StopRequest,
    Trainer,
    parse_duration,
    worker_threads,
)
from training.contract.loop import StepLoop
from training.contract.rundir import Progress, RunDir, save_torch
from training.deep_cfr.stack_teacher import StackTeacher, TeacherSamples

AVERAGE_FILE = "average.pt"
#: The teacher's ``bundle.json`` sha256, written when the run starts.
TEACHER_FILE = "teacher.sha256"


@dataclass(frozen=True)
class DistilConfig:
    """A distillation run's settings; saved as its ``config.toml``."""

    game: str = "holdem"
    """The teacher's game (checked against its bundle)."""
    teacher: str = ""
    """An ``sd-cfr`` policy bundle (a Deep CFR run's ``policy/stack``) or a run directory holding one."""
    hands: int = 400_000
    """Hands the teacher plays; every decision of both seats is a sample (~6 a HULH hand)."""
    hands_per_chunk: int = 4096
    """Hands the teacher plays at once (one samples file)."""
    exploration: float = 0.1
    """Share of uniform play in the hands the samples come from (0: the stack's own play)."""
    held_out_every: int = 20
    """Every this-many-th chunk is held out of the fit and measures it."""
    width: int = 64
    """Hidden width of the student (the Deep CFR appendix C network)."""
    steps: int = 20_000
    """Adam steps."""
    batch_size: int = 4096
    learning_rate: float = 1e-3
    """Adam's initial rate (cosine to 0 over ``steps``)."""
    grad_clip: float = 1.0
    eval_every: int = 1000
    """Steps between metrics lines (held-out KL)."""
    time_budget: float | None = None
    """Seconds of the run's clock (sampling and fitting) before it stops and writes the policy."""
    seed: int = 0
    threads: int = 0
    """Torch CPU threads; 0 = all cores."""
    checkpoint_every: int = 2000
    checkpoint_seconds: float = 300.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_budget", parse_duration(self.time_budget, stored=True))
        if not self.teacher:
            raise ConfigError("--algo distil needs --teacher: an sd-cfr policy bundle (a Deep CFR run's policy/stack)")
        for name in ("hands", "hands_per_chunk", "held_out_every", "width", "steps", "batch_size", "eval_every",
                     "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.exploration < 1.0:
            raise ConfigError(f"exploration must be in [0, 1), got {self.exploration}")
        if not self.learning_rate > 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate}")
        worker_threads(self.threads)

    @property
    def chunks(self) -> int:
        """Sample files of the run (the last may hold fewer hands)."""
        return -(-self.hands // self.hands_per_chunk)


def teacher_bundle(path: str | Path, game: str) -> DeepCFRBundle:
    """The ``sd-cfr`` bundle at ``path`` (a bundle folder, an SD-CFR run, or a Deep CFR run's
    ``policy/stack``), trained on ``game``."""
    path = Path(path)
    root = stack_root(path)
    bundle = read_bundle(root if root is not None else path)
    if bundle.kind != "sd-cfr":
        raise ConfigError(f"{path}: a {bundle.kind} policy; --teacher needs an sd-cfr stack (a Deep CFR run's policy/stack)")
    if bundle.game.to_text() != load_game(game).to_text():
        raise ConfigError(f"--teacher {path} was trained on {bundle.game.name}, not {game}")
    return DeepCFRBundle.of(bundle)


class Distillation:
    """One run's state: the samples on disk, the student and its optimizer, the step reached."""

    def __init__(self, config: DistilConfig, run: RunDir) -> None:
        self.config = config
        self.run = run
        self.bundle = teacher_bundle(config.teacher, config.game)
        self.game = self.bundle.game
        self.check_teacher_unchanged()
        self.encoder = InfosetEncoder(self.game)
        torch.manual_seed(config.seed)
        architecture = self.bundle.architecture
        self.net = DeepCFRNetwork(self.encoder.group_sizes, self.encoder.num_bet_slots, config.width,
                                  canonical_suits=architecture.get("canonical_suits") is True)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.learning_rate)
        self.step = 0
        self.seconds = 0.0  # the run's clock: sampling and fitting, evaluations included

    def check_teacher_unchanged(self) -> None:
        """Record the teacher's manifest digest with the run's first samples; later sittings must
        find the same stack (a Deep CFR run resumed in between has more entries, and samples of
        two stacks would be mixed)."""
        digest = sha256_file(self.bundle.root / "bundle.json")
        record = self.run.path / TEACHER_FILE
        if not record.is_file():
            atomic_write_text(record, digest + "\n")
        elif record.read_text().strip() != digest:
            raise ConfigError(f"{self.config.teacher} has changed since this run drew its samples (its bundle.json "
                              f"digest differs from {record}): distil the new stack in a new run")

    @property
    def iteration(self) -> int:
        """The run contract's name for the step reached (Adam steps)."""
        return self.step

    # -- samples ---------------------------------------------------------------------------------

    def chunk_path(self, index: int) -> Path:
        return self.run.path / "samples" / f"chunk_{index:05d}.npz"

    def missing_chunks(self) -> list[int]:
        return [i for i in range(self.config.chunks) if not self.chunk_path(i).is_file()]

    def make_chunk(self, teacher: StackTeacher, index: int) -> None:
        """Chunk ``index``: its hands from ``(seed, index)``, written atomically."""
        cfg = self.config
        hands = min(cfg.hands_per_chunk, cfg.hands - index * cfg.hands_per_chunk)
        samples = teacher.play(hands, cfg.exploration, np.random.default_rng([cfg.seed, index]))
        atomic_write(self.chunk_path(index), lambda handle: np.savez(handle, **samples.arrays()))

    def load_samples(self) -> tuple[TeacherSamples, TeacherSamples]:
        """(training, held-out) samples from every chunk file (a damaged one is named)."""
        parts: tuple[list[TeacherSamples], list[TeacherSamples]] = ([], [])
        for index in range(self.config.chunks):
            path = self.chunk_path(index)
            try:
                with np.load(path) as data:
                    samples = TeacherSamples(data["cards"], data["node"], data["target"])
            except (OSError, ValueError, KeyError) as error:
                raise ConfigError(f"{path}: damaged samples file ({error}); delete it and --resume to draw it again") from None
            parts[index % self.config.held_out_every == 0].append(samples)
        return TeacherSamples.concatenate(parts[0]), TeacherSamples.concatenate(parts[1])

    # -- fit -----------------------------------------------------------------------------------

    def log_strategy(self, samples: TeacherSamples, rows: np.ndarray) -> torch.Tensor:
        """The student's log-probabilities ``[len(rows), 3]`` (-inf on illegal actions)."""
        node = samples.node[rows]
        legal = torch.from_numpy(self.encoder.legal[node])
        logits = self.net(torch.from_numpy(samples.cards[rows].astype(np.int64)), torch.from_numpy(self.encoder.bets[node]))
        return torch.log_softmax(logits.masked_fill(~legal, float("-inf")), dim=1)

    @staticmethod
    def kl(samples: TeacherSamples, rows: np.ndarray, log_p: torch.Tensor) -> torch.Tensor:
        """Mean KL divergence from the targets of ``rows`` to the strategy ``exp(log_p)``."""
        target = torch.from_numpy(samples.target[rows])
        terms = torch.where(target > 0, target * (torch.log(target.clamp(min=1e-30)) - log_p), torch.zeros_like(target))
        return terms.sum(dim=1).mean()

    def train_step(self, samples: TeacherSamples) -> float:
        cfg = self.config
        rows = np.random.default_rng([cfg.seed, 1, self.step]).integers(0, len(samples), cfg.batch_size)
        rate = float(cfg.learning_rate * 0.5 * (1.0 + np.cos(np.pi * self.step / cfg.steps)))
        for group in self.optimizer.param_groups:
            group["lr"] = rate
        loss = self.kl(samples, rows, self.log_strategy(samples, rows))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), cfg.grad_clip)
        self.optimizer.step()
        self.step += 1
        return float(loss.item())

    @torch.no_grad()
    def held_out(self, samples: TeacherSamples) -> dict[str, float]:
        """Held-out KL (nats) and the share of infosets whose most likely action differs."""
        if not len(samples):
            return {}
        self.net.eval()
        kl, differ = 0.0, 0
        for lo in range(0, len(samples), 65536):
            rows = np.arange(lo, min(lo + 65536, len(samples)))
            log_p = self.log_strategy(samples, rows)
            kl += float(self.kl(samples, rows, log_p)) * len(rows)
            student = log_p.argmax(dim=1).numpy()
            differ += int((student != samples.target[rows].argmax(axis=1)).sum())
        self.net.train()
        return {"held_out_kl": kl / len(samples), "held_out_argmax_differs": differ / len(samples)}

    # -- files ---------------------------------------------------------------------------------

    def save_checkpoint(self) -> None:
        with self.run.writing_checkpoint() as folder:
            save_torch(folder / "state.pt", {"net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                                             "step": self.step, "seconds": self.seconds})

    def load_checkpoint(self, folder: Path) -> None:
        state = load_torch(folder / "state.pt")
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.seconds = int(state["step"]), float(state["seconds"])

    def write_policy(self) -> None:
        """The student as a ``deep-cfr`` bundle (its average network), the teacher recorded."""
        policy = self.run.policy_path
        policy.mkdir(parents=True, exist_ok=True)
        save_torch(policy / AVERAGE_FILE, self.net.state_dict())
        teacher = {"path": str(Path(self.config.teacher).resolve()), "algorithm": "sd-cfr",
                   "entries": len(self.bundle.stack), "provenance": self.bundle.bundle.provenance}
        provenance = {"algorithm": "distil", "config": {k: v for k, v in asdict(self.config).items() if v is not None},
                      "seed": self.config.seed, "iterations": self.step, "teacher": teacher}
        write_bundle(policy, "deep-cfr", self.game, [AVERAGE_FILE], provenance, architecture=self.net.architecture(),
                     argmax_fallback=self.bundle.argmax_fallback, stack=[], average=AVERAGE_FILE)


def train(config: DistilConfig, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> Distillation:
    """Collect the missing sample chunks, then fit until ``steps``, the time budget or a stop."""
    torch.set_num_threads(worker_threads(config.threads))
    job = Distillation(config, run)
    if resume:
        checkpoint = run.resume_checkpoint(force)
        if checkpoint is not None:
            job.load_checkpoint(checkpoint)
        run.truncate_metrics(job.step)
    progress = Progress(-(-config.steps // config.eval_every), job.step // config.eval_every + 1, config.time_budget,
                        trained_seconds=job.seconds)
    loop = StepLoop(stop, config.steps, config.time_budget,
                    CheckpointClock(config.checkpoint_every, config.checkpoint_seconds), job.step if resume else None)
    try:
        missing = job.missing_chunks()
        if missing and loop.running(job.step, job.seconds):
            teacher = StackTeacher(job.bundle, job.encoder)
            progress.start_iteration(job.step // config.eval_every + 1, "teacher samples (chunks of hands)")
            for done, index in enumerate(missing):
                started = time.perf_counter()
                job.make_chunk(teacher, index)
                job.seconds += time.perf_counter() - started
                progress.advance_iteration(done + 1, len(missing))
                stop.check()
                if not loop.running(job.step, job.seconds):
                    break
        if job.missing_chunks():  # stopped while sampling: the chunks written so far stand
            return job
        training, held_out = job.load_samples()
        job.net.train()
        losses: list[float] = []
        shown = 0  # the period the progress display is on
        while loop.running(job.step, job.seconds):
            period = job.step // config.eval_every + 1
            if period != shown:
                progress.start_iteration(period, "fit (Adam steps)")
                shown = period
            started = time.perf_counter()
            losses.append(job.train_step(training))
            job.seconds += time.perf_counter() - started
            progress.advance_iteration(job.step - (period - 1) * config.eval_every, config.eval_every)
            if job.step % config.eval_every == 0 or job.step == config.steps:
                record = {"iteration": job.step, "train_kl": float(np.mean(losses)), **job.held_out(held_out),
                          "samples": len(training), ELAPSED_METRIC: round(job.seconds, 3)}
                losses = []
                run.append_metrics(record)
                progress.end_iteration(period, f"train KL {record['train_kl']:.4f}, held-out KL "
                                               f"{record.get('held_out_kl', float('nan')):.4f}")
            loop.checkpoint_if_due(job.step, job.save_checkpoint)
        loop.finish(job.step, job.save_checkpoint)
    finally:
        progress.close()
    job.write_policy()
    return job


def _check_teacher(values: dict, options: dict) -> dict:
    """Fail before the run directory exists when the teacher is not an sd-cfr stack of the game."""
    if values.get("teacher"):
        teacher_bundle(str(values["teacher"]), str(values.get("game", "holdem")))
    return values


#: ``--algo distil`` for :mod:`training.contract.entry` (``--iterations`` counts Adam steps).
TRAINERS = {"distil": Trainer(
    algo="distil", config_class=DistilConfig,
    flags={"game": "game", "teacher": "teacher", "iterations": "steps", "time_budget": "time_budget", "seed": "seed",
           "threads": "threads"},
    resumable=frozenset({"steps", "time_budget", "threads"}),
    presets={}, train=train, prepare=_check_teacher,
)}
