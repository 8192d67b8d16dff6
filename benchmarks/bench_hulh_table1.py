"""The Deep CFR paper's Table 1 at our scale (HULH): every pair of the named policies head to
head (AIVAT + duplicate), and each policy's LBR, printed as the table in
docs/benchmarks/hulh-deep-cfr.md.

    python benchmarks/bench_hulh_table1.py \
        --policy "Deep CFR=runs/deep-cfr-holdem" --policy "SD-CFR=runs/deep-cfr-holdem/policy/stack" \
        --policy "NFSP=runs/nfsp-holdem" --policy "abstraction_3e6_ke (shipped default)=default" \
        --hands 5000 --lbr-hands 500 --jobs 2 --out table1/

Each cell is ``pokerbot match --game holdem --agent A --opponent B --duplicate --hands N --seed S
--json OUT/A__B.json`` (A's mbb/g; a cell already in OUT is read, not replayed, so an interrupted
table resumes) and each LBR ``pokerbot lbr SPEC --game holdem --hands N --seed S --json
OUT/lbr_A.json``; ``--jobs`` runs that many at once. The printed rows carry the deals, both
estimates with their 95% intervals and the wall seconds each took, with the machine line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_abstraction import machine  # noqa: E402


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


def match_row(path: Path, label: str) -> dict:
    rows = {row["label"]: row for row in json.loads(path.read_text())["rows"]}
    return rows[label]


def cell(row: dict) -> str:
    return f"{row['mean']:+.1f} ± {row['half_width']:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", required=True, metavar="LABEL=SPEC",
                        help="a policy: its label in the table and its agent name or path; repeatable")
    parser.add_argument("--hands", type=int, default=5000, help="deals per pair (each played in both seats)")
    parser.add_argument("--lbr-hands", type=int, default=0, help="LBR deals per policy (0: no LBR column)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="matches run at once")
    parser.add_argument("--out", type=Path, required=True, help="folder for every match's and LBR's JSON")
    args = parser.parse_args()
    policies = []
    for item in args.policy:
        label, sep, spec = item.partition("=")
        if not sep:
            parser.error(f"--policy {item!r}: expected LABEL=SPEC")
        policies.append((label.strip(), spec.strip()))
    args.out.mkdir(parents=True, exist_ok=True)
    pokerbot = [sys.executable, "-m", "bot"]
    jobs: dict[str, tuple[list[str], Path]] = {}
    for (a, spec_a), (b, spec_b) in itertools.combinations(policies, 2):
        out = args.out / f"{slug(a)}__{slug(b)}.json"
        jobs[f"{a} vs {b}"] = ([*pokerbot, "match", "--game", "holdem", "--agent", spec_a, "--opponent", spec_b,
                                "--duplicate", "--hands", str(args.hands), "--seed", str(args.seed), "--json", str(out)], out)
    if args.lbr_hands:
        for label, spec in policies:
            out = args.out / f"lbr_{slug(label)}.json"
            jobs[f"LBR {label}"] = ([*pokerbot, "lbr", spec, "--game", "holdem", "--hands", str(args.lbr_hands),
                                     "--seed", str(args.seed), "--json", str(out)], out)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        seconds = dict(zip(jobs, pool.map(lambda job: run_cell(*job), jobs.values()), strict=True))
    print(machine())
    print(f"\n{args.hands:,} deals x 2 seats per pair, seed {args.seed} (A's winnings, mbb/g, 95% intervals)\n")
    print("| A | B | duplicate | AIVAT + duplicate | wall s |")
    print("|---|---|---|---|---|")
    for (a, _), (b, _) in itertools.combinations(policies, 2):
        path = jobs[f"{a} vs {b}"][1]
        print(f"| {a} | {b} | {cell(match_row(path, 'duplicate'))} | {cell(match_row(path, 'AIVAT + duplicate'))} | "
              f"{seconds[f'{a} vs {b}']:,.0f} |")
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
