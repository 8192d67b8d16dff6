"""Exact exploitability of an SD-CFR run in flop hold'em while it trains (off its clock).

The SD-CFR average (Steinberger 2019; :mod:`bot.flop.network_policies`) is a ratio of sums over
the stack's entries, and the stack only grows, so the numerators are kept between evaluations
and each evaluation adds only the entries trained since the last one, in the same pass over the
flops as the best response (:func:`bot.flop.best_response.flop_exploitability`). They live in
the run directory's ``evaluation/``: ``flop_numerator.f32`` (a float32 memory map ``[flops, flop
decision nodes, hands, 3]``; FHP on the 1,755 canonical flops of a ``canonical_suits`` run: 1.56
GB on disk, paged in one best-response chunk at a time), ``preflop_numerator.npy`` and
``state.json`` (how many stack entries they hold). An evaluation interrupted half-way, or a
resume from a checkpoint older than the last evaluation, leaves numerators that match no stack:
``state.json`` says so and the next evaluation rebuilds them from the whole stack (announced).
Where the numerators would exceed :data:`MAX_STORED_BYTES` (FHP on all 22,100 raw flops: 19.7
GB), every evaluation walks the whole stack instead. A Deep CFR run's average network is
measured the same way whenever it is fitted (:meth:`FlopRunEvaluation.evaluate_average`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bot.agents.network import DeepCFRNetwork
from bot.evaluation.best_response import ExploitabilityReport
from bot.flop.best_response import FlopPolicy, Progress, flop_exploitability, flop_game_for
from bot.flop.network_policies import FlopStackAverage, NetPair, NetworkGrid, network_policy
from protocol.files import atomic_write_text
from protocol.gamedef import Game

#: Largest numerator file kept between evaluations.
MAX_STORED_BYTES = 4 << 30
FOLDER = "evaluation"


def weighting_tag(exponent: float) -> str:
    """The suffix of a weighting's metric keys and numerator files: ``""`` for the linear
    weights (exponent 1, the keys every earlier run wrote), ``"_t2"`` for ``t^2``."""
    return "" if exponent == 1.0 else f"_t{exponent:g}"


def exploitability_key(exponent: float) -> str:
    """The metrics key of the average's exploitability under weights ``t^exponent``."""
    return f"sdcfr{weighting_tag(exponent)}_exploitability_mbb"


def weights_name(exponent: float) -> str:
    """How a weighting reads in a log line: ``weights t``, ``weights t^2``."""
    return "weights t" if exponent == 1.0 else f"weights t^{exponent:g}"


class FlopRunEvaluation:
    """The incremental exact SD-CFR average of one run (see the module docstring), under one or
    more weightings of its entries: ``exponents`` e weight iteration t by ``t^e`` (1: linear
    CFR's weights, Steinberger's average; 2: DCFR's average weighting, Brown & Sandholm 2019),
    the networks read once for all of them."""

    def __init__(self, game: Game, run_path: Path, canonical: bool, argmax_fallback: bool, device: str = "cpu",
                 folder: str = FOLDER, exponents: Sequence[float] = (1.0,)) -> None:
        self.fg = flop_game_for(game, canonical)
        self.grid = NetworkGrid(self.fg, device)
        self.argmax_fallback = argmax_fallback
        self.exponents = tuple(float(e) for e in exponents)
        if not self.exponents or len(set(self.exponents)) < len(self.exponents):
            raise ValueError(f"weighting exponents {list(self.exponents)}: give at least one, each once")
        self.folder = Path(run_path) / folder
        fg = self.fg
        self.shape = (fg.num_flops, fg.flop.num_decisions, fg.num_hands, 3)
        self.stored = int(np.prod(self.shape)) * 4 <= MAX_STORED_BYTES

    def _state(self) -> dict:
        try:
            return json.loads((self.folder / "state.json").read_text())
        except (OSError, ValueError):
            return {"entries": 0}

    def _write_state(self, state: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.folder / "state.json", json.dumps(dict(state, exponents=list(self.exponents))))

    def forget(self) -> None:
        """Drop the stored numerators' claim on any stack: the next evaluation rebuilds them
        (the stack entries they summed were trained again)."""
        if (self.folder / "state.json").exists():
            self._write_state({"entries": 0})

    def evaluate(self, stack: list[dict], nets_of: Callable[[dict], NetPair], progress: Progress | None = None) -> dict:
        """Exact exploitability of the average of ``stack`` under each weighting (entries as the
        bundle lists them; ``nets_of`` loads one entry's networks): metrics for the run's
        ``metrics.jsonl``. ``progress(flops done, flops)`` follows each pass."""
        started = time.perf_counter()
        state = self._state()
        held = int(state.get("entries", 0)) if self.stored else 0
        stored_exponents = [float(e) for e in state.get("exponents", [1.0])]
        if self.stored and held and stored_exponents != list(self.exponents):
            print(f"{self.folder}: the stored SD-CFR numerators were summed under other weightings "
                  f"({', '.join(weights_name(e) for e in stored_exponents)}): rebuilding them from the whole stack")
            held = 0
        elif self.stored and ("updating_to" in state or held > len(stack)):
            print(f"{self.folder}: the stored SD-CFR numerators match no stack (interrupted evaluation or an "
                  "older checkpoint): rebuilding them from the whole stack")
            held = 0
        average = FlopStackAverage(self.grid, self.argmax_fallback, self.exponents)
        for entry in stack[held:]:
            average.add(float(entry["weight"]), nets_of(entry))
        suit_invariant = average.suit_invariant if average.entries else True
        if self.fg.canonical and not suit_invariant:
            raise ValueError("a run evaluated on canonical flops must have suit-canonical networks")
        reports = self._best_responses(average, held, len(stack), progress)
        metrics: dict = {}
        for exponent, report in zip(self.exponents, reports, strict=True):
            metrics[exploitability_key(exponent)] = report.mbb(report.exploitability)
            metrics[f"sdcfr{weighting_tag(exponent)}_nashconv_mbb"] = report.mbb(report.nash_conv)
        metrics.update(flop_evaluation_s=time.perf_counter() - started, flop_evaluation_flops=self.fg.num_flops)
        return metrics

    def evaluate_average(self, net: DeepCFRNetwork) -> dict:
        """Deep CFR: exact exploitability of the average-strategy network (read at both seats)."""
        started = time.perf_counter()
        fg = self.fg if net.canonical_suits or not self.fg.canonical else flop_game_for(self.fg.game, False)
        report = flop_exploitability(fg, network_policy(fg, (net, net), "average", device=str(self.grid.device)))
        return {"average_exploitability_mbb": report.mbb(report.exploitability),
                "average_nashconv_mbb": report.mbb(report.nash_conv),
                "flop_evaluation_s": time.perf_counter() - started, "flop_evaluation_flops": fg.num_flops}

    def _best_responses(self, average: FlopStackAverage, held: int, total: int,
                        progress: Progress | None) -> list[ExploitabilityReport]:
        """One best response a weighting. With stored numerators the first pass adds the new
        entries to every weighting's numerators (their networks read once) and the others read
        theirs back; otherwise every pass sums its weighting over the whole stack."""
        if not self.stored:
            return [flop_exploitability(self.fg, average.policy(k), progress) for k in range(len(self.exponents))]
        self.folder.mkdir(parents=True, exist_ok=True)
        fresh = held == 0
        numerators, preflops = [], []
        for exponent, preflop in zip(self.exponents, average.preflops, strict=True):
            tag = weighting_tag(exponent)
            numerators.append(np.memmap(self.folder / f"flop_numerator{tag}.f32", dtype=np.float32,
                                        mode="w+" if fresh else "r+", shape=self.shape))
            preflops.append(preflop + (0.0 if fresh else np.load(self.folder / f"preflop_numerator{tag}.npy")))
        self._write_state({"entries": held, "updating_to": total})

        def updated(lo: int, hi: int) -> np.ndarray:
            chunks = [np.zeros(n[lo:hi].shape, np.float32) if fresh else np.array(n[lo:hi]) for n in numerators]
            average.flop_numerators(lo, hi, outs=chunks)
            for numerator, chunk in zip(numerators, chunks, strict=True):
                numerator[lo:hi] = chunk
            return chunks[0]

        reports = []
        for k, preflop in enumerate(preflops):
            tables = updated if k == 0 else (lambda lo, hi, n=numerators[k]: np.array(n[lo:hi]))
            reports.append(flop_exploitability(self.fg, FlopPolicy(preflop.astype(np.float32), tables, self.fg.canonical),
                                               progress))
        for exponent, numerator, preflop in zip(self.exponents, numerators, preflops, strict=True):
            numerator.flush()
            np.save(self.folder / f"preflop_numerator{weighting_tag(exponent)}.npy", preflop)
        self._write_state({"entries": total})
        return reports
