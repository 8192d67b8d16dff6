"""The shipped hold'em bot: bucket agreement with the built tables, decision latency, and the
table of head-to-head results in docs/benchmarks/hulh-table.md.

    python benchmarks/bench_hulh_table.py --agreement   # play-time buckets vs the cached tables
    python benchmarks/bench_hulh_table.py --latency     # seconds per decision, per round
    python benchmarks/bench_hulh_table.py --table       # the matches (long: see --hands)

``--agreement`` needs the abstraction the bot was made from built and solved on this machine
(``pokerbot train --algo abstraction --game holdem --size 3e6-ke``): it deals random hands,
computes each one's bucket from its cards as the bot does at a decision and looks the same hand
up in the built table; then it compares the bot's action probabilities with the full
abstraction agent's on random infosets (the quantised policy is within 1/255 of the float one).
``--table`` runs ``pokerbot match ... --duplicate`` (AIVAT on) for every row and prints the
mbb/g with 95% intervals; the LBR column is filled by ``pokerbot lbr`` (another benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_abstraction import machine  # noqa: E402
from bot.abstraction.agent import AbstractionAgent  # noqa: E402
from bot.abstraction.compact import UNITS, CompactAbstractionAgent  # noqa: E402
from bot.abstraction.spec import SPECS, bucket_path  # noqa: E402
from bot.shipped import SHIPPED_ROOT, read_manifest  # noqa: E402
from protocol.gamedef import load_game  # noqa: E402
from protocol.isomorphism import round_indexer  # noqa: E402
from protocol.matchstate import MatchState  # noqa: E402

HOLDEM = load_game("holdem")
SHIPPED = SHIPPED_ROOT / "holdem"
#: Random hands checked per round by --agreement (the flop costs ~25 ms a hand to compute).
AGREEMENT_HANDS = (0, 10_000, 100_000, 100_000)


def load_bot(folder: Path) -> CompactAbstractionAgent:
    return CompactAbstractionAgent(HOLDEM, folder, read_manifest(folder))


def random_hand(rng: np.random.Generator, visible: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    cards = [int(c) for c in rng.choice(52, 2 + visible, replace=False)]
    return tuple(cards[:2]), tuple(cards[2:])


def agreement(folder: Path, hands: tuple[int, ...], infosets: int, seed: int) -> None:
    """Per round: the share of random hands whose play-time bucket equals the built table's."""
    bot = load_bot(folder)
    spec = SPECS[read_manifest(folder)["source"]]
    rng = np.random.default_rng(seed)
    print(f"{bot.name} ({spec.name}) against the built tables; {machine()}; load {os.getloadavg()[0]:.1f}")
    for r in range(1, HOLDEM.num_rounds):
        table, indexer = np.load(bucket_path(spec, r), mmap_mode="r"), round_indexer(HOLDEM, r)
        visible, same, started = HOLDEM.board_cards_through(r), 0, time.perf_counter()
        for _ in range(hands[r]):
            hole, board = random_hand(rng, visible)
            bot.bucketer.forget()
            same += bot.bucket(r, hole, board) == int(table[indexer.index(hole + board)])
        seconds = (time.perf_counter() - started) / max(hands[r], 1)
        print(f"round {r} ({spec.round_methods[r]}): {same:,} of {hands[r]:,} hands agree "
              f"({100 * same / max(hands[r], 1):.3f}%), {seconds * 1e3:.2f} ms per hand")  # fmt: skip
    if not infosets:
        return
    full = AbstractionAgent(HOLDEM, spec.name)
    worst, tree = 0.0, bot.tree
    for _ in range(infosets):
        node = int(rng.choice(tree.decision_ids))
        round_index, seat = int(tree.round[node]), int(tree.actor[node])
        hole, board = random_hand(rng, 5)
        shown = (board[:3], board[3:4], board[4:])[:round_index]
        view = MatchState(seat, 0, tree.history[node], tuple(hole if p == seat else () for p in range(2)), shown)
        a, b = bot.action_probabilities(view), full.action_probabilities(view)
        if a.keys() != b.keys():
            raise SystemExit(f"legal actions differ at {view}")
        worst = max(worst, *(abs(a[k] - b[k]) for k in a))
    print(f"action probabilities on {infosets:,} random infosets: largest difference {worst:.5f} "
          f"(quantisation bound 1/{UNITS} = {1 / UNITS:.5f})")  # fmt: skip


def latency(folder: Path, decisions: int, seed: int) -> None:
    """Seconds per decision of a fresh hand (nothing remembered), per round: wall clock and the
    process's CPU time (which the machine's load does not inflate)."""
    bot = load_bot(folder)
    rng = np.random.default_rng(seed)
    tree = bot.tree
    print(f"{bot.name}: {machine()}; load {os.getloadavg()[0]:.1f}")
    for r in range(HOLDEM.num_rounds):
        nodes = tree.decision_ids[tree.round[tree.decision_ids] == r]
        times = []
        for _ in range(decisions + 1):  # the first compiles the round's kernels: not counted
            node = int(rng.choice(nodes))
            seat = int(tree.actor[node])
            hole, board = random_hand(rng, 5)
            shown = (board[:3], board[3:4], board[4:])[:r]
            view = MatchState(seat, 0, tree.history[node], tuple(hole if p == seat else () for p in range(2)), shown)
            bot.bucketer.forget()
            started, cpu = time.perf_counter(), time.process_time()
            bot.action_probabilities(view)
            times.append((time.perf_counter() - started, time.process_time() - cpu))
        ms = np.array(times[1:]) * 1e3
        print(f"round {r}: wall {ms[:, 0].mean():.2f} ms mean, {np.percentile(ms[:, 0], 95):.2f} ms p95; "
              f"CPU {ms[:, 1].mean():.2f} ms mean per decision ({decisions} decisions)")  # fmt: skip
    load_started = time.perf_counter()
    load_bot(folder)
    sizes = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
    print(f"load {time.perf_counter() - load_started:.2f} s; files " + ", ".join(f"{n} {s / 1e6:.2f} MB" for n, s in sizes.items())
          + f"; {sum(sizes.values()) / 1e6:.2f} MB in all")  # fmt: skip


#: (agent, opponent, hands per seat) of the table's rows.
TABLE_ROWS = (
    ("default", "abstraction_3e6", 20_000),
    ("default", "call", 2_000),
    ("default", "raise", 2_000),
    ("default", "random", 2_000),
)


def run_match(agent: str, opponent: str, hands: int, seed: int) -> dict:
    """One ``pokerbot match --duplicate`` (AIVAT on); returns its JSON summary."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "match.json"
        command = [sys.executable, "-m", "bot", "match", "--game", "holdem", "--agent", agent, "--opponent", opponent,
                   "--hands", str(hands), "--duplicate", "--seed", str(seed), "--json", str(out)]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(command, check=True, cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL)
        summary = json.loads(out.read_text())
        summary["seconds"] = time.perf_counter() - started
        return summary


def cell(summary: dict, label: str) -> str:
    row = next(r for r in summary["rows"] if r["label"] == label)
    return f"{row['mean']:+.1f} ± {row['half_width']:.1f}"


def table(rows: list[tuple[str, str, int]], seed: int) -> None:
    print(f"{machine()}; load {os.getloadavg()[0]:.1f} at the start")
    print("| agent | opponent | hands | mbb/g (duplicate) | AIVAT + duplicate | LBR of the opponent | seconds |")
    print("|---|---|---|---|---|---|---|")
    for agent, opponent, hands in rows:
        summary = run_match(agent, opponent, hands, seed)
        print(f"| `{agent}` | `{opponent}` | 2 × {hands:,} | {cell(summary, 'duplicate')} | "
              f"{cell(summary, 'AIVAT + duplicate')} | | {summary['seconds']:.0f} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=SHIPPED, help="compact bot folder (default: the shipped one)")
    parser.add_argument("--agreement", action="store_true")
    parser.add_argument("--hands", type=int, nargs=3, metavar=("FLOP", "TURN", "RIVER"), default=AGREEMENT_HANDS[1:])
    parser.add_argument("--infosets", type=int, default=100_000)
    parser.add_argument("--latency", action="store_true")
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--row", nargs=3, action="append", metavar=("AGENT", "OPPONENT", "HANDS"),
                        help="a table row instead of the default rows (repeatable)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (args.agreement or args.latency or args.table):
        parser.error("choose --agreement, --latency and/or --table")
    if args.latency:
        latency(args.folder, args.decisions, args.seed)
    if args.agreement:
        agreement(args.folder, (0, *args.hands), args.infosets, args.seed)
    if args.table:
        rows = [(a, o, int(h)) for a, o, h in args.row] if args.row else list(TABLE_ROWS)
        table(rows, args.seed)


if __name__ == "__main__":
    main()
