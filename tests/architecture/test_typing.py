"""mypy as part of the test command (``ruff check . && pytest`` covers it): ``protocol/`` under
``--strict``, and the run contract, bundle, file and error modules strictly as well (their
imports are followed silently, so the rest of the tree is not held to ``--strict`` yet)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_MODULES = ["training/contract/entry.py", "training/contract/rundir.py", "training/contract/loop.py", "training/tabular/solve.py", "bot/agents/bundle.py", "bot/errors.py",
                    "bot/registry.py", "bot/run_files.py", "protocol/files.py", "protocol/errors.py"]


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True, text=True)


def test_protocol_is_strictly_typed() -> None:
    result = mypy("--strict", "protocol/")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_contract_modules_are_strictly_typed() -> None:
    result = mypy("--strict", "--follow-imports=silent", *CONTRACT_MODULES)
    assert result.returncode == 0, result.stdout + result.stderr
