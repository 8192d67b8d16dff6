"""The abstract average strategy read back in the real game.

A real infoset (betting node, board, own hole cards) plays the row of its abstract infoset
(node, bucket of the cards in that round), normalised over the legal actions. On games whose
every infoset fits in memory (Kuhn, Leduc) the whole ``[num_infosets, 3]`` array of
:mod:`bot.infosets` is built, so :func:`bot.best_response.exploitability` measures the
abstraction's strategy exactly in the full game.
"""

from __future__ import annotations

import numpy as np

from bot.abstraction_tables import AbstractGame
from bot.infosets import space_for
from training.cfr import normalise_average


def abstract_rows(ag: AbstractGame, node: np.ndarray, hands: np.ndarray, boards: np.ndarray, round_index: int) -> np.ndarray:
    """Table rows of real infosets of one round: decision ``node`` ids, hole ``hands`` rows and
    visible ``boards`` rows (same length)."""
    abstraction = ag.abstraction
    cards = np.concatenate([hands, boards], axis=1).astype(np.int64)
    index = abstraction.indexers[round_index].index_batch(cards)
    table = abstraction.tables[round_index]
    bucket = index if table is None else np.asarray(table)[index].astype(np.int64)
    return ag.row_offset[node] + bucket


def full_game_strategy(ag: AbstractGame, average: np.ndarray) -> np.ndarray:
    """``[num_infosets, 3]`` real-game strategy of the abstract average strategy ``average``."""
    space = space_for(ag.abstraction.game)
    rows = np.empty(space.num_infosets, dtype=np.int64)
    rounds = ag.tree.round[space.node]
    for r in range(ag.abstraction.game.num_rounds):
        mask = rounds == r
        rows[mask] = abstract_rows(ag, space.node[mask], space.hands[space.hand[mask]],
                                   space.boards[r][space.board[mask]], r)  # fmt: skip
    return normalise_average(np.asarray(average, dtype=np.float64)[rows] * space.legal, space.legal)
