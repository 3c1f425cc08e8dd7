"""``inside_math``: where the relaxed acceptance rule must not apply (the end of the text is in a formula)."""

from __future__ import annotations

import pytest

from core.speculative.mathmode import inside_math

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
