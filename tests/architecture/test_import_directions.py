"""The packages' import arrows run one way: protocol <- bot <- training, and tui over bot.

* ``protocol`` (the game, the wire, files) imports nothing of ``bot``, ``training`` or ``tui``.
* ``bot`` (agents, evaluation, bundles, the CLI) imports neither ``training`` nor ``tui`` at
  module level. The one documented exception is the CLI's commands that run a training job or
  the table: ``bot/commands/train.py`` and ``bot/commands/solve.py`` import ``training`` (and
  ``bot/commands/match.py`` its exact board evaluator, ``training.abstraction.board_match``), and
  ``bot/commands/play.py`` and ``bot/commands/watch.py`` import ``tui``, inside the command function (the CLI loads each
  command module lazily, so neither torch nor Textual loads for another command).
* ``training`` imports ``protocol`` and ``bot``, never ``tui``.
* ``tui`` imports ``protocol`` and ``bot``, never ``training``.

Every import statement of every module is read with ``ast``, nested ones included.

And the modules of the four packages import each other without a cycle
(:func:`test_no_import_cycles`). Imports inside functions count: a lazy import only delays the
dependency (it still couples the two modules, and the cycle is still there when the function
runs). Imports under ``if TYPE_CHECKING:`` do not: they never run and exist to name a type in an
annotation without a runtime dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "bot", "training", "tui")
#: package -> packages it must never import, anywhere.
FORBIDDEN = {"protocol": {"bot", "training", "tui"}, "bot": {"training", "tui"}, "training": {"tui"},
             "tui": {"training"}}
#: module -> packages it may import inside a function despite FORBIDDEN (the CLI's exception).
LAZY_EXCEPTIONS = {"bot/commands/train.py": {"training"}, "bot/commands/solve.py": {"training"},
                   "bot/commands/match.py": {"training"}, "bot/commands/exploit.py": {"training"},
                   "bot/commands/play.py": {"tui"}, "bot/commands/watch.py": {"tui"}}


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


def module_name(path: Path) -> str:
    """``training/deep_cfr/trainer.py`` -> ``training.deep_cfr.trainer`` (a package: its folder)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports at run time (nested imports included,
    ``if TYPE_CHECKING:`` blocks not): ``from a.b import c`` is ``a.b.c`` when that is a module,
    else ``a.b`` (or its nearest known parent)."""
    def nearest(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found: set[str | None] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(), filename=str(path))]
    while pending:
        for child in ast.iter_child_nodes(pending.pop()):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.Import):
                found.update(nearest(alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.update(nearest(f"{child.module}.{alias.name}") for alias in child.names)
            pending.append(child)
    return {name for name in found if name is not None}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan 1972), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for package in PACKAGES for path in modules(package)}
    known = set(paths)
    return {name: module_imports(path, known) - {name} for name, path in paths.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_follow_the_arrows(package: str) -> None:
    wrong = []
    for path in modules(package):
        relative = path.relative_to(ROOT).as_posix()
        allowed_lazily = LAZY_EXCEPTIONS.get(relative, set())
        for imported, in_function, line in imports(path):
            if imported in FORBIDDEN[package] and not (in_function and imported in allowed_lazily):
                wrong.append(f"{relative}:{line} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_nested_imports(tmp_path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import bot.x\n\ndef f():\n    from training.contract.entry import x\n    return x\n")
    assert imports(sample) == [("bot", False, 1), ("training", True, 4)]


def test_no_import_cycles() -> None:
    """No two modules of protocol, bot, training and tui import each other, directly or
    through others: each can be read, tested and moved knowing only what it imports."""
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(cycle) for cycle in found)


def test_the_cycle_checker_finds_cycles(tmp_path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]
    sample = tmp_path / "m.py"
    sample.write_text("from typing import TYPE_CHECKING\nimport x.y\nfrom x import z, w\n"
                      "if TYPE_CHECKING:\n    import x.t\ndef f():\n    from x.y import k\n")
    assert module_imports(sample, {"x", "x.y", "x.z", "x.t"}) == {"x.y", "x.z", "x"}


def test_the_exceptions_are_used() -> None:
    """Each documented exception is still needed (else it should go)."""
    for relative, packages in LAZY_EXCEPTIONS.items():
        used = {imported for imported, in_function, _ in imports(ROOT / relative) if in_function}
        assert packages <= used, relative
