"""Ship a trained network policy inside the package under a name of its own
(:mod:`bot.shipped.named`), with the figures it measured.

    python scripts/ship_network.py RUN --name holdem_deep_cfr \
        --description "Deep CFR average network, HULH, ..." \
        --strength "vs default=+1.2 ± 3.4 mbb/g (AIVAT + duplicate, 2 x 10,000 hands)" ...

RUN is a training run directory or a policy bundle folder (a Deep CFR run ships its average
network; ``RUN/policy/stack`` is the same run's SD-CFR stack). Every file is verified against its
sha256 before it is copied; more than 10 MB is refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.errors import PokerbotError  # noqa: E402
from bot.shipped.named import ship_network  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="run directory or policy bundle folder")
    parser.add_argument("--name", required=True, help="the agent name (a folder of bot/shipped/named/)")
    parser.add_argument("--description", required=True, help="one line: what it is and how it was trained")
    parser.add_argument("--strength", action="append", default=[], metavar="KEY=FIGURE",
                        help="a measured figure, e.g. 'vs default=+1.2 ± 3.4 mbb/g (...)'; repeatable")
    args = parser.parse_args()
    strength = {}
    for item in args.strength:
        key, sep, figure = item.partition("=")
        if not sep or not key.strip() or not figure.strip():
            parser.error(f"--strength {item!r}: expected KEY=FIGURE")
        strength[key.strip()] = figure.strip()
    try:
        folder = ship_network(args.source, args.name, args.description, strength)
    except PokerbotError as error:
        sys.exit(f"error: {error}")
    print(f"shipped {args.name} in {folder}")


if __name__ == "__main__":
    main()
