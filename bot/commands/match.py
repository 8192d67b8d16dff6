"""``pokerbot match``: two agents head to head, with honest error bars.

In-process by default; ``--wire`` plays the same hands through our dealer over loopback TCP;
``--dealer HOST:PORT`` plays agent A as a client of an external dealer (the other seat is
whoever connects there). Prints the statistics table (``bot.evaluation.match_report``), optionally writes
JSON (config and every number, per-hand payoffs), a PNG and the ACPC ``.log``.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.progress import (
    Progress,
)

from bot.agents.base import Agent
from bot.catalogue import AGENT_HELP
from bot.commands.options import NON_NEGATIVE, POSITIVE, SEED
from bot.errors import PokerbotError
from bot.evaluation.aivat import aivat_values
from bot.evaluation.match import (
    MatchResult,
    require_playable,
    run_as_client,
    run_in_process,
    run_wire,
)
from bot.evaluation.match_report import (
    DEFAULT_HALF_WIDTH_MBB,
    HandSeries,
    console,
    plot,
    require_folder,
    summarize,
    table,
    write_json,
)
from bot.progress import progress_bar
from bot.registry import resolve_agent
from protocol.acpc_client import Turn
from protocol.gamedef import Game, load_game


def display_name(spec: str) -> str:
    """A log-safe player name for an agent spec (a name, or a path's stem)."""
    name = re.sub(
        r"[^A-Za-z0-9_.+-]", "_", Path(spec).stem if "/" in spec or spec.endswith(".json") else spec
    )
    return name or "agent"


def parse_host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PokerbotError(f"--dealer wants HOST:PORT, got {text!r}")
    return host, int(port)


def series_of(result: MatchResult, aivat_chips: np.ndarray | None) -> HandSeries:
    return HandSeries(
        result.chips,
        np.array([h.position for h in result.hands]),
        np.array([h.deal for h in result.hands]),
        np.array([h.mirrored for h in result.hands]),
        aivat_chips,
    )


def aivat_for(
    result: MatchResult, agent_spec: str, opponent_spec: str, console: Console
) -> np.ndarray | None:
    """AIVAT estimates of A's chips (:mod:`bot.evaluation.aivat`): the exact value function on Kuhn and
    Leduc, pot × equity on bigger games; fresh agent instances, so nothing the match taught
    them leaks in."""
    if not result.hands:
        return None
    game = result.game
    agents = (resolve_agent(agent_spec, game), resolve_agent(opponent_spec, game))
    records = [(h.record, h.position) for h in result.hands]
    with progress_bar(console, transient=True) as progress:
        task = progress.add_task("AIVAT", total=len(records))
        return aivat_values(records, agents, game, lambda: progress.advance(task))


def _play_against_dealer(
    game: Game, agent: Agent, address: tuple[str, int], seed: int, progress: Progress
) -> HandSeries:
    host, port = address
    rows: list[tuple[float, int, int]] = []
    task = progress.add_task("hands", total=None)

    def on_hand(turn: Turn) -> None:
        assert turn.values is not None
        rows.append((turn.values[turn.view.position], turn.view.position, turn.view.hand_number))
        progress.advance(task)

    run_as_client(game, agent, host, port, seed, on_hand)
    chips, positions, deals = (
        (np.array(column) for column in zip(*rows, strict=True)) if rows else (np.zeros(0),) * 3
    )
    return HandSeries(
        chips.astype(float),
        positions.astype(int),
        deals.astype(int),
        np.zeros(len(rows), dtype=bool),
    )


@click.command()
@click.option(
    "--game",
    default="holdem",
    show_default=True,
    help="kuhn, leduc, fhp, holdem, or a gamedef path.",
)
@click.option(
    "--agent",
    "agent_spec",
    default="default",
    show_default=True,
    help="Agent A (evaluated; default: the bot shipped for the game). " + AGENT_HELP,
)
@click.option(
    "--opponent",
    "opponent_spec",
    default="random",
    show_default=True,
    help="Agent B: a name or a path, as for --agent.",
)
@click.option(
    "--hands",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Hands (deals, each played twice with --duplicate).",
)
@click.option(
    "--duplicate",
    is_flag=True,
    help="Replay every deal with the seats swapped; the interval is over pairs.",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seeds the cards and both agents' common random numbers.",
)
@click.option(
    "--wire",
    is_flag=True,
    help="Play through our dealer over loopback TCP (same hands as in-process).",
)
@click.option(
    "--dealer",
    "dealer_address",
    metavar="HOST:PORT",
    help="Play agent A as a client of an external dealer.",
)
@click.option(
    "--aivat/--no-aivat",
    default=True,
    show_default=True,
    help="Add the AIVAT estimate (needs both agents' action probabilities).",
)
@click.option(
    "--boards",
    type=POSITIVE,
    help="Instead of hands: N sampled boards, each exact over every pair of hole cards and every "
    "betting sequence, both seats (abstraction and Deep CFR / SD-CFR / NFSP network policies).",
)
@click.option(
    "--threads",
    type=NON_NEGATIVE,
    default=1,
    show_default=True,
    help="Threads of --boards (0: all cores).",
)
@click.option(
    "--half-width",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_HALF_WIDTH_MBB,
    show_default=True,
    help="Report the hands a ±this mbb/g 95% interval needs.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Write every number and per-hand payoffs here.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="Write a PNG of cumulative mbb/g with its 95% band.",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False),
    help="Write the ACPC .log (duplicate: also <stem>.mirror.log).",
)
def match(**options) -> None:
    """Play agent A against B and report A's mbb/g with 95% confidence intervals."""
    out = console()
    game = load_game(options["game"])
    require_playable(game, options["hands"])
    for option in ("json", "plot", "log"):
        require_folder(options[f"{option}_path"], f"--{option}")
    a_spec, b_spec = options["agent_spec"], options["opponent_spec"]
    names = (display_name(a_spec), display_name(b_spec))
    if names[0] == names[1]:
        names = (names[0] + "-A", names[1] + "-B")
    hands, seed, duplicate = options["hands"], options["seed"], options["duplicate"]
    agent = resolve_agent(a_spec, game)  # fail on a bad name before anything starts
    if options["boards"]:
        _board_match(out, game, agent, resolve_agent(b_spec, game), names, options)
        return
    if options["dealer_address"]:
        address = parse_host_port(options["dealer_address"])
        with progress_bar(out, transient=True) as progress:
            series = _play_against_dealer(game, agent, address, seed, progress)
    else:
        opponent = resolve_agent(b_spec, game)
        with progress_bar(out, transient=True) as progress:
            task = progress.add_task("hands", total=hands * (2 if duplicate else 1))
            advance = lambda n: progress.advance(task, n)  # noqa: E731
            if options["wire"]:
                factories = (
                    lambda: resolve_agent(a_spec, game),
                    lambda: resolve_agent(b_spec, game),
                )
                result = run_wire(
                    game, factories, names, hands, seed, duplicate, options["log_path"], advance
                )
            else:
                result = run_in_process(
                    game,
                    (agent, opponent),
                    names,
                    hands,
                    seed,
                    duplicate,
                    options["log_path"],
                    advance,
                )
        if result.interrupted:
            out.print(f"[yellow]interrupted after {len(result.hands)} hands[/]")
        aivat = aivat_for(result, a_spec, b_spec, out) if options["aivat"] else None
        series = series_of(result, aivat)
    if len(series.chips) < 2:
        raise PokerbotError(f"only {len(series.chips)} hand(s) played: no statistics")
    summary = summarize(series, game.big_blind, options["half_width"])
    summary["config"] = {k: v for k, v in options.items()} | {
        "game": game.name,
        "names": list(names),
    }
    title = f"{names[0]} vs {names[1]} in {game.name}, seed {seed}" + (
        " (duplicate)" if duplicate else ""
    )
    out.print(table(summary, title))
    if options["json_path"]:
        write_json(summary, options["json_path"])
        out.print(f"wrote {options['json_path']}")
    if options["plot_path"]:
        plot(summary, options["plot_path"], title)
        out.print(f"wrote {options['plot_path']}")


def _board_match(out: Console, game: Game, agent: Agent, opponent: Agent, names: tuple[str, str], options: dict) -> None:
    """``--boards N``: :mod:`training.abstraction.board_match` (imported here, as ``train`` does:
    the CLI's one exception to ``bot`` never importing ``training``)."""
    for option in ("wire", "dealer_address", "log_path", "plot_path"):
        if options[option]:
            flag = "--" + option.removesuffix("_address").removesuffix("_path")
            raise PokerbotError(f"{flag} plays hands; --boards evaluates every hand of each board exactly (drop one of the two)")
    import numba

    from training.abstraction.board_match import BoardMatch, run, summary

    evaluator = BoardMatch(game, agent, opponent)
    threads = options["threads"] or numba.config.NUMBA_NUM_THREADS
    boards, seed = options["boards"], options["seed"]
    with progress_bar(out, transient=True) as progress:
        task = progress.add_task("boards", total=boards)
        values, interrupted = run(evaluator, seed, boards, threads, 4 * threads, lambda n: progress.advance(task, n))
    if interrupted:
        out.print(f"[yellow]interrupted after {len(values.seat0)} boards[/]")
    if len(values.seat0) < 2:
        raise PokerbotError(f"only {len(values.seat0)} board(s) evaluated: no statistics")
    result = summary(values, game.big_blind, options["half_width"])
    result["config"] = dict(options) | {"game": game.name, "names": list(names), "method": "boards"}
    out.print(table(result, f"{names[0]} vs {names[1]} in {game.name}, seed {seed}: {len(values.seat0):,} boards, "
                            "each exact over hole cards and actions, both seats"))  # fmt: skip
    if options["json_path"]:
        write_json(result, options["json_path"])
        out.print(f"wrote {options['json_path']}")
