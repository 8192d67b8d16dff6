"""The exact (full-batch) supervised step of NFSP: input keys, counts kept in step with the
reservoir, and the merged-duplicates loss and gradient equal to the row-by-row ones."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bot.agents.encoding import InfosetEncoder
from protocol.gamedef import load_game
from training.contract.entry import config_of, preset
from training.nfsp.counts import InputCounts, ReplayCounts
from training.nfsp.learner import NFSP
from training.nfsp.steps import dqn_targets, supervised_loss


def _leduc(**changes) -> NFSP:
    config = config_of("nfsp", preset("nfsp", "leduc") | {"num_envs": 32, "eta": 0.5, "sl_full_batch": True} | changes)
    return NFSP(config)


def _row_counts(memory) -> Counter:
    rows = memory.stored()
    return Counter((int(n), tuple(int(c) for c in cards), int(a))
                   for n, cards, a in zip(rows["node"], rows["cards"], rows["action"], strict=True))


def _table_counts(counts: InputCounts) -> Counter:
    nodes, cards, table = counts.batch()
    out: Counter = Counter()
    for n, c, row in zip(nodes, cards, table, strict=True):
        for a in np.flatnonzero(row):
            out[(int(n), tuple(int(x) for x in c), int(a))] = int(row[a])
    return out


def test_keys_round_trip_every_leduc_input() -> None:
    """Every (node, visible cards) of Leduc maps to a distinct key and back."""
    game = load_game("leduc")
    counts = InputCounts(InfosetEncoder(game))
    deck = list(game.deck)
    rows = [(n, h, b) for n in range(85) for h in deck for b in [-1, *deck] if b != h]
    nodes = np.array([r[0] for r in rows])
    cards = np.array([[r[1], r[2]] for r in rows], dtype=np.int8)
    keys = counts.keys(nodes, cards)
    assert len(np.unique(keys)) == len(rows)
    back_nodes, back_cards = counts.inputs(keys)
    assert np.array_equal(back_nodes, nodes) and np.array_equal(back_cards, cards)


@pytest.mark.parametrize("capacity", [2_000_000, 300])
def test_counts_equal_a_recount_of_the_memory(capacity: int) -> None:
    """With room (incremental counts) and with a 300-row reservoir that replaces rows (recount
    after staleness), the table is exactly the multiset of stored (input, action) rows."""
    learner = _leduc(sl_capacity=capacity)
    for step in range(60):
        learner.step()
        if step % 20 == 19:
            for p in learner.players:
                assert _table_counts(p.counts) == _row_counts(p.supervised)
    for p in learner.players:
        assert (p.supervised.seen > capacity) == (capacity == 300)
        assert int(p.counts.counts.sum()) == len(p.supervised)


def test_merged_loss_and_gradient_equal_the_row_by_row_ones() -> None:
    """Over a reservoir full of duplicate inputs, the count-weighted loss of the distinct inputs
    equals the mean cross-entropy of the stored rows, and so does its gradient (float64)."""
    learner = _leduc()
    for _ in range(60):
        learner.step()
    p = learner.players[0]
    network = p.pi.double()
    nodes, cards, counts = learner._supervised_batch(p)
    rows = p.supervised.stored()
    assert len(rows["node"]) > 3 * len(nodes)  # the memory really has duplicates

    def logits_of(node_ids: np.ndarray, card_slots: np.ndarray) -> torch.Tensor:
        return network(torch.from_numpy(card_slots), learner._bets[torch.from_numpy(node_ids)].double())

    def gradient(loss: torch.Tensor) -> list[torch.Tensor]:
        network.zero_grad()
        loss.backward()
        return [t.grad.clone() for t in network.parameters()]

    legal = learner._legal[torch.from_numpy(nodes)]
    merged = supervised_loss(logits_of(nodes, cards), legal, torch.from_numpy(counts).double())
    merged_grad = gradient(merged)
    row_nodes = rows["node"].astype(np.int64)
    logits = logits_of(row_nodes, rows["cards"]).masked_fill(~learner._legal[row_nodes], -1e9)
    by_row = F.cross_entropy(logits, torch.from_numpy(rows["action"].astype(np.int64)))
    by_row_grad = gradient(by_row)
    assert merged.item() == pytest.approx(by_row.item(), rel=1e-12)
    for a, b in zip(merged_grad, by_row_grad, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_counts_survive_a_checkpoint(tmp_path) -> None:
    """Counts are derived state: after loading a checkpoint they are recounted from M_SL."""
    from training.contract.rundir import RunDir

    learner = _leduc()
    for _ in range(30):
        learner.step()
    run = RunDir.create(tmp_path / "run", learner.config)
    learner.save_checkpoint(run)
    other = _leduc()
    other.load_checkpoint(run.checkpoint_path)
    for a, b in zip(learner.players, other.players, strict=True):
        assert _table_counts(a.counts) == _table_counts(b.counts) != Counter()


def test_large_games_need_minibatches(tmp_path) -> None:
    """FHP with sl_full_batch: a one-line error, from the CLI before any run directory exists."""
    from click.testing import CliRunner

    from bot.cli import main

    config = dataclasses.replace(config_of("nfsp", preset("nfsp", "fhp")), sl_full_batch=True, num_envs=4)
    with pytest.raises(ValueError, match="set sl_full_batch = false"):
        NFSP(config)
    (tmp_path / "exact.toml").write_text("sl_full_batch = true\n")
    result = CliRunner().invoke(main, ["train", "--algo", "nfsp", "--game", "fhp", "--config", str(tmp_path / "exact.toml"),
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "error: nfsp config: sl_full_batch needs at most" in result.output
    assert not (tmp_path / "run").exists()


def test_update_counts_follow_the_learning_rhythm() -> None:
    """Every ``learn_every`` transitions of a seat: ``updates_per_learn`` Q steps and
    ``sl_updates_per_learn`` Pi steps (memories already past one batch)."""
    config = config_of("nfsp", preset("nfsp", "kuhn") | {"num_envs": 32, "eta": 1.0, "batch_size": 8, "learn_every": 16,
                                               "updates_per_learn": 3, "sl_updates_per_learn": 1})
    learner = NFSP(config)
    for _ in range(30):
        learner.step()
    for player, p in enumerate(learner.players):
        rounds = int(learner.transitions[player]) // 16
        assert rounds > 10
        assert (p.q_updates, p.pi_updates) == (3 * rounds, rounds)


def _exact_q_learner() -> NFSP:
    """Leduc with the exact Q step and a 300-row M_RL that the run overwrites several times."""
    learner = _leduc(rl_full_batch=True, rl_capacity=300, batch_size=64, learn_every=64)
    for _ in range(60):
        learner.step()
    assert all(p.replay.seen > 2 * p.replay.capacity for p in learner.players)
    return learner


def test_replay_keys_follow_the_window() -> None:
    """After the circular M_RL wrapped around, every row's stored (s, a) and s' keys decode to
    that row's own node, cards and action."""
    learner = _exact_q_learner()
    for p in learner.players:
        rows = p.replay.stored()
        state, action = np.divmod(rows["count_key"].astype(np.int64), 3)
        nodes, cards = p.keys.inputs(state)
        assert np.array_equal(nodes, rows["node"]) and np.array_equal(cards, rows["cards"])
        assert np.array_equal(action, rows["action"])
        next_nodes, next_cards = p.keys.inputs(rows["next_key"].astype(np.int64))
        assert np.array_equal(next_nodes, rows["next_node"]) and np.array_equal(next_cards, rows["next_cards"])


def test_replay_totals_equal_a_recount_of_the_window() -> None:
    """After the 300-row window wrapped around several times (and with a batch longer than the
    window), the totals kept as rows enter and leave equal a recount of the stored rows, and
    every (s, a) -> s' link is one that some stored row makes."""
    learner = _exact_q_learner()
    p = learner.players[0]
    rows = {name: np.concatenate([a, a]) for name, a in p.replay.stored().items()}
    p.replay.add(rows, learner.rng)  # 600 rows into a window of 300
    kept = p.keys.groups(len(p.replay))
    fresh = ReplayCounts(learner.encoder)
    fresh.recount(p.replay)
    again = fresh.groups(len(p.replay))
    for name in ("state_keys", "pair_state", "pair_action", "pair_count", "pair_reward", "next_keys", "link_pair",
                 "link_weight"):
        assert np.array_equal(getattr(kept, name), getattr(again, name)), name
    stored = p.replay.stored()
    made = set(zip(stored["count_key"][~stored["done"]].tolist(), stored["next_key"][~stored["done"]].tolist(),
                   strict=True))
    pair_keys = kept.state_keys[kept.pair_state] * 3 + kept.pair_action
    assert {(int(pair_keys[a]), int(b)) for a, b in zip(kept.link_pair, kept.next_keys, strict=True)} == made


def test_exact_q_loss_and_gradient_equal_the_row_by_row_dqn_ones() -> None:
    """Over the whole replay memory, the merged (s, a) loss plus the within-group spread of the
    targets equals the row-by-row double-DQN mean squared error, and the gradients are equal
    (float64; the target network differs from the online one so the double-DQN choice matters)."""
    learner = _exact_q_learner()
    learner._bets = learner._bets.double()
    p = learner.players[1]
    q = p.q.double()
    p.q_target.double()
    with torch.no_grad():
        for t in p.q_target.parameters():
            t.add_(0.05 * torch.randn_like(t))
    rows = p.replay.stored()
    groups = learner._replay_groups(1)
    assert groups.rows == len(rows["node"]) > 2 * len(groups.pair_count)  # many repeated (s, a)
    assert len(groups.next_keys) < len(np.unique(rows["next_key"]))  # terminal s' are left out

    def gradient(loss: torch.Tensor) -> list[torch.Tensor]:
        q.zero_grad()
        loss.backward()
        return [t.grad.clone() for t in q.parameters()]

    merged = learner._exact_q_loss(p, groups)
    merged_grad = gradient(merged)
    action = torch.from_numpy(rows["action"].astype(np.int64))
    q_rows = learner.forward(q, rows["node"], rows["cards"]).gather(1, action[:, None]).squeeze(1)
    with torch.no_grad():
        online = learner.forward(q, rows["next_node"], rows["next_cards"])
        target_q = learner.forward(p.q_target, rows["next_node"], rows["next_cards"])
        y = dqn_targets(torch.from_numpy(rows["reward"]).double(), torch.from_numpy(rows["done"]), online, target_q,
                        learner._legal[torch.from_numpy(rows["next_node"].astype(np.int64))])
    by_row = F.mse_loss(q_rows, y)
    by_row_grad = gradient(by_row)
    groups_of: dict[int, list[float]] = {}
    for key, target in zip(rows["count_key"].tolist(), y.tolist(), strict=True):
        groups_of.setdefault(key, []).append(target)
    spread = sum(float(np.sum((np.array(v) - np.mean(v)) ** 2)) for v in groups_of.values()) / len(y)
    assert merged.item() + spread == pytest.approx(by_row.item(), rel=1e-12)
    for a, b in zip(merged_grad, by_row_grad, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_exact_q_step_needs_a_small_game(tmp_path) -> None:
    """FHP with rl_full_batch: a one-line error naming the option, from the CLI before any run
    directory exists."""
    from click.testing import CliRunner

    from bot.cli import main

    with pytest.raises(ValueError, match="set rl_full_batch = false"):
        NFSP(dataclasses.replace(config_of("nfsp", preset("nfsp", "fhp")), rl_full_batch=True, num_envs=4))
    (tmp_path / "exact.toml").write_text("rl_full_batch = true\n")
    result = CliRunner().invoke(main, ["train", "--algo", "nfsp", "--game", "fhp", "--config", str(tmp_path / "exact.toml"),
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "error: nfsp config: rl_full_batch needs at most" in result.output
    assert not (tmp_path / "run").exists()
