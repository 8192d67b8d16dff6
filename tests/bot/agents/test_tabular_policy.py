"""Policy files: exact round trips, strict loading, the agent that plays them."""

import json

import numpy as np
import pytest

from bot.agents.infosets import InfosetSpace, space_for
from bot.agents.tabular import PolicyFileError, TabularPolicyAgent, load_policy, save_policy
from bot.registry import resolve_agent
from protocol.dealing import deal_hand
from protocol.gamedef import load_game
from protocol.matchstate import view_of
from protocol.state import ACTIONS, State

LEDUC = load_game("leduc")


@pytest.fixture
def strategy():
    space = space_for(LEDUC)
    x = np.random.default_rng(0).random((space.num_infosets, 3)) * space.legal
    return x / x.sum(axis=1, keepdims=True)


@pytest.fixture
def policy_file(tmp_path, strategy):
    path = tmp_path / "leduc.json"
    save_policy(path, LEDUC, strategy, meta={"seed": 1})
    return path


def test_round_trip_is_exact(policy_file, strategy):
    game, loaded = load_policy(policy_file)
    assert game.name == "leduc.limit.2p"
    assert np.allclose(loaded, strategy, rtol=0, atol=1e-15)
    document = json.loads(policy_file.read_text())
    assert document["format"] == 1 and document["meta"] == {"seed": 1}
    assert document["policy"]["Ks||"].keys() == {"c", "r"}  # legal actions only


def edit(path, change):
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["policy"].update({"Ks|Ks|cc/": {"c": 1.0}}), "unknown infoset key 'Ks|Ks|cc/'"),
        (lambda d: d["policy"].pop("Ah|Qs|rc/cr"), r"missing infoset 'Ah\|Qs\|rc/cr' \(1 of 936 missing\)"),
        (lambda d: d["policy"].update({"Ks||": {"f": 0.5, "c": 0.5}}), "key 'Ks||': action 'f' is illegal"),
        (lambda d: d["policy"].update({"Ks||": {"c": 0.5, "r": 0.4}}), "key 'Ks||': probabilities sum to 0.9"),
        (lambda d: d["policy"].update({"Ks||": {"c": 1.5, "r": -0.5}}), "must be a number >= 0"),
        (lambda d: d["policy"].update({"Ks||": {"c": "1"}}), "must be a number >= 0"),
        (lambda d: d["policy"].update({"Ks||": {"x": 1.0}}), "unknown action 'x'"),
        (lambda d: d.update({"format": 2}), "format 2 is not supported"),
        (lambda d: d.update({"extra": 1}), "unknown field 'extra'"),
        (lambda d: d.pop("policy"), "missing field 'policy'"),
        (lambda d: d.update({"game": "chess"}), "unknown game 'chess'"),
        (lambda d: d.update({"game": "fhp.limit.2p.reverse_blinds"}), "too large for tabular tables"),
    ],
)
def test_strict_loading_names_the_problem(policy_file, change, message):
    with pytest.raises(PolicyFileError, match=message) as error:
        load_policy(edit(policy_file, change))
    assert str(error.value).startswith(str(policy_file)) and "\n" not in str(error.value)


def test_wrong_game_and_bad_json(policy_file, tmp_path):
    with pytest.raises(PolicyFileError, match="policy is for game 'leduc.limit.2p', not 'kuhn.limit.2p'"):
        load_policy(policy_file, load_game("kuhn"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"game": ')
    with pytest.raises(PolicyFileError, match="bad.json: not valid JSON"):
        load_policy(bad)


def test_probabilities_within_tolerance_are_renormalised(policy_file):
    path = edit(policy_file, lambda d: d["policy"].update({"Ks||": {"c": 0.5, "r": 0.5 + 5e-7}}))
    _, loaded = load_policy(path)
    assert loaded[space_for(LEDUC).index("Ks||")].sum() == pytest.approx(1.0, abs=1e-15)


def test_agent_plays_the_file_at_every_view(policy_file, strategy):
    agent = resolve_agent(str(policy_file), LEDUC)
    assert isinstance(agent, TabularPolicyAgent) and agent.name == "leduc"
    space = space_for(LEDUC)
    rng = np.random.default_rng(2)
    for hand_number in range(50):
        holes, board = deal_hand(LEDUC, 3, hand_number)
        state = State(LEDUC, holes, board)
        while not state.is_finished:
            view = view_of(state, state.actor, hand_number)
            probabilities = agent.action_probabilities(view)
            key = InfosetSpace.make_key(view.own_hole_cards, view.board, view.betting)
            row = strategy[space.index(key)]
            assert set(probabilities) == set(state.legal_actions())
            assert [probabilities[a] for a in state.legal_actions()] == pytest.approx(
                [row[ACTIONS.index(a)] for a in state.legal_actions()], abs=1e-15
            )
            state.apply(agent.act(view, rng))
