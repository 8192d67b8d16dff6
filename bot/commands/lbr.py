"""``pokerbot lbr AGENT``: local best response against an agent (a lower bound on its
exploitability), with 95% intervals per seat and over both seats.

``--json`` saves every deal's chips (every minute while running, and at the end or on Ctrl-C);
``--resume`` continues that file's run (same game, agent, seed and options) up to ``--hands``.
``--exact`` adds LBR's exact expected value (small games: Leduc, reduced decks).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
from rich.table import Table

from bot.commands.options import SEED
from bot.evaluation.lbr import EquityCounters, LBRConfig, LBRError, LBRResult, run_lbr
from bot.evaluation.lbr_workers import MIN_DEALS_PER_WORKER, auto_workers, run_lbr_workers
from bot.evaluation.match_report import console, require_folder
from bot.progress import progress_bar
from bot.registry import resolve_agent
from protocol.files import atomic_write_text
from protocol.gamedef import Game, load_game

# The hand evaluator's OpenMP threads busy-wait after each parallel batch; on a loaded 2-core
# machine that made a Deep CFR range query 20-30x slower (benchmarks/bench_lbr.py). Set before
# any agent module loads torch or numba starts its thread pool.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: Seconds between saves of ``--json`` during a run.
SAVE_EVERY = 60.0


def single_threaded_torch() -> None:
    """One torch thread when a network agent loaded torch: range batches have ~1,000 rows."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def parse_rounds(text: str, game: Game) -> frozenset[int]:
    """``"0,1"`` -> {0, 1}; every round must exist in ``game``."""
    rounds = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        if not part.isdigit() or int(part) >= game.num_rounds:
            raise LBRError(f"--call-rounds: {part!r} is not a round of {game.name} (0..{game.num_rounds - 1})")
        rounds.add(int(part))
    return frozenset(rounds)


def save(result: LBRResult, path: Path) -> None:
    atomic_write_text(path, json.dumps(result.to_dict(), indent=1) + "\n")


def resume(path: Path, game: Game, agent_name: str, seed: int, config: LBRConfig) -> LBRResult:
    """The run saved at ``path``; an error naming the first setting that differs."""
    try:
        data = json.loads(path.read_text())
        saved = {"game": data["game"], "agent": data["agent"], "seed": data["seed"], "config": data["config"]}
        chips = [(float(a), float(b)) for a, b in data["chips"]]
        counters = EquityCounters(**data["equity"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise LBRError(f"{path}: not an LBR result to resume ({error})") from None
    wanted = {"game": game.name, "agent": agent_name, "seed": seed, "config": config.to_dict()}
    for key, value in wanted.items():
        if saved[key] != value:
            raise LBRError(f"{path}: saved {key} {saved[key]!r} differs from this run's {value!r}")
    return LBRResult(game, agent_name, seed, config, chips, counters, int(data.get("agent_queries", 0)),
                     int(data.get("hands_queried", 0)), float(data.get("seconds", 0.0)))


def report(result: LBRResult, exact: tuple[float, float] | None) -> Table:
    table = Table(title=f"LBR vs {result.agent_name} on {result.game.name}: LBR's winnings in mbb/g "
                        "(a lower bound on the agent's exploitability)")
    for column in ("LBR in", "mbb/g", "95% interval", "hands"):
        table.add_column(column, justify="right" if column != "LBR in" else "left")
    if exact is not None:
        table.add_column("exact LBR value", justify="right")
    rows = [("both seats (NashConv/2 bound)", result.overall())] + [(f"position {p}", result.seat(p)) for p in (0, 1)]
    for label, est in rows:
        cells = [label, f"{est.mean:+.1f} ± {est.half_width:.1f}", f"[{est.low:+.1f}, {est.high:+.1f}]", f"{est.n:,}"]
        if exact is not None:
            scale = 1000.0 / result.game.big_blind
            value = sum(exact) / 2 if label.startswith("both") else exact[int(label[-1])]
            cells.append(f"{scale * value:+.2f}")
        table.add_row(*cells)
    return table


def describe_equity(counters: EquityCounters) -> str:
    parts = [f"{counters.enumerated:,} enumerated ({counters.runouts_enumerated:,} runouts)"]
    if counters.sampled:
        parts.append(f"{counters.sampled:,} sampled ({counters.runouts_sampled // counters.sampled:,} runouts each)")
    return "check-down equities: " + ", ".join(parts)


@click.command()
@click.argument("agent_spec", metavar="AGENT")
@click.option("--game", "game_name", default="holdem", show_default=True, help="kuhn, leduc, fhp, holdem, or a gamedef path.")
@click.option("--hands", "deals", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Deals; LBR plays each in both positions (= hands per seat).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seeds the cards, the agent's actions and sampled runouts.")
@click.option("--call-rounds", default="", metavar="ROUNDS",
              help="Rounds (0 = first, comma-separated) where LBR only checks or calls, e.g. 0.")
@click.option("--runout-samples", type=click.IntRange(min=1), default=LBRConfig.runout_samples, show_default=True,
              help="Runouts drawn for an equity too costly to enumerate.")
@click.option("--max-enumeration", type=click.IntRange(min=0), default=LBRConfig.max_enumeration, show_default=True,
              help="Enumerate the board when runouts x range hands is at most this.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Save every number and each deal's chips here.")
@click.option("--resume", "resume_run", is_flag=True, help="Continue the run saved in --json.")
@click.option("--exact", is_flag=True, help="Also compute LBR's exact expected value (small games only).")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes playing deals (the same chips for any number); 0: one per CPU core from "
                   f"{MIN_DEALS_PER_WORKER} deals per core, else this process only.")
def lbr(agent_spec: str, game_name: str, deals: int, seed: int, call_rounds: str, runout_samples: int,
        max_enumeration: int, json_path: Path | None, resume_run: bool, exact: bool, workers: int) -> None:
    """Local best response (Lisy & Bowling 2017) against AGENT: LBR's mbb/g per seat and over
    both seats, with 95% intervals; a lower bound on AGENT's exploitability."""
    out = console()
    require_folder(str(json_path) if json_path else None, "--json")
    game = load_game(game_name)
    config = LBRConfig(parse_rounds(call_rounds, game), max_enumeration, runout_samples)
    agent = resolve_agent(agent_spec, game)
    single_threaded_torch()
    name = agent_spec
    result = None
    if resume_run:
        if json_path is None or not json_path.exists():
            raise LBRError("--resume needs the --json file of the run to continue")
        result = resume(json_path, game, name, seed, config)
    result = result or LBRResult(game, name, seed, config)
    last_save = time.monotonic()
    with progress_bar(out) as progress:
        task = progress.add_task(f"LBR vs {name}", total=deals, completed=result.deals)

        def advance(done: int) -> None:
            nonlocal last_save
            progress.advance(task, done)
            if json_path is not None and time.monotonic() - last_save > SAVE_EVERY:
                save(result, json_path)
                last_save = time.monotonic()

        workers = workers or auto_workers(deals - result.deals)
        if workers > 1:
            result = run_lbr_workers(game, agent_spec, deals, seed, config, workers, resolve_agent, result, advance)
        else:
            result = run_lbr(game, agent, deals, seed, config, result, advance)
    if json_path is not None:
        save(result, json_path)
    if not result.deals:
        raise LBRError("interrupted before the first deal finished")
    values = None
    if exact:
        from bot.evaluation.lbr_exact import exact_lbr_value

        values = (exact_lbr_value(game, agent, 0, config), exact_lbr_value(game, agent, 1, config))
    out.print(report(result, values))
    rate = 2 * result.deals / result.seconds if result.seconds else float("nan")
    out.print(f"{describe_equity(result.counters)}; {result.agent_queries:,} range queries "
              f"({result.hands_queried:,} hands); {rate:.1f} hands/s")
    if result.interrupted:
        out.print(f"interrupted after {result.deals:,} deals" + (f"; continue with --resume --json {json_path}" if json_path else ""))
