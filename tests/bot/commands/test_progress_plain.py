"""Signs of life without a terminal (click's CliRunner is not one): every long command prints
plain progress lines, a start and an end line always, one per ``POKERBOT_PROGRESS_SECONDS``
in between (0 here: every update), and ``--resume`` says what it resumes from."""

from __future__ import annotations

import io
import re

import pytest
from click.testing import CliRunner
from rich.console import Console

from bot.cli import main
from bot.progress import PlainTicker, plain_line, progress_bar, report, shown

EVERY_UPDATE = {"POKERBOT_PROGRESS_SECONDS": "0"}
KUHN_TOML = """
game = "kuhn"
algo = "sd-cfr"
iterations = 2
traversals = 40
traversal_batch = 20
sgd_steps = 5
batch_size = 32
advantage_memory = 1000
merge_duplicates = false
threads = 1
keep_memories = {keep}
"""


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env or {})


def test_plain_line_and_ticker() -> None:
    assert plain_line("hands", 1200, 5000, 60, 190) == "hands 1,200/5,000 (24%)  elapsed 0:01:00  eta 0:03:10"
    assert plain_line("hands", 7, None, 3725, None) == "hands 7  elapsed 1:02:05"
    now = [0.0]
    ticker = PlainTicker(60, lambda: now[0])
    due = []
    for now[0] in (0, 30, 59.9, 60, 100, 120.5):
        due.append(ticker.due())
    assert due == [True, False, False, True, False, True]


def test_progress_bar_off_a_terminal_prints_start_and_end(capsys) -> None:
    with progress_bar(Console(file=open("/dev/null", "w"))) as progress:  # noqa: SIM115
        task = progress.add_task("work", total=3)
        for _ in range(3):
            progress.advance(task)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("work 0/3 (0%)") and lines[-1].startswith("work 3/3 (100%)")
    assert len(lines) == 2  # the default interval (a minute) passed by no update in between


def test_reports_show_only_inside_shown(capsys, monkeypatch) -> None:
    monkeypatch.setenv("POKERBOT_PROGRESS_SECONDS", "0")
    report("ignored", 1, 2)  # nobody listens: a no-op
    with shown(Console(file=open("/dev/null", "w"))):  # noqa: SIM115
        report("stack", 1, 2)
        report("stack", 2, 2)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["stack 1/2 (50%)", "stack 2/2 (100%)"]


def test_train_prints_traversals_and_sgd_steps_then_resume_says_from_where(tmp_path) -> None:
    toml = tmp_path / "kuhn.toml"
    toml.write_text(KUHN_TOML.format(keep="true"))
    run = tmp_path / "run"
    result = invoke("train", "--algo", "sd-cfr", "--config", str(toml), "--out", str(run), env=EVERY_UPDATE)
    assert result.exit_code == 0, result.output
    assert "iteration 1: traversals p0 20/40 (50%)" in result.output
    assert "iteration 1: traversals p1 40/40 (100%)" in result.output
    assert re.search(r"^iteration 2: SGD p1 5/5 \(100%\)", result.output, re.M)
    assert "iteration 2/2: loss" in result.output
    assert (run / "memories").is_dir()  # keep_memories = true
    result = invoke("train", "--algo", "sd-cfr", "--resume", str(run), "--iterations", "3")
    assert result.exit_code == 0, result.output
    assert re.match(rf"resuming {re.escape(str(run))} \(sd-cfr on kuhn\) from its last complete checkpoint "
                    r"\(written \d+ min ago; metrics.jsonl reaches iteration 2, [\d.]+ min of training so far\)$",
                    result.output.splitlines()[0])
    assert "iteration 3/3: loss" in result.output

    result = invoke("exploit", str(run))  # the default interval: the start and end lines only
    assert result.exit_code == 0, result.output
    assert re.search(r"^averaging the SD-CFR stack 4/4 \(100%\)", result.output, re.M)
    assert "exploitability (NashConv/2)" in result.output


def test_a_finished_small_run_drops_its_memories_and_says_it_cannot_be_extended(tmp_path) -> None:
    toml = tmp_path / "kuhn.toml"
    toml.write_text(KUHN_TOML.format(keep="false"))
    run = tmp_path / "run"
    result = invoke("train", "--algo", "sd-cfr", "--config", str(toml), "--out", str(run))
    assert result.exit_code == 0, result.output
    assert f"dropped {run / 'memories'}" in result.output and not (run / "memories").exists()
    result = invoke("train", "--algo", "sd-cfr", "--resume", str(run), "--iterations", "3")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"error: {run}: this run finished and dropped its memories (keep_memories = false), so it cannot be "
        "extended; start a new run with keep_memories = true in a --config file")


def test_match_and_report_print_hands_and_aivat_lines(tmp_path) -> None:
    log = tmp_path / "m.log"
    result = invoke("match", "--game", "kuhn", "--agent", "call", "--opponent", "random", "--hands", "30",
                    "--no-aivat", "--log", str(log))
    assert result.exit_code == 0, result.output
    assert re.search(r"^hands 0/30 \(0%\)", result.output, re.M)
    assert re.search(r"^hands 30/30 \(100%\)", result.output, re.M)
    result = invoke("report", str(log), "--player", "call", "--agent", "call", "--opponent", "random", env=EVERY_UPDATE)
    assert result.exit_code == 0, result.output
    aivat = re.findall(r"^AIVAT (\d+)/30", result.output, re.M)
    assert aivat[0] == "0" and aivat[-1] == "30" and len(aivat) == 31


def test_the_eta_stops_at_a_deadline_when_the_count_would_run_past_it() -> None:
    """A run with an iteration target days away and a time budget that ends sooner (the
    per-bucket estimate of a large abstraction with ``--time-budget 4h``)
    shows the budget's end, not the days."""
    from bot.progress import TickingProgress, time_remaining

    now = [100.0]
    bar = TickingProgress(console=Console(file=io.StringIO()), get_time=lambda: now[0])
    slow = bar.add_task("solve", total=1_000_000, deadline=160.0)
    fast = bar.add_task("eval", total=100, deadline=1_000.0)
    free = bar.add_task("build", total=1_000_000)
    for task in (slow, fast, free):
        bar.start_task(task)
    for now[0], step in ((105.0, 1), (110.0, 2)):  # rich's speed needs two samples
        bar.update(slow, completed=5 * step)  # 1 a second: 999,990 s to go by the count
        bar.update(fast, completed=25 * step)  # 5 a second: 10 s to go, well before its deadline
        bar.update(free, completed=5 * step)
    tasks = {t.id: t for t in bar.tasks}
    assert time_remaining(tasks[slow]) == pytest.approx(50.0)
    assert time_remaining(tasks[fast]) == pytest.approx(tasks[fast].time_remaining) and time_remaining(tasks[fast]) < 50
    assert time_remaining(tasks[free]) == tasks[free].time_remaining > 900_000
    now[0] = 200.0
    assert time_remaining(tasks[slow]) == 0.0  # past the deadline: the run is stopping


def test_a_task_that_advances_less_often_than_riches_speed_window_still_has_an_eta() -> None:
    """A board match on a busy machine advances a chunk of boards a minute; rich keeps 30 s of
    samples, so its own estimate is None at every update. The ETA is then the rate so far."""
    from bot.progress import TickingProgress, time_remaining

    now = [0.0]
    bar = TickingProgress(console=Console(file=io.StringIO()), get_time=lambda: now[0])
    boards = bar.add_task("boards", total=300)
    bar.start_task(boards)
    task = bar.tasks[0]
    assert time_remaining(task) is None  # nothing done yet: no rate to go by
    for now[0] in (60.0, 120.0, 180.0):
        bar.advance(boards, 4)
    assert task.time_remaining is None  # rich's own estimate: one sample in its window
    assert time_remaining(task) == pytest.approx((300 - 12) * 15.0)  # 4 boards a minute
    # a resumed run starts at its earlier count: the rate is this sitting's, not 300k in 3 minutes
    resumed = bar.add_task("solve", total=525_000, completed=311_743)
    bar.start_task(resumed)
    for now[0] in (240.0, 300.0):
        bar.advance(resumed, 600)
    task = next(t for t in bar.tasks if t.id == resumed)
    assert time_remaining(task) == pytest.approx((525_000 - 312_943) * 120.0 / 1_200)
