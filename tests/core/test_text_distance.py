"""core.text_distance: the corpus README's normal form and whole-document edit distance."""

from __future__ import annotations

import pytest

from core.text_distance import normalize_for_metric, text_edit_distance


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
    assert normalize_for_metric("x (<97%) and <td>y</td> > z") == "x97andyz"
