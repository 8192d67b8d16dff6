"""``Agent.range_probabilities``: every batched override equals asking the agent hand by hand
(the default loop), and SD-CFR's equals the exact stack average it plays."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from bot.agents.base import Agent, CallAgent, RaiseAgent, RandomAgent
from bot.agents.deep_cfr import DeepCFRAgent, bundle_strategy
from bot.agents.infosets import InfosetSpace, space_for
from bot.agents.network import DeepCFRNetwork
from bot.agents.nfsp import NFSPAgent, NFSPPolicy
from bot.agents.tabular import TabularPolicyAgent
from bot.cli import main as pokerbot
from bot.evaluation.lbr import PrivateHands
from bot.registry import resolve_agent
from protocol.dealing import deal_hand
from protocol.gamedef import Game, load_game
from protocol.matchstate import MatchState, view_of
from protocol.state import State

LEDUC, HOLDEM = load_game("leduc"), load_game("holdem")


def one_by_one(agent: Agent, view: MatchState, hands: np.ndarray) -> np.ndarray:
    """The interface's default: one action_probabilities call per hand."""
    return Agent.range_probabilities(agent, view, hands)


def sample_views(game: Game, deals: int, seed: int = 0, player: Agent | None = None) -> list[MatchState]:
    """Both players' views at every decision of some hands played at random (or by ``player``
    in both seats, so that it reaches every view with positive probability)."""
    rng = np.random.default_rng(seed)
    views = []
    for deal in range(deals):
        holes, board = deal_hand(game, seed, deal)
        state = State(game, holes, board)
        while not state.is_finished:
            view = view_of(state, state.actor, deal)
            views.append(view)
            legal = state.legal_actions()
            state.apply(player.act(view, rng) if player else legal[rng.integers(len(legal))])
    return views


def range_hands(game: Game, view: MatchState, limit: int | None = None) -> np.ndarray:
    hands = PrivateHands(game)
    rows = np.flatnonzero(hands.disjoint(view.board_flat))
    return hands.cards[rows[:: max(1, len(rows) // limit)] if limit else rows]


def network_agent(game: Game, kind: str, entries: int = 3, seed: int = 0, uniform_first: bool = True) -> DeepCFRAgent:
    """A Deep CFR / SD-CFR agent on untrained networks kept in memory: an object with the fields
    the agent reads of a bundle. SD-CFR: sigma^1 uniform, then one value network per position
    for iterations 2..entries, weight = iteration (``uniform_first`` False drops sigma^1);
    Deep CFR: one average network."""
    torch.manual_seed(seed)
    nets: dict[str, DeepCFRNetwork] = {}

    def fresh(name: str) -> str:
        nets[name] = DeepCFRNetwork.for_game(game, width=16).eval()
        return name

    stack = [] if kind == "deep-cfr" else [{"weight": 1, "uniform": True}] * uniform_first + [
        {"weight": t, "files": [fresh(f"p0_t{t}"), fresh(f"p1_t{t}")]} for t in range(2, entries + 1)]
    average = fresh("average") if kind == "deep-cfr" else None
    bundle = SimpleNamespace(game=game, kind=kind, stack=stack, average=average, argmax_fallback=True, root="memory",
                             network=nets.__getitem__, weights=np.array([e["weight"] for e in stack], dtype=float))
    return DeepCFRAgent(game, bundle)


@pytest.mark.parametrize("agent_class", [RandomAgent, CallAgent, RaiseAgent])
def test_card_blind_agents_give_one_row_for_every_hand(agent_class):
    agent = agent_class(HOLDEM)
    for view in sample_views(HOLDEM, 3):
        hands = range_hands(HOLDEM, view, 40)
        assert np.array_equal(agent.range_probabilities(view, hands), one_by_one(agent, view, hands))


def test_tabular_agent_default_loop_reads_its_table():
    space = space_for(LEDUC)
    strategy = np.random.default_rng(1).random(space.legal.shape) * space.legal
    strategy /= strategy.sum(axis=1, keepdims=True)
    agent = TabularPolicyAgent(LEDUC, strategy)
    for view in sample_views(LEDUC, 10):
        hands = range_hands(LEDUC, view)
        probabilities = agent.range_probabilities(view, hands)
        for row, hand in enumerate(hands):
            index = space.index(InfosetSpace.make_key(tuple(hand), view.board, view.betting))
            assert probabilities[row] == pytest.approx(strategy[index])


@pytest.mark.parametrize("game", [LEDUC, HOLDEM], ids=["leduc", "holdem"])
def test_deep_cfr_average_network_batched_equals_one_by_one(game):
    agent = network_agent(game, "deep-cfr")
    for view in sample_views(game, 4):
        hands = range_hands(game, view, 60)
        batched = agent.range_probabilities(view, hands)
        assert batched == pytest.approx(one_by_one(agent, view, hands), abs=2e-5)
        assert batched.sum(axis=1) == pytest.approx(np.ones(len(hands)))


def test_sd_cfr_ranges_are_the_exact_stack_average():
    """SD-CFR plays one stack entry per hand; its behaviour strategy, which LBR must see, is
    the reach-weighted stack average (:func:`bot.agents.deep_cfr.bundle_strategy`)."""
    agent = network_agent(LEDUC, "sd-cfr", entries=4)
    space = space_for(LEDUC)
    average = bundle_strategy(agent.bundle)
    for view in sample_views(LEDUC, 6):
        hands = range_hands(LEDUC, view)
        batched = agent.range_probabilities(view, hands)
        for row, hand in enumerate(hands):
            index = space.index(InfosetSpace.make_key(tuple(hand), view.board, view.betting))
            assert batched[row] == pytest.approx(average[index], abs=2e-5)


def test_sd_cfr_with_one_entry_equals_one_by_one_on_hold_em():
    agent = network_agent(HOLDEM, "sd-cfr", entries=2, uniform_first=False)  # one entry: the average is it
    for view in sample_views(HOLDEM, 3, player=agent):
        hands = range_hands(HOLDEM, view, 50)
        assert agent.range_probabilities(view, hands) == pytest.approx(one_by_one(agent, view, hands), abs=2e-5)


def test_nfsp_batched_equals_one_by_one():
    torch.manual_seed(3)
    agent = NFSPAgent(LEDUC, NFSPPolicy(LEDUC, [DeepCFRNetwork.for_game(LEDUC, width=16).eval() for _ in range(2)]))
    for view in sample_views(LEDUC, 6):
        hands = range_hands(LEDUC, view)
        assert agent.range_probabilities(view, hands) == pytest.approx(one_by_one(agent, view, hands), abs=2e-5)


def test_abstraction_agent_batched_bucket_lookup_equals_one_by_one(tmp_path, monkeypatch):
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path / "cache"))
    result = CliRunner().invoke(pokerbot, ["train", "--algo", "abstraction", "--game", "leduc", "--size", "merged",
                                           "--iterations", "3000", "--threads", "1", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    agent = resolve_agent("leduc_merged", LEDUC)
    seen = set()
    for view in sample_views(LEDUC, 15):
        hands = range_hands(LEDUC, view)
        batched = agent.range_probabilities(view, hands)
        assert np.array_equal(batched, one_by_one(agent, view, hands))
        seen.update(map(tuple, batched.round(6)))
    assert len(seen) > 3  # the buckets' rows differ: the lookup is not trivially constant
