"""Is the end of a Markdown text inside a formula? The relaxed rule (tau < 1) must not apply there:
a formula with one wrong symbol is wrong, unlike prose with a near-synonym."""

from __future__ import annotations

import re

_DELIMS = re.compile(r"\\\\|\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]|\\begin\{(equation|align|gather|math)\*?\}|\\end\{(equation|align|gather|math)\*?\}")


def inside_math(text: str) -> bool:
    """True when ``text`` ends inside ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` or an
    equation environment."""
    open_: str | None = None
    for m in _DELIMS.finditer(text):
        tok = m.group(0)
        if tok in ("\\\\", "\\$"):
            continue  # escaped dollar or LaTeX line break
        if open_ is None:
            if tok in ("$", "$$", "\\(", "\\[") or tok.startswith("\\begin"):
                open_ = tok
        elif (open_ == tok and tok in ("$", "$$")) or (open_, tok) in (("\\(", "\\)"), ("\\[", "\\]")) \
                or (open_.startswith("\\begin") and tok.startswith("\\end")):
            open_ = None
    return open_ is not None
