"""``inside_math``: where the relaxed acceptance rule must not apply (the end of the text is in a formula);
``inline_closer``: how the inline formula a text ends in closes."""

from __future__ import annotations

import pytest

from core.speculative.mathmode import inline_closer, inside_math

INSIDE = ["Energy $E = m", "$$\\sum_i x", "as \\(a + b", "\\[x^2", "\\begin{equation} a = ", "\\begin{align*} x",
          "$a$ and $b"]
OUTSIDE = ["plain prose", "$E = mc^2$ holds", "$$x$$ then", "\\(a\\) and \\[b\\]", "costs \\$5 and \\$6",
           "\\begin{equation} a \\end{equation} done", "line\\\\ break"]


@pytest.mark.parametrize("text", INSIDE)
def test_open_formulas_are_inside(text):
    assert inside_math(text)


@pytest.mark.parametrize("text", OUTSIDE)
def test_closed_or_escaped_are_outside(text):
    assert not inside_math(text)


@pytest.mark.parametrize("text, closer", [
    ("bracket with \\( H", " \\)"),           # spaced inside: closed spaced
    ("bracket with \\(H", "\\)"),
    ("a \\( x \\) and b \\(", " \\)"),     # just opened: as the latest formula was
    ("a \\(x\\) and b \\(", "\\)"),
    ("costs $x", "$"),
    ("$$ x", None), ("\\[ x", None),          # display formulas are no business of the prose
    ("a \\(x\\) b", None), ("prose", None),
])
def test_an_inline_formula_closes_as_it_was_opened(text, closer):
    assert inline_closer(text) == closer
