"""The documentation holds together: the MkDocs site builds with ``--strict`` (a broken link, a
missing anchor or a page left out of the nav is an error, see ``validation`` in mkdocs.yml),
README.md stays an entry page of at most 250 lines, and every relative link in README.md points
at a file that exists (and, for a docs page with ``#anchor``, at a heading the built page has)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: ``[text](target)`` and ``![alt](target)``; targets with a scheme are external and not checked.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built by ``mkdocs build --strict`` (offline: no plugin here fetches anything)."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(out)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return out


def built(site: Path, page: Path) -> Path:
    """Where mkdocs writes ``page`` (relative to docs/): ``a/b.md`` -> ``a/b/index.html``."""
    return site / (page.parent if page.name == "index.md" else page.with_suffix("")) / "index.html"


def readme_links() -> list[str]:
    return [target for target in LINK.findall(README.read_text()) if not re.match(r"[a-z]+:", target)]


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md"))
    assert len(pages) > 40
    for page in pages:
        assert built(site, page).is_file(), f"{page} was not built"


def test_readme_is_an_entry_page() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move details into docs/"


def test_readme_install_and_test_lines_are_what_ci_runs() -> None:
    """The README's install and test commands are exactly the lines .ci/run executes."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    readme = README.read_text()
    for line in ("pip install torch==2.13.0", 'pip install -e ".[test]"', "ruff check . && pytest"):
        assert line in ci and line in readme


def test_every_relative_readme_link_resolves(site: Path) -> None:
    links = readme_links()
    assert len(links) >= 10  # the README links into the docs
    for target in links:
        path, _, anchor = target.partition("#")
        file = (ROOT / path) if path else README
        assert file.exists(), f"README.md links to {target}: no such file"
        if anchor and file.suffix == ".md" and file.is_relative_to(ROOT / "docs"):
            html = built(site, file.relative_to(ROOT / "docs")).read_text()
            assert f'id="{anchor}"' in html, f"README.md links to {target}: no such heading"
