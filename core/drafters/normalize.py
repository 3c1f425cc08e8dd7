"""Text normalisation shared by drafters, the engine and the benchmarks.

- ``clean_draft_text``: what a draft looks like before it is tokenised (HSD cleans drafts so that
  whitespace and width variants do not break token matches); Markdown line structure is kept.
- ``normalize_for_match``: the character stream the page-level matcher compares (letters, digits, CJK).
- ``text_edit_distance``: the corpus README's whole-document edit distance, in [0, 1].
"""

from __future__ import annotations

import re
import unicodedata

from rapidfuzz.distance import Levenshtein

_SPACE_RUN = re.compile(r"[ \t\u00a0\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")  # not "<" in prose: "(<97%) ... >" is text


def _is_kept_char(ch: str) -> bool:
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
    return "".join(ch for ch in text if _is_kept_char(ch))


def normalize_for_metric(text: str) -> str:
    """The corpus README normalisation: NFKC; drop HTML comments, tags and Markdown images; keep
    letters, digits and CJK only."""
    text = unicodedata.normalize("NFKC", text or "")
    text = _HTML_COMMENT.sub("", text)
    text = _MD_IMAGE.sub("", text)
    text = _HTML_TAG.sub("", text)
    return "".join(ch for ch in text if _is_kept_char(ch))


def text_edit_distance(pred: str, ref: str) -> float:
    """Levenshtein distance of the normalised texts divided by the longer length (0 = identical).

    Two empty texts are at distance 0.0.
    """
    a, b = normalize_for_metric(pred), normalize_for_metric(ref)
    longest = max(len(a), len(b))
    if longest == 0:
        return 0.0
    return Levenshtein.distance(a, b) / longest
