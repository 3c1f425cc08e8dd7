"""Fuzz the drafters' text normalisation with arbitrary Unicode: no exception, stable results."""

from __future__ import annotations

from hypothesis import given, strategies as st

from core.drafters.normalize import clean_draft_text, normalize_for_match
from core.text_distance import text_edit_distance
from tests.fuzz.conftest import fuzz_settings

# Whitespace of every kind, full-width forms, ligatures, combining marks, surrogates' neighbours.
SPICE = st.sampled_from(["\r\n", "\r", "\n\n\n", "\t", "\u00a0", "\u3000", "\u2003", "\ufb01", "Ａ", "１",
                         "\u0301", "\u200b", "\ufeff", "\x00", "\u2028", "\U0001d400", "가", "表", "\ud7ff"])
TEXT = st.lists(st.one_of(st.text(max_size=12), SPICE), max_size=30).map("".join)


@fuzz_settings(400)
@given(text=TEXT)
def test_clean_draft_text(text):
    cleaned = clean_draft_text(text)
    assert isinstance(cleaned, str)
    assert cleaned == cleaned.strip()
    assert "\r" not in cleaned and "\n\n\n" not in cleaned and "\t" not in cleaned
    assert clean_draft_text(cleaned) == cleaned, "cleaning twice must change nothing"


@fuzz_settings(400)
@given(text=TEXT)
def test_normalize_for_match(text):
    norm = normalize_for_match(text)
    assert all(ch.isalnum() for ch in norm)
    assert normalize_for_match(norm) == norm


@fuzz_settings(200)
@given(a=TEXT, b=TEXT)
def test_edit_distance(a, b):
    d = text_edit_distance(a, b)
    assert 0.0 <= d <= 1.0
    assert text_edit_distance(a, a) == 0.0
    assert abs(d - text_edit_distance(b, a)) < 1e-9
