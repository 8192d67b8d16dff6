"""Numba's kernel cache keyed by the source (protocol.numba_cache): a change to a kernel's callee
in another file must not leave the caller's cached machine code in use."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numba

from protocol.numba_cache import cache_base, key_numba_cache, source_key

CALLEE = "from numba import njit\n\n@njit(cache=True)\ndef step(x):\n    return x + {}\n"
CALLER = "from numba import njit\n\nfrom pkg.callee import step\n\n@njit(cache=True)\ndef twice(x):\n    return step(x) * 2\n"
SCRIPT = """
import sys
from pathlib import Path
from protocol.numba_cache import key_numba_cache
key_numba_cache(Path(sys.argv[1]), ("pkg",)) if sys.argv[2] == "keyed" else None
sys.path.insert(0, sys.argv[1])
from pkg.caller import twice
print(twice(1))
"""


def run_twice(tmp_path: Path, mode: str) -> tuple[str, str]:
    """Run the caller, change only the callee's file, run it again; both outputs."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(CALLER)
    (package / "callee.py").write_text(CALLEE.format(1))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), mode], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return done.stdout.strip()

    first = run()
    time.sleep(0.01)  # a distinct modification time even on coarse clocks
    (package / "callee.py").write_text(CALLEE.format(2))
    return first, run()


def test_a_changed_callee_is_compiled_again_with_the_keyed_cache(tmp_path):
    assert run_twice(tmp_path, "keyed") == ("4", "6")


def test_numba_alone_keeps_the_stale_callee(tmp_path):
    """The failure the key exists for (numba #1833): if numba ever fixes it, this test says so
    and the keyed cache can go."""
    assert run_twice(tmp_path, "plain") == ("4", "4")


def test_the_key_follows_any_source_change(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    before = source_key(tmp_path, ("pkg",))
    assert source_key(tmp_path, ("pkg",)) == before  # stable while nothing changes
    (tmp_path / "pkg" / "a.py").write_text("x = 22\n")
    assert source_key(tmp_path, ("pkg",)) != before
    (tmp_path / "pkg" / "sub").mkdir()
    changed = source_key(tmp_path, ("pkg",))
    (tmp_path / "pkg" / "sub" / "b.py").write_text("")
    assert source_key(tmp_path, ("pkg",)) != changed


def test_this_process_uses_the_folder_of_its_own_source():
    folder = Path(numba.config.CACHE_DIR)
    assert folder.parent == cache_base() and folder.name == source_key(Path(__file__).resolve().parents[2])
    assert key_numba_cache() == folder  # idempotent


def test_two_writers_of_different_signatures_keep_their_own_data(tmp_path, monkeypatch):
    """Numba's save reads the index, takes a free data-file number, writes the index, then the
    data. Two writers interleaved there would take the same number and one key would load the
    other's data; under the lock each key reads back its own."""
    import threading

    from numba.core.caching import IndexDataCacheFile

    from protocol.numba_cache import serialise_cache_writes

    serialise_cache_writes()
    original = IndexDataCacheFile._save_index
    first_in = threading.Event()

    def slow_save_index(self, overloads):
        first_in.set()
        time.sleep(0.3)  # the other writer arrives while this one is between its read and its write
        original(self, overloads)

    monkeypatch.setattr(IndexDataCacheFile, "_save_index", slow_save_index)
    files = [IndexDataCacheFile(str(tmp_path), "kernel", ("stamp", 1)) for _ in range(2)]
    writers = [threading.Thread(target=files[0].save, args=(("uint8",), b"code for uint8"))]
    writers[0].start()
    first_in.wait()
    writers.append(threading.Thread(target=files[1].save, args=(("float32",), b"code for float32")))
    writers[1].start()
    for writer in writers:
        writer.join()
    reader = IndexDataCacheFile(str(tmp_path), "kernel", ("stamp", 1))
    assert reader.load(("uint8",)) == b"code for uint8"
    assert reader.load(("float32",)) == b"code for float32"
