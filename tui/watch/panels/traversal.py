"""The latest sampled traversal as a tree (the explainer's gold path).

External sampling (Lanctot et al. 2009; Brown et al. 2019, algorithm 2) expands every action of
the traverser and samples one action of the opponent, so the tree branches only at the
traverser's decisions. Each traverser node shows its strategy and the sampled regrets
``r(a) = v(h a) - v(h)`` that went into the advantage memory."""

from __future__ import annotations

from textual.widgets import Static

from protocol.betting_tree import DECISION, FOLD_END, BettingTree
from tui.watch.text import ACTION_NAMES, card, number, prob


def traversal_lines(example: dict, tree: BettingTree) -> list[str]:
    """Markup lines of one recorded traversal (``TraversalResult.example``)."""
    nodes, parent, values, sigma = example["nodes"], example["parent"], example["value"], example["sigma"]
    traverser = int(example["traverser"])
    children: dict[int, list[int]] = {}
    for row, up in enumerate(parent):
        children.setdefault(up, []).append(row)
    holes = "  ".join(f"p{p} {' '.join(card(c) for c in cards)}" for p, cards in enumerate(example["holes"]))
    board = " ".join(card(c) for c in example["board"]) or "–"
    lines = [f"traverser [b]p{traverser}[/b] · deal {holes} · board {board} · values are p{traverser}'s chips"]

    def action_of(row: int) -> str:
        history = tree.history[nodes[row]].replace("/", "")
        return history[-1] if history else ""

    def describe(row: int) -> str:
        node = nodes[row]
        if tree.kind[node] == FOLD_END:
            return f"p{int(tree.folder[node])} folds → {number(values[row], 2)}"
        if tree.kind[node] != DECISION:
            return f"showdown → {number(values[row], 2)}"
        actor = int(tree.actor[node])
        if actor != traverser:
            picked = [action_of(c) for c in children.get(row, [])]
            return f"p{actor} samples [b #f2c14e]{''.join(picked)}[/]"
        kids = children.get(row, [])
        regrets = "  ".join(f"{action_of(c)} {number(values[c] - values[row], 2)}" for c in kids)
        strategy = "  ".join(f"{ACTION_NAMES[a]} {prob(p)}" for a, p in enumerate(sigma[row]) if tree.legal[node][a])
        return f"p{actor}: σ {strategy} · v {number(values[row], 2)} · regret {regrets}"

    def walk(row: int, prefix: str, last: bool, top: bool) -> None:
        joint = "" if top else ("└─ " if last else "├─ ")
        label = "root" if top else action_of(row)
        if not top and tree.round[nodes[row]] > tree.round[nodes[parent[row]]]:
            label += " / new round"
        lines.append(f"{prefix}{joint}{label}  {describe(row)}")
        kids = children.get(row, [])
        below = prefix if top else prefix + ("   " if last else "│  ")
        for i, kid in enumerate(kids):
            walk(kid, below, i == len(kids) - 1, False)

    for root in children.get(-1, []):
        walk(root, "", True, True)
    return lines


class TraversalPanel(Static):
    """The selected iteration's recorded traversal of one traverser."""

    def show_example(self, example: dict | None, tree: BettingTree | None, iteration: int, player: int) -> None:
        if example is None or tree is None:
            self.update(f"iteration {iteration}: no traversal of p{player} recorded "
                        "(runs from before pokerbot watch, or a tree over 400 nodes)")
            return
        self.update("\n".join([f"iteration {iteration} · t: show the other traverser", *traversal_lines(example, tree)]))
