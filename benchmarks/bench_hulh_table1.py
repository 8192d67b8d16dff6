"""The Deep CFR paper's Table 1 at our scale (HULH): every pair of the named policies head to
head, and each policy's LBR, printed as the table in docs/benchmarks/hulh-deep-cfr.md.

    python benchmarks/bench_hulh_table1.py --boards 200 \
        --policy "Deep CFR=runs/deep-cfr-holdem" --policy "SD-CFR=runs/deep-cfr-holdem/policy/stack" \
        --policy "NFSP=runs/nfsp-holdem" --policy "abstraction_3e6_ke (shipped default)=default" \
        --lbr-hands 500 --jobs 2 --out table1/

With ``--boards N`` each pair is ``pokerbot match --boards N`` (N sampled boards, each exact over
every pair of hole cards and every action, both seats: the board's luck is the only variance
left); with ``--hands N`` instead, N played deals in both seats with AIVAT + duplicate.

``--grid-speed POLICY`` instead times one network policy's grid over a whole board
(:mod:`bot.agents.board_grid`: every decision node, every live hand, what ``--boards`` reads per
board and network), in CPU seconds per board, for each ``--chunks`` size.

Each cell is ``pokerbot match --game holdem --agent A --opponent B ... --seed S --json
OUT/A__B.json`` (A's mbb/g; a cell already in OUT is read, not replayed, so an interrupted
table resumes) and each LBR ``pokerbot lbr SPEC --game holdem --hands N --seed S --json
OUT/lbr_A.json``; ``--jobs`` runs that many at once. The printed rows carry the deals, both
estimates with their 95% intervals and the wall seconds each took, with the machine line.

``--target H`` (with ``--boards``) then brings every pair to a 95% half-width of H mbb/g: a pair
still wider gets another match on fresh boards (the k-th: ``--seed S+k``, ``OUT/A__B.extra.json``,
``.extra2.json``, ...; as many boards as its measured per-board spread says it needs, 15% spare,
at most ``--max-boards`` in all; up to :data:`EXTENSION_ROUNDS` rounds, since the spread of a
few hundred boards is itself an estimate), and its row pools the boards of all of them (each
board's value is one independent draw, so the pooled mean and interval are those of all its
boards).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.bench_abstraction import machine  # noqa: E402
from bot.evaluation.statistics import estimate  # noqa: E402
from training.abstraction.board_match import BoardValues  # noqa: E402


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")


def run_cell(command: list[str], out: Path) -> float:
    """Run one match or LBR (skipped when ``out`` exists); its wall seconds (0 when read)."""
    if out.exists():
        return 0.0
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr.strip().splitlines()[-1] if done.stderr else ''}")
    return time.perf_counter() - started


def board_values(path: Path) -> np.ndarray:
    """A board-sampled cell's duplicate value per board in mbb/g, as its report computes it."""
    data = json.loads(path.read_text())
    values = BoardValues(np.array(data["per_board"]["seat0_chips"]), np.array(data["per_board"]["seat1_chips"]))
    return values.duplicate * 1000.0 / data["big_blind"]


#: Rounds of ``--target`` extensions at most.
EXTENSION_ROUNDS = 3


def extension_path(out: Path, a: str, b: str, k: int) -> Path:
    """The k-th extension's JSON of the pair (a, b) (k >= 1; the first is ``.extra.json``)."""
    return out / f"{slug(a)}__{slug(b)}.extra{'' if k == 1 else k}.json"


def extension_files(out: Path, a: str, b: str) -> list[Path]:
    """The pair's extensions on disk, in seed order."""
    return [f for f in (extension_path(out, a, b, k) for k in range(1, EXTENSION_ROUNDS + 1)) if f.exists()]


def extra_boards(values: np.ndarray, target: float, max_boards: int) -> int:
    """Boards a pair with per-board ``values`` still needs for a 95% half-width of ``target``
    (0 when it has it)."""
    found = estimate(values)
    if found.half_width <= target:
        return 0
    wanted = math.ceil(found.n * (found.half_width / target) ** 2 * 1.15)
    return max(0, min(max_boards, wanted) - found.n)


def match_row(path: Path, label: str) -> dict:
    rows = {row["label"]: row for row in json.loads(path.read_text())["rows"]}
    return rows[label]


def cell(row: dict) -> str:
    return f"{row['mean']:+.1f} ± {row['half_width']:.1f}"


def grid_speed(spec: str, boards: int, chunks: list[int]) -> None:
    """CPU seconds of ``spec``'s grid on ``boards`` sampled boards, per node-chunk size."""
    import bot.agents.board_grid as board_grid
    from bot.registry import resolve_agent
    from protocol.betting_tree import DECISION, BettingTree
    from protocol.gamedef import load_game
    from training.abstraction.board_match import live_hands, sample_boards

    game = load_game("holdem")
    agent = resolve_agent(spec, game)
    tree = BettingTree.build(game)
    decisions = np.flatnonzero(tree.kind == DECISION)
    hands = np.array(list(itertools.combinations(range(52), 2)), dtype=np.int64)
    samples = sample_boards(game, 0, 0, boards + 1)
    agent.board_strategies(samples[-1], live_hands(hands, samples[-1])[0], decisions, 0)  # compile / load kernels
    print(machine())
    for chunk in chunks:
        board_grid.NODE_CHUNK = chunk
        started = time.process_time()
        for k, board in enumerate(samples[:boards]):
            agent.board_strategies(board, live_hands(hands, board)[0], decisions, k)
        print(f"{spec}: {len(decisions):,} decision nodes x {len(live_hands(hands, samples[0])[0]):,} hands, "
              f"node chunk {chunk}: {(time.process_time() - started) / boards:.2f} CPU-s per board ({boards} boards)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", default=[], metavar="LABEL=SPEC",
                        help="a policy: its label in the table and its agent name or path; repeatable")
    parser.add_argument("--grid-speed", metavar="SPEC", help="time this network policy's board grid instead")
    parser.add_argument("--chunks", default="128", help="--grid-speed: node-chunk sizes, comma-separated")
    parser.add_argument("--boards", type=int, default=0,
                        help="pairs by N sampled boards, exact over hands (--boards of pokerbot match) instead of hands; "
                             "--grid-speed: boards timed")
    parser.add_argument("--hands", type=int, default=5000, help="deals per pair (each played in both seats)")
    parser.add_argument("--lbr-hands", type=int, default=0, help="LBR deals per policy (0: no LBR column)")
    parser.add_argument("--only-with", action="append", default=[], metavar="LABEL",
                        help="play only the pairs with this policy on one side (repeatable): a new policy's row "
                             "against a table already measured")
    parser.add_argument("--target", type=float, default=0.0,
                        help="--boards: extend every pair wider than this 95%% half-width (mbb/g) on fresh boards")
    parser.add_argument("--max-boards", type=int, default=1000, help="--target: boards a pair may reach in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="matches run at once")
    parser.add_argument("--out", type=Path, help="folder for every match's and LBR's JSON")
    args = parser.parse_args()
    if args.grid_speed:
        grid_speed(args.grid_speed, max(1, args.boards), [int(c) for c in args.chunks.split(",")])
        return
    if not args.policy or args.out is None:
        parser.error("--policy (two or more) and --out are needed for the table")
    policies = []
    for item in args.policy:
        label, sep, spec = item.partition("=")
        if not sep:
            parser.error(f"--policy {item!r}: expected LABEL=SPEC")
        policies.append((label.strip(), spec.strip()))
    unknown = set(args.only_with) - {label for label, _ in policies}
    if unknown:
        parser.error(f"--only-with {sorted(unknown)[0]!r}: not a --policy label")
    pairs = [(a, b) for a, b in itertools.combinations(policies, 2)
             if not args.only_with or a[0] in args.only_with or b[0] in args.only_with]
    args.out.mkdir(parents=True, exist_ok=True)
    pokerbot = [sys.executable, "-m", "bot"]
    jobs: dict[str, tuple[list[str], Path]] = {}
    for (a, spec_a), (b, spec_b) in pairs:
        out = args.out / f"{slug(a)}__{slug(b)}.json"
        sample = ["--boards", str(args.boards)] if args.boards else ["--duplicate", "--hands", str(args.hands)]
        jobs[f"{a} vs {b}"] = ([*pokerbot, "match", "--game", "holdem", "--agent", spec_a, "--opponent", spec_b,
                                *sample, "--seed", str(args.seed), "--json", str(out)], out)
    if args.lbr_hands:
        for label, spec in policies:
            out = args.out / f"lbr_{slug(label)}.json"
            jobs[f"LBR {label}"] = ([*pokerbot, "lbr", spec, "--game", "holdem", "--hands", str(args.lbr_hands),
                                     "--seed", str(args.seed), "--json", str(out)], out)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        seconds = dict(zip(jobs, pool.map(lambda job: run_cell(*job), jobs.values()), strict=True))

    def pooled(a: str, b: str) -> np.ndarray:
        files = [jobs[f"{a} vs {b}"][1], *extension_files(args.out, a, b)]
        return np.concatenate([board_values(f) for f in files])

    for _ in range(EXTENSION_ROUNDS if args.boards and args.target > 0 else 0):
        extensions = {}
        for (a, spec_a), (b, spec_b) in pairs:
            more = extra_boards(pooled(a, b), args.target, args.max_boards)
            k = len(extension_files(args.out, a, b)) + 1
            if more and k <= EXTENSION_ROUNDS:
                out = extension_path(args.out, a, b, k)
                extensions[f"{a} vs {b}"] = ([*pokerbot, "match", "--game", "holdem", "--agent", spec_a, "--opponent",
                                              spec_b, "--boards", str(more), "--seed", str(args.seed + k), "--json",
                                              str(out)], out)  # fmt: skip
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for key, wall in zip(extensions, pool.map(lambda job: run_cell(*job), extensions.values()), strict=True):
                seconds[key] += wall
    print(machine())
    if args.boards:
        print(f"\n{args.boards:,} sampled boards per pair (with --target, more on seeds {args.seed + 1}, ...), each exact over hole cards and actions, both seats, seed "
              f"{args.seed} (A's winnings, mbb/g, 95% intervals)\n")
        print("| A | B | boards | exact over hands, by board | wall s |")
        print("|---|---|---|---|---|")
    else:
        print(f"\n{args.hands:,} deals x 2 seats per pair, seed {args.seed} (A's winnings, mbb/g, 95% intervals)\n")
        print("| A | B | duplicate | AIVAT + duplicate | wall s |")
        print("|---|---|---|---|---|")
    for (a, _), (b, _) in pairs:
        path, wall = jobs[f"{a} vs {b}"][1], f"{seconds[f'{a} vs {b}']:,.0f}"
        if args.boards:
            found = estimate(pooled(a, b))
            print(f"| {a} | {b} | {found.n} | {found.mean:+.1f} ± {found.half_width:.1f} | {wall} |")
        else:
            print(f"| {a} | {b} | {cell(match_row(path, 'duplicate'))} | {cell(match_row(path, 'AIVAT + duplicate'))} | {wall} |")
    if args.lbr_hands:
        print(f"\nLBR ({args.lbr_hands:,} deals x 2 seats; a lower bound on exploitability, NashConv/2)\n")
        print("| policy | LBR mbb/g | position 0 | position 1 | wall s |")
        print("|---|---|---|---|---|")
        for label, _ in policies:
            data = json.loads(jobs[f"LBR {label}"][1].read_text())["estimates"]
            print(f"| {label} | {cell(data['overall'])} | {cell(data['position_0'])} | {cell(data['position_1'])} | "
                  f"{seconds[f'LBR {label}']:,.0f} |")


if __name__ == "__main__":
    main()
