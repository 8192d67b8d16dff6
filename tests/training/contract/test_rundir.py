"""Run directories: config round trip, metrics append/truncate, atomic checkpoint swap, durations."""

from __future__ import annotations

import dataclasses

import pytest

from bot.errors import PokerbotError
from training.contract.entry import parse_duration
from training.contract.rundir import RunDir, RunDirError, load_torch, save_torch


@dataclasses.dataclass(frozen=True)
class Cfg:
    game: str = "kuhn"
    seed: int = 3
    budget: str | None = None
    rate: float = 1e-3


def test_create_saves_the_config_and_refuses_to_overwrite(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r", Cfg())
    assert run.config() == {"game": "kuhn", "seed": 3, "rate": 1e-3}  # None dropped (TOML has no null)
    with pytest.raises(RunDirError, match="already holds a run"):
        RunDir.create(tmp_path / "r", Cfg())
    assert RunDir.open(tmp_path / "r").config()["seed"] == 3
    with pytest.raises(RunDirError, match="not a run directory"):
        RunDir.open(tmp_path / "nothing")


def test_metrics_append_read_truncate_and_torn_lines(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r", Cfg())
    for i in range(1, 5):
        run.append_metrics({"iteration": i, "loss": i / 2})
    with open(run.metrics_path, "a") as handle:
        handle.write('{"iteration": 5, "lo')  # a kill mid-write
    assert [r["iteration"] for r in run.read_metrics()] == [1, 2, 3, 4]
    run.truncate_metrics(2)
    assert run.read_metrics() == [{"iteration": 1, "loss": 0.5}, {"iteration": 2, "loss": 1.0}]


def test_checkpoint_swap_keeps_one_complete_checkpoint(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r", Cfg())
    assert run.checkpoint_path is None
    with run.writing_checkpoint() as folder:
        save_torch(folder / "state.pt", {"iteration": 1})
    assert load_torch(run.checkpoint_path / "state.pt") == {"iteration": 1}
    with pytest.raises(RuntimeError):
        with run.writing_checkpoint() as folder:
            save_torch(folder / "state.pt", {"iteration": 2})
            raise RuntimeError("killed while writing")
    assert load_torch(run.checkpoint_path / "state.pt") == {"iteration": 1}  # the old one survives
    with run.writing_checkpoint() as folder:
        save_torch(folder / "state.pt", {"iteration": 3})
    assert load_torch(run.checkpoint_path / "state.pt") == {"iteration": 3}
    # the previous complete checkpoint is kept as the fallback (issue 17: never lose a run)
    assert load_torch(run.path / "checkpoint.old" / "state.pt") == {"iteration": 1}


def test_a_kill_between_renames_still_resumes(tmp_path) -> None:
    """The swap renames checkpoint -> checkpoint.old before tmp -> checkpoint; a kill in between
    leaves only checkpoint.old, which is still found."""
    run = RunDir.create(tmp_path / "r", Cfg())
    with run.writing_checkpoint() as folder:
        save_torch(folder / "state.pt", {"iteration": 1})
    (run.path / "checkpoint").rename(run.path / "checkpoint.old")
    assert run.checkpoint_path == run.path / "checkpoint.old"


def test_damaged_checkpoint_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "state.pt"
    path.write_bytes(b"not a torch file")
    with pytest.raises(RunDirError, match="cannot load"):
        load_torch(path)


@pytest.mark.parametrize("text,seconds", [("90", 90), ("90s", 90), ("10m", 600), ("2h", 7200), ("1h30m", 5400), ("1.5m", 90)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "5d", "m"])
def test_parse_duration_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="time budget"):
        parse_duration(text)


def test_progress_prints_a_plain_line_per_iteration_off_a_terminal() -> None:
    import io

    from training.contract.rundir import Progress

    stream = io.StringIO()
    progress = Progress(3, stream=stream)
    progress.start_iteration(1)
    progress.advance_iteration(5, 10, "traversals")
    progress.end_iteration(1, "loss 0.5")
    progress.close()
    assert stream.getvalue() == "iteration 1/3: loss 0.5\n"


def _two_checkpoints(tmp_path) -> RunDir:
    run = RunDir.create(tmp_path / "r", Cfg())
    for iteration in (1, 2):
        with run.writing_checkpoint() as folder:
            save_torch(folder / "state.pt", {"iteration": iteration})
        run.append_metrics({"iteration": iteration})
    return run


def test_a_bit_flip_in_the_last_checkpoint_falls_back_to_the_previous_one(tmp_path, capsys) -> None:
    run = _two_checkpoints(tmp_path)
    state = run.path / "checkpoint" / "state.pt"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0x01
    state.write_bytes(bytes(data))
    assert run.resume_checkpoint() == run.path / "checkpoint.old"
    assert load_torch(run.resume_checkpoint() / "state.pt") == {"iteration": 1}
    assert "state.pt: checksum mismatch" in capsys.readouterr().err


def test_missing_complete_marker_never_restarts_silently(tmp_path, capsys) -> None:
    run = _two_checkpoints(tmp_path)
    (run.path / "checkpoint" / "COMPLETE").unlink()
    assert run.resume_checkpoint() == run.path / "checkpoint.old"  # said on stderr
    assert "COMPLETE missing" in capsys.readouterr().err
    import shutil

    shutil.rmtree(run.path / "checkpoint.old")
    with pytest.raises(RunDirError, match="COMPLETE missing.*--force starts it over"):
        run.resume_checkpoint()
    assert run.resume_checkpoint(force=True) is None


def test_metrics_without_any_checkpoint_is_an_error_not_a_restart(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r", Cfg())
    assert run.resume_checkpoint() is None  # nothing to lose: starting is fine
    run.append_metrics({"iteration": 1})
    with pytest.raises(RunDirError, match="has metrics but no checkpoint"):
        run.resume_checkpoint()


def test_empty_state_file_is_a_one_line_error(tmp_path) -> None:
    path = tmp_path / "state.pt"
    path.write_bytes(b"")
    with pytest.raises(PokerbotError, match="empty file"):
        load_torch(path)
    path.write_bytes(b"PK\x03\x04" + b"\0" * 10)  # a zip header cut short
    with pytest.raises(RunDirError, match="cannot load checkpoint file"):
        load_torch(path)


def test_old_names_of_the_elapsed_metric_read_as_elapsed_s(tmp_path) -> None:
    """NFSP logged ``train_seconds`` and the abstraction solve ``wall_s`` before every trainer
    logged ``elapsed_s``: an old run directory's lines read under today's name."""
    from bot.run_files import ELAPSED_METRIC, canonical_metrics

    assert ELAPSED_METRIC == "elapsed_s"
    run = RunDir.create(tmp_path / "r", Cfg())
    run.append_metrics({"iteration": 1, "train_seconds": 2.5, "hands": 10})
    run.append_metrics({"iteration": 2, "wall_s": 4.0})
    run.append_metrics({"iteration": 3, "elapsed_s": 6.0})
    assert run.read_metrics() == [{"iteration": 1, "hands": 10, "elapsed_s": 2.5}, {"iteration": 2, "elapsed_s": 4.0},
                                  {"iteration": 3, "elapsed_s": 6.0}]
    assert canonical_metrics({"elapsed_s": 1.0, "wall_s": 9.0}) == {"elapsed_s": 1.0}
    with run.writing_checkpoint() as folder:
        save_torch(folder / "state.pt", {"iteration": 3})
    assert "0.1 min of training so far" in run.resume_summary(run.resume_checkpoint())


def test_a_time_budget_sets_the_overall_bars_deadline_net_of_earlier_sittings() -> None:
    """On a terminal the overall task's ETA stops at the budget's end (:func:`bot.progress.time_remaining`):
    ``--time-budget`` is the run's whole training clock, so a resume that trained 600 s of a
    1,000 s budget has 400 s left."""
    import io

    from training.contract.rundir import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    progress = Progress(10_000, time_budget=1_000.0, stream=Terminal(), trained_seconds=600.0)
    overall = progress._rich.tasks[0]
    progress.close()
    assert overall.fields["deadline"] == pytest.approx(progress.started + 400.0)
    unbudgeted = Progress(10_000, stream=Terminal())
    assert unbudgeted._rich.tasks[0].fields["deadline"] is None
    unbudgeted.close()
