"""core.drafters.normalize: draft cleaning and the corpus README's edit distance."""

from __future__ import annotations

import pytest

from core.drafters.normalize import (
    clean_draft_text, normalize_for_match, normalize_for_metric, text_edit_distance,
)


def test_clean_draft_text_collapses_spaces_keeps_lines():
    assert clean_draft_text("  # Title \n\n\n\nsome \t  text\u3000here  \r\nnext ") == "# Title\n\nsome text here\nnext"


def test_clean_draft_text_full_width_and_ligatures():
    assert clean_draft_text("ＡＢＣ１２３（ｘ）") == "ABC123(x)"
    assert clean_draft_text("e\ufb03cient \ufb01le") == "efficient file"


def test_normalize_for_match_keeps_letters_digits_cjk():
    assert normalize_for_match("Hello, World_42! 表格（一）") == "HelloWorld42表格一"


def test_metric_drops_comments_tags_and_images():
    text = "<!-- formula-not-decoded -->a<b>b</b>![alt text](img/x.png)<td>c_d</td>"
    assert normalize_for_metric(text) == "abcd"


@pytest.mark.parametrize("pred, ref, expected", [
    ("", "", 0.0), ("abc", "abc", 0.0), ("abc", "", 1.0), ("abcd", "abce", 0.25),
    ("The cat.", "the cat", 1 / 6), ("<table><tr><td>1</td></tr></table>", "| 1 |", 0.0),
])
def test_text_edit_distance(pred, ref, expected):
    assert text_edit_distance(pred, ref) == pytest.approx(expected)


def test_reading_order_mistakes_count():
    assert text_edit_distance("second part first part", "first part second part") > 0.3


def test_metric_drops_tags_but_not_text_after_a_less_than_sign():
    from core.drafters.normalize import normalize_for_metric

    assert normalize_for_metric("x (<97%) and <td>y</td> > z") == "x97andyz"
