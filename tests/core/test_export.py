"""Atomic writes leave files with the permissions any other program's output would have."""

import stat
import sys

import pytest


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_atomic_write_respects_the_umask_not_mkstemps_private_mode(tmp_path, monkeypatch):
    import core.export

    monkeypatch.setattr(core.export, "_UMASK", 0o022)  # read once at import; a typical user's umask
    core.export.atomic_write_text(tmp_path / "out.md", "# hi\n")
    assert stat.S_IMODE((tmp_path / "out.md").stat().st_mode) == 0o644
    assert (tmp_path / "out.md").read_text() == "# hi\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.md"]
