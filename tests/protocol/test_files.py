"""atomic_link_or_copy: a hard link on one file system, an atomic copy where a link is refused,
and the two names independent once either is replaced."""

from __future__ import annotations

import errno
import os

import pytest

from protocol import files
from protocol.files import OutputPathError, atomic_link_or_copy, atomic_write_bytes


def refuse_links(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """``os.link`` answers ``code``, as another file system (``EXDEV``) or one without links does."""

    def refuse(*_args: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files.os, "link", refuse)


def test_one_file_system_gets_a_link_whose_names_stay_independent(tmp_path) -> None:
    source, target = tmp_path / "run" / "average.npy", tmp_path / "cache" / "policy.npy"
    atomic_write_bytes(source, b"first solve")
    atomic_write_bytes(target, b"an older policy")
    atomic_link_or_copy(source, target)
    assert target.read_bytes() == b"first solve" and os.stat(target).st_ino == os.stat(source).st_ino
    atomic_write_bytes(source, b"the run resumed and stopped early")  # a rename onto the run's name
    assert target.read_bytes() == b"first solve"
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("refusal", [errno.EXDEV, errno.EPERM, errno.ENOTSUP])
def test_a_refused_link_is_an_atomic_copy(tmp_path, monkeypatch, refusal) -> None:
    source, target = tmp_path / "average.npy", tmp_path / "cache" / "policy.npy"
    source.write_bytes(bytes(range(256)) * 9000)  # several copy blocks

    refuse_links(monkeypatch, refusal)
    atomic_link_or_copy(source, target)
    assert target.read_bytes() == source.read_bytes() and os.stat(target).st_ino != os.stat(source).st_ino


def test_a_full_disk_while_copying_names_the_target_and_keeps_the_old_file(tmp_path, monkeypatch) -> None:
    source, target = tmp_path / "average.npy", tmp_path / "policy.npy"
    source.write_bytes(b"new")
    target.write_bytes(b"old")
    refuse_links(monkeypatch, errno.EXDEV)

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.shutil, "copyfileobj", full)
    with pytest.raises(OutputPathError, match="policy.npy: cannot write .No space left"):
        atomic_link_or_copy(source, target)
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["average.npy", "policy.npy"]
