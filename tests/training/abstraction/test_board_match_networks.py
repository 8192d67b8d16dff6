"""The board-sampled head to head with network policies (training/abstraction/board_match.py
reading :mod:`bot.agents.board_grid`): with every Leduc board enumerated, a Deep CFR average
network or an NFSP policy against an abstraction (or each other) gives the exact value of the
two exact strategies; on HULH a board's grid is what the agent plays at each decision, for Deep
CFR, an SD-CFR stack's drawn entry and NFSP; an SD-CFR stack's draws follow its weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bot.abstraction.agent import AbstractionAgent
from bot.abstraction.policy import full_game_strategy
from bot.abstraction.spec import SPECS
from bot.agents.bundle import write_bundle
from bot.agents.deep_cfr import DeepCFRAgent, DeepCFRBundle, bundle_strategy
from bot.agents.network import DeepCFRNetwork
from bot.agents.nfsp import NFSPAgent, NFSPPolicy
from bot.evaluation.best_response import head_to_head
from protocol.betting_tree import DECISION
from protocol.gamedef import load_game
from tests.training.abstraction.test_board_match import solved
from training.abstraction.board_match import BoardMatch, all_boards, live_hands
from training.contract.rundir import save_torch


def network_bundle(folder: Path, game, kind: str, seed: int, entries: int = 2, width: int = 8) -> DeepCFRBundle:
    """A ``kind`` bundle of seeded random networks (suit-canonical on HULH): Deep CFR's average
    network, or an SD-CFR stack of sigma^1 (uniform) and ``entries`` - 1 value-network pairs."""
    torch.manual_seed(seed)
    canonical = game.name.startswith("holdem")

    def net() -> DeepCFRNetwork:
        return DeepCFRNetwork.for_game(game, width=width, canonical_suits=canonical)

    architecture = net().architecture()
    folder.mkdir(parents=True)
    if kind == "deep-cfr":
        save_torch(folder / "average.pt", net().state_dict())
        write_bundle(folder, "deep-cfr", game, ["average.pt"], {}, architecture=architecture, argmax_fallback=True,
                     stack=[], average="average.pt")  # fmt: skip
        return DeepCFRBundle.load(folder)
    stack: list[dict] = [{"weight": 1, "uniform": True}]
    for t in range(1, entries):
        names = [f"p{p}_t{t}.pt" for p in (0, 1)]
        for name in names:
            save_torch(folder / name, net().state_dict())
        stack.append({"weight": t + 1, "files": names})
    write_bundle(folder, "sd-cfr", game, [f for e in stack for f in e.get("files", [])], {}, architecture=architecture,
                 argmax_fallback=True, stack=stack)  # fmt: skip
    return DeepCFRBundle.load(folder)


def nfsp_policy(game, seed: int) -> NFSPPolicy:
    torch.manual_seed(seed)
    return NFSPPolicy(game, [DeepCFRNetwork.for_game(game, width=8) for _ in range(2)])


def test_enumerated_boards_give_the_exact_value_for_networks(tmp_path) -> None:
    game = load_game("leduc")
    deep = network_bundle(tmp_path / "deep", game, "deep-cfr", seed=1)
    nfsp = nfsp_policy(game, seed=2)
    abstraction = solved(SPECS["leduc_lossless"], 3, name="networks")
    strategies = {"deep": bundle_strategy(deep), "nfsp": nfsp.strategy(), "abstraction": full_game_strategy(*abstraction[:2])}
    agents = {"deep": DeepCFRAgent(game, deep), "nfsp": NFSPAgent(game, nfsp),
              "abstraction": AbstractionAgent(game, "leduc_lossless", abstraction[2])}
    for a, b in (("deep", "abstraction"), ("abstraction", "nfsp"), ("deep", "nfsp")):
        values = BoardMatch(game, agents[a], agents[b]).values(all_boards(game))
        want = head_to_head(game, strategies[a], strategies[b])
        assert abs(want) > 0.01, (a, b)  # different policies: a misread grid would show
        assert values.duplicate.mean() == pytest.approx(want, abs=1e-6), (a, b)  # float32 grids


@pytest.mark.parametrize("kind", ["deep-cfr", "sd-cfr", "nfsp"])
def test_a_holdem_board_grid_is_what_the_agent_plays(tmp_path, kind) -> None:
    """At random decisions of every round, the grid's rows equal the agent's own strategy for
    those hands (its play path, one forward per decision), suit-canonical inputs included."""
    game = load_game("holdem")
    if kind == "nfsp":
        agent = NFSPAgent(game, nfsp_policy(game, seed=5))
        tree = agent.policy.encoder.tree
    else:
        agent = DeepCFRAgent(game, network_bundle(tmp_path / kind, game, kind, seed=4))
        tree = agent.encoder.tree
    rng = np.random.default_rng(0)
    board = rng.choice(52, 5, replace=False)
    hands = live_hands(np.array([(a, b) for a in range(52) for b in range(a + 1, 52)]), board)[0][:60]
    decisions = np.flatnonzero(tree.kind == DECISION)
    nodes = np.concatenate([rng.choice(decisions[tree.round[decisions] == r], 6, replace=False) for r in range(4)])
    key = next(k for k in range(50) if kind != "sd-cfr" or not agent.draw_entry(k).get("uniform"))
    grid = agent.board_strategies(board, hands, nodes, key)
    for row, node in enumerate(nodes):
        seat, round_index = int(tree.actor[node]), int(tree.round[node])
        cards = np.full((len(hands), game.num_hole_cards + 5), -1, dtype=np.int64)
        cards[:, :2], cards[:, 2 : 2 + game.board_cards_through(round_index)] = hands, board[: game.board_cards_through(round_index)]
        if kind == "nfsp":
            played = agent.policy.probabilities(seat, np.full(len(hands), node), cards)
        else:
            entry = agent.draw_entry(key) if kind == "sd-cfr" else None
            played = agent._entry_strategy(entry, int(node), seat, cards)
        assert np.allclose(grid[row], played, atol=1e-5), (kind, node)


def test_sd_cfr_draws_one_entry_per_board_by_weight(tmp_path) -> None:
    game = load_game("leduc")
    agent = DeepCFRAgent(game, network_bundle(tmp_path / "sd", game, "sd-cfr", seed=6, entries=3))  # weights 1, 2, 3
    drawn = [agent.bundle.stack.index(agent.draw_entry(k)) for k in range(6000)]
    assert np.allclose(np.bincount(drawn, minlength=3) / 6000, [1 / 6, 2 / 6, 3 / 6], atol=0.02)
    assert agent.draw_entry(17) is agent.draw_entry(17)  # reproducible: keyed by (seed, board)


def test_a_network_grid_runs_on_the_matchs_threads(tmp_path) -> None:
    """``values(..., threads)`` bounds the grid's compiled kernels and torch products as well as
    the board walk: left at their defaults (every core) beside other work, their threads contended."""
    import numba

    game = load_game("leduc")
    seen: list[tuple[int, int]] = []

    class Recording(DeepCFRAgent):
        def board_strategies(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append((numba.get_num_threads(), torch.get_num_threads()))
            return super().board_strategies(*args, **kwargs)

    agent = Recording(game, network_bundle(tmp_path / "deep", game, "deep-cfr", seed=1))
    abstraction = AbstractionAgent(game, "leduc_lossless", solved(SPECS["leduc_lossless"], 3, name="threads")[2])
    torch_threads = torch.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    torch.set_num_threads(2)
    try:
        BoardMatch(game, agent, abstraction).values(all_boards(game)[:4], threads=1)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        torch.set_num_threads(torch_threads)
    assert seen and set(seen) == {(1, 1)}
