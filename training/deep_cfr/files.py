"""Deep CFR's and SD-CFR's files in a run directory: the policy bundle and the checkpoints.

:class:`RunFiles` is the part of :class:`training.deep_cfr.trainer.DeepCFRTrainer` that writes and reads
the run directory (:mod:`training.contract.rundir`'s layout): SD-CFR's value networks streamed into
``policy/stack/`` as each iteration trains them, ``policy/bundle.json`` (:mod:`bot.agents.bundle`, every
file with its sha256), and ``checkpoint/state.pt`` with the memories as incremental row files
(:mod:`training.deep_cfr.memory_log`), so a resumed run continues exactly where the killed one stood. It
reads and writes the trainer's state (``config``, ``run``, ``iteration``, ``elapsed``, ``nets``,
``optimizers``, ``stack``, ``digests``, the memories and ``average``) and calls its
``make_net``/``make_optimizer``/``refresh_strategy``; subclasses (DREAM) add state through
:meth:`RunFiles.extra_checkpoint_state`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from typing import TYPE_CHECKING, Any

import torch

from bot.agents.bundle import write_bundle
from bot.agents.stack_weights import stack_weight
from protocol.files import sha256_file
from training.common.reservoir import Reservoir
from training.contract.rundir import RunDirError, load_torch, save_torch
from training.deep_cfr.memory_log import MEMORY_DIR, MemoryLog

if TYPE_CHECKING:
    from bot.agents.deep_cfr import StackAverage
    from bot.agents.network import DeepCFRNetwork
    from protocol.gamedef import Game
    from training.contract.rundir import RunDir
    from training.deep_cfr.config import DeepCFRConfig


def config_dict(config: Any) -> dict:
    """The config as plain values (for the bundle's provenance)."""
    return {k: v for k, v in dataclasses.asdict(config).items() if v is not None}


class RunFiles:
    """The policy bundle and checkpoint methods of a Deep CFR trainer (a mixin over its state)."""

    config: DeepCFRConfig
    run: RunDir
    game: Game
    iteration: int
    elapsed: float
    stack: list[dict]
    digests: dict[str, str]
    nets: list[DeepCFRNetwork | None]
    optimizers: list[torch.optim.Optimizer | None]
    advantage: list[Reservoir]
    strategy_memory: Reservoir
    memory_logs: list[MemoryLog]
    average: StackAverage | None
    device: torch.device

    def save_stack_entry(self) -> None:
        """Stream this iteration's value networks to ``policy/stack/``: SD-CFR's policy, and in a
        Deep CFR run the SD-CFR policy of the same value networks (Steinberger 2019 compares the
        two on one run), a bundle of its own there (:meth:`write_stack_bundle`)."""
        t = self.iteration
        weight = stack_weight(t + 1, self.config.average_exponent) if self.config.linear_weighting else 1
        files = [f"stack/p{p}_t{t:06d}.pt" for p in (0, 1)]
        (self.run.policy_path / "stack").mkdir(parents=True, exist_ok=True)
        for p, file in enumerate(files):
            self._save_policy_file(file, self.nets[p].state_dict())
        self.stack.append({"weight": weight, "files": files, "iteration": t})
        if self.config.algo == "sd-cfr":
            self.write_manifest()
        else:
            self.write_stack_bundle()

    def write_stack_bundle(self) -> None:
        """A Deep CFR run's SD-CFR policy: an ``sd-cfr`` bundle at ``policy/stack/`` over the same
        value networks (its file names relative to that folder), so ``pokerbot match --agent
        RUN/policy/stack`` plays the paper's other policy of the run."""
        prefix = "stack/"
        stack = [entry if entry.get("uniform") else {**entry, "files": [f.removeprefix(prefix) for f in entry["files"]]}
                 for entry in self.stack]
        names = [f for entry in self.stack for f in entry.get("files", [])]
        write_bundle(self.run.policy_path / "stack", "sd-cfr", self.game,
                     {n.removeprefix(prefix): self.digest(n) for n in names}, {**self.provenance(), "algorithm": "sd-cfr"},
                     architecture=self.make_net().architecture(), argmax_fallback=self.config.argmax_fallback,
                     stack=stack)

    def _save_policy_file(self, relative: str, state: dict) -> None:
        save_torch(self.run.policy_path / relative, state)
        self.digests[relative] = sha256_file(self.run.policy_path / relative)

    def digest(self, relative: str) -> str:
        """The sha256 of a policy file, hashed when written (or now: a run resumed from a
        checkpoint written before checksums)."""
        if relative not in self.digests:
            self.digests[relative] = sha256_file(self.run.policy_path / relative)
        return self.digests[relative]

    def provenance(self) -> dict:
        """The bundle's record of how it was trained (subclasses name their own algorithm)."""
        return {"algorithm": self.config.algo, "config": config_dict(self.config), "seed": self.config.seed,
                "iterations": self.iteration}

    def write_manifest(self, average: str | None = None) -> None:
        """The policy bundle's ``bundle.json`` (:mod:`bot.agents.bundle`), naming the files written so far."""
        self.run.policy_path.mkdir(parents=True, exist_ok=True)
        stack = self.stack if self.config.algo == "sd-cfr" else []
        names = [f for entry in stack for f in entry.get("files", [])] + ([average] if average else [])
        write_bundle(self.run.policy_path, self.config.algo, self.game, {n: self.digest(n) for n in names}, self.provenance(),
                     architecture=self.make_net().architecture(), argmax_fallback=self.config.argmax_fallback,
                     stack=stack, average=average)

    @property
    def memories(self) -> list[Reservoir]:
        """The memories in the order of ``memory_logs``."""
        return [*self.advantage, self.strategy_memory][: len(self.memory_logs)]

    def save_checkpoint(self) -> None:
        """Networks, optimizers, counters and the SD-CFR average in ``checkpoint/``; memories as
        incremental row files (:mod:`training.deep_cfr.memory_log`) whose chains the state records."""
        chains = [log.checkpoint(memory, self.iteration) for log, memory in zip(self.memory_logs, self.memories, strict=True)]
        with self.run.writing_checkpoint() as folder:
            state: dict = {
                "iteration": self.iteration,
                "elapsed": self.elapsed,
                "memory_chains": json.dumps(chains),
                "stack": json.dumps(self.stack),
                "digests": json.dumps(self.digests),
                "memory_digests": json.dumps({f: d for log in self.memory_logs for f, d in log.digests.items()}),
                "nets": [None if n is None else n.state_dict() for n in self.nets],
                "optimizers": [None if o is None else o.state_dict() for o in self.optimizers],
            }
            if self.average is not None:
                state["average"] = {k: torch.from_numpy(v) for k, v in self.average.state().items()}
            tables = [m.listener.state() for m in self.memories if m.listener is not None]
            if tables:  # saved, not rebuilt on resume: a rebuild could round differently
                state["merged_tables"] = [{k: torch.from_numpy(v) for k, v in t.items()} for t in tables]
            state.update(self.extra_checkpoint_state())
            save_torch(folder / "state.pt", state)
        MemoryLog.prune(self.run.path / MEMORY_DIR, self.memory_logs)

    def drop_memories(self) -> None:
        """Delete ``memories/`` (a finished run that need not be extended: see ``keep_memories``)."""
        shutil.rmtree(self.run.path / MEMORY_DIR, ignore_errors=True)

    def extra_checkpoint_state(self) -> dict:
        """What a subclass adds to the checkpoint's state (tensors, lists, numbers)."""
        return {}

    def load_extra_checkpoint_state(self, state: dict) -> None:
        """Restore what :meth:`extra_checkpoint_state` saved."""

    def load_checkpoint(self, force: bool = False) -> None:
        """Restore the last verified checkpoint (or the previous one, announced); a run with
        progress but no usable checkpoint is an error unless ``force`` starts it over."""
        folder = self.run.resume_checkpoint(force)
        if folder is None:  # nothing to lose (killed before the first checkpoint), or --force
            MemoryLog.prune(self.run.path / MEMORY_DIR, [])
            self.run.truncate_metrics(0)
            return
        state = load_torch(folder / "state.pt")
        memory_digests = json.loads(state.get("memory_digests", "{}"))
        chains = json.loads(state["memory_chains"])
        if any(chains) and not (self.run.path / MEMORY_DIR).is_dir():
            if not self.config.keep_memories:
                raise RunDirError(f"{self.run.path}: this run finished and dropped its memories (keep_memories = false), "
                                  "so it cannot be extended; start a new run with keep_memories = true in a --config file")
            raise RunDirError(f"{self.run.path / MEMORY_DIR} is missing (keep_memories = true, so it was deleted outside "
                              f"pokerbot): the checkpoint needs those memories, so the run cannot be extended; start "
                              f"a new run with --out")
        for log, memory, chain in zip(self.memory_logs, self.memories, chains, strict=True):
            log.restore(memory, chain, memory_digests)
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
        self.digests = json.loads(state.get("digests", "{}"))
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
        self.load_extra_checkpoint_state(state)
        if self.config.algo == "sd-cfr":
            self.write_manifest()  # drop stack entries of the iteration the kill interrupted
        self.run.truncate_metrics(self.iteration)
