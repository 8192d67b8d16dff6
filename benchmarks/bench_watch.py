"""How fast ``pokerbot watch`` reads an SD-CFR run's stack (networks + exact regrets per entry).

    python benchmarks/bench_watch.py runs/sd-cfr-leduc

Times :meth:`tui.watch.model.WatchModel.load_stack` over every stack entry of a finished small-
game SD-CFR run (what the app's worker thread does when it opens the run) and prints seconds
per entry with the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from tui.watch.model import WatchModel
from tui.watch.reader import RunReader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    args = parser.parse_args()
    model = WatchModel(RunReader.open(args.run))
    model.poll()
    started = time.perf_counter()
    entries = model.load_stack()
    seconds = time.perf_counter() - started
    load = os.getloadavg()[0]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {load:.1f}")
    print(f"{args.run}: {entries} stack entries ({model.config.get('game')}) in {seconds:.2f} s = "
          f"{seconds / max(entries, 1):.3f} s per entry")


if __name__ == "__main__":
    main()
