"""Deep CFR (Brown et al. 2019, algorithm 1) and Single Deep CFR (Steinberger 2019).

One loop serves both (``algo``): each iteration ``t`` and each player ``p`` in turn runs ``K``
external-sampling traversals (:mod:`training.deep_cfr.traversal`, batched), adds the sampled instantaneous
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
(:class:`bot.agents.deep_cfr.StackAverage`) and its exploitability logged; Deep CFR's average
network is evaluated whenever it is trained. Flop hold'em-shaped games too large for that
(FHP) are measured exactly per flop every ``evaluate_every`` iterations, off the training clock
(:mod:`training.flop.evaluation`). Both algorithms log the SD-CFR average of their value
networks, so one Deep CFR run gives both of the SD-CFR paper's curves.

Randomness: every random draw of iteration ``t``/player ``p`` comes from a named stream
(:class:`~training.deep_cfr.streams.Stream`) seeded by ``(seed, t, p, stream)``, so a resumed run repeats exactly what the
killed one would have done.

The run follows :mod:`training.contract.entry`'s contract (config resolution, Ctrl-C, checkpoints by
count or time); the config is :mod:`training.deep_cfr.config`, the network fits
:mod:`training.deep_cfr.fit`, the policy bundle (kind ``sd-cfr``/``deep-cfr``) and checkpoints
:mod:`training.deep_cfr.files`. What remains here is the algorithm: one class over one state (the memories, networks, stack
and small-game tables of a run) with the iteration and the loop that change it, which one module
keeps together.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from bot.agents.base import Agent
from bot.agents.deep_cfr import InfosetBatch, StackAverage
from bot.agents.encoding import InfosetEncoder
from bot.agents.infosets import is_small
from bot.agents.input_keys import InputKeys
from bot.agents.network import DeepCFRNetwork, regret_matching
from bot.errors import ConfigError
from bot.flop.game import FlopGame, flop_shape_error
from bot.registry import resolve_agent
from bot.run_files import ELAPSED_METRIC
from bot.threads import use_threads
from protocol.gamedef import Game, load_game
from training.common.reservoir import FieldSpec, Reservoir
from training.contract import cluster as distributed
from training.contract import plots
from training.contract.entry import (
    CheckpointClock,
    StepAbandoned,
    StopRequest,
    Trainer,
    resolve_device,
)
from training.contract.loop import StepLoop
from training.contract.rundir import Progress, RunDir, load_torch
from training.contract.stop import BUDGET_REACHED
from training.contract.strength import (
    StrengthSettings,
    measure_strength,
    strength_reference,
    strength_summary,
)
from training.deep_cfr.board_targets import BoardTargets
from training.deep_cfr.config import ALGOS, PRESETS, DeepCFRConfig
from training.deep_cfr.files import RunFiles
from training.deep_cfr.fit import NetworkFit
from training.deep_cfr.memory_log import MEMORY_DIR, MemoryLog
from training.deep_cfr.merged_memory import MergedTable
from training.deep_cfr.runout_targets import RunoutTargets, runout_shape_error
from training.deep_cfr.streams import Stream
from training.deep_cfr.traversal import TraversalResult, deal_batch, traverse
from training.flop.evaluation import FlopRunEvaluation

if TYPE_CHECKING:
    from training.deep_cfr.ray_traversal import RayTraversals


class DeepCFRTrainer(RunFiles):
    """The training loop over a run directory (create with :meth:`new` or :meth:`resume`); its
    policy bundle and checkpoints are :class:`training.deep_cfr.files.RunFiles`'."""

    #: The config dataclass of the run directory's ``config.toml`` (subclasses extend it).
    config_class: type = DeepCFRConfig

    def __init__(self, config: DeepCFRConfig, run: RunDir, progress: bool = True) -> None:
        self.config = config
        self.run = run
        self.show_progress = progress
        self.game: Game = load_game(config.game)
        self.encoder = InfosetEncoder(self.game)
        self.device = torch.device(resolve_device(config.device))
        use_threads(config.threads)
        fields = self.memory_fields()
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
        self.fit = NetworkFit(config, self.encoder, self.device, self.input_keys)
        self.bets, self.legal = self.fit.bets, self.fit.legal
        self.nets: list[DeepCFRNetwork | None] = [None, None]
        self.optimizers: list[torch.optim.Optimizer | None] = [None, None]
        self.iteration = 0
        self.elapsed = 0.0
        self.strength = StrengthSettings.of(config)
        #: resolved once, so a reference this game lacks fails before the first iteration
        self.strength_reference = strength_reference(self.strength, self.game)
        enumerable = is_small(self.game)
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
        #: Flop hold'em-shaped games too large to enumerate: the exact SD-CFR average per flop.
        self.flop_evaluation: FlopRunEvaluation | None = None
        if not enumerable and config.evaluate_every > 0 and flop_shape_error(self.game) is None:
            self.flop_evaluation = FlopRunEvaluation(self.game, run.path, config.canonical_suits, config.argmax_fallback,
                                                     str(self.device))
        self.stack: list[dict] = [{"weight": 1, "uniform": True}]
        #: Ray traversal workers (``--workers N``/``--ray-address``); None: traverse in-process.
        self.traversal_pool: RayTraversals | None = None
        #: ``targets = "board"``: exact targets over every hand of sampled flops.
        self.board_targets = self._board_targets() if config.targets == "board" else None
        #: sha256 of every policy file written, by name relative to ``policy/``.
        self.digests: dict[str, str] = {}

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def new(cls, config: DeepCFRConfig, out: str | Path, progress: bool = True) -> DeepCFRTrainer:
        """A new run directory (the benchmarks' and tests' entry; the CLI goes through
        :func:`training.contract.entry.run_from_cli`)."""
        return cls.start(config, RunDir.create(out, config, algo=config.algo), progress)

    @classmethod
    def start(cls, config: DeepCFRConfig, run: RunDir, progress: bool = True) -> DeepCFRTrainer:
        trainer = cls(config, run, progress)
        print(f"{config.algo} on {trainer.game.name}: network {trainer.make_net().num_parameters():,} parameters, "
              f"{trainer.advantage[0].bytes_per_sample} bytes per stored sample, device {trainer.device}")
        return trainer

    @classmethod
    def resume(cls, path: str | Path, progress: bool = True, force: bool = False) -> DeepCFRTrainer:
        """Continue a run with its saved config."""
        run = RunDir.open(path)
        return cls.continue_run(cls.config_class(**run.config()), run, progress, force)

    @classmethod
    def continue_run(cls, config: DeepCFRConfig, run: RunDir, progress: bool = True, force: bool = False) -> DeepCFRTrainer:
        trainer = cls(config, run, progress)
        trainer.load_checkpoint(force)
        return trainer

    def _board_targets(self) -> BoardTargets | RunoutTargets:
        """The board sampler (a flop game: flops, :mod:`~training.deep_cfr.board_targets`; a
        game with later rounds: whole boards, :mod:`~training.deep_cfr.runout_targets`), or a
        one-line error where this run cannot use one."""
        if type(self).collect_samples is not DeepCFRTrainer.collect_samples:
            raise ConfigError(f"targets = board is for deep-cfr and sd-cfr; {type(self).__name__} samples its own way")
        if flop_shape_error(self.game) is None:
            fg = FlopGame.build(self.game, canonical=self.config.canonical_suits)
            return BoardTargets(fg, self.encoder, self.config.rows_per_board, self.config.argmax_fallback, str(self.device))
        problem = runout_shape_error(self.game)
        if problem is not None:
            raise ConfigError(f"targets = board needs a hold'em-shaped game; {self.game.name} {problem}")
        return RunoutTargets(self.game, self.encoder, self.config.rows_per_board, self.config.argmax_fallback)

    def memory_fields(self) -> FieldSpec:
        """The rows of the advantage and strategy memories (subclasses may add fields)."""
        return {"node": ((), np.int32), "cards": ((self.encoder.num_card_slots,), np.int8),
                "target": ((3,), np.float32), "iteration": ((), np.int32)}

    def make_net(self) -> DeepCFRNetwork:
        return DeepCFRNetwork(self.encoder.group_sizes, self.encoder.num_bet_slots, self.config.width, self.config.canonical_suits)

    def make_optimizer(self, net: DeepCFRNetwork) -> torch.optim.Optimizer:
        """Adam (paper: lr 0.001). ``fused``: one kernel per step instead of ~5 ops per parameter
        tensor; on the small Leduc network that is ~0.7 ms of a ~4 ms step (same update rule)."""
        return torch.optim.Adam(net.parameters(), lr=self.config.learning_rate, fused=True)

    def rng(self, iteration: int, player: int, stream: Stream) -> np.random.Generator:
        return np.random.default_rng([self.config.seed, iteration, player, int(stream)])

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

    def train_value_net(self, player: int, steps: int) -> tuple[float, str]:
        """Fit ``player``'s value network on its advantage memory for ``steps`` Adam steps; (tail
        loss, batch form)."""
        cfg = self.config
        torch.manual_seed(int(self.rng(self.iteration, player, Stream.VALUE_INIT).integers(2**62)))
        if cfg.from_scratch or self.nets[player] is None:
            net = self.make_net().to(self.device)
            optimizer = self.make_optimizer(net)
        else:
            net, optimizer = self.nets[player], self.optimizers[player]
        fitted = self.fit.fit(net, optimizer, self.advantage[player], steps, cfg.batch_size,
                              self.rng(self.iteration, player, Stream.VALUE_BATCHES), average=False, iteration=self.iteration,
                              label=f"iteration {self.iteration}: SGD p{player}")
        self.nets[player], self.optimizers[player] = net, optimizer
        return fitted

    def train_average_net(self) -> tuple[DeepCFRNetwork, float, str]:
        cfg = self.config
        torch.manual_seed(int(self.rng(self.iteration, 2, Stream.AVERAGE_INIT).integers(2**62)))
        net = self.make_net().to(self.device)
        optimizer = self.make_optimizer(net)
        loss, form = self.fit.fit(net, optimizer, self.strategy_memory, cfg.average_sgd_steps, cfg.average_batch_size,
                                  self.rng(self.iteration, 2, Stream.AVERAGE_BATCHES), average=True, iteration=self.iteration,
                                  label="average network SGD")
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
            self.run.write_status(t, f"traversing p{player}")
            evaluated += self.collect_samples(player, progress, record)
            traversal_s += time.perf_counter() - started
            started = time.perf_counter()
            self.run.write_status(t, f"fitting p{player}")
            steps = record[f"sgd_steps_p{player}"] = cfg.value_fit_steps(len(self.advantage[player]))
            record[f"loss_p{player}"], record[f"batch_form_p{player}"] = self.train_value_net(player, steps)
            record[f"target_scale_p{player}"] = self.fit.target_scale
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
        self.run.write_status(t, "evaluating")
        if self.average is not None:
            self.accumulate_average()
            if t % cfg.evaluate_every == 0:
                record.update(self.evaluate_stack())
        elif self.flop_evaluation is not None and t % cfg.evaluate_every == 0:
            self.run.write_status(t, "exact FHP evaluation (off the training clock)")
            record.update(self.flop_evaluation.evaluate(self.stack, self.stack_nets, lambda done, total: progress.advance_iteration(
                done, total, f"iteration {t}: exact FHP evaluation (flops; off the training clock)")))
        if cfg.algo == "deep-cfr" and cfg.average_every and t % cfg.average_every == 0:
            average = self.finish_average()
            if "flop_evaluation_s" in record:  # the stack's evaluation too: both stay off the clock
                average["flop_evaluation_s"] = average.get("flop_evaluation_s", 0.0) + record["flop_evaluation_s"]
            record.update(average)
        record["traversal_s"] = traversal_s
        record["training_s"] = training_s
        record.update(self.fit.provenance())
        record["evaluation_s"] = time.perf_counter() - started
        record.update(self.traversal_pool.metrics() if self.traversal_pool is not None else {})
        return record

    def collect_samples(self, player: int, progress: Progress, record: dict) -> int:
        """Run this iteration's ``K`` external-sampling traversals of ``player`` into the
        memories (algorithm 2); returns the infosets evaluated. Subclasses sample differently
        (outcome sampling, :mod:`training.deep_cfr.dream`) and may add metrics to ``record``."""
        cfg, t = self.config, self.iteration
        reservoir_rng = self.rng(t, player, Stream.RESERVOIR)
        evaluated = 0
        example = None
        total = cfg.boards if self.board_targets is not None else cfg.traversals
        unit = "boards" if self.board_targets is not None else "traversals"
        for result, done in self.traversal_results(player):
            for rows, memory in ((result.advantage, self.advantage[player]), (result.strategy, self.strategy_memory)):
                if memory is self.strategy_memory and not self.keeps_strategy_memory:
                    continue
                rows["iteration"] = np.full(len(rows["node"]), t, dtype=np.int32)
                memory.add(rows, reservoir_rng)
            evaluated += result.infosets_evaluated
            example = example or result.example
            progress.advance_iteration(done, total, f"iteration {t}: {unit} p{player}")
        if example is not None:  # the iteration's first traversal, drawn by ``pokerbot watch``
            record[f"traversal_p{player}"] = example
        return evaluated

    def traversal_results(self, player: int) -> Iterator[tuple[TraversalResult, int]]:
        """This iteration's K traversals for ``player``: each batch's memory inserts and the
        traversals done so far; on Ray workers when :attr:`traversal_pool` is set
        (:mod:`training.deep_cfr.ray_traversal`), else here in batches of ``traversal_batch``."""
        if self.traversal_pool is not None:
            yield from self.traversal_pool.results(self, player)
            return
        cfg, t = self.config, self.iteration
        rng = self.rng(t, player, Stream.TRAVERSAL)
        if self.board_targets is not None:
            yield from self.board_targets.results((self.nets[0], self.nets[1]), player, cfg.boards, cfg.board_batch, rng,
                                                  self.keeps_strategy_memory)
            return
        done = 0
        while done < cfg.traversals:
            if self.fit.stop is not None:
                self.fit.stop.check()  # a stop request or the time budget may abandon the iteration
            n = min(cfg.traversal_batch, cfg.traversals - done)
            done += n
            yield traverse(self.encoder, deal_batch(self.encoder, n, rng), player, self.strategy_fn, rng), done

    def accumulate_average(self) -> None:
        """Add this iteration's networks to the exact SD-CFR average (small games)."""
        assert self.average is not None and self.batch is not None
        weight = float(self.stack[-1]["weight"])
        self.average.add(self.current_strategy.copy(), weight)

    def stack_nets(self, entry: dict) -> tuple[DeepCFRNetwork | None, DeepCFRNetwork | None]:
        """One stack entry's value networks, read back from ``policy/stack/`` (None: uniform)."""
        if entry.get("uniform"):
            return None, None
        nets = []
        for file in entry["files"]:
            net = self.make_net()
            net.load_state_dict(load_torch(self.run.policy_path / file))
            nets.append(net.eval())
        return nets[0], nets[1]

    def refresh_strategy(self, player: int) -> None:
        """Recompute ``player``'s rows of :attr:`current_strategy` from its network (small games)."""
        if self.current_strategy is None or self.nets[player] is None:
            return
        net = self.nets[player]
        rows = self.batch.player == player
        self.current_strategy[rows] = self.batch.strategy((net, net), argmax_fallback=self.config.argmax_fallback)[rows]

    def strength_agent(self) -> Agent:
        """The policy so far as an agent: the SD-CFR stack on disk (in a Deep CFR run, the same
        value networks' bundle at ``policy/stack``: the run's SD-CFR policy)."""
        bundle = self.run.policy_path if self.config.algo == "sd-cfr" else self.run.policy_path / "stack"
        return resolve_agent(str(bundle), self.game)

    def measure(self, record: dict) -> None:
        """The strength signal (off the training clock) of the SD-CFR policy, and of Deep CFR's
        average network when this iteration refitted it (keys ``average_h2h_mbb`` ...)."""
        self.run.write_status(self.iteration, "measuring strength")
        record.update(measure_strength(self.game, self.strength_agent(), self.strength_reference, self.strength))
        if "average_loss" in record:
            self.measure_average(record)

    def measure_average(self, record: dict) -> None:
        """Deep CFR's average network (the policy on disk) against the strength reference."""
        average = resolve_agent(str(self.run.policy_path), self.game)
        measured = measure_strength(self.game, average, self.strength_reference, self.strength)
        record.update({f"average_{key}": value for key, value in measured.items()})

    def evaluate_stack(self) -> dict:
        """Exact exploitability of the SD-CFR average so far."""
        from bot.evaluation.best_response import exploitability

        assert self.average is not None
        report = exploitability(self.game, self.average.strategy())
        return {"sdcfr_exploitability_mbb": report.mbb(report.exploitability)}

    def finish_average(self) -> dict:
        """Deep CFR: fit the average-strategy network, save it as the policy, measure it."""
        net, loss, form = self.train_average_net()
        self.run.policy_path.mkdir(parents=True, exist_ok=True)
        self._save_policy_file("average.pt", net.cpu().state_dict())
        net.to(self.device)
        record: dict = {"average_loss": loss, "average_batch_form": form}
        if self.small:
            from bot.evaluation.best_response import exploitability

            report = exploitability(self.game, self.batch.strategy(net, kind="average"))
            record["average_exploitability_mbb"] = report.mbb(report.exploitability)
        elif self.flop_evaluation is not None:
            record.update(self.flop_evaluation.evaluate_average(net))
        self.write_manifest(average="average.pt")
        return record

    # -- the loop ---------------------------------------------------------------------------------

    def timed_checkpoint(self) -> None:
        """A checkpoint whose wall time counts in the training clock (it shows in the next line)."""
        started = time.perf_counter()
        self.run.write_status(self.iteration, "checkpointing")
        self.save_checkpoint()
        self.elapsed += time.perf_counter() - started

    def train(self, stop: StopRequest | None = None) -> list[dict]:
        """Run until ``iterations``, the time budget or a stop request (:class:`StopRequest`: the
        iteration in progress finishes and is checkpointed, or is abandoned by
        :class:`~training.contract.entry.StepAbandoned` when it runs on past the grace period); returns
        this session's records."""
        cfg = self.config
        progress = (Progress(cfg.iterations, self.iteration + 1, cfg.time_budget, trained_seconds=self.elapsed)
                    if self.show_progress else _Silent())
        loop = StepLoop(stop or StopRequest(), cfg.iterations, cfg.time_budget,
                        CheckpointClock(cfg.checkpoint_every, cfg.checkpoint_seconds), self.iteration)
        records = []
        self.fit.progress, self.fit.stop = progress, stop
        closer = self  # the trainer whose state the closing fit reads
        try:
            try:
                while loop.running(self.iteration, self.elapsed):
                    if stop is not None and cfg.time_budget is not None:
                        stop.budget_ends(cfg.time_budget - self.elapsed)
                    started = time.perf_counter()
                    progress.start_iteration(self.iteration + 1)
                    record = self.run_iteration(progress)
                    self.elapsed += time.perf_counter() - started - record.get("flop_evaluation_s", 0.0)  # off the clock
                    record[ELAPSED_METRIC] = self.elapsed
                    if self.strength.due(self.iteration):  # off the training clock
                        self.measure(record)
                    self.run.append_metrics(record)  # first: a resume drops lines past the checkpoint
                    records.append(record)
                    if self.iteration >= cfg.iterations or loop.stop.requested:
                        loop.checkpoint(self.iteration, self.timed_checkpoint)
                    else:
                        loop.checkpoint_if_due(self.iteration, self.timed_checkpoint)
                    progress.end_iteration(self.iteration, _summary(record))
                loop.finish(self.iteration, self.timed_checkpoint)  # the time budget ended between checkpoints
            except StepAbandoned as abandoned:
                if abandoned.reason != BUDGET_REACHED or cfg.algo != "deep-cfr" or self.run.checkpoint_path is None:
                    raise
                # the budget ended inside an iteration: its rows are half in the memories, so the
                # closing fit runs on the last checkpoint's state, as a --resume would
                print(f"{abandoned.reason} inside iteration {self.iteration}: it is abandoned; the closing fit uses "
                      "the last checkpoint", file=sys.stderr)  # fmt: skip
                closer = type(self).continue_run(cfg, self.run, progress=False)
                # the restore cut metrics.jsonl back to the checkpoint: so are the records returned
                records = [r for r in records if r["iteration"] <= closer.iteration]
            records.extend(closer.close_average(stop))
        finally:
            progress.close()
            self.fit.progress = self.fit.stop = None
        self.plot()
        return records

    def close_average(self, stop: StopRequest | None) -> list[dict]:
        """The end of a run: Deep CFR's closing average-network fit (the policy; not training
        time, so the budget no longer applies), then the run marked finished."""
        records = []
        if self.config.algo == "deep-cfr" and self.iteration > 0:
            if stop is not None:
                stop.budget_ends(float("inf"))
            self.run.write_status(self.iteration, "fitting the average network")
            final = self.finish_average()
            if self.strength.every:
                self.measure_average(final)
            self.run.append_metrics({"iteration": self.iteration, "final": True, **final})
            records.append(final)
        self.run.write_status(self.iteration, "finished")
        return records

    def plot(self) -> None:
        """The run's curves: exact exploitability where measured, the strength signal always."""
        cfg = self.config
        if self.small or self.flop_evaluation is not None:
            plot_exploitability(self.run)
        plots.plot_strength(self.run.path / "strength.png", self.run.read_metrics(), ELAPSED_METRIC, "wall-clock seconds (training)",
                            title=f"{cfg.algo} on {self.game.name}")  # fmt: skip


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
    strength = strength_summary(record)
    return ", ".join(parts + [strength] if strength else parts)


def plot_exploitability(run: RunDir) -> Path | None:
    """``exploitability.png``: exact exploitability (mbb/g, NashConv/2) against wall time."""
    records = [r for r in run.read_metrics() if ELAPSED_METRIC in r]
    curves = {label: ([r[ELAPSED_METRIC] for r in records if key in r], [r[key] for r in records if key in r])
              for key, label in (("sdcfr_exploitability_mbb", "SD-CFR average (exact)"),
                                 ("average_exploitability_mbb", "Deep CFR average network"))}
    curves = {label: xy for label, xy in curves.items() if xy[0]}
    if not curves:
        return None
    return plots.plot_exploitability(run.path / "exploitability.png", [("wall-clock seconds (training)", curves)])


def _train(config: DeepCFRConfig, run: RunDir, resume: bool, stop: StopRequest, force: bool = False) -> DeepCFRTrainer:
    """The contract's entry (:func:`training.contract.entry.run_from_cli`)."""
    trainer = DeepCFRTrainer.continue_run(config, run, force=force) if resume else DeepCFRTrainer.start(config, run)
    if distributed.current().distributed:
        if config.targets == "board":
            raise ConfigError("targets = board runs in this process: drop --workers/--ray-address")
        from training.deep_cfr.ray_traversal import RayTraversals

        trainer.traversal_pool = RayTraversals(trainer, distributed.current())
    trainer.train(stop)
    if not config.keep_memories and not stop.requested:
        trainer.drop_memories()
        print(f"dropped {run.path / MEMORY_DIR} (keep_memories = false: the run cannot be extended)")
    return trainer


def _with_algo(algo: str):
    def prepare(values: dict, options: dict) -> dict:
        if options.get("traversals") is not None and values.get("targets") == "board":
            raise ConfigError(f"--traversals counts external-sampling traversals, but this run's targets are exact per "
                              f"sampled flop (targets = \"board\", {values.get('boards', DeepCFRConfig.boards)} boards a player an "
                              f"iteration): set boards in a --config file, or targets = \"sampled\" there to traverse")
        return values | {"algo": algo}

    return prepare


#: ``--algo deep-cfr`` and ``--algo sd-cfr`` for :mod:`training.contract.entry`.
TRAINERS = {
    algo: Trainer(
        algo=algo, config_class=DeepCFRConfig,
        flags={"game": "game", "iterations": "iterations", "traversals": "traversals", "time_budget": "time_budget",
               "seed": "seed", "device": "device", "threads": "threads"},
        resumable=frozenset({"iterations", "time_budget", "device", "threads"}),
        presets=PRESETS, train=_train, prepare=_with_algo(algo),
        cpu_only={"fit_backend": ("fused", "torch")},
    )
    for algo in ALGOS
}
