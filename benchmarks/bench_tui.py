"""How responsive ``pokerbot play`` stays while the bot thinks, and what a redraw costs.

The bot decides in a worker thread (``tui/app.py``), so the event loop keeps serving keys and
timers. This runs the app headless at 80x24 against an agent that burns ``--think`` seconds of
pure-Python CPU per decision (the worst case: it holds the GIL except at the interpreter's
switch interval), ticks a 10 ms interval timer on the event loop, and reports the largest gap
between ticks while the bot thinks: the longest the screen could have been frozen. Run inline
on the event loop, the same agent would freeze it for the whole ``--think``. It also times
``PokerApp.refresh_table`` (the widget updates after every action).

    python benchmarks/bench_tui.py [--think 0.3] [--decisions 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time

from bot.agents.base import CallAgent
from protocol.gamedef import load_game
from tui.app import PokerApp
from tui.session import TableSession

HOLDEM = load_game("holdem")


class BusyAgent(CallAgent):
    """A calling station that first thinks for ``think`` seconds: in pure Python (holding the
    GIL, the worst case) or in native code that releases it (as torch and numpy kernels do),
    stood in for by a sleep."""

    name = "busy"
    think = 0.3
    native = False

    def action_probabilities(self, view):
        if self.native:
            time.sleep(self.think)
        else:
            start = time.perf_counter()
            count = 0
            while time.perf_counter() - start < self.think:
                count += 1
        return super().action_probabilities(view)


async def measure(think: float, decisions: int, native: bool) -> tuple[list[float], float]:
    BusyAgent.think, BusyAgent.native = think, native
    app = PokerApp(TableSession(HOLDEM, BusyAgent(HOLDEM), seed=1), bot_delay=0)
    gaps: list[float] = []
    async with app.run_test(size=(80, 24)) as pilot:
        last = [time.perf_counter()]

        def tick() -> None:
            now = time.perf_counter()
            if app.thinking:
                gaps.append(now - last[0])
            last[0] = now

        app.set_interval(0.01, tick)
        made = 0
        while made < decisions:
            await app.workers.wait_for_complete()
            await pilot.pause()
            made = sum(len(r.decisions) for r in app.session.results) + len(app.session.decisions)
            if app.session.in_hand:
                await pilot.press("c")
            else:
                await pilot.press("n")
        start = time.perf_counter()
        redraws = 200
        for _ in range(redraws):
            app.refresh_table()
        redraw = (time.perf_counter() - start) / redraws
    return gaps, redraw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--think", type=float, default=0.3, help="seconds of CPU per bot decision")
    parser.add_argument("--decisions", type=int, default=8, help="bot decisions to time")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"bot thinking {args.think * 1000:.0f} ms per decision, {args.decisions} decisions, 10 ms UI timer")
    print(f"(inline on the event loop, each decision would freeze the screen {args.think * 1000:.0f} ms)")
    for native, label in ((False, "pure-Python agent (holds the GIL)"), (True, "native agent (releases the GIL)")):
        gaps, redraw = asyncio.run(measure(args.think, args.decisions, native))
        print(
            f"{label}: event-loop gap while thinking max {max(gaps) * 1000:.1f} ms, "
            f"median {statistics.median(gaps) * 1000:.1f} ms over {len(gaps)} ticks; "
            f"refresh_table {redraw * 1000:.2f} ms per redraw"
        )


if __name__ == "__main__":
    main()
