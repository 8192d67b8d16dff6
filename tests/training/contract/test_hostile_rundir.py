"""Hostile input at the run directory: a second writer, damaged metrics lines, a folder that is
not new, old or unknown formats, a config whose game was changed, and disk or permission errors
while writing (injected: tests run as root in CI, where a read-only mode does not stop a write).
Each ends as a one-line error or a documented recovery, and nothing of the run is lost."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import CorruptFileError, PokerbotError
from protocol.files import OutputPathError, atomic_write_text
from training.contract.rundir import RunDir, RunDirError, load_torch, save_torch

ROOT = Path(__file__).resolve().parents[3]


@dataclasses.dataclass(frozen=True)
class Cfg:
    game: str = "kuhn"
    seed: int = 3


def _run_with_checkpoints(path: Path, iterations: int = 2) -> RunDir:
    run = RunDir.create(path, Cfg())
    for iteration in range(1, iterations + 1):
        run.append_metrics({"iteration": iteration})
        with run.writing_checkpoint() as folder:
            save_torch(folder / "state.pt", {"iteration": iteration})
    return run


# -- one writer ------------------------------------------------------------------------------------

HOLD_LOCK = """
import sys
from training.contract.rundir import RunDir
run = RunDir.open(sys.argv[1])
run.lock()
print("locked", flush=True)
sys.stdin.read()  # hold it until the test closes our stdin
"""


def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_holder_leaves_no_stale_lock(tmp_path) -> None:
    run = _run_with_checkpoints(tmp_path / "r")
    del run  # this process lets go of the run
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path / "r")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        second = RunDir.open(tmp_path / "r")
        with pytest.raises(RunDirError, match=rf"r is in use by pid {holder.pid} on .*one process writes a run at a time"):
            second.append_metrics({"iteration": 3})
        with pytest.raises(RunDirError, match="in use by"):
            second.resume_checkpoint()
        assert [r["iteration"] for r in second.read_metrics()] == [1, 2]  # reading is fine, nothing written
    finally:
        holder.kill()  # like a SIGKILL: the kernel drops the lock with the process
        holder.wait()
    resumed = RunDir.open(tmp_path / "r")
    assert resumed.resume_checkpoint() == tmp_path / "r" / "checkpoint"
    resumed.append_metrics({"iteration": 3})
    assert [r["iteration"] for r in resumed.read_metrics()] == [1, 2, 3]


def test_one_process_is_one_writer_of_its_run(tmp_path) -> None:
    """A run created and resumed in the same process (the tests' and benchmarks' habit) shares
    the lock instead of refusing itself."""
    first = _run_with_checkpoints(tmp_path / "r")
    again = RunDir.open(tmp_path / "r")
    again.append_metrics({"iteration": 3})
    assert first.read_metrics()[-1] == {"iteration": 3}


# -- metrics.jsonl ------------------------------------------------------------------------------

def test_only_a_torn_last_metrics_line_is_dropped(tmp_path) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 3)
    with open(run.metrics_path, "a") as handle:
        handle.write('{"iteration": 4, "lo')  # a kill mid-write: no newline
    assert [r["iteration"] for r in run.read_metrics()] == [1, 2, 3]
    run.truncate_metrics(3)  # what a resume does: the torn line is gone, every record kept
    assert run.metrics_path.read_text() == "".join(json.dumps({"iteration": i}) + "\n" for i in (1, 2, 3))


@pytest.mark.parametrize(("line", "match"), [('{"iteration": 1, "lo#', "line 1 is damaged"),
                                             ("[1, 2]", "line 1 is not a JSON object"),
                                             ('"text"', "line 1 is not a JSON object"),
                                             ("[" * 100_000, "line 1 is damaged")])
def test_a_damaged_earlier_metrics_line_is_an_error_and_the_file_is_kept(tmp_path, line, match) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 3)
    text = run.metrics_path.read_text().splitlines(keepends=True)
    damaged = line + "\n" + "".join(text[1:])
    run.metrics_path.write_text(damaged)
    with pytest.raises(CorruptFileError, match=match):
        run.read_metrics()
    with pytest.raises(CorruptFileError, match=match):
        run.truncate_metrics(3)  # a resume stops here: nothing rewritten
    with pytest.raises(CorruptFileError, match=match):
        run.resume_checkpoint()
    assert run.metrics_path.read_text() == damaged


def test_a_complete_damaged_last_line_is_not_taken_for_a_torn_one(tmp_path) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 2)
    run.metrics_path.write_text(run.metrics_path.read_text() + '{"iteration": 3, "lo#\n')
    with pytest.raises(CorruptFileError, match="line 3 is damaged"):
        run.read_metrics()


def test_canonical_metrics_leaves_a_non_record_for_the_reader_to_refuse() -> None:
    from bot.run_files import canonical_metrics

    assert canonical_metrics([1, 2]) == [1, 2]


# -- a new run needs a new or empty folder ----------------------------------------------------------

def test_a_new_run_needs_a_new_or_empty_folder(tmp_path) -> None:
    own = tmp_path / "mine"
    own.mkdir()
    (own / "metrics.jsonl").write_text('{"mine": 1}\n')
    with pytest.raises(RunDirError, match="is not empty: a new run needs a new or empty folder"):
        RunDir.create(own, Cfg())
    assert (own / "metrics.jsonl").read_text() == '{"mine": 1}\n' and sorted(os.listdir(own)) == ["metrics.jsonl"]
    with pytest.raises(RunDirError, match="is not empty"):
        RunDir.create(Path("/"), Cfg())
    empty = tmp_path / "empty"
    empty.mkdir()
    assert RunDir.create(empty, Cfg()).config() == {"game": "kuhn", "seed": 3}


# -- formats -----------------------------------------------------------------------------------

def test_an_old_ok_marker_over_a_bit_flipped_state_is_refused(tmp_path) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 2)
    import shutil

    shutil.rmtree(run.path / "checkpoint.old")
    (run.path / "checkpoint" / "COMPLETE").write_text("ok")
    state = run.path / "checkpoint" / "state.pt"
    raw = bytearray(state.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    state.write_bytes(bytes(raw))
    with pytest.raises(RunDirError, match="a checkpoint from before checksums.*--force starts it over"):
        run.resume_checkpoint()
    assert run.resume_checkpoint(force=True) is None


def test_an_unknown_run_format_is_refused(tmp_path) -> None:
    RunDir.create(tmp_path / "r", Cfg(), algo="nfsp")
    (tmp_path / "r" / "run.json").write_text(json.dumps({"format": 99, "algo": "nfsp"}))
    with pytest.raises(RunDirError, match=r"run.json: run format 99, this pokerbot reads format 1"):
        RunDir.open(tmp_path / "r")
    (tmp_path / "r" / "run.json").write_text("[1]")
    with pytest.raises(RunDirError, match="run format None"):
        RunDir.open(tmp_path / "r")


def test_a_config_whose_game_was_changed_is_refused_before_resuming(tmp_path, capsys) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 1)
    assert json.loads((run.path / "checkpoint" / "COMPLETE").read_text())["game"] == "kuhn"
    config = run.path / "config.toml"
    config.write_text(config.read_text().replace('game = "kuhn"', 'game = "leduc"'))
    with pytest.raises(RunDirError, match="names game 'leduc' but the checkpoint .* was trained on 'kuhn'"):
        run.check_game()
    with pytest.raises(RunDirError, match="a run cannot change its game"):
        run.resume_checkpoint()
    assert "resuming" not in capsys.readouterr().err  # nothing claimed before the refusal


def test_the_resume_line_says_what_happens(tmp_path, capsys) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 2)
    assert run.resume_checkpoint() == run.path / "checkpoint"
    assert "from its last complete checkpoint" in capsys.readouterr().err
    (run.path / "checkpoint" / "COMPLETE").unlink()
    run.resume_checkpoint()
    err = capsys.readouterr().err
    assert "resuming from the previous checkpoint" in err and "from its previous checkpoint checkpoint.old" in err
    import shutil

    shutil.rmtree(run.path / "checkpoint.old")
    assert run.resume_checkpoint(force=True) is None
    err = capsys.readouterr().err
    assert err.startswith(f"starting {run.path} over in place (--force)") and "resuming" not in err


# -- disk full, no permission --------------------------------------------------------------------

def _fail_writes(monkeypatch, code: int, after: int = 0) -> None:
    """Make the ``after``-th and later ``write``\\ s of binary files fail with ``code``."""
    import protocol.files

    calls = {"n": 0}
    original = protocol.files._Recording.write

    def write(self, data):
        calls["n"] += 1
        if calls["n"] > after:
            self.error = OSError(code, os.strerror(code))
            raise self.error
        return original(self, data)

    monkeypatch.setattr(protocol.files._Recording, "write", write)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EPERM])
def test_a_disk_error_while_checkpointing_is_one_line_and_the_previous_checkpoint_stands(tmp_path, monkeypatch,
                                                                                         code) -> None:
    run = _run_with_checkpoints(tmp_path / "r", 2)
    _fail_writes(monkeypatch, code, after=2)  # inside torch's writer: it raises its own RuntimeError
    with pytest.raises(OutputPathError) as caught:
        with run.writing_checkpoint() as folder:
            save_torch(folder / "state.pt", {"iteration": 3, "big": list(range(10_000))})
    assert str(caught.value) == f"{run.path / 'checkpoint.tmp' / 'state.pt'}: cannot write ({os.strerror(code)})"
    assert caught.value.errno == code
    monkeypatch.undo()
    assert not (run.path / "checkpoint.tmp").exists()
    assert run.resume_checkpoint() == run.path / "checkpoint"
    assert load_torch(run.path / "checkpoint" / "state.pt") == {"iteration": 2}


def test_a_disk_error_in_a_plain_write_names_the_file(tmp_path, monkeypatch) -> None:
    _fail_writes(monkeypatch, errno.ENOSPC)
    target = tmp_path / "config.toml"
    target.write_text("old")
    with pytest.raises(OutputPathError, match=r"config.toml: cannot write \(No space left on device\)"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["config.toml"]


def test_no_permission_on_a_run_folder_is_one_line(tmp_path, monkeypatch) -> None:
    """``mkdir`` refused (a read-only or immutable parent): injected, since root ignores modes."""
    def refuse(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(OutputPathError, match=r"new: cannot write \(Permission denied\)"):
        RunDir.create(tmp_path / "new", Cfg())


def test_the_cli_shows_an_escaped_disk_error_as_one_line(monkeypatch) -> None:
    """A writer outside :func:`protocol.files.atomic_write` (a plot, a log) that lets an
    ``OSError`` of the machine's state escape: one line naming the file, exit 2."""
    from click.testing import CliRunner

    import bot.commands.games as games
    from bot.cli import main

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/some/plot.png")

    monkeypatch.setattr(games, "load_game", full)
    result = CliRunner().invoke(main, ["games"])
    assert result.exit_code == 2 and result.output == "error: /some/plot.png: cannot write (No space left on device)\n"


def test_a_run_that_fails_before_its_first_checkpoint_leaves_nothing(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r", Cfg())
    run.append_metrics({"iteration": 1})
    assert run.discard() and not (tmp_path / "r").exists()
    kept = _run_with_checkpoints(tmp_path / "k", 1)
    assert not kept.discard() and (tmp_path / "k" / "checkpoint").is_dir()
    assert not RunDir.open(tmp_path / "k").discard()  # only a run this process created


def test_damaged_metrics_are_never_an_attribute_error(tmp_path) -> None:
    run = RunDir.create(tmp_path / "r", Cfg())
    run.metrics_path.write_text("[1, 2]\n")
    with pytest.raises(PokerbotError):
        run.read_metrics()


@pytest.mark.parametrize("command", [["solve", "--game", "kuhn", "--iterations", "50"],
                                     ["train", "--algo", "nfsp", "--game", "kuhn", "--iterations", "30"]])
def test_a_full_disk_from_the_cli_is_one_line_and_leaves_no_folder(tmp_path, monkeypatch, command) -> None:
    from click.testing import CliRunner

    from bot.cli import main

    _fail_writes(monkeypatch, errno.ENOSPC)
    result = CliRunner().invoke(main, [*command, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert error and error[0].endswith("cannot write (No space left on device)") and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


def test_a_failed_run_in_the_users_empty_folder_leaves_the_folder_empty(tmp_path) -> None:
    (tmp_path / "mine").mkdir()
    run = RunDir.create(tmp_path / "mine", Cfg())
    run.append_metrics({"iteration": 1})
    assert run.discard() and (tmp_path / "mine").is_dir() and os.listdir(tmp_path / "mine") == []


def test_the_deleted_memories_error_says_why_they_are_gone(kuhn_run, tmp_path) -> None:
    import shutil

    from training.deep_cfr.trainer import DeepCFRTrainer

    run = tmp_path / "run"
    shutil.copytree(kuhn_run, run, ignore=shutil.ignore_patterns("lock"))
    shutil.rmtree(run / "memories")
    config = run / "config.toml"
    assert "keep_memories = false" in config.read_text()
    with pytest.raises(RunDirError, match=r"dropped its memories \(keep_memories = false\)"):
        DeepCFRTrainer.resume(run, progress=False)
    config.write_text(config.read_text().replace("keep_memories = false", "keep_memories = true"))
    with pytest.raises(RunDirError, match=r"memories is missing \(keep_memories = true, so it was deleted outside"):
        DeepCFRTrainer.resume(run, progress=False)
