"""Atomic output: nothing appears under the target name unless the writer finished."""

import os
import stat

import pytest

from rates.io import atomic_path, write_text_atomic


def test_failed_writer_leaves_no_file(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []


def test_written_file_has_umask_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "sub" / "t.txt", "hello")
    finally:
        os.umask(umask)
    assert path.read_text() == "hello"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
