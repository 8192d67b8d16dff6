"""The board-sampled head to head (training.abstraction.board_match).

The reference is independent of its kernels: :func:`bot.evaluation.best_response.head_to_head`
(each policy expanded to the real game's infosets by :func:`bot.abstraction.policy.full_game_strategy`,
values by the public-tree best-response machinery). With every board enumerated the estimator's
mean must be that exact value, also when the two seats read different abstractions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bot.abstraction.agent import AbstractionAgent
from bot.abstraction.policy import full_game_strategy
from bot.abstraction.spec import SPECS, AbstractionSpec, policy_path
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.agents.infosets import space_for
from bot.cli import main
from bot.evaluation.best_response import expected_value, head_to_head
from bot.evaluation.match import run_in_process
from bot.evaluation.statistics import estimate
from bot.registry import resolve_agent
from protocol.gamedef import load_game
from training.abstraction.board_match import (
    BoardMatch,
    NotAbstractionPolicy,
    all_boards,
    sample_boards,
)
from training.abstraction.build import build_abstraction


def solved(spec: AbstractionSpec, seed: int, unvisited: float = 0.2, name: str = "") -> tuple[AbstractGame, np.ndarray, Path]:
    """``spec`` built, with a random average table saved as its published policy (or as
    ``name``.npy beside it): a share of rows all zero, rows training never reached, which play
    uniformly. Returns the abstract game, the table and its file."""
    build_abstraction(spec)
    ag = AbstractGame.build(Abstraction.load(spec))
    rng = np.random.default_rng(seed)
    table = (rng.random((ag.num_rows, 3)) ** 3).astype(np.float32)  # skewed rows: far from uniform
    table[rng.random(ag.num_rows) < unvisited] = 0.0
    path = policy_path(spec) if not name else policy_path(spec).with_name(f"{name}.npy")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, table)
    return ag, table, path


def agent(game, spec: AbstractionSpec, profile) -> AbstractionAgent:
    return AbstractionAgent(game, spec.name, profile[2])


def exact(game, a, b) -> tuple[float, float, float]:
    """A's exact chips per hand: over both seats, in seat 0, in seat 1 (player 0 acts first)."""
    strategy_a, strategy_b = full_game_strategy(*a[:2]), full_game_strategy(*b[:2])
    first = (space_for(game).player == 0)[:, None]
    seat0 = expected_value(game, np.where(first, strategy_a, strategy_b))
    seat1 = -expected_value(game, np.where(first, strategy_b, strategy_a))
    return head_to_head(game, strategy_a, strategy_b), seat0, seat1


@pytest.mark.parametrize("names", [("leduc_lossless", "leduc_merged"), ("leduc_merged", "leduc_merged")])
def test_enumerated_boards_give_the_exact_value(names):
    game = load_game("leduc")
    profiles = [solved(SPECS[name], seed, name=f"p{seed}") for seed, name in enumerate(names)]
    agents = [agent(game, SPECS[name], p) for name, p in zip(names, profiles, strict=True)]
    values = BoardMatch(game, *agents).values(all_boards(game))
    assert len(values.seat0) == 6  # Leduc's board: one card of six
    want, seat0, seat1 = exact(game, *profiles)
    assert abs(want) > 0.01  # the policies differ: a wrong row would show
    assert values.duplicate.mean() == pytest.approx(want, abs=1e-12)
    assert values.seat0.mean() == pytest.approx(seat0, abs=1e-12)
    assert values.seat1.mean() == pytest.approx(seat1, abs=1e-12)


def test_kuhn_without_board_cards(monkeypatch):
    """No public cards: one empty board, and its value is the exact one."""
    spec = AbstractionSpec("kuhn_board_test", "kuhn", (None,))
    monkeypatch.setitem(SPECS, spec.name, spec)
    spec_b = AbstractionSpec("kuhn_board_test_b", "kuhn", (None,))
    monkeypatch.setitem(SPECS, spec_b.name, spec_b)
    game = load_game("kuhn")
    a, b = solved(spec, 5, unvisited=0.0), solved(spec_b, 6, unvisited=0.3)
    values = BoardMatch(game, AbstractionAgent(game, spec.name), AbstractionAgent(game, spec_b.name)).values(all_boards(game))
    assert all_boards(game).shape == (1, 0)
    want, seat0, seat1 = exact(game, a, b)
    assert values.duplicate[0] == pytest.approx(want, abs=1e-12)
    assert (values.seat0[0], values.seat1[0]) == pytest.approx((seat0, seat1), abs=1e-12)


def test_antisymmetric_and_zero_against_itself():
    game = load_game("leduc")
    solved(SPECS["leduc_lossless"], 7)
    solved(SPECS["leduc_merged"], 8)
    a, b = AbstractionAgent(game, "leduc_lossless"), AbstractionAgent(game, "leduc_merged")
    boards = all_boards(game)
    ab, ba = BoardMatch(game, a, b).values(boards), BoardMatch(game, b, a).values(boards)
    assert np.array_equal(ab.seat0, -ba.seat1) and np.array_equal(ab.seat1, -ba.seat0)
    assert np.array_equal(ab.duplicate, -ba.duplicate) and np.abs(ab.duplicate).max() > 0.01
    same = BoardMatch(game, a, a).values(boards)
    assert np.array_equal(same.duplicate, np.zeros(len(boards)))  # exactly 0 on every board
    assert np.abs(same.seat0).max() > 0.01  # though each seat alone is not


def test_sampled_boards_extend_and_agree_with_the_exact_value():
    game = load_game("leduc")
    profiles = [solved(SPECS[name], seed) for name, seed in (("leduc_lossless", 9), ("leduc_merged", 10))]
    first = sample_boards(game, 4, 0, 3000)
    assert np.array_equal(first[2000:], sample_boards(game, 4, 2000, 1000))  # board k depends on (seed, k) only
    assert not np.array_equal(first, sample_boards(game, 5, 0, 3000))
    counts = np.bincount(first[:, 0], minlength=max(game.deck) + 1)[list(game.deck)]
    assert counts.min() > 400  # each of the six cards drawn about 500 times
    agents = (AbstractionAgent(game, "leduc_lossless"), AbstractionAgent(game, "leduc_merged"))
    sampled = estimate(BoardMatch(game, *agents).values(first).duplicate)
    want = exact(game, *profiles)[0]
    assert sampled.low <= want <= sampled.high and sampled.half_width < abs(want)


def test_agrees_with_a_sampled_match():
    """A played duplicate match of the same two policies (fixed seed) covers the exact value."""
    game = load_game("leduc")
    solved(SPECS["leduc_lossless"], 11)
    solved(SPECS["leduc_merged"], 12)
    agents = (AbstractionAgent(game, "leduc_lossless"), AbstractionAgent(game, "leduc_merged"))
    board_value = BoardMatch(game, *agents).values(all_boards(game)).duplicate.mean()
    played = estimate(run_in_process(game, agents, ("a", "b"), 5000, seed=0, duplicate=True).chips)
    assert played.low <= board_value <= played.high
    assert played.half_width < 3 * abs(board_value)  # an interval that could have missed


def test_only_abstraction_policies():
    game = load_game("leduc")
    solved(SPECS["leduc_merged"], 13)
    with pytest.raises(NotAbstractionPolicy, match="agent B 'call'"):
        BoardMatch(game, AbstractionAgent(game, "leduc_merged"), resolve_agent("call", game))


def test_cli_boards(tmp_path):
    solved(SPECS["leduc_lossless"], 14)
    solved(SPECS["leduc_merged"], 15)
    out = tmp_path / "m.json"
    args = ["match", "--game", "leduc", "--agent", "leduc_lossless", "--opponent", "leduc_merged", "--seed", "3"]
    result = CliRunner().invoke(main, [*args, "--boards", "40", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "40 boards" in result.output and "duplicate, exact over hands" in result.output
    report = json.loads(out.read_text())
    assert report["config"]["seed"] == 3 and report["config"]["method"] == "boards" and report["unit"] == "boards"
    game = load_game("leduc")
    agents = (AbstractionAgent(game, "leduc_lossless"), AbstractionAgent(game, "leduc_merged"))
    values = BoardMatch(game, *agents).values(sample_boards(game, 3, 0, 40))
    assert report["rows"][0]["mean"] == pytest.approx(values.duplicate.mean() * 1000 / game.big_blind)
    assert report["per_board"]["seat0_chips"] == pytest.approx(values.seat0.tolist())
    bad = CliRunner().invoke(main, [*args[:-4], "--opponent", "call", "--boards", "5"])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1 and "needs two policies it can read over a whole board" in bad.output and "Traceback" not in bad.output
    wire = CliRunner().invoke(main, [*args, "--boards", "5", "--wire"])
    assert wire.exit_code == 2 and "--wire plays hands" in wire.output
