"""Is the end of a Markdown text inside a formula, and which delimiter opened it? The relaxed rule
(tau < 1) must not apply there: a formula with one wrong symbol is wrong, unlike prose with a
near-synonym. The text matcher closes an inline formula the way it was opened (``inline_closer``)."""

from __future__ import annotations

import re

_DELIMS = re.compile(r"\\\\|\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]|\\begin\{(equation|align|gather|math)\*?\}|\\end\{(equation|align|gather|math)\*?\}")


def _open_delimiter(text: str) -> re.Match | None:
    """The delimiter of the formula ``text`` ends inside, None where it ends outside any."""
    open_: re.Match | None = None
    for m in _DELIMS.finditer(text):
        tok = m.group(0)
        if tok in ("\\\\", "\\$"):
            continue  # escaped dollar or LaTeX line break
        if open_ is None:
            if tok in ("$", "$$", "\\(", "\\[") or tok.startswith("\\begin"):
                open_ = m
            continue
        opened = open_.group(0)
        if (opened == tok and tok in ("$", "$$")) or (opened, tok) in (("\\(", "\\)"), ("\\[", "\\]")) \
                or (opened.startswith("\\begin") and tok.startswith("\\end")):
            open_ = None
    return open_


def inside_math(text: str) -> bool:
    """True when ``text`` ends inside ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` or an
    equation environment."""
    return _open_delimiter(text) is not None


def inline_closer(text: str) -> str | None:
    """What closes the inline formula ``text`` ends inside, written as its opening was: ``" \\)"``
    after ``"\\( "``, ``"\\)"`` after ``"\\("`` followed by a symbol, ``"$"`` after ``"$"``; None
    outside an inline formula (or inside a display one). A formula just opened, nothing after its
    delimiter yet, is closed as the text's latest earlier inline formula was."""
    m = _open_delimiter(text)
    if m is None or m.group(0) not in ("\\(", "$"):
        return None
    if m.group(0) == "$":
        return "$"
    after = text[m.end():m.end() + 1]
    if not after:
        earlier = text.rfind("\\)", 0, m.start())
        return " \\)" if earlier > 0 and text[earlier - 1] == " " else "\\)"
    return " \\)" if after == " " else "\\)"
