"""The packages' import arrows run one way: protocol <- bot <- training, and tui over bot.

* ``protocol`` (the game, the wire, files) imports nothing of ``bot``, ``training`` or ``tui``.
* ``bot`` (agents, evaluation, bundles, the CLI) imports neither ``training`` nor ``tui`` at
  module level. The one documented exception is the CLI's commands that run a training job or
  the table: ``bot/commands/train.py`` and ``bot/commands/solve.py`` import ``training``, and
  ``bot/commands/play.py`` and ``bot/commands/watch.py`` import ``tui``, inside the command function (the CLI loads each
  command module lazily, so neither torch nor Textual loads for another command).
* ``training`` imports ``protocol`` and ``bot``, never ``tui``.
* ``tui`` imports ``protocol`` and ``bot``, never ``training``.

Every import statement of every module is read with ``ast``, nested ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "bot", "training", "tui")
#: package -> packages it must never import, anywhere.
FORBIDDEN = {"protocol": {"bot", "training", "tui"}, "bot": {"training", "tui"}, "training": {"tui"},
             "tui": {"training"}}
#: module -> packages it may import inside a function despite FORBIDDEN (the CLI's exception).
LAZY_EXCEPTIONS = {"bot/commands/train.py": {"training"}, "bot/commands/solve.py": {"training"},
                   "bot/commands/play.py": {"tui"}, "bot/commands/watch.py": {"tui"}}
#: module -> packages it imports against the arrows today, to be removed: the FHP best
#: response's reader of a running flop solve reads the flop trainer's checkpoint through
#: ``training.contract.rundir``; the run directory's names and readers are in ``bot.run_files`` (which
#: ``pokerbot watch`` and the registry use), so the next step is reading it from there.
KNOWN_BACK_ARROWS = {"bot/flop/policies.py": {"training"}}


def imports(path: Path) -> list[tuple[str, bool, int]]:
    """(top-level package imported, inside a function?, line) for every import in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((alias.name.split(".")[0], in_function, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], in_function, child.lineno))
            visit(child, nested)

    visit(tree, False)
    return found


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_follow_the_arrows(package: str) -> None:
    wrong = []
    for path in modules(package):
        relative = path.relative_to(ROOT).as_posix()
        allowed_lazily = LAZY_EXCEPTIONS.get(relative, set())
        tolerated = KNOWN_BACK_ARROWS.get(relative, set())
        for imported, in_function, line in imports(path):
            if imported in tolerated:
                continue
            if imported in FORBIDDEN[package] and not (in_function and imported in allowed_lazily):
                wrong.append(f"{relative}:{line} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_nested_imports(tmp_path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import bot.x\n\ndef f():\n    from training.contract.entry import x\n    return x\n")
    assert imports(sample) == [("bot", False, 1), ("training", True, 4)]


def test_the_exceptions_are_used() -> None:
    """Each documented exception is still needed (else it should go)."""
    for relative, packages in LAZY_EXCEPTIONS.items():
        used = {imported for imported, in_function, _ in imports(ROOT / relative) if in_function}
        assert packages <= used, relative
    for relative, packages in KNOWN_BACK_ARROWS.items():
        assert packages <= {imported for imported, _, _ in imports(ROOT / relative)}, relative
