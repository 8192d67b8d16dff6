"""CLI smoke tests for the command group itself and `pokerbot games`."""

from click.testing import CliRunner

from bot.cli import main


def test_games_lists_sizes():
    result = CliRunner().invoke(main, ["games"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "5670" in result.output and "727,714,104" in result.output and "1.597e+14" in result.output
    assert "leduc" in result.output and "468" in result.output


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(main, ["fly"])
    assert result.exit_code == 2 and "No such command" in result.output


def test_train_unknown_algo_is_one_line_error():
    result = CliRunner().invoke(main, ["train", "--algo", "magic", "--out", "x"])
    assert result.exit_code == 2
    assert "unknown --algo 'magic'" in result.output


def test_train_names_solve_for_a_tabular_algorithm(tmp_path):
    result = CliRunner().invoke(main, ["train", "--algo", "cfr+", "--game", "kuhn", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "--algo cfr+ is a tabular solver: pokerbot solve --algo cfr+" in result.output
    assert not (tmp_path / "run").exists()
