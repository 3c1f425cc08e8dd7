"""How far an output is from a reference: the corpus README's whole-document edit distance.

Both texts are brought to the README's normal form first (``normalize_for_metric``: NFKC, HTML
comments, tags and Markdown images dropped, then only letters, digits and CJK kept), so a table
written as HTML and the same table as a Markdown pipe table are at distance 0. The benchmark's
report (``core.bench.metrics``) and the corpus tests measure with it; the drafters' own normal
forms are ``core.drafters.normalize``'s.
"""

from __future__ import annotations

import re
import unicodedata

from rapidfuzz.distance import Levenshtein

from core.drafters.normalize import kept_char

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")  # not "<" in prose: "(<97%) ... >" is text


def normalize_for_metric(text: str) -> str:
    """The corpus README normalisation: NFKC; drop HTML comments, tags and Markdown images; keep
    letters, digits and CJK only."""
    text = unicodedata.normalize("NFKC", text or "")
    text = _HTML_COMMENT.sub("", text)
    text = _MD_IMAGE.sub("", text)
    text = _HTML_TAG.sub("", text)
    return "".join(ch for ch in text if kept_char(ch))


def text_edit_distance(pred: str, ref: str) -> float:
    """Levenshtein distance of the normalised texts divided by the longer length (0 = identical).

    Two empty texts are at distance 0.0.
    """
    a, b = normalize_for_metric(pred), normalize_for_metric(ref)
    longest = max(len(a), len(b))
    if longest == 0:
        return 0.0
    return Levenshtein.distance(a, b) / longest
