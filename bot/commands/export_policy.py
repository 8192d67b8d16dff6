"""``pokerbot export-policy RUN --out policy.json``: any policy's exact strategy as a tabular file.

Every policy kind is read through the one bundle loader (:mod:`bot.agents.bundle`): an SD-CFR run gives
the exact reach-weighted average of its stack, Deep CFR its average network, NFSP its average
policy Pi, an abstraction run its average strategy read back in the full game; tabular files
and NFSP runs from before bundles load too. The result is written with
:func:`bot.agents.tabular.save_policy` (format 1), so ``pokerbot exploit``, ``--agent`` and any
outside tool read it. Small games only (every infoset is a row).
"""

from __future__ import annotations

from pathlib import Path

import click

from bot.errors import PokerbotError


@click.command("export-policy")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSON file to write.")
def export_policy(run: Path, out: Path) -> None:
    """Write the exact strategy of a run or policy bundle (any kind) as tabular JSON."""
    from bot.agents.bundle import bundle_root, read_bundle
    from bot.agents.infosets import is_small, space_for
    from bot.agents.nfsp import policy_file
    from bot.agents.tabular import save_policy
    from bot.registry import load_strategy

    if not run.exists():
        raise PokerbotError(f"{run}: no such run directory or policy bundle")
    kind = "tabular"
    if bundle_root(run) is not None:
        bundle = read_bundle(run)
        kind = bundle.kind
        if not is_small(bundle.game):
            raise PokerbotError(f"{run}: {bundle.game.name} is too large for a tabular policy file (Kuhn and Leduc only)")
    elif run.is_dir():
        if policy_file(run) is None:
            read_bundle(run)  # the one-line "no bundle.json" error
        kind = "nfsp"
    game, strategy = load_strategy(run)
    save_policy(out, game, strategy, meta={"source": str(run), "kind": kind})
    click.echo(f"wrote {out}: {space_for(game).num_infosets} infosets of {game.name} ({kind})")
