"""Ray workers (training/contract/cluster.py): traversal shares, network hand-off, resume, retries, and
the merged MCCFR batches, on Kuhn and Leduc with two local workers (one Ray start per module)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

ray = pytest.importorskip("ray")

from bot.abstraction.policy import full_game_strategy  # noqa: E402
from bot.abstraction.spec import SPECS  # noqa: E402
from bot.abstraction.tables import AbstractGame, Abstraction  # noqa: E402
from bot.cli import main as pokerbot  # noqa: E402
from bot.evaluation.best_response import exploitability  # noqa: E402
from training.abstraction import pcs  # noqa: E402
from training.abstraction.batches import PCSSolver  # noqa: E402
from training.abstraction.build import build_abstraction  # noqa: E402
from training.abstraction.ray_mccfr import RayMCCFR  # noqa: E402
from training.abstraction.ray_pcs import RayPCSSolver  # noqa: E402
from training.abstraction.solver import batch_weight, discount_tables, run_batch, run_iterations  # noqa: E402
from training.contract import cluster as distributed  # noqa: E402
from training.contract.rundir import RunDir  # noqa: E402
from training.deep_cfr.ray_traversal import RayTraversals, TraversalWorker  # noqa: E402
from training.deep_cfr.trainer import PRESETS, DeepCFRConfig, DeepCFRTrainer  # noqa: E402

pytestmark = pytest.mark.ray

KUHN = dict(PRESETS["kuhn"], game="kuhn", algo="sd-cfr", sgd_steps=100, batch_size=256, seed=1)
TIMING_KEYS = {"traversal_s", "training_s", "evaluation_s", "elapsed_s", "infosets_per_s"}
TWO = distributed.Cluster(workers=2)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module (started by the test, so the code under test uses it and
    leaves it running). Ray's num_cpus is a scheduling quota (one per actor), not cores: 6 lets
    the Kuhn pool (2 actors, kept for the module), an MCCFR pool (2) and a crashing actor exist
    at once; idle actors use no CPU, and the machine's cores are shared as usual."""
    root = str(Path(__file__).resolve().parents[3])
    ray.init(num_cpus=6, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": root}},
             _system_config=distributed.LOCAL_SYSTEM_CONFIG)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def kuhn_pool(tmp_path_factory):
    """A 12-iteration Kuhn SD-CFR run on 2 workers, its pool, and the same run in one process."""
    root = tmp_path_factory.mktemp("ray")
    trainer = DeepCFRTrainer.new(DeepCFRConfig(**{**KUHN, "iterations": 12}), root / "ray", progress=False)
    trainer.traversal_pool = RayTraversals(trainer, TWO, timeout_s=600)
    records = trainer.train()
    local = DeepCFRTrainer.new(DeepCFRConfig(**{**KUHN, "iterations": 12}), root / "local", progress=False)
    return trainer, records, local.train()


def share_rows(trainer: DeepCFRTrainer, iteration: int, player: int) -> list[dict]:
    """The rows two workers should return, computed here by the same worker class."""
    rows = []
    for index, count in enumerate((trainer.config.traversals // 2, trainer.config.traversals - trainer.config.traversals // 2)):
        worker = TraversalWorker(trainer.config.game, trainer.config.width, trainer.config.argmax_fallback,
                                 trainer.config.traversal_batch, trainer.config.seed)
        for q in (0, 1):
            worker.set_network(q, trainer.nets[q].state_dict())
        rows += [result.advantage for _n, result in worker.traverse(iteration, player, index, count)]
    return rows


def test_workers_fill_the_memories_like_one_process_and_converge_alike(kuhn_pool) -> None:
    trainer, records, local = kuhn_pool
    assert [r["workers"] for r in records] == [2] * 12 and records[-1]["worker_restarts"] == 0
    for p in (0, 1):  # same K per iteration: sample counts agree within sampling noise (3%)
        ray_seen, local_seen = records[-1][f"advantage_samples_p{p}"], local[-1][f"advantage_samples_p{p}"]
        assert trainer.advantage[p].seen == ray_seen
        assert abs(ray_seen - local_seen) < 0.03 * local_seen, (ray_seen, local_seen)
    ray_curve = [r["sdcfr_exploitability_mbb"] for r in records]
    local_curve = [r["sdcfr_exploitability_mbb"] for r in local]
    # uniform play is 458.3 mbb/g; both runs end below 60 and within 25 mbb/g of each other
    assert ray_curve[-1] < 60.0 and local_curve[-1] < 60.0, (ray_curve, local_curve)
    assert abs(ray_curve[-1] - local_curve[-1]) < 25.0, (ray_curve, local_curve)


def test_worker_rows_are_their_named_streams_and_a_killed_worker_is_replaced(kuhn_pool) -> None:
    """The pool's rows for iteration 13 are exactly what the worker class computes for shares
    (seed, 13, player, worker) with the trainer's networks, also after worker 0 was killed."""
    trainer, _records, _local = kuhn_pool
    pool = trainer.traversal_pool
    ray.kill(pool.pool.actors[0], no_restart=True)
    trainer.iteration = 13  # as during iteration 13 (player 0's network of iteration 12 is current)
    got = [result.advantage for result, _done in pool.results(trainer, 1)]
    expected = share_rows(trainer, 13, 1)
    assert pool.pool.restarts == 1
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert all(np.array_equal(a[k], b[k]) for k in ("node", "cards", "target"))


def test_resume_with_workers_continues_exactly(kuhn_pool, tmp_path) -> None:
    """Stop after 3 iterations, resume to 6 on the workers: the uninterrupted 6-iteration run."""
    pool = kuhn_pool[0].traversal_pool
    runs = {}
    for name, stops in (("split", (3, 6)), ("whole", (6,))):
        for stop in stops:
            config = DeepCFRConfig(**{**KUHN, "iterations": stop})
            path = tmp_path / name
            trainer = DeepCFRTrainer.continue_run(config, RunDir.open(path), progress=False) if path.exists() else (
                DeepCFRTrainer.new(config, path, progress=False))
            pool.sent = [None, None]  # a new trainer: its networks are sent afresh (as a new pool would)
            trainer.traversal_pool = pool
            trainer.train()
        runs[name] = trainer
    split, whole = runs["split"], runs["whole"]
    comparable = [[{k: v for k, v in r.items() if k not in TIMING_KEYS | {"worker_restarts"}} for r in t.run.read_metrics()]
                  for t in (split, whole)]
    assert comparable[0] == comparable[1] and len(comparable[0]) == 6
    for a, b in zip(split.advantage, whole.advantage, strict=True):
        assert a.seen == b.seen and all(np.array_equal(a.stored()[k], b.stored()[k]) for k in a.data)


def test_actors_run_at_the_drivers_priority() -> None:
    """Ray would start them 15 steps nicer (starved on a shared machine while the driver waits)."""
    pool = distributed.ActorPool(distributed.Worker, 1, (), timeout_s=600)
    assert pool.gather(lambda _i, actor: actor.__ray_call__.remote(lambda _self: os.nice(0))) == [os.nice(0)]
    assert pool.cpu_seconds() > 0
    pool.close()


def test_a_worker_failing_twice_is_a_one_line_error() -> None:
    pool = distributed.ActorPool(TraversalWorker, 1, ("no-such-game", 8, True, 10, 0), timeout_s=600)
    with pytest.raises(distributed.WorkerError, match="failed twice"):
        pool.gather(lambda _i, actor: actor.traverse.remote(1, 0, 0, 5))
    assert pool.restarts == 1


def leduc_game() -> AbstractGame:
    build_abstraction(SPECS["leduc_lossless"])
    return AbstractGame.build(Abstraction.load(SPECS["leduc_lossless"]))


def mbb(ag: AbstractGame, average: np.ndarray) -> float:
    report = exploitability(ag.abstraction.game, full_game_strategy(ag, average))
    return report.mbb(report.exploitability)


def merged_by_hand(base: list[np.ndarray], batch: int, run_share) -> list[np.ndarray]:
    """What a merge of two workers must give, recomputed here: each half of the batch run by
    ``run_share(copies, start, count)`` on its own copy of ``base``, the deltas summed."""
    expected = [t.copy() for t in base]
    for start, count in distributed.shares(batch, 2):
        copies = [t.copy() for t in base]
        run_share(copies, start, count)
        for table, copy, before in zip(expected, copies, base, strict=True):
            table += copy - before
    return expected


def test_mccfr_merge_is_the_sum_of_worker_deltas_and_converges_like_one_process() -> None:
    ag = leduc_game()
    pool = RayMCCFR("leduc_lossless", TWO, timeout_s=600)  # batch 2: one merge, checked exactly
    shape = (ag.num_rows, 3)
    merged = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    single = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    batch, batches = 4000, 10
    for k in range(1, batches + 1):
        first = (k - 1) * batch + 1
        if k == 2:  # the merge, recomputed here: each half of the batch on a copy of the same tables
            base = [t.copy() for t in merged]
            discount_tables(*base, k)
            expected = merged_by_hand(base, batch, lambda copies, start, count, first=first, k=k: run_iterations(
                ag, *copies, 0, first + start, count, batch_weight(k), 1))
        pool.merge_every = 0 if k == 2 else 200
        pool.run_batch(ag, *merged, 0, first, batch, k, 1)
        if k == 2:
            for got, want in zip(merged, expected, strict=True):
                assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
        run_batch(ag, *single, 0, first, batch, k, 1)
    # 40,000 iterations (merged every 200 but in batch 2): one process 35.6 mbb/g (30.8 before
    # each iteration drew its deal from its own stream, training/abstraction/solver.py), the
    # merged run within 2x of it (stale regrets cost on a game this small, see ray_mccfr's
    # docstring); uniform play is 1186.8
    one, two = mbb(ag, single[1]), mbb(ag, merged[1])
    assert one < 45.0 and two < 2 * one, (one, two)
    pool.close()


def test_pcs_merge_is_the_sum_of_worker_deltas_and_converges_like_one_process() -> None:
    ag = leduc_game()
    solver = RayPCSSolver(ag, 0, "dcfr", TWO, timeout_s=600)
    single = PCSSolver(ag, 0, 1, "dcfr")
    shape = (ag.num_rows, 3)
    merged = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    alone = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    batch, batches = 64, 12
    for k in range(1, batches + 1):
        first = (k - 1) * batch + 1
        if k == 3:  # the merge, recomputed here: each half of the batch on a copy of the same tables
            weights = pcs.batch_weights("dcfr", k)
            base = [t.copy() for t in merged]
            pcs.discount(*base, weights)
            expected = merged_by_hand(base, batch, lambda copies, start, count, first=first, weights=weights: (
                pcs.run_iterations(single.pg, *copies, 0, first + start, count, weights, 1)))
        solver.merge_every = 0 if k == 3 else 8
        assert solver.run_batch(*merged, first, batch, k, lambda _done: True)[1] == batch
        if k == 3:
            for got, want in zip(merged, expected, strict=True):
                assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
        single.run_batch(*alone, first, batch, k, lambda _done: True)
    # 768 iterations (one sampled board each, flops stratified): one process 18.3 mbb/g, the
    # merged run (rounds of 8 iterations, 4 per worker) 44.4: stale regrets cost on a game with
    # six boards, as for ES above; uniform play is 1186.8
    one, two = mbb(ag, alone[1]), mbb(ag, merged[1])
    assert one < 25.0 and two < 60.0, (one, two)
    assert solver.metrics() == {"workers": 2, "worker_restarts": 0}
    solver.close()


def test_cli_abstraction_and_sd_cfr_with_workers(tmp_path) -> None:
    runner = CliRunner()
    out = tmp_path / "abs"
    base = ["train", "--algo", "abstraction", "--threads", "1", "--workers", "2"]
    (tmp_path / "small.toml").write_text("batch = 2000\nsolver = \"es-mccfr\"\n")
    first = ["--game", "leduc", "--size", "lossless", "--iterations", "4000", "--config", str(tmp_path / "small.toml")]
    result = runner.invoke(pokerbot, base + first + ["--out", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(pokerbot, base + ["--resume", str(out), "--iterations", "6000"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in lines if "batch" in r] == [2000, 4000, 6000]
    assert all(r["workers"] == 2 for r in lines if "batch" in r)
    assert lines[-1]["final"] and 0 < lines[-1]["exploitability_mbb"] < 1186.8

    pcs_run = tmp_path / "pcs"  # the default solver (PCS) on the workers
    result = runner.invoke(pokerbot, base + ["--game", "leduc", "--size", "lossless", "--iterations", "128",
                                             "--out", str(pcs_run)])  # fmt: skip
    assert result.exit_code == 0 and "PCS batches on 2 Ray workers" in result.output, result.output
    lines = metrics(pcs_run)
    assert lines[-2]["iteration"] == 128 and all(r["workers"] == 2 for r in lines if "batch" in r)
    assert lines[-1]["final"] and 0 < lines[-1]["exploitability_mbb"] < 1186.8

    sd = tmp_path / "sd"
    result = runner.invoke(pokerbot, ["train", "--algo", "sd-cfr", "--game", "kuhn", "--iterations", "2",
                                      "--workers", "2", "--out", str(sd)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["workers"] for line in (sd / "metrics.jsonl").read_text().splitlines()] == [2, 2]
    assert ray.is_initialized()  # the CLI used the test's Ray and left it running


def metrics(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_sigterm_to_a_run_with_workers_checkpoints_and_resume_goes_on(tmp_path) -> None:
    """``ray.init`` replaces the driver's SIGTERM handler with an immediate exit;
    ``distributed.start`` puts the run contract's back, so a SIGTERM to ``pokerbot train
    --workers 2`` (here joining the test's Ray through ``--ray-address``) finishes the iteration,
    checkpoints and exits 0, and ``--resume`` continues from the next iteration."""
    root = Path(__file__).resolve().parents[3]
    out = tmp_path / "run"
    cluster = ["--workers", "2", "--ray-address", ray.get_runtime_context().gcs_address]
    train = [sys.executable, "-m", "bot", "train", "--algo", "sd-cfr"]
    driver = subprocess.Popen(train + ["--game", "kuhn", "--iterations", "10000", "--seed", "2", *cluster,
                                       "--out", str(out)], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    while not metrics(out):  # the first iteration is done: Ray runs and the handlers are in place
        assert driver.poll() is None, driver.communicate()
        time.sleep(0.2)
    driver.send_signal(signal.SIGTERM)
    stdout, stderr = driver.communicate()
    assert driver.returncode == 0, stderr
    assert "stopped on request; checkpoint saved" in stderr and "SIGTERM received" not in stderr
    done = len(metrics(out))
    assert [r["iteration"] for r in metrics(out)] == list(range(1, done + 1)) and done < 10000
    resumed = subprocess.run(train + ["--resume", str(out), "--iterations", str(done + 2), *cluster], cwd=root,
                             capture_output=True, text=True)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    records = metrics(out)
    assert [r["iteration"] for r in records] == list(range(1, done + 3))
    assert all(r["workers"] == 2 for r in records)
    assert records[-1]["advantage_samples_p0"] > records[done - 1]["advantage_samples_p0"]
