"""NFSP's two memories (Heinrich & Silver 2016, sec. 4): the circular replay memory keeps exactly
the newest transitions; the reservoir memory keeps every action it has seen with equal
probability. Both are :class:`training.common.reservoir.Reservoir`, in its two modes."""

from __future__ import annotations

import numpy as np

from bot.agents.encoding import InfosetEncoder
from protocol.gamedef import load_game
from training.nfsp.steps import replay_memory, supervised_memory


def _rows(encoder: InfosetEncoder, start: int, stop: int) -> dict[str, np.ndarray]:
    n = stop - start
    return {
        "node": np.arange(start, stop, dtype=np.int32),
        "cards": np.full((n, encoder.num_card_slots), 5, dtype=np.int8),
        "action": np.ones(n, dtype=np.int8),
        "reward": np.arange(start, stop, dtype=np.float32),
        "done": np.zeros(n, dtype=bool),
        "next_node": np.arange(start, stop, dtype=np.int32),
        "next_cards": np.full((n, encoder.num_card_slots), -1, dtype=np.int8),
    }


def test_replay_memory_overwrites_oldest_first() -> None:
    encoder = InfosetEncoder(load_game("leduc"))
    memory = replay_memory(5, encoder)
    rng = np.random.default_rng(0)
    memory.add(_rows(encoder, 0, 3), rng)
    assert len(memory) == 3
    memory.add(_rows(encoder, 3, 7), rng)  # 0 and 1 are overwritten in place
    assert memory.data["node"].tolist() == [5, 6, 2, 3, 4]
    assert memory.data["reward"].tolist() == [5, 6, 2, 3, 4]
    memory.add(_rows(encoder, 7, 20), rng)  # a batch larger than the memory keeps its newest rows
    assert sorted(memory.data["node"].tolist()) == [15, 16, 17, 18, 19]
    assert memory.seen == 20


def test_supervised_memory_keeps_each_action_with_equal_probability() -> None:
    """Stream 40 rows through a 10-row reservoir 4,000 times in batches of uneven sizes:
    each row survives with probability 10/40 (a binomial; 4 standard deviations allowed)."""
    encoder = InfosetEncoder(load_game("leduc"))
    kept = np.zeros(40)
    rng = np.random.default_rng(1)
    trials = 4000
    for _ in range(trials):
        memory = supervised_memory(10, encoder)
        for start, stop in ((0, 3), (3, 4), (4, 25), (25, 40)):
            memory.add({"node": np.arange(start, stop, dtype=np.int32),
                        "cards": np.zeros((stop - start, encoder.num_card_slots), dtype=np.int8),
                        "action": np.zeros(stop - start, dtype=np.int8)}, rng)
        kept[memory.data["node"]] += 1
    p = 0.25
    sd = np.sqrt(trials * p * (1 - p))
    assert np.abs(kept - trials * p).max() < 4 * sd
