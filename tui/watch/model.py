"""What the watch panels show, derived from a :class:`~tui.watch.reader.RunReader`.

:class:`WatchModel` turns polled files into per-iteration views: metric records by iteration,
and for Kuhn and Leduc the networks' advantages at every infoset, the exact targets
(:class:`~tui.watch.exact.ExactHistory`, from the SD-CFR stack) and the memory's mean targets
from the latest checkpoint. Loading the stack's networks is the slow part (Leduc: a few
hundred small files), so :meth:`WatchModel.load_stack` runs in a worker thread and only
appends; the panels read whatever has been appended so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tui.watch.exact import Advantages, ExactHistory, network_advantages, regret_matching_exact
from tui.watch.reader import CFR_KINDS, RunReader

SMALL_GAMES = ("kuhn", "leduc")


@dataclass(frozen=True)
class Infoset:
    """One row of the advantage table at one iteration."""

    index: int
    key: str
    player: int
    legal: np.ndarray
    cards: list[int]
    bets: list[float]
    advantages: Advantages | None
    row: int
    scale: float | None
    """Chips per network output unit (``target_scale_p<player>``), None if not logged."""
    exact: np.ndarray | None
    exact_strategy: np.ndarray | None
    memory_mean: np.ndarray | None
    """The memory's weighted mean target (chips), when the checkpoint is this iteration's."""


class WatchModel:
    """Records, status and (small games) network analysis of one run."""

    def __init__(self, reader: RunReader) -> None:
        self.reader = reader
        self.kind = reader.kind
        self.config = reader.config
        self.game = None
        self.batch = None
        self.history: ExactHistory | None = None
        #: Stack entry k >= 1 (index k - 1): the networks' :class:`Advantages`.
        self.entry_advantages: list[Advantages] = []
        self.checkpoint_advantages: tuple[int, Advantages] | None = None
        self.memory_means: tuple[int, list[np.ndarray]] | None = None
        self.stack_error: str | None = None
        #: Stack entries the bundle listed at the last look (the title shows loading progress).
        self.listed_entries = 0
        self._by_iteration: tuple[int, dict[int, dict]] = (-1, {})
        self._exact_strategies: dict[int, np.ndarray] = {}
        game_name = str(self.config.get("game", ""))
        if self.kind in CFR_KINDS and game_name.split(".")[0] in SMALL_GAMES:
            import torch

            from bot.agents.deep_cfr import InfosetBatch
            from protocol.gamedef import load_game

            # One thread: these networks are tiny, and a second thread on a busy machine (a
            # trainer next door) made each forward pass 10x slower, as in training's presets.
            torch.set_num_threads(1)
            self.game = load_game(game_name)
            self.batch = InfosetBatch(self.game)
            if self.kind == "sd-cfr":  # DREAM's targets are another estimator; Deep CFR keeps no stack
                self.history = ExactHistory(self.game, bool(self.config.get("linear_weighting", True)))

    # -- polling --------------------------------------------------------------------------------

    def poll(self) -> bool:
        """Read what is new; True when anything changed."""
        changed = bool(self.reader.poll_metrics())
        # only small games use the checkpoint (NFSP's holds whole replay memories: not read)
        if self.small and self.reader.poll_checkpoint():
            changed = True
            self._read_checkpoint()
        return changed

    @property
    def records(self) -> list[dict]:
        return self.reader.records

    @property
    def iterations(self) -> list[int]:
        return sorted({int(r["iteration"]) for r in self.records})

    def record(self, iteration: int) -> dict:
        """Every metrics line of ``iteration`` merged (Deep CFR's final average line included)."""
        if self._by_iteration[0] != len(self.records):
            merged: dict[int, dict] = {}
            for record in self.records:
                merged.setdefault(int(record["iteration"]), {}).update(record)
            self._by_iteration = (len(self.records), merged)
        return self._by_iteration[1].get(iteration, {})

    # -- networks -------------------------------------------------------------------------------

    @cached_property
    def tree(self):
        """The game's betting tree (for drawing traversals)."""
        if self.batch is not None:
            return self.batch.space.tree
        from protocol.betting_tree import BettingTree
        from protocol.gamedef import load_game

        return BettingTree.build(load_game(str(self.config["game"])))

    @property
    def small(self) -> bool:
        return self.batch is not None

    def pending_entries(self) -> list[dict]:
        """Stack entries listed by the bundle that the history has not taken yet."""
        if self.history is None:
            return []
        listed = self.reader.bundle_stack()
        self.listed_entries = len(listed)
        return listed[self.history.entries:]

    def load_stack(self) -> int:
        """Take every pending stack entry into the history (worker thread); entries taken."""
        from bot.agents.bundle import BundleError
        from bot.agents.deep_cfr import DeepCFRBundle

        entries = self.pending_entries()
        if not entries:
            return 0
        try:
            bundle = DeepCFRBundle.load(self.reader.path)
        except BundleError as error:
            self.stack_error = str(error)
            return 0
        taken = 0
        for entry in entries:
            if entry.get("uniform"):
                self.history.add_entry(self.batch.space.uniform_strategy(), float(entry["weight"]))
            else:
                try:
                    nets = tuple(bundle.network(f) for f in entry["files"])
                except BundleError as error:  # a file being replaced: the next poll retries
                    self.stack_error = str(error)
                    break
                advantages = network_advantages(self.batch, nets, bundle.argmax_fallback)
                self.entry_advantages.append(advantages)  # first: a reader of entries finds it
                self.history.add_entry(advantages.strategy, float(entry["weight"]))
            taken += 1
        return taken

    def _read_checkpoint(self) -> None:
        """Deep CFR's only networks, and every run's merged memory tables, from the checkpoint."""
        if not self.small or self.reader.checkpoint is None:
            return
        from bot.agents.input_keys import InputKeys
        from bot.agents.network import DeepCFRNetwork

        checkpoint = self.reader.checkpoint
        state = checkpoint.state
        nets = state.get("nets") or []
        if self.kind != "sd-cfr" and len(nets) == 2 and all(n is not None for n in nets):
            encoder = self.batch.encoder
            width = int(self.config.get("width", 64))
            pair = []
            for weights in nets:
                net = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, width,
                                     canonical_suits=self.config.get("canonical_suits") is True)
                try:
                    net.load_state_dict(weights)
                except RuntimeError as error:  # a network of another shape (another algorithm)
                    self.stack_error = f"checkpoint networks: {str(error).splitlines()[0]}"
                    return
                pair.append(net.eval())
            fallback = bool(self.config.get("argmax_fallback", True))
            self.checkpoint_advantages = (checkpoint.iteration, network_advantages(self.batch, tuple(pair), fallback))
        tables = state.get("merged_tables") or []
        if len(tables) >= 2:
            keys = InputKeys.for_encoder(self.batch.encoder).keys(self.batch.space.node, self.batch.cards.numpy())
            means = []
            for table in tables[:2]:
                weight = table["weight"].numpy()[keys]
                total = table["weighted_target"].numpy()[keys]
                with np.errstate(invalid="ignore", divide="ignore"):
                    means.append(np.where(weight[:, None] > 0, total / weight[:, None], np.nan))
            self.memory_means = (checkpoint.iteration, means)

    def advantages_at(self, iteration: int) -> tuple[int, Advantages] | None:
        """(iteration shown, advantages): the stack entry of ``iteration`` (SD-CFR), else the
        checkpoint's networks (Deep CFR / DREAM keep only the latest)."""
        if self.history is not None:
            if 1 <= iteration <= len(self.entry_advantages):
                return iteration, self.entry_advantages[iteration - 1]
            return None
        return self.checkpoint_advantages

    def exact_at(self, iteration: int) -> np.ndarray | None:
        if self.history is None or not 1 <= iteration <= len(self.history.targets):
            return None
        return self.history.targets[iteration - 1]

    def average_history(self) -> list[np.ndarray]:
        """SD-CFR average strategy after each stack entry (index = iteration)."""
        return [] if self.history is None else self.history.averages

    def exact_strategy_at(self, iteration: int) -> np.ndarray | None:
        """Regret matching on the exact targets of ``iteration`` (cached: targets never change)."""
        exact = self.exact_at(iteration)
        if exact is None:
            return None
        if iteration not in self._exact_strategies:
            fallback = bool(self.config.get("argmax_fallback", True))
            self._exact_strategies[iteration] = regret_matching_exact(exact, self.batch.space.legal, fallback)
        return self._exact_strategies[iteration]

    def version(self) -> tuple:
        """Changes whenever anything a panel shows may have changed."""
        checkpoint = self.reader.checkpoint.iteration if self.reader.checkpoint else None
        entries = self.history.entries if self.history is not None else 0
        return len(self.records), entries, checkpoint

    def infoset(self, index: int, iteration: int) -> Infoset:
        """Everything the table row and the walkthrough show for one infoset."""
        batch = self.batch
        space = batch.space
        found = self.advantages_at(iteration)
        shown = found[0] if found else iteration
        player = int(space.player[index])
        scale = self.record(shown).get(f"target_scale_p{player}")
        exact = self.exact_at(iteration)
        legal = space.legal[index]
        exact_row = exact[index] if exact is not None else None
        exact_strategy = self.exact_strategy_at(iteration)
        exact_strategy = exact_strategy[index] if exact_strategy is not None else None
        memory = None
        if self.memory_means is not None and self.memory_means[0] == iteration:
            memory = self.memory_means[1][player][index]
        return Infoset(index, space.keys[index], player, legal, batch.cards[index].tolist(),
                       batch.bets[index].tolist(), found[1] if found else None, shown,
                       None if scale is None else float(scale), exact_row, exact_strategy, memory)
