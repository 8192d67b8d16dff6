"""Inside ``bot`` the sub-packages' import arrows run one way, lowest first:

    helpers  <-  agents  <-  shipped  <-  abstraction | evaluation  <-  flop
             <-  registry  <-  catalogue  <-  cli  <-  commands  <-  __main__

The helpers are ``bot``'s top-level modules other than the CLI (``errors``, ``progress``, ...);
they import no other part of ``bot``. A module may import its own sub-package and any lower
layer; ``abstraction`` and ``evaluation`` share a layer and import neither each other nor
anything above. So evaluation measures agents only through the Agent interface; the modules
that play a kind (agents, shipped, abstraction, flop) only define their loaders, and
``bot.registry``, above them all, imports them and registers every loader by name (one
registry, filled explicitly); the CLI's commands sit on top (``bot.cli`` loads them by name; ``exploit`` reads ``bot.cli``'s
command table). Every import statement is read with ``ast``, nested and relative ones
included; the package-level arrows (protocol <- bot <- training, tui) are
``tests/architecture/test_import_directions.py``'s.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: ``bot``'s top-level helpers (its top-level modules but the CLI's, the registry and the catalogue): the lowest
#: layer (``pair_strengths`` serves both the abstraction's range buckets and LBR's equities; ``threads`` the
#: board match and AIVAT).
HELPERS = {"__init__", "errors", "progress", "run_files", "pair_strengths", "threads"}
#: Groups of ``bot`` (a sub-package or a top-level module), lowest layer first.
LAYERS: list[set[str]] = [HELPERS, {"agents"}, {"shipped"}, {"abstraction", "evaluation"}, {"flop"},
                          {"registry"}, {"catalogue"}, {"cli"}, {"commands"}, {"__main__"}]
LEVEL = {group: level for level, groups in enumerate(LAYERS) for group in groups}
#: module -> groups it imports against the arrows today, to be removed (none: every loader is
#: registered by ``bot.registry``, above the modules that define them).
KNOWN_BACK_ARROWS: dict[str, set[str]] = {}


def group_of(relative: str) -> str:
    """``bot/agents/nfsp.py`` -> ``agents``; ``bot/errors.py`` -> ``errors``."""
    parts = relative.removesuffix(".py").split("/")
    return parts[1]


def bot_imports(path: Path, package: tuple[str, ...] | None = None) -> list[tuple[str, int]]:
    """(group of ``bot`` imported, line) for every import of ``bot`` in ``path``, nested and
    relative ones included (``package``: the module's package, by default from its path)."""
    if package is None:
        package = path.relative_to(ROOT).parent.parts
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((_group(alias.name), node.lineno) for alias in node.names
                         if alias.name.split(".")[0] == "bot")
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if module == "bot":
                found.extend((alias.name, node.lineno) for alias in node.names)
            elif module.split(".")[0] == "bot":
                found.append((_group(module), node.lineno))
    return found


def _absolute(node: ast.ImportFrom, package: tuple[str, ...]) -> str:
    """The module an ``import from`` names, relative ones resolved against ``package``."""
    if node.level == 0:
        return node.module or ""
    base = list(package[: len(package) - node.level + 1])
    return ".".join(base + ([node.module] if node.module else []))


def _group(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def modules() -> list[Path]:
    return sorted((ROOT / "bot").rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    groups = {group_of(path.relative_to(ROOT).as_posix()) for path in modules()}
    assert groups <= set(LEVEL), f"add to LAYERS: {sorted(groups - set(LEVEL))}"


def test_imports_run_down_the_layers() -> None:
    wrong = []
    for path in modules():
        relative = path.relative_to(ROOT).as_posix()
        group = group_of(relative)
        for imported, line in bot_imports(path):
            if imported == group or imported in KNOWN_BACK_ARROWS.get(relative, set()):
                continue
            if imported not in LEVEL or LEVEL[imported] >= LEVEL[group]:
                wrong.append(f"{relative}:{line} ({group}) imports bot.{imported}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("source, expected", [
    ("import bot.agents.base\nfrom bot.evaluation.lbr import x\n", [("agents", 1), ("evaluation", 2)]),
    ("def f():\n    from bot import cli\n    import bot\n", [("cli", 2), ("__init__", 3)]),
    ("from protocol.cards import x\nimport numpy\n", []),
    ("from .lbr import x\nfrom ..flop import game\nfrom .. import errors\n",
     [("evaluation", 1), ("flop", 2), ("errors", 3)]),
])
def test_the_checker_reads_every_form(tmp_path, source: str, expected: list[tuple[str, int]]) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(source)
    assert sorted(bot_imports(sample, ("bot", "evaluation"))) == sorted(expected)


def test_the_back_arrows_are_still_there() -> None:
    """Each tolerated back arrow is still used (else it should go from the list)."""
    for relative, groups in KNOWN_BACK_ARROWS.items():
        assert groups <= {imported for imported, _ in bot_imports(ROOT / relative)}, relative
