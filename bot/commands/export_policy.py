"""``pokerbot export-policy RUN --out policy.json``: a run's exact strategy as a tabular policy file.

For small games (Kuhn, Leduc) every infoset's strategy is computed from the policy bundle: the
exact reach-weighted SD-CFR average of the stack, or the Deep CFR average network's output.
The result is written with :func:`bot.tabular_policy.save_policy` (format 1), so ``pokerbot
exploit``, ``--agent`` and the tabular tools read it.
"""

from __future__ import annotations

from pathlib import Path

import click

from bot.errors import PokerbotError

#: Above this many infosets a tabular file is not practical (Leduc has 936).
MAX_INFOSETS = 5_000_000


@click.command("export-policy")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSON file to write.")
def export_policy(run: Path, out: Path) -> None:
    """Write the exact strategy of a Deep CFR / SD-CFR run (or policy bundle) as tabular JSON."""
    from bot.deep_cfr_agent import Bundle, bundle_strategy
    from bot.infosets import space_for
    from bot.tabular_policy import save_policy

    if not run.exists():
        raise PokerbotError(f"{run}: no such run directory or policy bundle")
    bundle = Bundle.load(run)
    if bundle.game.total_board_cards + 2 * bundle.game.num_hole_cards > 8:
        raise PokerbotError(f"{run}: {bundle.game.name} is too large for a tabular policy file (Kuhn and Leduc only)")
    space = space_for(bundle.game)
    if space.num_infosets > MAX_INFOSETS:
        raise PokerbotError(f"{run}: {space.num_infosets:,} infosets is too many for a tabular policy file")
    strategy = bundle_strategy(bundle)
    save_policy(out, bundle.game, strategy, meta={"source": str(run), "kind": bundle.kind,
                                                   "stack_entries": len(bundle.stack)})
    click.echo(f"wrote {out}: {space.num_infosets} infosets of {bundle.game.name} ({bundle.kind})")
