"""Every abstraction test builds its bucket tables and policies in its own cache folder, never
in the user's ``~/.cache/pokerbot``."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POKERBOT_CACHE", str(tmp_path / "cache"))
