"""The exact curve of an FHP SD-CFR run, measured beside it on another core.

Why: a run that measures itself (``evaluate_every`` > 0) stops training while it does, and on
FHP the measurement is not small: every network of the stack is read once over the 1,755
canonical flops (~9 CPU-s each at width 64) and each evaluation adds a best response, so on a
2-core machine two hours of training took ~3.5 hours of wall clock. Trained with
``evaluate_every = 0`` on one core, the run leaves the other to ``pokerbot exploit RUN
--follow``, which waits for the stack to reach every ``every``-th iteration and measures the
SD-CFR average of the stack up to it, exactly as the trainer would (the same incremental
numerators, :class:`training.flop.evaluation.FlopRunEvaluation`, kept in their own folder).

Records go to ``RUN/evaluation-follow/curve.jsonl``, one line an evaluation: the iteration, the
run's training clock at it (``elapsed_s`` from ``metrics.jsonl``), the exploitability and the
evaluation's own wall seconds, and a digest of the stack entries it averaged. ``--average-exponent`` measures the average under
other weightings of the same networks beside the linear one (iteration t weighted ``t^e``; keys
``sdcfr_t2_exploitability_mbb`` and so on), reading each network once for all of them. The follower can be
stopped and started again at any time: it goes on after the last record. If the run was resumed
from a checkpoint older than some records (the entries after it trained again, so their files
changed), those records are dropped and the numerators rebuilt, announced. It stops when the run
is no longer being trained (nobody holds its lock) and the last iteration is measured.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bot.agents.bundle import stack_root
from bot.agents.deep_cfr import DeepCFRBundle
from bot.errors import PokerbotError
from bot.flop.best_response import Progress
from bot.flop.game import flop_shape_error
from bot.flop.network_policies import stack_nets
from bot.run_files import parse_metrics, read_toml
from protocol.files import atomic_write_text
from protocol.gamedef import Game
from training.contract.lock import is_held
from training.flop.evaluation import FlopRunEvaluation, exploitability_key, weights_name

FOLDER = "evaluation-follow"
CURVE = "curve.jsonl"


class FollowError(PokerbotError, ValueError):
    """A run the follower cannot measure (one line for the user)."""


def stack_written(run: Path) -> bool:
    """Whether the run has written its policy bundle (an SD-CFR family run does after its first iteration)."""
    return (run / "policy" / "bundle.json").exists()


def wait_for_stack(run: Path, poll: float, running: Callable[[], bool] | None = None) -> None:
    """Return once the run has written its stack, or once nobody trains it any more (then
    :func:`stack_bundle` says why there is nothing to read). Why: a follower started beside a run
    that was launched a moment ago would otherwise fail before the run's first iteration."""
    running = running or (lambda: is_held(run))
    while not stack_written(run) and running():
        time.sleep(poll)


def stack_bundle(run: Path) -> DeepCFRBundle:
    """The run's SD-CFR stack: ``policy/`` of an sd-cfr run, ``policy/stack`` of a Deep CFR one."""
    if not stack_written(run):
        raise FollowError(f"{run}: no policy/bundle.json yet (an SD-CFR family run writes it after its first iteration)")
    bundle = DeepCFRBundle.load(stack_root(run))
    if bundle.kind != "sd-cfr":
        raise FollowError(f"{run}: a {bundle.kind} policy has no SD-CFR stack to follow")
    return bundle


def prefix_digests(bundle: DeepCFRBundle) -> list[str]:
    """``digests[t]``: a digest of the stack's first ``t + 1`` entries' weights and network files
    (name, size, modification time), one pass over the stack; it changes when a resume trains one
    of those iterations again."""
    digest, digests = hashlib.sha1(), []
    for entry in bundle.stack:
        digest.update(repr(entry.get("weight")).encode())
        for name in entry.get("files", ()):
            stat = (bundle.root / name).stat()
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        digests.append(digest.hexdigest())
    return digests


class RunFollower:
    """Measures one run's SD-CFR average at every ``every``-th iteration (module docstring)."""

    def __init__(self, run: Path, every: int, game: Game, device: str = "cpu", log: Callable[[str], None] = print,
                 exponents: Sequence[float] = (1.0,)) -> None:
        self.run, self.every, self.log = Path(run), every, log
        if flop_shape_error(game) is not None:
            raise FollowError(f"{run}: --follow measures flop hold'em-shaped runs (FHP); {game.name} is not one")
        config = read_toml(self.run / "config.toml")
        self.evaluation = FlopRunEvaluation(game, self.run, bool(config.get("canonical_suits", False)),
                                            bool(config.get("argmax_fallback", True)), device, FOLDER, exponents)
        self.curve_path = self.run / FOLDER / CURVE
        self.curve = parse_metrics(self.curve_path) if self.curve_path.exists() else []

    def _write_curve(self) -> None:
        self.curve_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.curve_path, "".join(json.dumps(record) + "\n" for record in self.curve))

    def _drop_stale(self, digests: list[str]) -> None:
        """Records whose stack entries changed since (or are gone) are dropped, numerators rebuilt;
        so are records that lack a weighting asked for now (measured again under all of them)."""
        kept = [r for r in self.curve if r["iteration"] < len(digests) and r["stack_digest"] == digests[r["iteration"]]]
        if len(kept) < len(self.curve):
            first = self.curve[len(kept)]["iteration"]
            self._drop_from(len(kept), f"the stack changed from iteration {first} on (a resume trained it again): "
                            f"dropping {len(self.curve) - len(kept)} record(s) and rebuilding the numerators")
        keys = [exploitability_key(e) for e in self.evaluation.exponents]
        complete = next((i for i, r in enumerate(self.curve) if not all(k in r for k in keys)), len(self.curve))
        if complete < len(self.curve):
            self._drop_from(complete, f"{len(self.curve) - complete} record(s) from iteration "
                            f"{self.curve[complete]['iteration']} on lack a weighting asked for: measuring them again")

    def _drop_from(self, index: int, why: str) -> None:
        """Keep the curve's first ``index`` records (saying ``why``); the numerators are rebuilt."""
        self.log(f"{self.run}: {why}")
        self.curve = self.curve[:index]
        self.evaluation.forget()
        self._write_curve()

    def _training_clock(self, iteration: int) -> float | None:
        path = self.run / "metrics.jsonl"
        records = parse_metrics(path) if path.exists() else []
        return next((r.get("elapsed_s") for r in records if r.get("iteration") == iteration), None)

    def step(self, running: bool, progress: Progress | None = None) -> bool:
        """Measure the next due iteration if the stack has it (or, once training has stopped,
        the last one); False when there is nothing to do now."""
        bundle = stack_bundle(self.run)
        digests = prefix_digests(bundle)  # before reading the networks: a file rewritten meanwhile shows next time
        self._drop_stale(digests)
        done = len(bundle.stack) - 1
        last = self.curve[-1]["iteration"] if self.curve else 0
        due = last + self.every - last % self.every
        if due > done and (running or done <= last):
            return False
        target = min(due, done)
        clock = self._training_clock(target)
        if clock is None and running:
            return False  # the network is on disk before the iteration's metrics line: wait for its clock
        record = {"iteration": target, "elapsed_s": clock}
        record.update(self.evaluation.evaluate(bundle.stack[: target + 1], lambda entry: stack_nets(bundle, entry), progress))
        record["stack_digest"] = digests[target]
        self.curve.append(record)
        self._write_curve()
        figures = ", ".join(f"{record[exploitability_key(e)]:.2f} mbb/g ({weights_name(e)})"
                            for e in self.evaluation.exponents)
        self.log(f"iteration {target}: {figures} (exact, NashConv/2), measured in {record['flop_evaluation_s']:.0f} s")
        return True

    def follow(self, poll: float, running: Callable[[], bool] | None = None, progress: Progress | None = None) -> int:
        """Measure until the run stops being trained and its last iteration is measured; the
        number of records written."""
        running = running or (lambda: is_held(self.run))
        written = 0
        while True:
            live = running()  # asked before reading the stack, so a run that ends meanwhile is read again
            if self.step(live, progress):
                written += 1
            elif not live:
                return written
            else:
                time.sleep(poll)
