"""Merged-duplicate training batches give the paper's loss exactly (training/deep_cfr/merged_memory.py)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

from bot.agents.input_keys import InputKeys
from training.deep_cfr.config import PRESETS, DeepCFRConfig
from training.deep_cfr.merged_memory import merge_rows
from training.deep_cfr.trainer import DeepCFRTrainer

NUM_NODES = 40


def keys_for(slots: int) -> InputKeys:
    """Keys over a full 52-card deck (random rows use cards -1 .. 3)."""
    return InputKeys(NUM_NODES, range(52), slots)


def random_rows(n: int, seed: int, slots: int = 2) -> dict[str, np.ndarray]:
    """Rows with many repeated inputs, hidden card slots included."""
    rng = np.random.default_rng(seed)
    cards = rng.integers(-1, 4, size=(n, slots)).astype(np.int8)
    return {"node": rng.integers(0, NUM_NODES, n).astype(np.int32), "cards": cards,
            "target": rng.normal(size=(n, 3)).astype(np.float32), "iteration": rng.integers(1, 30, n).astype(np.int32)}


@pytest.mark.parametrize("linear_weighting", [True, False])
def test_merge_matches_grouping_row_by_row(linear_weighting: bool) -> None:
    rows = random_rows(3000, seed=1)
    merged = merge_rows(rows, keys_for(2), linear_weighting)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i in range(len(rows["node"])):
        groups[(int(rows["node"][i]), *rows["cards"][i].tolist())].append(i)
    assert len(merged) == len(groups) and merged.rows == 3000
    for node, cards, target, weight in zip(merged.node, merged.cards, merged.target, merged.weight, strict=True):
        members = groups[(int(node), *cards.tolist())]
        w = rows["iteration"][members].astype(np.float64) if linear_weighting else np.ones(len(members))
        assert weight == pytest.approx(w.sum())
        np.testing.assert_allclose(target, (w[:, None] * rows["target"][members]).sum(0) / w.sum(), rtol=1e-5, atol=1e-6)


def test_dense_and_sorted_key_paths_agree() -> None:
    rows = random_rows(2000, seed=2, slots=5)  # 40 * 53**5: too many keys for the bincount path
    merged = merge_rows(rows, keys_for(5), True)
    small = merge_rows({**rows, "cards": rows["cards"][:, :2]}, keys_for(2), True)
    keys, space = keys_for(5).keys(rows["node"], rows["cards"]), keys_for(5).size
    assert space > 1 << 24 and len(merged) == len(np.unique(keys))
    keys2, space2 = keys_for(2).keys(rows["node"], rows["cards"][:, :2]), keys_for(2).size
    assert space2 <= 1 << 24 and len(small) == len(np.unique(keys2))


def test_input_keys_refuse_overflow() -> None:
    with pytest.raises(ValueError, match="64-bit"):
        InputKeys(10, range(52), 12)


def _trainer(tmp_path, **overrides) -> DeepCFRTrainer:
    settings = {**PRESETS["leduc"], "game": "leduc", "iterations": 3, "traversals": 300, "sgd_steps": 20}
    config = DeepCFRConfig(**{**settings, **overrides})
    trainer = DeepCFRTrainer.new(config, tmp_path / "run", progress=False)
    trainer.train()
    return trainer


def _gradient(trainer: DeepCFRTrainer, batch: tuple) -> list[torch.Tensor]:
    cards, bets, legal, target, weight, denominator = batch
    torch.manual_seed(0)
    net = trainer.make_net()
    loss = ((((net(cards, bets) - target) ** 2) * legal).sum(dim=1) * weight).sum() / denominator
    return torch.autograd.grad(loss, list(net.parameters()))


def test_full_merged_batch_is_the_exact_gradient_of_the_whole_memory_loss(tmp_path) -> None:
    """The merged full batch differs from the all-rows loss by a constant: same gradient."""
    trainer = _trainer(tmp_path, merge_duplicates=True)
    memory = trainer.advantage[0]
    batches, form = trainer.fit.batches(memory, 1, 100_000, np.random.default_rng(0), trainer.iteration)
    assert form == "full"
    stored = memory.stored()
    node = torch.from_numpy(stored["node"].astype(np.int64))
    every_row = (torch.from_numpy(stored["cards"]), trainer.bets[node], trainer.legal[node],
                 torch.from_numpy(stored["target"]),
                 torch.from_numpy(stored["iteration"]).float() * 2.0 / trainer.iteration, len(memory))
    for merged_grad, row_grad in zip(_gradient(trainer, next(batches)), _gradient(trainer, every_row), strict=True):
        torch.testing.assert_close(merged_grad, row_grad, rtol=1e-4, atol=1e-6)


def test_weighted_merged_minibatches_are_unbiased(tmp_path) -> None:
    """More distinct inputs than a batch: draws by total weight average to the full gradient."""
    trainer = _trainer(tmp_path, merge_duplicates=True)
    memory = trainer.advantage[0]
    full = [g.clone() for g in _gradient(trainer, next(trainer.fit.batches(memory, 1, 100_000, np.random.default_rng(0), trainer.iteration)[0]))]
    batches, form = trainer.fit.batches(memory, 400, 64, np.random.default_rng(1), trainer.iteration)
    assert form == "weighted"
    total = [torch.zeros_like(g) for g in full]
    for batch in batches:
        for acc, g in zip(total, _gradient(trainer, batch), strict=True):
            acc += g / 400
    flat_full, flat_mean = torch.cat([g.flatten() for g in full]), torch.cat([g.flatten() for g in total])
    assert torch.linalg.norm(flat_mean - flat_full) < 0.15 * torch.linalg.norm(flat_full)


def test_merged_training_is_logged_and_converges_on_leduc(tmp_path) -> None:
    trainer = _trainer(tmp_path, merge_duplicates=True, iterations=8, traversals=1000, sgd_steps=150)
    records = [r for r in trainer.run.read_metrics() if "iteration" in r and "loss_p0" in r]
    assert {r["batch_form_p0"] for r in records} == {"full"}
    assert records[-1]["sdcfr_exploitability_mbb"] < 1186.806 / 2


def test_row_batches_are_the_memory_rows_the_seed_draws(tmp_path) -> None:
    """The paper's form: each step's batch is exactly the rows at that step's uniform draws, with
    weight iteration x 2/T and denominator = batch size (gathered on the fit's device)."""
    trainer = _trainer(tmp_path, merge_duplicates=False)
    memory = trainer.advantage[0]
    stored, t = memory.stored(), trainer.iteration
    batches, form = trainer.fit.batches(memory, 3, 50, np.random.default_rng(7), t)
    picks = np.random.default_rng(7).integers(0, len(memory), size=(3, 50))
    assert form == "rows"
    for rows, (cards, bets, legal, target, weight, denominator) in zip(picks, batches, strict=True):
        node = torch.from_numpy(stored["node"][rows].astype(np.int64))
        assert torch.equal(cards, torch.from_numpy(stored["cards"][rows])) and denominator == 50
        assert torch.equal(bets, trainer.bets[node]) and torch.equal(legal, trainer.legal[node])
        assert torch.equal(target, torch.from_numpy(stored["target"][rows]))
        torch.testing.assert_close(weight, torch.from_numpy(stored["iteration"][rows] * 2.0 / t).float())


@pytest.mark.parametrize("merge", [True, False])
def test_normalized_targets_have_unit_weighted_rms_and_the_same_regret_matching(tmp_path, merge: bool) -> None:
    from bot.agents.network import regret_matching

    trainer = _trainer(tmp_path, merge_duplicates=merge)
    memory = trainer.advantage[1]
    plain = next(trainer.fit.batches(memory, 1, 100_000, np.random.default_rng(5), trainer.iteration)[0])
    scaled = next(trainer.fit.batches(memory, 1, 100_000, np.random.default_rng(5), trainer.iteration, normalize=True)[0])
    _, _, legal, target, weight, _ = scaled
    rms = torch.sqrt((weight * (target**2 * legal).sum(1)).sum() / (weight * legal.sum(1)).sum())
    # merged: every distinct input; rows: a 100,000-row sample of the memory, so close to 1
    assert float(rms) == pytest.approx(1.0, rel=1e-4 if merge else 0.02) and float(plain[3].abs().max()) > 0
    ratio = plain[3][plain[3] != 0] / target[plain[3] != 0]
    assert torch.allclose(ratio, ratio[0].expand_as(ratio), rtol=1e-4)  # one positive factor
    assert ratio[0] > 0 and torch.allclose(regret_matching(plain[3], legal), regret_matching(target, legal), atol=1e-5)


@pytest.mark.parametrize("mode", ["reservoir", "window"])
def test_merged_table_follows_the_memory_through_replacement(mode: str) -> None:
    """A table attached to a full memory (replacement, slots hit twice in one batch) equals a
    fresh merge of the stored rows, and its saved state restores it exactly."""
    from training.common.reservoir import Reservoir
    from training.deep_cfr.merged_memory import MergedTable

    fields = {"node": ((), np.int32), "cards": ((2,), np.int8), "target": ((3,), np.float32), "iteration": ((), np.int32)}
    memory = Reservoir(500, fields, mode)
    memory.listener = MergedTable(keys_for(2), linear_weighting=True)
    rng = np.random.default_rng(7)
    for seed in range(12):
        memory.add(random_rows(400, seed), rng)  # batches near capacity: duplicate slots happen
    assert memory.seen > 5 * memory.capacity
    fresh, table = merge_rows(memory.stored(), keys_for(2), True), memory.listener.merged()
    assert table.rows == fresh.rows == 500
    np.testing.assert_array_equal(table.node, fresh.node)
    np.testing.assert_array_equal(table.cards, fresh.cards)
    np.testing.assert_array_equal(table.weight, fresh.weight)
    np.testing.assert_allclose(table.target, fresh.target, rtol=1e-5, atol=1e-5)
    restored = MergedTable(keys_for(2), linear_weighting=True)
    restored.load_state(memory.listener.state())
    np.testing.assert_array_equal(restored.merged().target, table.target)
