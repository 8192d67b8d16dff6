"""``pokerbot games``: the shipped game definitions and their sizes."""

from __future__ import annotations

from math import comb

import click
from rich import box
from rich.console import Console
from rich.table import Table

from protocol.betting_tree import BettingTree
from protocol.gamedef import GAME_ALIASES, Game, load_game, shipped_game_names


def infosets_per_player(game: Game, tree: BettingTree) -> list[int]:
    """Information sets per player without suit isomorphism: for each decision node, the
    actor's distinct (hole cards, board so far) pairs; each round's board cards are a set of
    their own (a flop card is not a turn card)."""
    holdings_by_round = []
    remaining, holdings = len(game.deck) - game.num_hole_cards, comb(len(game.deck), game.num_hole_cards)
    for rnd in range(game.num_rounds):
        holdings *= comb(remaining, game.num_board_cards[rnd])
        remaining -= game.num_board_cards[rnd]
        holdings_by_round.append(holdings)
    counts = [0] * game.num_players
    for node in tree.decision_ids:
        counts[int(tree.actor[node])] += holdings_by_round[int(tree.round[node])]
    return counts


@click.command()
def games() -> None:
    """List the shipped games with their sizes (fits 80 columns; the gamedef files follow)."""
    aliases = {v: k for k, v in GAME_ALIASES.items() if k != "hulh"}
    table = Table(title="Shipped ACPC games", box=box.SIMPLE_HEAD)
    for column in ("game", "rounds", "decision seqs/round", "terminal", "infosets/player", "BB"):
        table.add_column(column, no_wrap=True, justify="left" if column == "game" else "right")
    files = []
    for stem in shipped_game_names():
        game = load_game(stem)
        tree = BettingTree.build(game)
        infosets = infosets_per_player(game, tree)
        table.add_row(
            aliases.get(stem, stem),
            str(game.num_rounds),
            "/".join(map(str, tree.decision_nodes_per_round)),
            f"{tree.num_terminal:,}",
            " / ".join(f"{n:,}" if n < 10**12 else f"{n:.4g}" for n in sorted(set(infosets))),
            str(game.big_blind),
        )
        files.append(f"  {aliases.get(stem, stem):<7} protocol/games/{stem}.game")
    console = Console()
    console.print(table)
    console.print("Gamedef files (--game takes the name or any gamedef path):\n" + "\n".join(files), highlight=False)
