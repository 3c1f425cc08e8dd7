"""The command line's own output conventions (sub-commands are tested beside their modules)."""

from __future__ import annotations

import warnings

from core.cli import _plain_warnings
from core.errors import HSDWarning


def test_our_warnings_are_one_plain_line_and_others_keep_their_format(monkeypatch, capsys):
    passed_on = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, category, *a, **k: passed_on.append(category))
    _plain_warnings()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("tables on scans are drafted as text lines", HSDWarning)
        warnings.warn("library chatter", DeprecationWarning)
    err = capsys.readouterr().err
    assert "hsd: warning: tables on scans are drafted as text lines\n" in err
    assert "HSDWarning" not in err and "chatter" not in err
    assert passed_on == [DeprecationWarning]  # Python's own format, as before
