"""Network policies (SD-CFR stacks, Deep CFR and NFSP networks) on the per-flop best response:
each equals the dense strategy table and the generic best response on a 10-card FHP."""

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from bot.agents.bundle import write_bundle
from bot.agents.deep_cfr import (
    DeepCFRBundle,
    InfosetBatch,
    StackAverage,
    bundle_strategy,
    strategy_from_outputs,
)
from bot.agents.network import DeepCFRNetwork, canonical_suit_cards
from bot.agents.nfsp import POLICY_FILE, NFSPPolicy
from bot.evaluation.best_response import exploitability
from bot.flop.best_response import flop_exploitability, flop_game_for
from bot.flop.network_policies import FlopStackAverage, NetworkGrid, bundle_policy, network_policy
from bot.flop.policies import policy_strategy
from bot.registry import resolve_flop_policy
from protocol.cards import NUM_SUITS
from tests.training.flop.test_flop_solver import TINY_FHP
from training.contract.rundir import save_torch
from training.deep_cfr.config import DeepCFRConfig
from training.deep_cfr.trainer import DeepCFRTrainer
from training.flop.evaluation import FlopRunEvaluation


def same_report(a, b, tol=5e-5):
    """Equal reports up to float32 rounding of the strategy tables: best-response values of
    ~200 chips differ by a few 1e-7 relative (2.6e-5 chips measured with the blocked trunk's
    head), and the game value, a sum of such terms, by as much in absolute terms."""
    assert a.best_response_values == pytest.approx(b.best_response_values, abs=tol, rel=1e-6)
    assert a.game_value == pytest.approx(b.game_value, abs=tol)


def random_net(seed, canonical=False, width=16):
    torch.manual_seed(seed)
    return DeepCFRNetwork.for_game(TINY_FHP, width=width, canonical_suits=canonical).eval()


def test_grid_outputs_equal_the_network_on_each_infoset():
    """The split first trunk layer over (node x hand) grids gives the network's own outputs."""
    fg = flop_game_for(TINY_FHP, False)
    grid = NetworkGrid(fg, row_budget=100)  # several blocks
    net = random_net(0)
    cards = grid.cards(1, 3, 5)
    grid_out = grid.outputs(net, cards, grid.bets[1])
    with torch.no_grad():
        direct = torch.stack([net(cards, bet.expand(len(cards), -1)) for bet in grid.bets[1]])
    assert torch.allclose(grid_out, direct, atol=1e-5)


@pytest.mark.parametrize("canonical", [False, True])
def test_average_network_equals_its_dense_table(canonical):
    """Deep CFR's average network: the flop path's strategies are the dense table's (every raw
    flop) and its exploitability is the generic best response's."""
    net = random_net(1, canonical)
    raw = flop_game_for(TINY_FHP, False)
    policy = network_policy(raw, (net, net), "average")
    dense = InfosetBatch(TINY_FHP).strategy(net, kind="average")
    assert np.allclose(policy_strategy(raw, policy), dense, atol=1e-6)
    brute = exploitability(TINY_FHP, dense)
    report = flop_exploitability(raw, policy, chunk=17)
    same_report(report, brute)
    # the best response reads the distinct rows' strategies (policy.shared): the very tables it would read otherwise
    assert flop_exploitability(raw, dataclasses.replace(policy, shared=None), chunk=17) == report
    assert policy.suit_invariant == canonical
    if canonical:  # suit-invariant: the canonical flops give the same, exactly
        fg = flop_game_for(TINY_FHP, True)
        same_report(flop_exploitability(fg, network_policy(fg, (net, net), "average")), brute)


def test_canonical_suit_cards_are_the_same_under_every_suit_renaming():
    rng = np.random.default_rng(0)
    deck = list(TINY_FHP.deck)
    rows = np.array([rng.choice(deck, 5, replace=False) for _ in range(200)])
    rows[:100, 2:] = -1  # preflop rows: no board yet
    cards = torch.from_numpy(rows)
    reference = canonical_suit_cards(cards, (2, 3))
    net = random_net(2, canonical=True)
    bets = torch.zeros((len(rows), net.bet_slots))
    with torch.no_grad():
        outputs = net(cards, bets)
        for perm in itertools.permutations(range(NUM_SUITS)):
            renamed = torch.where(cards < 0, -1, cards - cards % NUM_SUITS + torch.tensor(perm)[cards % NUM_SUITS])
            assert torch.equal(canonical_suit_cards(renamed, (2, 3)), reference)
            assert torch.allclose(net(renamed, bets), outputs, atol=1e-6)
    # the canonical cards are a suit renaming of the row: same ranks, same suit pattern
    assert torch.equal(torch.sort(reference[:, :2] // NUM_SUITS).values, torch.sort(cards[:, :2] // NUM_SUITS).values)


def test_nfsp_bundle_through_the_loader(tmp_path):
    """An NFSP policy bundle (two seats' Pi networks) read by ``pokerbot exploit``'s FHP path."""
    policy = NFSPPolicy(TINY_FHP, [random_net(3), random_net(4)])
    save_torch(tmp_path / POLICY_FILE, policy.bundle())
    write_bundle(tmp_path, "nfsp", TINY_FHP, [POLICY_FILE], {"algorithm": "nfsp"})
    fg, flop_policy = resolve_flop_policy(TINY_FHP, str(tmp_path))
    assert not fg.canonical
    same_report(flop_exploitability(fg, flop_policy), exploitability(TINY_FHP, policy.strategy()))


@pytest.fixture(scope="module", params=[False, True], ids=["raw", "canonical"])
def sd_cfr_run(request, tmp_path_factory):
    """A real SD-CFR run on the 10-card FHP (3 iterations; too large for the trainer's tabular
    evaluation, so its metrics come from the per-flop one), raw or suit-canonical inputs."""
    folder = tmp_path_factory.mktemp("sdcfr")
    gamedef = folder / "tiny.game"
    gamedef.write_text(TINY_FHP.to_text())
    config = DeepCFRConfig(game=str(gamedef), algo="sd-cfr", iterations=3, traversals=150, width=16, sgd_steps=40,
                           batch_size=256, advantage_memory=20_000, strategy_memory=20_000, traversal_batch=150,
                           threads=1, evaluate_every=1, checkpoint_every=10, canonical_suits=request.param)
    trainer = DeepCFRTrainer.new(config, folder / "run", progress=False)
    records = trainer.train()
    return trainer, records


def test_sd_cfr_stack_average_equals_the_exact_stack_average(sd_cfr_run):
    """The per-flop reach-weighted SD-CFR average of a run's bundle equals the project's exact
    SD-CFR average (:func:`bot.agents.deep_cfr.bundle_strategy`) infoset by infoset, and the
    run's metrics (incremental numerators, off the training clock) carry its exploitability."""
    trainer, records = sd_cfr_run
    fg, policy = bundle_policy(trainer.game, trainer.run.path)
    assert fg.canonical == trainer.config.canonical_suits and len(trainer.stack) == 4
    exact = bundle_strategy(DeepCFRBundle.load(trainer.run.policy_path))
    brute = exploitability(trainer.game, exact)
    same_report(flop_exploitability(fg, policy), brute)
    if not fg.canonical:
        # float32 networks through two kernels (torch's and the compiled trunk) round differently
        # by CPU: up to 8.4e-6 apart on an Intel Xeon with AMX, under 1e-6 on the AMD EPYC
        assert np.allclose(policy_strategy(fg, policy), exact, atol=2e-5)
    assert [r["iteration"] for r in records if "sdcfr_exploitability_mbb" in r] == [1, 2, 3]
    assert records[-1]["sdcfr_exploitability_mbb"] == pytest.approx(brute.mbb(brute.exploitability), abs=1e-3)
    assert records[-1]["flop_evaluation_flops"] == fg.num_flops
    assert (trainer.run.path / "exploitability.png").is_file()


def test_incremental_evaluation_equals_a_fresh_one_and_survives_an_interruption(tmp_path):
    nets = {i: (random_net(2 * i, True), random_net(2 * i + 1, True)) for i in (1, 2, 3)}
    stack = [{"weight": 1, "uniform": True}] + [{"weight": i + 1, "files": [str(i)]} for i in (1, 2, 3)]

    def nets_of(entry):
        return (None, None) if entry.get("uniform") else nets[int(entry["files"][0])]

    key = "sdcfr_exploitability_mbb"
    evaluation = FlopRunEvaluation(TINY_FHP, tmp_path / "a", True, True)
    evaluation.evaluate(stack[:2], nets_of)
    incremental = evaluation.evaluate(stack, nets_of)[key]
    fresh = FlopRunEvaluation(TINY_FHP, tmp_path / "b", True, True).evaluate(stack, nets_of)[key]
    batch, exact = InfosetBatch(TINY_FHP), StackAverage(TINY_FHP)
    for entry in stack:
        exact.add(batch.strategy(None if entry.get("uniform") else nets_of(entry)), float(entry["weight"]))
    brute = exploitability(TINY_FHP, exact.strategy())
    assert incremental == pytest.approx(fresh, abs=1e-4) and fresh == pytest.approx(brute.mbb(brute.exploitability), abs=1e-4, rel=1e-6)
    (tmp_path / "a" / "evaluation" / "state.json").write_text('{"entries": 2, "updating_to": 4}')  # killed mid-pass
    assert evaluation.evaluate(stack, nets_of)[key] == pytest.approx(fresh, abs=1e-4)
    older = FlopRunEvaluation(TINY_FHP, tmp_path / "c", True, True).evaluate(stack[:3], nets_of)[key]
    assert evaluation.evaluate(stack[:3], nets_of)[key] == pytest.approx(older, abs=1e-4)  # resumed from before


def test_other_weightings_equal_the_stack_reweighted_by_hand(tmp_path, capsys):
    """Exponent e weights iteration t by t^e: measured beside the linear weights (one read of
    each network, incrementally), it equals the brute-force average of the same stack with its
    weights raised to e; the linear figure is unchanged; a change of weightings rebuilds."""
    nets = {i: (random_net(20 + 2 * i, True), random_net(21 + 2 * i, True)) for i in (1, 2, 3, 4)}
    stack = [{"weight": 1, "uniform": True}] + [{"weight": i + 1, "files": [str(i)]} for i in (1, 2, 3, 4)]

    def nets_of(entry):
        return (None, None) if entry.get("uniform") else nets[int(entry["files"][0])]

    def brute(exponent):
        batch, exact = InfosetBatch(TINY_FHP), StackAverage(TINY_FHP)
        for entry in stack:
            exact.add(batch.strategy(None if entry.get("uniform") else nets_of(entry)), float(entry["weight"]) ** exponent)
        report = exploitability(TINY_FHP, exact.strategy())
        return report.mbb(report.exploitability)

    evaluation = FlopRunEvaluation(TINY_FHP, tmp_path / "a", True, True, exponents=(1.0, 2.0, 3.0))
    evaluation.evaluate(stack[:3], nets_of)
    metrics = evaluation.evaluate(stack, nets_of)  # the last two entries added to every weighting's numerators
    figures = [metrics["sdcfr_exploitability_mbb"], metrics["sdcfr_t2_exploitability_mbb"],
               metrics["sdcfr_t3_exploitability_mbb"]]
    assert figures == pytest.approx([brute(1.0), brute(2.0), brute(3.0)], abs=1e-4, rel=1e-6)
    assert len({round(f, 3) for f in figures}) == 3  # the weightings do differ on this stack
    assert (tmp_path / "a" / "evaluation" / "flop_numerator_t2.f32").is_file()
    capsys.readouterr()
    linear_only = FlopRunEvaluation(TINY_FHP, tmp_path / "a", True, True)  # the same folder, other weightings
    assert linear_only.evaluate(stack, nets_of)["sdcfr_exploitability_mbb"] == pytest.approx(brute(1.0), abs=1e-4)
    assert "summed under other weightings (weights t, weights t^2, weights t^3): rebuilding" in capsys.readouterr().out
    with pytest.raises(ValueError, match="each once"):
        FlopRunEvaluation(TINY_FHP, tmp_path / "b", True, True, exponents=(2.0, 2.0))


def test_canonical_stack_on_canonical_flops_equals_every_flop():
    """A stack of suit-canonical networks is suit-invariant: the 1,755-flop path (here 60 of
    120) gives the all-flops value, which equals StackAverage's brute force."""
    entries = [(1.0, (None, None)), (2.0, (random_net(5, True), random_net(6, True))),
               (3.0, (random_net(7, True), random_net(8, True)))]
    reports = []
    for canonical in (True, False):
        fg = flop_game_for(TINY_FHP, canonical)
        average = FlopStackAverage(NetworkGrid(fg))
        for weight, nets in entries:
            average.add(weight, nets)
        assert average.suit_invariant
        reports.append(flop_exploitability(fg, average.policy(), chunk=9))
    same_report(*reports)
    batch, exact = InfosetBatch(TINY_FHP), StackAverage(TINY_FHP)
    for weight, nets in entries:
        exact.add(batch.strategy(None if nets[0] is None else nets), weight)
    same_report(reports[1], exploitability(TINY_FHP, exact.strategy()))


def test_pokerbot_exploit_reads_the_run_on_the_flop_path(sd_cfr_run, monkeypatch):
    """``pokerbot exploit RUN`` routes a flop game's network run through the per-flop best
    response (here forced for the 10-card game, which is small enough for the tabular path)."""
    from click.testing import CliRunner

    from bot.cli import main
    from bot.commands import exploit as exploit_command

    trainer, records = sd_cfr_run
    monkeypatch.setattr(exploit_command, "MAX_TABULAR_SLOTS", 0)
    monkeypatch.setattr(exploit_command, "load_strategy", None)  # the tabular path is not taken
    result = CliRunner().invoke(main, ["exploit", str(trainer.run.path), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    expected = records[-1]["sdcfr_exploitability_mbb"]
    line = next(line for line in result.output.splitlines() if line.startswith("exploitability (NashConv/2)"))
    assert float(line.split("=")[1].split()[0]) == pytest.approx(expected, abs=1e-3)
    flops = "60 canonical flops (suit-invariant policy)" if trainer.config.canonical_suits else "120 every raw flop"
    assert f"exact: {flops}" in result.output


def test_deep_cfr_run_logs_the_exact_exploitability_of_its_average_network(tmp_path):
    gamedef = tmp_path / "tiny.game"
    gamedef.write_text(TINY_FHP.to_text())
    config = DeepCFRConfig(game=str(gamedef), algo="deep-cfr", iterations=2, traversals=100, width=8, sgd_steps=20,
                           batch_size=128, average_sgd_steps=30, average_batch_size=128, advantage_memory=5_000,
                           strategy_memory=5_000, traversal_batch=100, threads=1, canonical_suits=True)
    trainer = DeepCFRTrainer.new(config, tmp_path / "run", progress=False)
    final = trainer.train()[-1]
    fg, policy = bundle_policy(TINY_FHP, trainer.run.path)
    assert fg.canonical
    net = DeepCFRBundle.load(trainer.run.policy_path).network("average.pt")
    brute = exploitability(TINY_FHP, InfosetBatch(TINY_FHP).strategy(net, kind="average"))
    assert final["average_exploitability_mbb"] == pytest.approx(brute.mbb(brute.exploitability), abs=1e-3)
    same_report(flop_exploitability(fg, policy), brute)


def test_canonical_suit_cards_exact_values():
    """Board (0, 4, 8) in one suit takes suit 0; the hole's higher card then the smallest free
    suit (1), the lower one the next (2): hole (5, 10) -> (9, 6), board sorted descending."""
    cards = torch.tensor([[5, 10, 0, 4, 8], [5, 10, -1, -1, -1]])
    assert canonical_suit_cards(cards, (2, 3)).tolist() == [[9, 6, 8, 4, 0], [8, 5, -1, -1, -1]]


def test_canonical_suit_cards_is_the_smallest_renaming():
    """The compiled canonicalisation against a brute force over the 24 renamings (boards
    compared first, each group sorted descending), on rows alone and in runs that share their
    boards (an FHP flop's hands: the renamings that make the boards smallest are reused)."""
    rng = np.random.default_rng(1)
    rows = np.array([rng.choice(52, 7, replace=False) for _ in range(300)])
    rows[:100, 5:] = -1
    rows[:50, 2:] = -1
    runs = np.repeat(rows[100:130], 8, axis=0)
    for row in runs:
        row[:2] = rng.choice(np.setdiff1d(np.arange(52), row[2:]), 2, replace=False)
    rows = np.concatenate([rows, runs])
    sizes = (2, 3, 1, 1)

    def renamed(row, perm):
        groups, start = [], 0
        for size in sizes:
            group = [-1 if c < 0 else c - c % 4 + perm[c % 4] for c in row[start : start + size]]
            groups.append(sorted(group, reverse=True))
            start += size
        return groups[1:] + groups[:1]

    got = canonical_suit_cards(torch.from_numpy(rows), sizes).numpy()
    for row, canonical in zip(rows, got, strict=True):
        best = min(renamed(row, perm) for perm in itertools.permutations(range(4)))
        assert canonical.tolist() == [c for group in best[-1:] + best[:-1] for c in group]


@pytest.mark.parametrize("canonical", [False, True])
@pytest.mark.parametrize(("kind", "argmax_fallback"), [("value", True), ("value", False), ("average", True)])
def test_compiled_trunk_equals_the_torch_network(canonical, kind, argmax_fallback):
    """The CPU path (compiled trunk over the distinct card rows, scattered back) gives the torch
    network's own strategies at every (flop, node, hand), to float tolerance (both in float32,
    summed in another order; regret matching divides that rounding by the positive advantages'
    total, here down to ~1e-2, hence 1e-4); invalid hands 0."""
    fg = flop_game_for(TINY_FHP, False)
    grid = NetworkGrid(fg)
    nets = (random_net(11, canonical), random_net(12, canonical))
    with torch.no_grad():  # a bias pushes some advantages all negative: the fallback rule runs too
        nets[0].action_head.bias.fill_(-0.5)
    tables = grid.strategies(nets, kind, argmax_fallback, 1, 2, 9)
    cards = grid.cards(1, 2, 9)
    valid = torch.from_numpy(fg.valid[2:9].reshape(-1) > 0)
    fallbacks = 0
    for d, (bet, legal, actor) in enumerate(zip(grid.bets[1], grid.legal[1], grid.actor[1], strict=True)):
        with torch.no_grad():
            raw = nets[actor](cards, bet.expand(len(cards), -1))
        rows_legal = legal.expand(len(cards), -1)
        expected = strategy_from_outputs(kind, raw, rows_legal, argmax_fallback) * valid[:, None]
        fallbacks += int(((raw.clamp(min=0) * rows_legal).sum(dim=1) == 0).sum())
        assert np.allclose(tables[:, d].reshape(-1, 3), expected.numpy(), atol=1e-4)
    assert kind == "average" or fallbacks > 0


@pytest.mark.parametrize("kind", ["value", "average"])
def test_compiled_and_torch_trunks_give_the_same_tables(kind):
    """The CPU's compiled trunk and the torch trunk (the GPU path, run here on the CPU) fill the
    same flop tables, a seat with no network playing uniformly."""
    fg = flop_game_for(TINY_FHP, True)
    nets = (random_net(13, True), None)
    compiled = NetworkGrid(fg).strategies(nets, kind, True, 1, 0, fg.num_flops)
    torch_tables = NetworkGrid(fg, compiled=False, row_budget=64).strategies(nets, kind, True, 1, 0, fg.num_flops)
    assert np.allclose(compiled, torch_tables, atol=1e-4)
    valid = fg.valid > 0
    sums = compiled.sum(axis=3).transpose(0, 2, 1)  # [flops, hands, nodes]
    assert np.allclose(sums[valid], 1.0, atol=1e-5) and np.all(sums[~valid] == 0)
