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


def test_core_is_entered_through_the_facade_without_an_import_cycle():
    """``core.scale`` and ``core.api`` never import ``core.commands`` (the commands import them);
    the app imports no command module; nothing imports ``core.cli``'s private names."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    imports_commands = re.compile(r"^\s*(from|import)\s+core\.commands\b", re.MULTILINE)
    for path in [root / "core" / "api.py", root / "core" / "outputs.py", *(root / "core" / "scale").glob("*.py"),
                 *(root / "app").glob("*.py")]:
        text = path.read_text("utf-8")
        assert not imports_commands.search(text), path
        assert not re.search(r"from\s+core\.cli\s+import\s+_", text), path


def test_the_facade_serves_what_it_lists():
    import core.api as api

    for name in api.__all__:
        assert getattr(api, name) is not None, name
