"""Fixtures shared by test files: a small SD-CFR run on Kuhn for the ``pokerbot watch`` tests
(trained here, and a committed copy for the snapshots)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

#: Small enough to train in seconds, long enough for curves, memories and a traversal.
WATCH_RUN = {"game": "kuhn", "algo": "sd-cfr", "iterations": 6, "traversals": 200, "seed": 3}


def train_kuhn(out: Path, **overrides) -> Path:
    """``pokerbot train --game kuhn --algo sd-cfr`` through the Python API, without progress."""
    from training.contract.entry import resolve_new
    from training.deep_cfr.trainer import TRAINERS, DeepCFRTrainer

    options = {**WATCH_RUN, **overrides}
    config = resolve_new(TRAINERS[options.pop("algo")], options).config
    DeepCFRTrainer.new(config, out, progress=False).train()
    return out


@pytest.fixture(scope="session")
def kuhn_run(tmp_path_factory) -> Path:
    """A finished 6-iteration SD-CFR run on Kuhn (read-only for the tests that share it)."""
    return train_kuhn(tmp_path_factory.mktemp("watch") / "kuhn-sdcfr")


#: The run the ``pokerbot watch`` snapshots show, committed (not trained by the test): SD-CFR's
#: fits go through numba and BLAS kernels whose float results differ between CPUs (AVX-512 on one
#: machine, AVX2 on another), and six iterations of regret matching turn those last bits into
#: different pictures. Written by :func:`write_frozen_kuhn_run` (see there to regenerate).
FROZEN_KUHN_RUN = Path(__file__).parent / "data" / "watch-kuhn-sdcfr"
#: Wall-clock figures replaced by fixed ones in the committed run.
FIXED_TIMINGS = {"traversal_s": 0.05, "training_s": 0.1, "evaluation_s": 0.01, "infosets_per_s": 20000.0}


def write_frozen_kuhn_run(target: Path = FROZEN_KUHN_RUN) -> Path:
    """Train :data:`WATCH_RUN` into ``target`` with its wall-clock figures fixed (no memories or
    plot: the watch tabs read metrics, checkpoints and the policy stack). Regenerate after a
    change of the run format with ``python -c "from tests import conftest;
    conftest.write_frozen_kuhn_run()"``, then ``pytest
    tests/tui/watch/test_watch_snapshots.py --snapshot-update``, and look at the SVGs."""
    shutil.rmtree(target, ignore_errors=True)
    train_kuhn(target)
    shutil.rmtree(target / "memories")
    (target / "exploitability.png").unlink()
    lines = []
    for line in (target / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.update({k: v for k, v in FIXED_TIMINGS.items() if k in record})
        record["elapsed_s"] = 0.2 * record["iteration"]
        lines.append(json.dumps(record))
    (target / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return target


@pytest.fixture(scope="session")
def frozen_kuhn_run(tmp_path_factory) -> Path:
    """A copy of the committed :data:`FROZEN_KUHN_RUN` (read-only for the snapshot tests)."""
    run = tmp_path_factory.mktemp("watch-frozen") / "kuhn-sdcfr"
    shutil.copytree(FROZEN_KUHN_RUN, run)
    return run


def signal_during(monkeypatch, cls: type, method: str, iteration: int, signum: int) -> None:
    """Send this process ``signum`` (a real Ctrl-C or SIGTERM, handled by the run contract's
    StopRequest) when ``cls.method`` starts the step after ``iteration`` (``self.iteration``)."""
    import os

    original = getattr(cls, method)

    def step(self, *args, **kwargs):
        if self.iteration == iteration:
            os.kill(os.getpid(), signum)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, method, step)
