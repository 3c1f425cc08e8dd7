"""``hsd export``: converted documents to other formats in one batch, one line for every refusal."""

from __future__ import annotations

import pytest

from core.cli import main
from tests.core.exports.conftest import make_finished


def test_hsd_export_writes_each_format_and_refuses_to_overwrite(tmp_path, capsys):
    a = make_finished(tmp_path / "a", "paper")
    b = make_finished(tmp_path / "b", "notes")
    out = tmp_path / "out"
    assert main(["export", str(a), str(b), "--format", "html,docx,json", "--to", str(out), "--name", "{n}-{stem}"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["1-paper.docx", "1-paper.html", "1-paper.json",
                                                     "2-notes.docx", "2-notes.html", "2-notes.json"]
    assert "6 files written" in capsys.readouterr().err
    assert main(["export", str(a), "--format", "html", "--to", str(out), "--name", "{n}-{stem}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "1-paper.html exists; pass --overwrite" in err


def test_hsd_export_names_an_unknown_format_and_a_missing_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["export", "x.md", "--format", "pdf"])
    assert stopped.value.code == 2
    assert "pdf is not a format" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing.md"), "--to", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err
