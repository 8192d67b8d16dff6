"""Regret matching worked through for the highlighted infoset (the seed explainer's middle panel):
features -> network output -> positive parts -> strategy, next to the targets the fit chases."""

from __future__ import annotations

import numpy as np
from textual.markup import escape
from textual.widgets import Static

from tui.watch.model import Infoset
from tui.watch.panels.advantages import chips
from tui.watch.text import ACTION_NAMES, card, legal_actions, number, prob


def actions_text(values: np.ndarray, legal: np.ndarray, cell=lambda v: number(v, 3)) -> str:
    return "  ".join(f"{ACTION_NAMES[a]} {cell(float(values[a]))}" for a in legal_actions(legal))


def walkthrough_lines(infoset: Infoset, argmax_fallback: bool = True) -> list[str]:
    """The walkthrough as markup lines (tested directly; the widget only joins them)."""
    legal = infoset.legal
    lines = [f"[b]{infoset.key}[/b] · player {infoset.player} acts · networks of iteration {infoset.row}"]
    bets = " ".join("–" if b < 0 else f"{b:g}" for b in infoset.bets)
    cards = " ".join(card(c) for c in infoset.cards)
    lines.append(escape(f"1 features  cards {cards} · bet per slot (big blinds, – none) {bets}"))
    if infoset.advantages is None:
        lines.append("2 network   no value network for this iteration yet")
        return lines + target_lines(infoset)
    advantages = chips(infoset)
    raw = infoset.advantages.raw[infoset.index]
    if infoset.scale is not None:
        lines.append(f"2 network   V = {actions_text(raw, legal)} × {infoset.scale:.3g} = "
                     f"{actions_text(advantages, legal)} chips")
    else:
        lines.append(f"2 network   V = {actions_text(raw, legal)} (fit units: scale not logged)")
    positive = np.where(legal, np.maximum(advantages, 0.0), 0.0)
    total = float(positive.sum())
    strategy = actions_text(infoset.advantages.strategy[infoset.index], legal, prob)
    if total > 0:
        lines.append(f"3 regret matching  max(V, 0) = {actions_text(positive, legal)} · sum {total:.3f}")
        lines.append(f"4 strategy  σ = max(V, 0) / sum = {strategy}")
    else:
        rule = "argmax fallback" if argmax_fallback else "uniform (the ablation)"
        lines.append("3 regret matching  no advantage is positive")
        lines.append(f"4 strategy  σ = {strategy}  ({rule})")
    return lines + target_lines(infoset)


def target_lines(infoset: Infoset) -> list[str]:
    legal = infoset.legal
    lines = []
    if infoset.memory_mean is not None and not np.isnan(infoset.memory_mean).any():
        lines.append(f"  memory mean target (sampled; the fit's data): {actions_text(infoset.memory_mean, legal)}")
    if infoset.exact is not None and not np.isnan(infoset.exact).any():
        lines.append(f"  exact Σt·r(I,a)/Σt·π₋ᵢ(I): {actions_text(infoset.exact, legal)} → "
                     f"σ {actions_text(infoset.exact_strategy, legal, prob)}")
    elif infoset.exact is not None:
        lines.append("  exact target: never reached, so the network is untrained here")
    else:
        lines.append("  exact target: needs every iteration's value networks (an SD-CFR run's policy stack)")
    return lines


class Walkthrough(Static):
    """Shows :func:`walkthrough_lines` of one infoset."""

    def show_infoset(self, infoset: Infoset | None, argmax_fallback: bool = True) -> None:
        self.update("\n".join(walkthrough_lines(infoset, argmax_fallback)) if infoset else "no infoset selected")
