"""The FHP and HULH presets: the 2-core ones ``pokerbot train`` uses by default, and the paper's
settings (Brown et al. 2019, sec. 5.1) kept as config files in ``docs/`` for bigger machines."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bot.run_files import read_toml
from training.contract.entry import load_trainer, resolve_new
from training.deep_cfr.config import PAPER_PRESETS, PRESETS, DeepCFRConfig

DOCS = Path(__file__).resolve().parents[3] / "docs"


@pytest.mark.parametrize("game", ["fhp", "holdem"])
def test_the_paper_config_file_restores_the_papers_settings(game):
    """``docs/sd-cfr-GAME-paper.toml`` over the 2-core preset gives the paper's settings
    (``PAPER_PRESETS[GAME]``) and the config defaults wherever the 2-core preset departs from
    them; in FHP only the measurement schedule differs (exact evaluation every 25 iterations
    instead of the paper's head-to-head signal), in HULH nothing does."""
    overrides = read_toml(DOCS / f"sd-cfr-{game}-paper.toml")
    merged = PRESETS[game] | overrides
    defaults = {f.name: f.default for f in dataclasses.fields(DeepCFRConfig)}
    measurement = {"evaluate_every", "strength_every", "strength_hands"} if game == "fhp" else set()
    for key, value in PAPER_PRESETS[game].items():
        if key not in measurement:
            assert merged[key] == value, key
    for key in set(PRESETS[game]) - set(PAPER_PRESETS[game]) - measurement - {"checkpoint_seconds"}:
        assert merged[key] == defaults[key], key
    if game == "fhp":
        assert merged["evaluate_every"] == 25
    assert merged["canonical_suits"] is False
    DeepCFRConfig(**merged).validate()


@pytest.mark.parametrize("algo", ["sd-cfr", "deep-cfr"])
def test_holdem_defaults_to_the_two_core_preset(algo):
    """``pokerbot train --game holdem --algo ALGO`` without a config resolves to the 2-core preset
    (small networks, 1,200 Adam steps of 2,048 a fit), not the paper's 32,000 steps of 20,000."""
    config = resolve_new(load_trainer(algo), {"game": "holdem"}).config
    assert (config.algo, config.width, config.sgd_steps, config.batch_size, config.traversals) == (algo, 64, 1200, 2048, 10_000)
    assert config.average_every == 10
    assert config.canonical_suits and config.normalize_targets and config.lr_schedule == "cosine"
    assert config.evaluate_every == 0 and (config.strength_every, config.strength_boards) == (5, 8)
    paper = resolve_new(load_trainer(algo), {"game": "holdem", "config_path": str(DOCS / "sd-cfr-holdem-paper.toml")}).config
    assert (paper.width, paper.sgd_steps, paper.batch_size, paper.traversals) == (96, 32_000, 20_000, 10_000)


def test_fhp_preset_is_the_measured_winner():
    """The ``fhp`` preset is width 64 on exact per-flop targets, 512 boards of 1,000 rows a player
    an iteration into a 16M-row memory, with fits that grow with it (1,200 Adam steps of 2,048 at
    least, 0.6 epochs of the memory: ~4,700 once full; docs/benchmarks/fhp-sd-cfr.md); DREAM and
    OS-SD-CFR keep the width-32, 200-step networks, 4M-row memories and sampled targets their FHP
    figures were measured with."""
    config = resolve_new(load_trainer("sd-cfr"), {"game": "fhp"}).config
    assert (config.width, config.sgd_steps, config.sgd_epochs, config.batch_size, config.canonical_suits,
            config.evaluate_every) == (64, 1200, 0.6, 2048, True, 5)
    assert (config.targets, config.boards, config.rows_per_board, config.advantage_memory) == (
        "board", 512, 1000, 16_000_000)
    assert (config.value_fit_steps(512_000), config.value_fit_steps(16_000_000)) == (1200, 4688)
    dream = resolve_new(load_trainer("dream"), {"game": "fhp"}).config
    assert (dream.width, dream.sgd_steps, dream.batch_size, dream.traversals, dream.targets) == (
        32, 200, 1024, 2_500, "sampled")
    assert (dream.sgd_epochs, dream.advantage_memory) == (0.0, 4_000_000)
