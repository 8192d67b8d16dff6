"""``--device cuda`` where torch sees no CUDA device: one line naming the problem, before a run
directory exists, for every torch trainer, with ``--workers``, from a ``--config`` file and on
``--resume`` (the resumed run is left as it was). torch's CUDA check is patched to say "none", so
the test means the same on a GPU machine."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from bot.cli import main as pokerbot

MESSAGE = "--device cuda: no CUDA device is available to torch here"


def train(*args: str):
    return CliRunner().invoke(pokerbot, ["train", *args])


def assert_one_line_error(result, before: int = 0) -> None:
    """Exit 2 with the message as the output's one error line, after ``before`` lines of other
    output."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == before + 1 and lines[-1] == f"error: {MESSAGE}", result.output


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("algo", ["sd-cfr", "deep-cfr", "nfsp", "dream", "os-sd-cfr"])
def test_a_new_run_on_a_missing_cuda_is_refused_in_one_line(algo, no_cuda, tmp_path) -> None:
    out = tmp_path / "run"
    assert_one_line_error(train("--algo", algo, "--game", "leduc", "--device", "cuda", "--out", str(out)))
    assert not out.exists()


def test_workers_and_config_files_get_the_same_error(no_cuda, tmp_path) -> None:
    pytest.importorskip("ray")  # --workers checks that Ray is importable before the config
    out = tmp_path / "run"
    assert_one_line_error(train("--algo", "sd-cfr", "--game", "holdem", "--device", "cuda", "--workers", "2",
                                "--out", str(out)))
    config = tmp_path / "gpu.toml"
    config.write_text('device = "cuda"\n')
    assert_one_line_error(train("--algo", "sd-cfr", "--game", "holdem", "--config", str(config), "--out", str(out)))
    assert not out.exists()


def test_resume_on_a_missing_cuda_is_refused_and_keeps_the_run(no_cuda, tmp_path) -> None:
    out = tmp_path / "run"
    first = train("--algo", "sd-cfr", "--game", "kuhn", "--iterations", "1", "--traversals", "20",
                  "--device", "cpu", "--out", str(out))
    assert first.exit_code == 0, first.output
    config = (out / "config.toml").read_text()
    # refused before anything is resumed: no "resuming ..." line claims otherwise
    assert_one_line_error(train("--algo", "sd-cfr", "--resume", str(out), "--device", "cuda"))
    assert (out / "config.toml").read_text() == config  # not rewritten with the refused device
