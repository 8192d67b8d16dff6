"""SVG screenshots of ``pokerbot watch`` for docs/commands/watch.md (Textual's own screenshot export).

    python scripts/watch_screenshots.py runs/k docs/img/watch_kuhn [--size 120x36] [--tabs 1 2 3 4]

writes ``<prefix>_<tab>.svg`` per tab (1 overview, 2 networks, 3 strategy, 4 traversal; a tab
the run does not have is skipped), after the app has loaded the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from tui.watch.app import WatchApp

TAB_NAMES = {"1": "overview", "2": "networks", "3": "strategy", "4": "traversal"}


async def shoot(run: Path, prefix: Path, size: tuple[int, int], tabs: list[str]) -> list[Path]:
    app = WatchApp(run, poll_seconds=3600)
    written = []
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for tab in tabs:
            if not app.main.query(f"#{TAB_NAMES[tab]}"):
                continue
            await pilot.press(tab)
            await app.workers.wait_for_complete()
            await pilot.pause()
            path = prefix.with_name(f"{prefix.name}_{TAB_NAMES[tab]}.svg")
            app.save_screenshot(filename=path.name, path=str(path.parent))
            written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("prefix", type=Path)
    parser.add_argument("--size", default="120x36")
    parser.add_argument("--tabs", nargs="+", default=list(TAB_NAMES), choices=list(TAB_NAMES))
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.split("x"))
    args.prefix.parent.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(args.run, args.prefix, (width, height), args.tabs)):
        print(path)


if __name__ == "__main__":
    main()
