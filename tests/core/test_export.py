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


def test_the_input_fingerprint_covers_the_whole_file_and_notices_a_change(tmp_path):
    import os

    from core.export import input_changed, input_fingerprint

    path = tmp_path / "in.pdf"
    path.write_bytes(b"a" * 100 + b"b")
    first, identity = input_fingerprint(path)
    assert not input_changed(path, identity)
    path.write_bytes(b"a" * 100 + b"c")  # same size, last byte changed
    os.utime(path, ns=(identity[3], identity[3]))  # and the old modification time
    assert input_fingerprint(path)[0] != first
    path.unlink()
    assert input_changed(path, identity)


def test_store_files_are_read_only_as_small_regular_files(tmp_path):
    import os

    from core.page_store import file_sha256, read_json

    (tmp_path / "ok.json").write_text('{"a": 1}')
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    os.symlink(tmp_path / "ok.json", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    assert read_json(tmp_path / "ok.json") == {"a": 1}
    assert read_json(tmp_path / "ok.json", limit=4) is None
    for name in ("deep.json", "link.json", "fifo.json", "dir.json", "missing.json"):
        assert read_json(tmp_path / name) is None, name
    assert file_sha256(tmp_path / "link.json") is None and file_sha256(tmp_path / "fifo.json") is None
