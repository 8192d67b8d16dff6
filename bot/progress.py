"""The one rich progress bar every long command uses (solve, match, train, abstraction builds):
description, bar, done/total, elapsed and ETA, plus any extra columns a command shows."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_bar(
    console: Console | None = None, *extra: ProgressColumn, transient: bool = False
) -> Progress:
    """A rich ``Progress`` with the project's standard columns; ``extra`` columns (e.g. the
    current exploitability) go between the count and the clocks."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=transient,
    )
