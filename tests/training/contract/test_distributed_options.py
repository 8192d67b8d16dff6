"""``--workers`` / ``--ray-address`` checks that need no Ray: defaults, bad values, Ray missing."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main as pokerbot
from training.contract import cluster as distributed
from training.contract.entry import StopRequest


def test_one_worker_is_the_single_process_path() -> None:
    assert distributed.Cluster.from_options({}) == distributed.Cluster(1, None)
    assert not distributed.Cluster.from_options({"workers": 1}).distributed
    assert distributed.Cluster.from_options({"workers": None, "ray_address": "10.0.0.5:6379"}).distributed


def test_shares_cover_the_total_in_contiguous_near_equal_parts() -> None:
    for total, parts in ((10, 3), (5, 8), (100_000, 16), (0, 2)):
        split = distributed.shares(total, parts)
        assert sum(count for _start, count in split) == total and len(split) == parts
        assert [start for start, _count in split] == [sum(c for _s, c in split[:i]) for i in range(parts)]
        assert max(c for _s, c in split) - min(c for _s, c in split) <= 1


def test_workers_without_ray_is_a_one_line_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, as when not installed
    with pytest.raises(distributed.WorkerError, match=r'pip install "pokerbot\[ray\]"'):
        distributed.Cluster.from_options({"workers": 2})
    result = CliRunner().invoke(pokerbot, ["train", "--algo", "sd-cfr", "--game", "kuhn", "--workers", "2",
                                           "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and 'pip install "pokerbot[ray]"' in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "r").exists()  # refused before a run directory was created


def test_bad_worker_options_are_one_line_errors(tmp_path) -> None:
    runner = CliRunner()
    result = runner.invoke(pokerbot, ["train", "--algo", "sd-cfr", "--game", "kuhn", "--workers", "0",
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--workers 0: must be at least 1" in result.output
    result = runner.invoke(pokerbot, ["train", "--algo", "nfsp", "--game", "kuhn", "--workers", "2",
                                      "--out", str(tmp_path / "n")])
    assert result.exit_code == 2 and "not nfsp" in result.output


class FakeRay:
    """What :func:`distributed.start` calls of ``ray``: ``init`` does what the real one does to
    the process's signal handlers (Ray 2.x: SIGTERM -> exit at once), or fails as a raylet that
    did not register in time does."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.started = False
        self.options: dict = {}

    def is_initialized(self) -> bool:
        return self.started

    def init(self, **options) -> None:
        self.options = options
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        if self.fail:
            raise Exception("The current node timed out during startup. This could happen because ...")
        self.started = True

    def shutdown(self) -> None:
        self.started = False


def test_starting_ray_keeps_the_run_contracts_signal_handlers(monkeypatch) -> None:
    fake = FakeRay(fail=False)
    monkeypatch.setitem(sys.modules, "ray", fake)
    with StopRequest() as stop:
        distributed.start(distributed.Cluster(2))
        distributed.stop()
        # a local instance: 2 CPUs, actors at the driver's priority (tests/training/contract/test_ray.py checks Ray obeys)
        assert fake.options["num_cpus"] == 2 and fake.options["_system_config"] == {"worker_niceness": 0}
        assert signal.getsignal(signal.SIGTERM) == stop._handle  # not Ray's exit
        signal.raise_signal(signal.SIGTERM)  # the first one asks the loop to finish its step
        assert stop.requested


def test_a_ray_that_does_not_start_is_a_one_line_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", FakeRay(fail=True))
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(distributed.WorkerError) as error:
        distributed.start(distributed.Cluster(2, "10.0.0.5:6379"))
    assert str(error.value).startswith("Ray did not start (10.0.0.5:6379): Exception: The current node timed out")
    assert "\n" not in str(error.value) and signal.getsignal(signal.SIGTERM) == before
    distributed.stop()  # nothing was started: nothing to shut down


def test_the_small_holdem_config_overrides_the_holdem_preset() -> None:
    """docs/sd-cfr-holdem-small.toml (the small-machine HULH run of docs/distributed.md) resolves
    through the run contract: its keys replace the preset's, the rest stays the holdem preset's."""
    from training.contract.entry import load_trainer, resolve_new

    path = Path(__file__).resolve().parents[3] / "docs" / "sd-cfr-holdem-small.toml"
    config = resolve_new(load_trainer("sd-cfr"), {"game": "holdem", "config_path": str(path)}).config
    assert (config.traversals, config.width, config.advantage_memory, config.sgd_steps, config.batch_size,
            config.threads) == (2000, 64, 2_000_000, 300, 2048, 1)
    assert config.normalize_targets and config.evaluate_every == 0 and config.iterations == 450
