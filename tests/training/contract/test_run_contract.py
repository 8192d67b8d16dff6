"""The run contract (training/contract/entry.py): one resolver, validation before anything is created,
explicit resume rules, one device resolution, one interrupt policy, checkpoints by time."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.errors import ConfigError
from bot.run_files import SOLVE_ALGO, TRAIN_ALGORITHMS
from protocol.gamedef import load_game
from training.contract.entry import (
    ALGORITHMS,
    CheckpointClock,
    load_trainer,
    parse_duration,
    resolve_new,
    resolve_resume,
    shipped_alias,
)
from training.contract.rundir import RunDir


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_train_help_lists_every_algorithm_and_no_internal_text() -> None:
    assert sorted(TRAIN_ALGORITHMS) == sorted(set(ALGORITHMS) - {SOLVE_ALGO})  # solve: pokerbot solve's door
    result = invoke("train", "--help")
    assert result.exit_code == 0
    assert "Options left out are None" not in result.output and "resolves them" not in result.output
    flat = " ".join(result.output.split()).replace("- ", "-")  # click may wrap after a hyphen
    assert "Training algorithm: abstraction, deep-cfr, distil, dream, flop-cfr, nfsp, os-sd-cfr, sd-cfr." in flat


@pytest.mark.parametrize("algo", ["sd-cfr", "nfsp"])
def test_a_typo_in_game_creates_nothing(tmp_path, algo: str) -> None:
    out = tmp_path / "run"
    result = invoke("train", "--algo", algo, "--game", "hodlem", "--out", str(out))
    assert result.exit_code == 2 and "hodlem" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_unknown_keys_and_flags_that_do_not_apply_are_named(tmp_path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("widht = 3\nsgd_stepz = 1\n")
    with pytest.raises(ConfigError, match="unknown sd-cfr config key\\(s\\) sgd_stepz, widht"):
        resolve_new(load_trainer("sd-cfr"), {"game": "kuhn", "config_path": str(toml)})
    with pytest.raises(ConfigError, match="--size does not apply to --algo sd-cfr"):
        resolve_new(load_trainer("sd-cfr"), {"game": "kuhn", "size": "3e6"})
    with pytest.raises(ConfigError, match="--traversals does not apply to --algo abstraction"):
        resolve_new(load_trainer("abstraction"), {"game": "leduc", "size": "lossless", "traversals": 3})
    with pytest.raises(ConfigError, match="--teacher does not apply to --algo sd-cfr"):
        resolve_new(load_trainer("sd-cfr"), {"game": "kuhn", "teacher": "runs/x"})
    with pytest.raises(ConfigError, match="--warm-start does not apply to --algo distil"):
        resolve_new(load_trainer("distil"), {"game": "kuhn", "teacher": "runs/x", "warm_start": "runs/y"})


def test_precedence_is_the_same_for_every_algorithm(tmp_path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("seed = 5\nwidth = 24\n")
    for algo, iterations_field in (("sd-cfr", "iterations"), ("nfsp", "steps"), ("dream", "iterations")):
        trainer = load_trainer(algo)
        config = resolve_new(trainer, {"game": "kuhn", "config_path": str(toml), "seed": 9, "iterations": 3}).config
        assert (config.seed, config.width, getattr(config, iterations_field)) == (9, 24, 3)  # flag > file
        preset = trainer.presets["kuhn"]
        assert config.batch_size == preset["batch_size"]  # the preset fills what neither sets
        assert config.time_budget is None


def test_time_budget_is_seconds_everywhere() -> None:
    for algo in ("deep-cfr", "nfsp", "abstraction"):
        options = {"game": "leduc", "time_budget": "1h30m"} | ({"size": "lossless"} if algo == "abstraction" else {})
        assert resolve_new(load_trainer(algo), options).config.time_budget == 5400.0
    assert parse_duration("90s") == 90.0 and parse_duration(12.5) == 12.5
    assert parse_duration(0, stored=True) is None  # an old run's config.toml wrote 0 for no limit
    for zero in (0, "0", "0s", -5):  # a user's 0 is an error, not "no limit"
        with pytest.raises(ConfigError, match="must be more than 0"):
            parse_duration(zero)
    with pytest.raises(ConfigError, match="time budget 'soon'"):
        parse_duration("soon")


def test_a_gamedef_path_does_not_get_leducs_preset(tmp_path) -> None:
    text = load_game("leduc").to_text().replace("numRanks = 3", "numRanks = 4")
    assert text != load_game("leduc").to_text()
    path = tmp_path / "leduc4.game"
    path.write_text(text)
    resolved = resolve_new(load_trainer("nfsp"), {"game": str(path)})
    assert resolved.config.width == 64 and not resolved.config.fused  # the defaults, not LEDUC_TUNED
    assert any("not a shipped game" in note for note in resolved.notes)
    # a copy of a shipped game's rules under another name still gets that game's preset
    same = tmp_path / "my_leduc.game"
    same.write_text(load_game("leduc").to_text())
    assert shipped_alias(load_game(str(same))) == "leduc"
    assert resolve_new(load_trainer("nfsp"), {"game": str(same)}).config.fused


def test_nfsp_leduc_on_a_cuda_machine_turns_fused_off_with_a_note(monkeypatch) -> None:
    """The Leduc preset's CPU-only ``fused`` is turned off when ``--device auto`` resolves to cuda
    (it used to make ``pokerbot train --algo nfsp --game leduc`` fail on any CUDA machine)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    resolved = resolve_new(load_trainer("nfsp"), {"game": "leduc"})
    assert resolved.config.device == "auto" and resolved.config.fused is False
    assert resolved.notes == ("fused = False: fused = True runs on the CPU only and the device is cuda",)
    deep = resolve_new(load_trainer("sd-cfr"), {"game": "leduc", "config_path": None})
    assert deep.config.fit_backend == "auto"  # auto picks torch on cuda by itself: nothing to turn off


def test_resume_changes_only_what_it_may(tmp_path) -> None:
    out = tmp_path / "run"
    result = invoke("train", "--algo", "nfsp", "--game", "kuhn", "--iterations", "20", "--seed", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text()) == {"format": 1, "algo": "nfsp"}
    trainer = load_trainer("nfsp")
    run = RunDir.open(out)
    for flag, value in (("seed", 4), ("game", "leduc")):
        with pytest.raises(ConfigError, match=f"--{flag} cannot change a run on --resume"):
            resolve_resume(trainer, run, {flag: value})
    with pytest.raises(ConfigError, match="--config cannot change a run"):
        resolve_resume(trainer, run, {"config_path": "x.toml"})
    config = resolve_resume(trainer, run, {"iterations": 40, "time_budget": "2m", "threads": 1}).config
    assert (config.steps, config.time_budget, config.seed) == (40, 120.0, 3)
    wrong = invoke("train", "--algo", "sd-cfr", "--resume", str(out))
    assert wrong.exit_code == 2 and "is a nfsp run; resume it with --algo nfsp" in wrong.output


def test_resume_never_restarts_a_run_silently(tmp_path) -> None:
    out = tmp_path / "run"
    args = ("train", "--algo", "sd-cfr", "--game", "kuhn", "--iterations", "2", "--traversals", "50", "--threads", "1")
    assert invoke(*args, "--out", str(out)).exit_code == 0
    before = (out / "metrics.jsonl").read_text()
    for name in ("checkpoint", "checkpoint.old"):
        if (out / name / "COMPLETE").exists():
            (out / name / "COMPLETE").unlink()
    result = invoke("train", "--algo", "sd-cfr", "--resume", str(out), "--iterations", "3")
    assert result.exit_code == 2 and "COMPLETE missing" in result.output and "--force" in result.output
    assert (out / "metrics.jsonl").read_text() == before  # nothing rewritten
    forced = invoke("train", "--algo", "sd-cfr", "--resume", str(out), "--iterations", "3", "--force")
    assert forced.exit_code == 0, forced.output
    assert [r["iteration"] for r in RunDir.open(out).read_metrics()] == [1, 2, 3]


def test_resume_reads_the_algorithm_from_the_run(tmp_path) -> None:
    """``train --resume RUN`` needs no ``--algo``: the run's ``run.json`` names it; where it
    cannot (no run, a run older than run.json, a new run) the error says what to give."""
    out = tmp_path / "run"
    args = ("--game", "kuhn", "--iterations", "20", "--seed", "3")
    assert invoke("train", "--algo", "nfsp", *args, "--out", str(out)).exit_code == 0
    resumed = invoke("train", "--resume", str(out), "--iterations", "40")
    assert resumed.exit_code == 0, resumed.output
    steps = [r["iteration"] for r in RunDir.open(out).read_metrics()]
    assert steps[-1] == 40
    (out / "run.json").unlink()
    older = invoke("train", "--resume", str(out), "--iterations", "60")
    assert older.exit_code == 2 and older.output.strip() == (
        f"error: {out} does not record its algorithm (a run made before run.json): give --algo, one of "
        + ", ".join(TRAIN_ALGORITHMS))
    assert [r["iteration"] for r in RunDir.open(out).read_metrics()] == steps  # nothing touched
    nowhere = invoke("train", "--resume", str(tmp_path / "nowhere"))
    assert nowhere.exit_code == 2 and nowhere.output.strip() == f"error: {tmp_path / 'nowhere'} is not a run directory (no config.toml)"
    new = invoke("train", *args, "--out", str(tmp_path / "new"))
    assert new.exit_code == 2 and new.output.strip() == "error: --algo is required for a new run: " + ", ".join(TRAIN_ALGORITHMS)
    assert not (tmp_path / "new").exists()


def test_checkpoint_clock_by_count_or_time(monkeypatch) -> None:
    now = [100.0]
    monkeypatch.setattr("training.contract.stop.time.monotonic", lambda: now[0])
    clock = CheckpointClock(every_steps=1000, every_seconds=60.0)
    assert not clock.due(10)
    assert clock.due(1000)
    now[0] += 61.0
    assert clock.due(11)  # a minute passed: due although 11 is no multiple of 1000
    clock.saved()
    assert not clock.due(12)
    assert not CheckpointClock(1000, 0.0).due(12)  # 0 seconds: by count only


def test_the_step_loop_stops_on_count_budget_or_request_and_saves_what_is_unsaved(monkeypatch) -> None:
    """The loop shape every trainer shares (training/contract/loop.py): three stopping rules; a
    checkpoint when the clock is due; at the end a checkpoint only of steps not saved yet."""
    from training.contract.loop import StepLoop
    from training.contract.stop import StopRequest

    now = [0.0]
    monkeypatch.setattr("training.contract.stop.time.monotonic", lambda: now[0])
    stop = StopRequest()
    saves: list[int] = []
    loop = StepLoop(stop, target=10, time_budget=5.0, clock=CheckpointClock(4, 60.0), saved_at=2)
    assert loop.running(2, 0.0) and not loop.running(10, 0.0) and not loop.running(3, 5.0)
    assert [step for step in range(3, 10) if loop.checkpoint_if_due(step, lambda s=step: saves.append(s))] == [4, 8]
    now[0] += 61.0
    assert loop.checkpoint_if_due(9, lambda: saves.append(9))  # a minute passed: due off the count
    loop.finish(9, lambda: saves.append(-1))  # 9 is saved already: nothing more
    assert saves == [4, 8, 9] and not loop.unsaved(9) and loop.unsaved(10)
    stop.request()
    assert not loop.running(3, 0.0)
    loop.finish(10, lambda: saves.append(10))
    assert saves == [4, 8, 9, 10]
    assert StepLoop(stop, 10, None, CheckpointClock(4, 0.0)).unsaved(0)  # a new run has saved nothing
