"""Diagnostics of an NFSP learner on small games: exact exploitability of the average policy,
how close the DQN best responses are to exact ones, what the eta-mixture target costs, and the
exploitability of M_SL's empirical frequencies. ``evaluate`` runs during training (small games);
the rest serve ``benchmarks/bench_nfsp_leduc.py`` and the tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from bot.evaluation.best_response import ExploitabilityReport
    from training.nfsp.learner import NFSP


def evaluate(learner: NFSP) -> dict[str, float]:
    """Exact exploitability of the average policy (small games only), labelled both ways."""
    from bot.evaluation.best_response import exploitability

    report = exploitability(learner.game, learner.policy.strategy())
    result = {"exploitability_mbb": report.mbb(report.exploitability), "nash_conv_mbb": report.mbb(report.nash_conv)}
    if learner.config.sl_full_batch:
        table = exploitability(learner.game, memory_frequencies(learner))
        result["sl_table_mbb"] = table.mbb(table.exploitability)
    result.update(best_response_quality(learner, report))
    return result


def greedy_q_strategy(learner: NFSP) -> np.ndarray:
    """The ``[num_infosets, 3]`` table of each seat's greedy Q policy (one-hot argmax over the
    legal actions): the best response NFSP's fictitious play averages, without exploration."""
    infosets = learner.policy.infosets
    out = np.zeros((infosets.space.num_infosets, 3))
    with torch.no_grad():
        for player, p in enumerate(learner.players):
            rows = np.flatnonzero(infosets.player == player)
            index = torch.from_numpy(rows)
            q = p.q(infosets.cards[index].to(learner.device), infosets.bets[index].to(learner.device)).cpu()
            best = q.masked_fill(~infosets.legal[index], float("-inf")).argmax(dim=1).numpy()
            out[rows, best] = 1.0
    return out


def _seat_value(learner: NFSP, table: np.ndarray, seat: int, average: np.ndarray) -> float:
    """Seat ``seat``'s expected value (chips, its own sign) playing ``table``'s rows for its
    infosets against the other seat's ``average`` rows."""
    from bot.evaluation.best_response import expected_value

    mine = (learner.policy.infosets.player == seat)[:, None]
    value = expected_value(learner.game, np.where(mine, table, average))
    return value if seat == 0 else -value


def best_response_quality(learner: NFSP, report: ExploitabilityReport, table: np.ndarray | None = None) -> dict[str, float]:
    """How good the DQN best responses are, per seat p: ``q_gap_mbb_p`` = exact best response's
    value against the current average Pi_-p minus the greedy Q policy's value against it (mbb/g,
    >= 0), and ``q_share_p`` = the share of the exact best response's gain over Pi_p that greedy
    Q achieves (1 = an exact best response). Fictitious play converges with the best responses'
    error (Heinrich & Silver 2016, sec. 3: approximate FP), so this bounds what Pi can reach.
    ``table`` measures another best-response table the same way (default: greedy Q)."""
    table = greedy_q_strategy(learner) if table is None else table
    average = learner.policy.strategy()
    out = {}
    for seat in range(2):
        value = _seat_value(learner, table, seat, average)
        best, own = report.best_response_values[seat], (1.0 if seat == 0 else -1.0) * report.game_value
        out[f"q_gap_mbb_{seat}"] = report.mbb(best - value)
        out[f"q_share_{seat}"] = (value - own) / (best - own) if best > own else 1.0
    return out


def window_q_strategy(learner: NFSP, sweeps: int = 16) -> np.ndarray:
    """Each seat's greedy policy of a *tabular* Q fitted to its own M_RL: fitted-Q iteration on
    the window's per-(s, a) mean rewards and next-state shares (:class:`ReplayGroups`), i.e. what
    a perfectly fitted Q network would play if it matched the window's sample means exactly
    (``sweeps`` at least the game's decisions per seat make the iteration exact). Infosets where
    the window lacks a legal action keep greedy Q's choice. Compared with greedy Q, it separates
    the window's sampling noise from the network's fit (``rl_full_batch`` runs only)."""
    table = greedy_q_strategy(learner)
    infosets = learner.policy.infosets
    for seat, p in enumerate(learner.players):
        groups = p.keys.groups(len(p.replay))
        next_state, next_known = _positions(groups.state_keys, groups.next_keys)
        q = groups.pair_reward.copy()
        for _ in range(sweeps):
            state_value = np.full(len(groups.state_keys), -np.inf)
            np.maximum.at(state_value, groups.pair_state, q)
            bootstrap = np.where(next_known, state_value[next_state], 0.0)
            q = groups.pair_reward + np.bincount(groups.link_pair, groups.link_weight * bootstrap, minlength=len(q))
        values = np.full((len(groups.state_keys), 3), -np.inf)
        values[groups.pair_state, groups.pair_action] = q
        rows = np.flatnonzero(infosets.player == seat)
        where, found = _positions(groups.state_keys, p.keys.keys(infosets.space.node[rows], infosets.cards[rows].numpy()))
        legal = infosets.legal[rows].numpy()
        covered = found & (np.isfinite(values[where]) | ~legal).all(axis=1)
        best = np.where(legal, values[where], -np.inf).argmax(axis=1)
        table[rows[covered]] = np.eye(3)[best[covered]]
    return table


def _positions(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's index in ``sorted_keys`` and whether it is there at all (the index is a
    valid placeholder where it is not)."""
    where = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return where, sorted_keys[where] == keys


def mixture_bias(learner: NFSP, eta: float) -> tuple[float, float]:
    """What Q's target costs, per seat p, in mbb/g: the value against Pi_-p of an exact best
    response to the mixture the other seat actually plays with anticipatory parameter ``eta``
    (``eta * greedy Q_-p + (1 - eta) * Pi_-p``, exploration left out), short of an exact best
    response to Pi_-p itself. A perfectly fitted Q would still fall this far short of the best
    response fictitious play needs (the bias discussed at ``NFSPConfig.eta_final``)."""
    from bot.evaluation.best_response import best_response_strategy, exploitability

    average = learner.policy.strategy()
    mixture = eta * greedy_q_strategy(learner) + (1.0 - eta) * average
    report = exploitability(learner.game, average)
    short = []
    for seat in range(2):
        value = _seat_value(learner, best_response_strategy(learner.game, mixture, seat), seat, average)
        short.append(report.mbb(report.best_response_values[seat] - value))
    return short[0], short[1]


def memory_frequencies(learner: NFSP) -> np.ndarray:
    """The strategy table ``[num_infosets, 3]`` of M_SL's empirical action frequencies (the
    policy Pi would play if it fitted its objective exactly): its exploitability, logged as
    ``sl_table_mbb``, separates the error of fictitious play with DQN best responses from the
    error of fitting Pi."""
    infosets = learner.policy.infosets
    space, out = infosets.space, np.zeros((infosets.space.num_infosets, 3))
    for player, p in enumerate(learner.players):
        rows = np.flatnonzero(infosets.player == player)
        out[rows] = p.counts.frequencies(space.node[rows], infosets.cards[rows].numpy(),
                                         space.legal[rows])
    return out
