"""Hostile options and configs at the command line: seeds and counts out of range, a zero time
budget, absurd worker counts, a config value of the wrong type, games no trainer handles. Each
is one ``error:`` line (exit 2), raised before any run folder exists."""

from __future__ import annotations

import dataclasses
import os

import pytest
from click.testing import CliRunner

from bot.cli import main
from protocol.gamedef import load_game

#: Kuhn for three players (four ranks).
KUHN_3P = (load_game("kuhn").to_text().replace("numPlayers = 2", "numPlayers = 3").replace("blind = 1 1", "blind = 1 1 1")
           .replace("numRanks = 3", "numRanks = 4"))

#: Kuhn as a no-limit game (stacks of 20).
KUHN_NO_LIMIT = dataclasses.replace(load_game("kuhn"), betting_type="nolimit", stack=(20, 20), raise_size=()).to_text()


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def one_line_error(result, text: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0], result.output


@pytest.mark.parametrize("args", [
    ["train", "--algo", "sd-cfr", "--game", "kuhn", "--out", "run"],
    ["solve", "--game", "kuhn", "--algo", "es-mccfr", "--out", "run"],
    ["match", "--game", "kuhn", "--agent", "random", "--hands", "2"],
    ["lbr", "random", "--game", "kuhn", "--hands", "2"],
    ["play", "--game", "kuhn"],
    ["connect", "localhost", "9", "--game", "kuhn"],
])
def test_a_negative_seed_is_one_line_everywhere_and_creates_nothing(tmp_path, monkeypatch, args) -> None:
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke(*args, "--seed", "-1"), "--seed -1: must be 0 to 4,294,967,295")
    one_line_error(invoke(*args, "--seed", "4294967296"), "--seed 4294967296: must be 0 to 4,294,967,295")
    assert os.listdir(tmp_path) == []


def test_the_dealers_seed_argument_has_the_same_range(tmp_path) -> None:
    one_line_error(invoke("dealer", "m", "kuhn", "10", "4294967296", "a", "b"), "SEED 4294967296: must be 0 to 4,294,967,295")


@pytest.mark.parametrize(("args", "text"), [
    (["--iterations", "0"], "--iterations 0: must be at least 1"),
    (["--traversals", "-3"], "--traversals -3: must be at least 1"),
    (["--threads", "-1"], "--threads -1: must be at least 0"),
    (["--workers", "0"], "--workers 0: must be at least 1"),
    (["--iterations", "many"], "--iterations 'many': not a whole number"),
    (["--time-budget", "0"], "time budget '0': must be more than 0"),
    (["--time-budget", "0s"], "time budget '0s': must be more than 0"),
])
def test_train_option_ranges_are_one_line_and_create_nothing(tmp_path, args, text) -> None:
    one_line_error(invoke("train", "--algo", "sd-cfr", "--game", "kuhn", *args, "--out", str(tmp_path / "run")), text)
    assert not (tmp_path / "run").exists()


def test_a_local_ray_of_absurd_size_is_refused(tmp_path) -> None:
    pytest.importorskip("ray")
    result = invoke("train", "--algo", "sd-cfr", "--game", "kuhn", "--workers", "100000", "--out", str(tmp_path / "r"))
    one_line_error(result, f"--workers 100000: a local Ray here runs at most {4 * (os.cpu_count() or 1)}")
    assert not (tmp_path / "r").exists()


def test_the_worker_bound_holds_without_ray_too() -> None:
    from training.contract.cluster import Cluster, WorkerError

    with pytest.raises(WorkerError, match="--workers 100000: a local Ray here runs at most"):
        Cluster.from_options({"workers": 100_000})


@pytest.mark.parametrize(("value", "text"), [('width = "abc"', "width = 'abc' must be int, like its default"),
                                             ("seed = -1", "seed -1 is out of range"),
                                             ("argmax_fallback = 1", "argmax_fallback = 1 must be bool"),
                                             ('time_budget = "0"', "time budget '0': must be more than 0")])
def test_a_config_value_of_the_wrong_type_names_its_key(tmp_path, value, text) -> None:
    config = tmp_path / "c.toml"
    config.write_text(value + "\n")
    result = invoke("train", "--algo", "sd-cfr", "--game", "kuhn", "--config", str(config), "--out", str(tmp_path / "r"))
    one_line_error(result, text)
    assert not (tmp_path / "r").exists()


def test_an_old_runs_zero_time_budget_still_reads_as_no_limit() -> None:
    from training.contract.entry import build_config
    from training.deep_cfr.trainer import TRAINERS

    resolved = build_config(TRAINERS["sd-cfr"], {"game": "kuhn", "algo": "sd-cfr", "time_budget": 0.0})
    assert resolved.config.time_budget is None


@pytest.mark.parametrize(("gamedef", "text"), [(KUHN_3P, "a 3-player game; pokerbot trains and solves heads-up"),
                                               (KUHN_NO_LIMIT, "a no-limit game; pokerbot trains and solves limit games")])
@pytest.mark.parametrize("command", [["train", "--algo", "sd-cfr"], ["train", "--algo", "nfsp"], ["solve"]])
def test_games_no_trainer_handles_are_refused_before_the_folder(tmp_path, gamedef, text, command) -> None:
    path = tmp_path / "odd.game"
    path.write_text(gamedef)
    for _ in range(2):  # the retry says the same, not "already holds a run"
        one_line_error(invoke(*command, "--game", str(path), "--out", str(tmp_path / "r")), text)
        assert not (tmp_path / "r").exists()
    assert load_game(str(path)).num_players in (2, 3)
