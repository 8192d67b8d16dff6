"""Why an FHP SD-CFR curve flattens: each iteration's value networks against their exact targets.

For an SD-CFR run on a flop hold'em game, replays its trajectory: at every iteration ``t`` the
exact linear-CFR cumulative regrets ``R_p^t`` of the profiles the trainer traversed
(:mod:`training.deep_cfr.exact_targets`, full-width passes), and at every ``--every``-th the fit
error of each player's network of ``t``: the sampling-density-weighted L1 distance between its
regret matching and regret matching on ``R_p^t`` (0: a perfect fit; 2: disjoint), preflop and
flop, and the share of infosets whose most likely actions differ. Beside it, the run's exact
exploitability (its own, or its follower's). A fit error that grows while the curve flattens says
the fits are the limit (more Adam steps, width, or variance-reduced targets); one that stays small
says the sampled trajectory itself is (more traversals).

``--oracle-at T`` separates the two halves of a fit error at iteration T: fresh networks of the
run's architecture, fitted with the run's own fit (its Adam steps at T, batch, schedule) on as many
rows as its memory held, but rows drawn without noise (each infoset in the memory's proportions,
with its exact mean target ``R_p^T / D_p^T``). Their fit error is what this network and fit can do
with perfect rows; the run's network's, beside it, adds the memory's noise.
``--oracle-fits w64,w128,w64-s4x,w64-r4x`` fits several widths and step counts on the same exact rows,
and on more of them (``-r4x``: four times the rows, so more of the flop's infosets are seen): is what
is left with perfect rows the network's size, the fit's length or the memory's coverage?

    nice python benchmarks/bench_fhp_fit_error.py                         # 24-card FHP, three candidates
    nice python benchmarks/bench_fhp_fit_error.py --candidates w64-s300,w64-s1200 --iterations 20 --every 5
    nice python benchmarks/bench_fhp_fit_error.py --run RUN --every 10    # an existing run (FHP: ~4 network
                                                                          # evaluations an iteration)
    nice python benchmarks/bench_fhp_fit_error.py --run RUN --follow --oracle-at 45,60   # beside a live run
    nice python benchmarks/bench_fhp_fit_error.py --run RUN --oracle-at 45 --oracle-fits w64,w128,w64-s4x,w64-r4x
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.bench_cfr_leduc import machine  # noqa: E402
from benchmarks.bench_fhp24_presets import CANDIDATES  # noqa: E402
from benchmarks.bench_fit_speed import fhp24  # noqa: E402
from bot.agents.encoding import InfosetEncoder  # noqa: E402
from bot.agents.input_keys import InputKeys  # noqa: E402
from bot.agents.network import DeepCFRNetwork  # noqa: E402
from bot.errors import PokerbotError  # noqa: E402
from bot.flop.best_response import flop_game_for  # noqa: E402
from bot.flop.network_policies import network_policy, stack_nets  # noqa: E402
from bot.run_files import parse_metrics, read_toml  # noqa: E402
from training.common.reservoir import Reservoir  # noqa: E402
from training.contract.lock import is_held  # noqa: E402
from training.deep_cfr.config import PRESETS, SAMPLED, DeepCFRConfig  # noqa: E402
from training.deep_cfr.exact_targets import ExactRegrets  # noqa: E402
from training.deep_cfr.fit import NetworkFit  # noqa: E402
from training.deep_cfr.trainer import DeepCFRTrainer  # noqa: E402
from training.flop.evaluation import FlopRunEvaluation  # noqa: E402
from training.flop.follow import CURVE, FOLDER, prefix_digests, stack_bundle, wait_for_stack  # noqa: E402

#: bench_fhp24_presets.py's candidates and, over ``w64-s300`` (the preset with 1,000
#: traversals), four times its Adam steps (is the fit the limit?) or four times its traversals
#: (is the sampling? ``w64-k4000``, the preset since).
FIT_CANDIDATES = CANDIDATES | {"w64-s1200": {"width": 64, "sgd_steps": 1200, "traversals": 1000},
                               "w64-k4000": {"traversals": 4000}}


#: ``--oracle-fits`` entries: ``w<width>``, optionally ``-r<k>x`` (k times the rows the run's memory
#: held: does covering more infosets help?) and ``-s<k>x`` (k times the run's Adam steps).
ORACLE_FIT = re.compile(r"w(\d+)(?:-r(\d+)x)?(?:-s(\d+)x)?")


class Replay:
    """Replays a run's trajectory one iteration at a time (so a live run can be followed): the
    exact targets of each iteration, and every ``every``-th a table row of the networks' fit
    error and the run's exact exploitability where something measured it (``exploitability(t)``).
    At ``oracle_at``, also the fit error of fresh networks fitted on noise-free rows
    (:meth:`ExactRegrets.oracle_rows`), one pair per ``(width, row factor, step factor)`` of ``oracle_fits``
    (``oracle``: fits one, see :func:`run_oracle`)."""

    def __init__(self, game, config: dict, every: int, exploitability, oracle_at: set[int] = frozenset(), oracle=None,
                 oracle_fits: list[tuple[int, int, int]] = ()) -> None:
        self.fallback = bool(config.get("argmax_fallback", True))
        self.linear = bool(config.get("linear_weighting", True))
        self.fg = flop_game_for(game, bool(config.get("canonical_suits", False)))
        self.targets = ExactRegrets(self.fg)
        self.every, self.exploitability = every, exploitability
        self.oracle_at, self.oracle, self.oracle_fits = oracle_at, oracle, oracle_fits
        self.previous = (None, None)  # the networks of iteration t - 1 (uniform sigma^1 before any)
        self.t = 0
        self.started = time.process_time()
        print("| iteration | p0 preflop / flop L1 | p1 preflop / flop L1 | argmax differs (p0 / p1) | exact mbb/g | replay CPU-s |\n"
              "|---|---|---|---|---|---|", flush=True)

    def profile(self, p0, p1):
        return network_policy(self.fg, (p0, p1), "value", self.fallback)

    def advance(self, nets) -> None:
        """Iteration ``t + 1``, whose networks are ``nets`` (p0, p1): the trainer's alternation."""
        self.t += 1
        t, weight = self.t, float(self.t if self.linear else 1)
        self.targets.add(weight, 0, self.profile(*self.previous))
        self.targets.add(weight, 1, self.profile(nets[0], self.previous[1]))
        self.previous = nets
        if t % self.every == 0:
            self.report(f"{t}", self.profile(*nets))
        if t in self.oracle_at:
            rows = {}  # each player's exact rows per row factor, drawn once for every fit
            for width, row_factor, step_factor in self.oracle_fits:
                fitted = [self.oracle(self.targets, t, p, width, row_factor, step_factor, rows) for p in (0, 1)]
                self.report(f"{t}, width {width}, {row_factor}x the rows, {step_factor}x the steps, on exact rows",
                            self.profile(*fitted))

    def report(self, label: str, profile) -> None:
        errors = [self.targets.fit_error(p, profile) for p in (0, 1)]
        mbb = self.exploitability(self.t)
        print(f"| {label} | {errors[0]['preflop_l1']:.3f} / {errors[0]['flop_l1']:.3f} | "
              f"{errors[1]['preflop_l1']:.3f} / {errors[1]['flop_l1']:.3f} | "
              f"{errors[0]['all_argmax_differs']:.3f} / {errors[1]['all_argmax_differs']:.3f} | "
              f"{'-' if mbb is None else f'{mbb:.2f}'} | {time.process_time() - self.started:.0f} |", flush=True)


def run_oracle(run: Path, game, config: dict):
    """``oracle(targets, t, p, width, row_factor, step_factor, rows)``: a fresh network of ``width``
    fitted with ``run``'s fit (schedule, batch, normalisation; ``step_factor`` times the Adam steps
    its own fit of ``t`` took) on ``row_factor`` times as many exact rows as its memory held at
    ``t`` (``metrics.jsonl``); ``rows`` caches each player's rows of one row factor at a time."""
    cfg = DeepCFRConfig(**config)
    encoder = InfosetEncoder(game)
    keys = InputKeys.for_encoder(encoder)
    fit = NetworkFit(cfg, encoder, torch.device("cpu"), keys)

    def oracle(targets: ExactRegrets, t: int, player: int, width: int, row_factor: int, step_factor: int,
               rows: dict) -> DeepCFRNetwork:
        record = next(r for r in parse_metrics(run / "metrics.jsonl") if r["iteration"] == t)
        if rows.get(player, (None,))[0] != row_factor:  # one row factor held at a time (4x: 64M rows a player)
            rows.pop(player, None)
            count = row_factor * min(cfg.advantage_memory, int(record[f"advantage_samples_p{player}"]))
            drawn = targets.oracle_rows(player, count, encoder, t, np.random.default_rng(player))
            memory = Reservoir(count, {k: (v.shape[1:], v.dtype) for k, v in drawn.items()})
            memory.add(drawn, np.random.default_rng(0))
            distinct = len(np.unique(keys.keys(drawn["node"], drawn["cards"])))
            rows[player] = (row_factor, memory, distinct)
        _, memory, distinct = rows[player]
        torch.manual_seed(player)
        net = DeepCFRNetwork(encoder.group_sizes, encoder.num_bet_slots, width, cfg.canonical_suits)
        steps = step_factor * int(record[f"sgd_steps_p{player}"])
        started = time.process_time()
        loss, _ = fit.fit(net, torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, fused=True), memory, steps,
                          cfg.batch_size, np.random.default_rng(1), average=False, iteration=t)
        print(f"(iteration {t}, player {player}: a fresh width-{width} network fitted on {len(memory):,} exact rows ({distinct:,} distinct inputs), "
              f"{steps:,} Adam steps, loss {loss:.4f} against the run's {record[f'loss_p{player}']:.4f}, "
              f"{time.process_time() - started:.0f} CPU-s)", flush=True)
        return net

    return oracle


def followed_exploitability(run: Path):
    """``t -> mbb/g``: the run's exact SD-CFR exploitability at t, from its own ``metrics.jsonl`` or
    its follower's curve (``pokerbot exploit RUN --follow``), read when asked; None if unmeasured."""
    def lookup(t: int) -> float | None:
        for path in (run / "metrics.jsonl", run / FOLDER / CURVE):
            records = parse_metrics(path) if path.exists() else []
            found = next((r["sdcfr_exploitability_mbb"] for r in records
                          if r.get("iteration") == t and "sdcfr_exploitability_mbb" in r), None)
            if found is not None:
                return found
        return None

    return lookup


def replay_run(run: Path, every: int, follow: bool, oracle_at: set[int], oracle_fits: list[tuple[int, int, int]],
               poll_s: float = 60.0) -> None:
    """Replay ``run`` read-only; with ``follow``, wait for the iterations it goes on to train while
    it holds its lock (a run started a moment ago is waited for until its first iteration writes the
    stack). A replayed iteration whose files a resume rewrites is an error (its exact targets are
    already summed)."""
    if follow:
        wait_for_stack(run, poll_s)
    bundle = stack_bundle(run)
    config = read_toml(run / "config.toml")
    print(f"{run}: {bundle.kind}, width {config.get('width')}, {len(bundle.stack) - 1} iterations so far")
    replay = Replay(bundle.game, config, every, followed_exploitability(run), oracle_at,
                    run_oracle(run, bundle.game, config), oracle_fits)
    digests: list[str] = []
    while True:
        running = is_held(run)  # before reading the stack: a run that stops meanwhile is read once more
        bundle = stack_bundle(run)
        now = prefix_digests(bundle)
        changed = [t for t, digest in enumerate(digests) if t >= len(now) or now[t] != digest]
        if changed:
            raise SystemExit(f"{run}: iteration {changed[0]} was trained again (a resume from an older "
                             "checkpoint); replay again from the start")
        for t in range(replay.t + 1, len(bundle.stack)):
            replay.advance(stack_nets(bundle, bundle.stack[t]))
        digests = now
        if not (follow and running):
            return
        time.sleep(poll_s)


def run_fits(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--run``: the ``--oracle-fits`` entries checked (an argparse error names a bad one), then the replay."""
    names = [f for f in args.oracle_fits.split(",") if f] or [f"w{read_toml(Path(args.run) / 'config.toml')['width']}"]
    matches = [ORACLE_FIT.fullmatch(f) for f in names]
    bad = [f for f, m in zip(names, matches, strict=True) if m is None]
    if bad:
        parser.error(f"--oracle-fits: {', '.join(bad)} is not w<width>[-r<k>x][-s<k>x] (e.g. w128, w64-s4x, w64-r4x)")
    fits = [(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)) for m in matches]
    replay_run(Path(args.run), args.every, args.follow, {int(t) for t in args.oracle_at.split(",") if t}, fits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="an existing SD-CFR run on a flop game (its memories are not needed)")
    parser.add_argument("--candidates", default="w64-s300,w64-s1200,w64-k4000", help=f"new 24-card FHP runs ({', '.join(FIT_CANDIDATES)})")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--follow", action="store_true", help="with --run: go on with the iterations a live run trains")
    parser.add_argument("--oracle-at", default="", help="with --run: iterations (comma-separated) at which fresh "
                        "networks are also fitted on exact rows (is the limit the rows or the network?)")
    parser.add_argument("--oracle-fits", default="", help="with --oracle-at: the fits on exact rows, e.g. w64,w128,w64-s4x,w64-r4x "
                        "(width, times the run's rows, times its Adam steps; default: the run's width, rows and steps)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.run:  # read-only: the bundle and config.toml (a live run keeps training)
        try:
            run_fits(parser, args)
        except PokerbotError as error:  # a missing or unreadable run: one line
            parser.exit(1, f"error: {error}\n")
        print(f"machine: {machine()}")
        return
    unknown = [n for n in args.candidates.split(",") if n not in FIT_CANDIDATES]
    if unknown:
        parser.error(f"unknown candidate(s) {', '.join(unknown)}; known: {', '.join(FIT_CANDIDATES)}")
    with tempfile.TemporaryDirectory() as tmp:
        game_path = fhp24(Path(tmp))
        for name in args.candidates.split(","):
            config = DeepCFRConfig(**(PRESETS["fhp"] | SAMPLED | FIT_CANDIDATES[name] | dict(
                game=str(game_path), iterations=args.iterations, evaluate_every=0, checkpoint_every=10_000)))
            trainer = DeepCFRTrainer.new(config, Path(tmp) / name, progress=False)
            started = time.process_time()
            trainer.train()
            print(f"\n24-card FHP, {name} (width {config.width}, {config.sgd_steps} Adam steps), seed 0: "
                  f"{args.iterations} iterations in {time.process_time() - started:.0f} training CPU-s")
            evaluation = FlopRunEvaluation(trainer.game, trainer.run.path, config.canonical_suits, config.argmax_fallback)
            def measured(t: int, evaluation=evaluation, trainer=trainer) -> float:
                return evaluation.evaluate(trainer.stack[: t + 1], trainer.stack_nets)["sdcfr_exploitability_mbb"]

            replay = Replay(trainer.game, vars(config), args.every, measured)
            for entry in trainer.stack[1:]:
                replay.advance(trainer.stack_nets(entry))
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
