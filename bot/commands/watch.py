"""``pokerbot watch RUN``: follow a training run in a terminal app (or a browser with ``--web``).

Also home of ``pokerbot train ... --watch``: the trainer runs in a child process (its output
goes to a log file outside the run directory) while the app follows the run directory; quitting
the app interrupts the trainer, which keeps its last checkpoint for ``--resume``.
"""

from __future__ import annotations

import multiprocessing
import os
import shlex
import signal
import sys
import tempfile
import time
from pathlib import Path

import click

from bot.errors import PokerbotError

#: Seconds ``train --watch`` waits for the trainer to create the run's ``config.toml``.
START_TIMEOUT = 600.0


@click.command()
@click.argument("run", type=click.Path(file_okay=False))
@click.option("--web", "port", type=click.IntRange(1, 65535), help="Serve the app as a web page on http://127.0.0.1:PORT instead.")
@click.option("--poll", type=click.FloatRange(0.05, 60.0), default=1.0, show_default=True, help="Seconds between reads of the run directory.")
def watch(run: str, port: int | None, poll: float) -> None:
    """Show a Deep CFR / SD-CFR / DREAM / NFSP run as it trains (or after): phase and timings,
    exploitability, memories and losses, and on Kuhn and Leduc the networks' advantages next to
    the exact regrets, regret matching worked through, Kuhn's convergence to equilibrium and the
    latest sampled traversal. Read-only: it never writes into RUN."""
    from tui.watch.reader import RunReader

    RunReader.open(run)  # a bad path is a one-line error before anything starts
    if port is not None:
        serve(run, port, poll)
        return
    from tui.watch.app import WatchApp

    WatchApp(run, poll_seconds=poll).run()


def serve(run: str, port: int, poll: float) -> None:
    """The same app through textual-serve, on the loopback interface only."""
    from textual_serve.server import Server

    command = shlex.join([sys.executable, "-m", "bot", "watch", str(Path(run).resolve()), "--poll", str(poll)])
    click.echo(f"serving {run} on http://127.0.0.1:{port} (Ctrl-C stops)")
    Server(command, host="127.0.0.1", port=port, title=f"pokerbot watch {run}").serve()


def _train_child(module_name: str, options: dict, log_path: str) -> None:
    """The trainer, in a child process whose output goes to ``log_path``."""
    import importlib

    with open(log_path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log
        try:
            importlib.import_module(module_name).run_from_cli(options)
        except PokerbotError as error:
            print(f"error: {error}", file=log, flush=True)
            raise SystemExit(2) from None


def train_and_watch(module_name: str, options: dict) -> None:
    """``pokerbot train ... --watch``: train in a child process, watch its run directory."""
    run = Path(str(options["resume"] or options["out"]))
    log = Path(tempfile.gettempdir()) / f"pokerbot-train-{os.getpid()}.log"
    child = multiprocessing.get_context("spawn").Process(target=_train_child, args=(module_name, options, str(log)))
    child.start()
    click.echo(f"training in process {child.pid}; its output goes to {log}")
    started = time.monotonic()
    while not (run / "config.toml").is_file():
        if not child.is_alive():
            raise PokerbotError(f"training stopped before creating {run}: {_tail(log)}")
        if time.monotonic() - started > START_TIMEOUT:
            child.terminate()
            raise PokerbotError(f"training created no {run / 'config.toml'} in {START_TIMEOUT:.0f} s; see {log}")
        time.sleep(0.2)
    from tui.watch.app import WatchApp

    try:
        WatchApp(run).run()
    finally:
        if child.is_alive():
            os.kill(child.pid, signal.SIGINT)  # Deep CFR and NFSP stop cleanly, resumable
            child.join()
    click.echo(f"training {'finished' if child.exitcode == 0 else 'stopped'}: {_tail(log)}")
    if child.exitcode != 0:
        click.echo(f"continue with: pokerbot train --algo {options['algo']} --resume {run}")


def _tail(log: Path) -> str:
    """The log's last line."""
    try:
        lines = log.read_text().strip().splitlines()
    except OSError:
        return "(no output)"
    return lines[-1] if lines else "(no output)"
