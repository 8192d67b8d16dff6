"""``pokerbot report LOGFILE``: the match statistics of any ACPC ``.log`` (ours or the reference
dealer's). Two logs of the same seed with the seats swapped are a duplicate match."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np
from rich.console import Console

from bot.errors import PokerbotError
from bot.evaluation.aivat import aivat_values
from bot.evaluation.match import require_playable
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
from protocol.gamedef import Game, GamedefError, load_game
from protocol.match_log import HandRecord, MatchLog, read_match_log


def game_of(log: MatchLog, path: str, override: str | None) -> Game:
    if override is not None:
        return load_game(override)
    if log.header is not None:
        for candidate in (log.header.gamedef_file, Path(log.header.gamedef_file).name):
            try:
                return load_game(candidate)
            except GamedefError:
                continue
    raise PokerbotError(f"{path}: cannot tell the game from the header; pass --game")


def check_duplicate_pair(first: MatchLog, second: MatchLog, paths: tuple[str, ...]) -> None:
    """Two logs are a duplicate match only if they replay the same deals with the seats
    swapped: the same seed (when both headers give one), the same hand numbers, and in every
    hand the same cards by position (the board as far as both hands went) with the players'
    positions exchanged. Pairing anything else would report a meaningless interval."""
    where = f"{paths[0]} and {paths[1]} are not a duplicate pair"
    if first.header is not None and second.header is not None:
        if first.header.seed != second.header.seed:
            raise PokerbotError(f"{where}: seeds {first.header.seed} and {second.header.seed}")
    numbers = [[hand.hand_number for hand in log.hands] for log in (first, second)]
    shorter, longer = sorted(numbers, key=len)
    if longer[: len(shorter)] != shorter:  # one match may have stopped early, no more
        raise PokerbotError(f"{where}: they hold different hand numbers")
    mirrored = {hand.hand_number: hand for hand in second.hands}
    for hand in first.hands[: len(shorter)]:
        twin = mirrored[hand.hand_number]
        reached = min(len(hand.board), len(twin.board))
        if hand.hole_cards != twin.hole_cards or hand.board[:reached] != twin.board[:reached]:
            raise PokerbotError(f"{where}: hand {hand.hand_number} was dealt different cards")
        if hand.names != twin.names[::-1] or len(set(hand.names)) != len(hand.names):
            raise PokerbotError(
                f"{where}: in hand {hand.hand_number} the seats are not swapped "
                f"({'|'.join(hand.names)} and {'|'.join(twin.names)})"
            )


def hands_of(logs: list[MatchLog], player: str) -> list[tuple[HandRecord, int, bool]]:
    """(hand, the player's position, from the second log) for every hand of the logs."""
    rows = []
    for index, log in enumerate(logs):
        for hand in log.hands:
            if player not in hand.names:
                raise PokerbotError(
                    f"player {player!r} is not in hand {hand.hand_number} (players: {'|'.join(hand.names)})"
                )
            rows.append((hand, hand.names.index(player), index == 1))
    return rows


def series_of_logs(
    rows: list[tuple[HandRecord, int, bool]], aivat_chips: np.ndarray | None = None
) -> HandSeries:
    return HandSeries(
        np.array([float(hand.values[position]) for hand, position, _ in rows]),
        np.array([position for _, position, _ in rows]),
        np.array([hand.hand_number for hand, _, _ in rows]),
        np.array([mirrored for _, _, mirrored in rows]),
        aivat_chips,
    )


@click.command()
@click.argument("logfiles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--player", help="Whose results (default: seat 1 of the first log).")
@click.option("--game", help="Gamedef for the big blind, if the log header's file cannot be found.")
@click.option(
    "--half-width",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_HALF_WIDTH_MBB,
    show_default=True,
)
@click.option(
    "--agent",
    "agent_spec",
    help="The player's own policy (name or path): adds the AIVAT estimate (bot.evaluation.aivat).",
)
@click.option(
    "--opponent",
    "opponent_spec",
    default="random",
    show_default=True,
    help="With --agent on Kuhn/Leduc: the policy the exact value function assumes for the other seat.",
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False))
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False))
def report(
    logfiles: tuple[str, ...],
    player: str | None,
    game: str | None,
    half_width: float,
    agent_spec: str | None,
    opponent_spec: str,
    json_path: str | None,
    plot_path: str | None,
) -> None:
    """Report a player's mbb/g with 95% intervals from LOGFILE (two logs: a duplicate pair)."""
    if len(logfiles) > 2:
        raise PokerbotError("give one log, or two logs of a duplicate match")
    require_folder(json_path, "--json")
    require_folder(plot_path, "--plot")
    logs = [read_match_log(path) for path in logfiles]
    out = console()
    for path, log in zip(logfiles, logs, strict=True):
        if log.torn_line is not None:
            out.print(
                f"[yellow]{path}: line {log.torn_line} was cut off (no newline); "
                f"reporting the {len(log.hands)} complete hands before it[/]"
            )
    if not logs[0].hands:
        raise PokerbotError(f"{logfiles[0]}: no finished hands")
    if len(logs) == 2:
        check_duplicate_pair(logs[0], logs[1], logfiles)
    player = player or logs[0].player_names[0]
    loaded = game_of(logs[0], logfiles[0], game)
    require_playable(loaded)
    rows = hands_of(logs, player)
    aivat = None
    if agent_spec is not None:  # every hole card is in the log, which is what AIVAT needs
        agents = (resolve_agent(agent_spec, loaded), resolve_agent(opponent_spec, loaded))
        with progress_bar(Console(stderr=True), transient=True) as progress:
            task = progress.add_task("AIVAT", total=len(rows))
            aivat = aivat_values([(hand, position) for hand, position, _ in rows], agents, loaded,
                                 lambda: progress.advance(task))
    series = series_of_logs(rows, aivat)
    if len(series.chips) < 2:
        raise PokerbotError("fewer than 2 hands: no statistics")
    summary = summarize(series, loaded.big_blind, half_width)
    summary["config"] = {
        "logfiles": list(logfiles),
        "player": player,
        "game": loaded.name,
        "agent": agent_spec,
        "opponent": opponent_spec if agent_spec else None,
    }
    complete = (
        "" if all(log.score is not None for log in logs) else " (no SCORE line: match incomplete)"
    )
    title = f"{player} in {', '.join(logfiles)}{complete}"
    out.print(table(summary, title))
    if json_path:
        write_json(summary, json_path)
    if plot_path:
        plot(summary, plot_path, title)
