"""Fixtures shared by test files: a small SD-CFR run on Kuhn for the ``pokerbot watch`` tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

#: Small enough to train in seconds, long enough for curves, memories and a traversal.
WATCH_RUN = {"game": "kuhn", "algo": "sd-cfr", "iterations": 6, "traversals": 200, "seed": 3}


def train_kuhn(out: Path, **overrides) -> Path:
    """``pokerbot train --game kuhn --algo sd-cfr`` through the Python API, without progress."""
    from training.deep_cfr import TRAINERS, DeepCFRTrainer
    from training.run import resolve_new

    options = {**WATCH_RUN, **overrides}
    config = resolve_new(TRAINERS[options.pop("algo")], options).config
    DeepCFRTrainer.new(config, out, progress=False).train()
    return out


@pytest.fixture(scope="session")
def kuhn_run(tmp_path_factory) -> Path:
    """A finished 6-iteration SD-CFR run on Kuhn (read-only for the tests that share it)."""
    return train_kuhn(tmp_path_factory.mktemp("watch") / "kuhn-sdcfr")


@pytest.fixture(scope="session")
def frozen_kuhn_run(kuhn_run, tmp_path_factory) -> Path:
    """:func:`kuhn_run` with its wall-clock figures replaced by fixed ones, for snapshots."""
    run = tmp_path_factory.mktemp("watch-frozen") / "kuhn-sdcfr"
    shutil.copytree(kuhn_run, run)
    fixed = {"traversal_s": 0.05, "training_s": 0.1, "evaluation_s": 0.01, "infosets_per_s": 20000.0}
    lines = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.update({k: v for k, v in fixed.items() if k in record})
        record["elapsed_s"] = 0.2 * record["iteration"]
        lines.append(json.dumps(record))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return run
