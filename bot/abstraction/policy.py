"""A solved abstraction as a policy: the abstract average strategy read back in the real game,
and the ``abstraction`` bundle kind (a run's ``policy/``: ``average.npy`` named in
``bundle.json`` with its sha256, plus the abstraction's name).

A real infoset (betting node, board, own hole cards) plays the row of its abstract infoset
(node, bucket of the cards in that round), normalised over the legal actions. On games whose
every infoset fits in memory (Kuhn, Leduc) the whole ``[num_infosets, 3]`` array of
:mod:`bot.agents.infosets` is built, so :func:`bot.evaluation.best_response.exploitability` measures the
abstraction's strategy exactly in the full game.
"""

from __future__ import annotations

import numpy as np

from bot.abstraction.spec import SPECS
from bot.abstraction.tables import AbstractGame, Abstraction
from bot.agents.base import Agent
from bot.agents.bundle import Bundle, BundleError
from bot.agents.infosets import normalise_average, space_for
from protocol.gamedef import Game

#: The file of an abstraction bundle.
AVERAGE_FILE = "average.npy"


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


def _bundle_table(bundle: Bundle) -> tuple[AbstractGame, np.ndarray]:
    name = bundle.manifest.get("abstraction")
    if name not in SPECS:
        raise BundleError(f"{bundle.root}: unknown abstraction {name!r}")
    ag = AbstractGame.build(Abstraction.load(SPECS[name]))
    try:
        average = np.load(bundle.path(AVERAGE_FILE), mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as error:
        raise BundleError(f"{bundle.path(AVERAGE_FILE)}: cannot load ({str(error).splitlines()[0]})") from None
    if average.shape != (ag.num_rows, 3):
        raise BundleError(f"{bundle.root}: average table of shape {average.shape} does not fit {name} ({ag.num_rows}, 3)")
    return ag, average


def bundle_agent(game: Game, bundle: Bundle) -> Agent:
    """An ``abstraction`` bundle's agent."""
    from bot.abstraction.agent import AbstractionAgent

    return AbstractionAgent(game, str(bundle.manifest.get("abstraction")), bundle.path(AVERAGE_FILE))


def bundle_strategy(bundle: Bundle) -> np.ndarray:
    """An ``abstraction`` bundle's strategy in the full game (small games)."""
    return full_game_strategy(*_bundle_table(bundle))
