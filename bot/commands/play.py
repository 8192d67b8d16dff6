"""``pokerbot play``: a person plays heads-up against a pokerbot agent in a Textual TUI, or
through the same TUI as an ACPC client of a dealer (``--connect HOST PORT``).

Without ``--opponent`` the strongest agent available locally is used: the registry is asked for
the candidates in :data:`bot.catalogue.STRONGEST_FIRST` (the shipped bot ``default`` first, then registered
names and the run directories the train commands write) and the first that resolves plays; a
:class:`Notice` names it and its headline figure in one line (the table's side panel) with the
whole provenance as details (the ``?`` screen) when it is the shipped bot. When none resolves,
the fallback is :data:`FALLBACK`, and the notice names the cheapest real opponent for the game
and what building it costs (:data:`bot.catalogue.CHEAPEST`), not a training run that takes hours.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

import click

from bot.agents.base import Agent
from bot.catalogue import AGENT_HELP, CHEAPEST, STRONGEST_FIRST, cheapest_hint
from bot.commands.options import SEED
from bot.errors import PokerbotError
from bot.registry import AgentNotFound, resolve_agent
from protocol.gamedef import GAME_ALIASES, Game, load_game

#: The documented simple opponent when nothing trained exists: the calling station never folds
#: and never raises, so a person learns to value-bet against it.
FALLBACK = "call"
class Notice(NamedTuple):
    """What the player is told about the opponent ``play`` chose: ``line`` fits the side panel
    (who it is and its headline figure), ``details`` is the whole story (the ``?`` screen and
    stderr)."""

    line: str
    details: str


def headline(strength: dict[str, str]) -> str:
    """The first measured figure of a manifest, without its parenthesised conditions:
    ``vs abstraction_3e6 +31.1 ± 18.6 mbb/g``."""
    if not strength:
        return ""
    key, value = next(iter(strength.items()))
    return f"{key} {value.split(' (')[0]}"


def shipped_notice(game: Game) -> Notice | None:
    """The shipped bot's name and headline figure, with its description and every measured
    figure of its manifest as details."""
    from bot.shipped import shipped_manifest

    manifest = shipped_manifest(game)
    if manifest is None:
        return None
    name = manifest.get("name", "default")
    measured = dict(manifest.get("strength", {}))
    strength = "; ".join(f"{k} {v}" for k, v in measured.items())
    figure = headline(measured)
    return Notice(
        f"Opponent: {name} (shipped)" + (f", {figure}" if figure else ""),
        f"Playing {name}, the bot shipped for {game.name}: {manifest.get('description', '')}"
        + (f" Measured: {strength}." if strength else ""),
    )


def strongest_opponent(game: Game) -> tuple[Agent, Notice | None]:
    """The strongest locally available agent for ``game``, and a notice when it is the shipped
    bot or the fallback. Candidates that are not built are skipped; a broken artefact is an
    error."""
    alias = next((a for a, stem in GAME_ALIASES.items() if stem == game.name and a != "hulh"), None)
    for candidate in STRONGEST_FIRST.get(alias or "", []):
        try:
            agent = resolve_agent(candidate, game)
        except AgentNotFound:
            continue
        return agent, shipped_notice(game) if candidate == "default" else None
    details = f"No strong agent is built for {game.name}: playing '{FALLBACK}' (a calling station)."
    if alias in CHEAPEST:
        details += f" {cheapest_hint(alias)}, then pokerbot play again."
    return resolve_agent(FALLBACK, game), Notice(f"Opponent: {FALLBACK} (a calling station; nothing stronger built)", details)


@click.command(context_settings={"show_default": True})
@click.option("--game", "game_option", default="holdem", help="kuhn, leduc, fhp, holdem, or a gamedef path.")
@click.option("--opponent", help="Default: the strongest available locally, the shipped bot first. " + AGENT_HELP)
@click.option("--seed", type=SEED, default=None, help="Deal seed (default: from the clock; shown on screen and in the log).")
@click.option("--hands", type=click.IntRange(min=1), default=None, help="Stop after this many hands (default: until you quit).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Session log path (default: play-<game>-<seed>.log).")
@click.option("--delay", type=click.FloatRange(min=0), default=0.6, help="Seconds before the bot's action is shown.")
@click.option("--auto-next", type=click.FloatRange(min=0, min_open=True), default=None, help="Start the next hand this many seconds after one ends (default: press n).")
@click.option("--four-colour", is_flag=True, help="Four-colour deck (clubs green, diamonds blue).")
@click.option("--connect", nargs=2, type=(str, int), default=None, metavar="HOST PORT", help="Play as an ACPC client of a dealer instead of against a local agent.")
def play(
    game_option: str,
    opponent: str | None,
    seed: int | None,
    hands: int | None,
    log_path: Path | None,
    delay: float,
    auto_next: float | None,
    four_colour: bool,
    connect: tuple[str, int] | None,
) -> None:
    """Play heads-up limit poker against the bot in the terminal (keys: f c r, n, h, ?, q)."""
    from tui.app import PokerApp

    game = load_game(game_option)
    if game.num_players != 2 or not game.is_limit:
        raise PokerbotError(f"{game.name}: pokerbot play needs a heads-up limit game")
    if seed is None:
        seed = int(time.time()) % 1_000_000
    if connect is not None:
        if opponent is not None:
            raise PokerbotError("--opponent and --connect exclude each other: the dealer seats the opponent")
        from tui.remote import RemoteSession

        session = RemoteSession.connect(game, *connect)
        app = PokerApp(session, bot_delay=delay, auto_next=auto_next, four_colour=four_colour)
        app.run()
        click.echo(session.summary_line())
        return
    from bot.evaluation.match_report import require_folder
    from tui.session import TableSession
    from tui.session_log import SessionLog

    require_folder(str(log_path) if log_path else None, "--log")
    if opponent is None:
        click.echo("looking for the strongest local agent…", err=True)
        agent, notice = strongest_opponent(game)
        if notice:
            click.echo(notice.details, err=True)
    else:
        agent, notice = resolve_agent(opponent, game), None
    session = TableSession(game, agent, seed=seed, hands=hands)
    path = log_path or Path(f"play-{Path(game_option).stem}-{seed}.log")
    app = PokerApp(
        session,
        bot_delay=delay,
        auto_next=auto_next,
        four_colour=four_colour,
        session_log=SessionLog(path, session),
        notice=notice.line if notice else None,
        details=notice.details if notice else None,
    )
    written = app.run()
    stats = session.stats()
    click.echo(
        f"{stats.hands} hands, you {stats.total:+d} chips, {stats.mbb_per_game:+.0f} mbb/g"
        + (f" ± {stats.ci95:.0f} (95%)" if stats.hands >= 2 else "")
    )
    if written is not None:
        click.echo(f"session log: {written}  (pokerbot report {written} --player {session.names['human']})")
