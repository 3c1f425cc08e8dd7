"""Text normalisation shared by drafters, the engine and the benchmarks.

- ``clean_draft_text``: what a draft looks like before it is tokenised (HSD cleans drafts so that
  whitespace and width variants do not break token matches); Markdown line structure is kept.
- ``normalize_for_match``: the character stream the page-level matcher compares (letters, digits, CJK).

The corpus README's edit distance, which compares the same characters, is ``core.text_distance``'s.
"""

from __future__ import annotations

import re
import unicodedata

_SPACE_RUN = re.compile(r"[ \t\u00a0\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def kept_char(ch: str) -> bool:
    """True for letters, digits and CJK ideographs (the characters the metric compares)."""
    # str.isalnum: Unicode letters (CJK ideographs are category Lo) and numerals; "_" is not alnum.
    return ch.isalnum()


def clean_draft_text(text: str) -> str:
    """Strip, NFKC (full-width ASCII -> half-width, ligatures split), collapse spaces/tabs in lines.

    Newlines are kept because they carry Markdown structure; more than one blank line collapses to one.
    """
    text = unicodedata.normalize("NFKC", text or "")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [_SPACE_RUN.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def normalize_for_match(text: str) -> str:
    """NFKC, then keep only letters, digits and CJK ideographs (case kept: the target's case matters)."""
    text = unicodedata.normalize("NFKC", text or "")
    return "".join(ch for ch in text if kept_char(ch))
