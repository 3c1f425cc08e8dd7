"""Formulas and tables in the Markdown view, checked in the real widget: LaTeX becomes MathML and is
typeset (a sum with its limits above and below, stacked fractions, matrices as tables), ``<br>`` in a
table cell is a line break, and a formula the converter cannot read shows as its source."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("latex2mathml")

from PySide6.QtGui import QTextCursor, QTextTable  # noqa: E402


def _view(qtbot, text):
    from app.markdown_view import MarkdownView

    view = MarkdownView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    view.set_texts(page=text, document=text)
    return view


def _tables(document) -> list[QTextTable]:
    """Every table of the rendered document, nested ones included, in document order."""
    found, seen = [], set()
    block = document.begin()
    while block.isValid():
        cursor = QTextCursor(block)
        table = cursor.currentTable()
        while table is not None and id(table) not in seen:
            seen.add(id(table))
            found.append(table)
            parent = table.parentFrame()
            table = parent if isinstance(parent, QTextTable) else None
        block = block.next()
    return found


def _cell_texts(table: QTextTable) -> list[list[str]]:
    rows = []
    for r in range(table.rows()):
        row = []
        for c in range(table.columns()):
            cell = table.cellAt(r, c)
            cursor = cell.firstCursorPosition()
            cursor.setPosition(cell.lastCursorPosition().position(), QTextCursor.MoveMode.KeepAnchor)
            row.append(cursor.selectedText().replace("\u2029", "\n").strip())
        rows.append(row)
    return rows


def test_formulas_become_mathml():
    from app.math_render import formula_mathml

    mathml = formula_mathml(r"\sum_{n=0}^{\infty} \frac{1}{n^2}", display=True)
    assert mathml.startswith("<math") and "<mfrac>" in mathml and ("<munderover>" in mathml or "<msubsup>" in mathml)
    assert "<mtable" in formula_mathml(r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}")
    assert formula_mathml(r"\frac{") is None and formula_mathml("{" * 3000) is None  # unreadable, too deep


def test_a_sum_with_limits_is_typeset_not_approximated(qtbot):
    view = _view(qtbot, "Series:\n\n$$\\sum_{n=0}^{\\infty} \\frac{1}{n^2}$$\n")
    shown = view.rendered.toPlainText()
    assert "₍" not in shown and "^" not in shown and "\\sum" not in shown, shown
    cells = [_cell_texts(t) for t in _tables(view.rendered.document())]
    # the operator with its upper limit above and its lower limit below, in one column
    assert [["∞"], ["∑"], ["n = 0"]] in [[[c.replace("\u2009", " ") for c in row] for row in t] for t in cells], cells
    # the fraction: numerator over denominator
    assert [["1"], ["n2"]] in cells, cells


def test_a_matrix_is_a_table_between_brackets(qtbot):
    view = _view(qtbot, "$$A = \\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}$$")
    cells = [_cell_texts(t) for t in _tables(view.rendered.document())]
    assert [["a", "b"], ["c", "d"]] in cells, cells
    assert "begin" not in view.rendered.toPlainText() and "pmatrix" not in view.rendered.toPlainText()
    (row,) = next(t for t in cells if len(t) == 1 and len(t[0]) == 4)  # A =, (, the matrix, )
    assert (row[0], row[1], row[3]) == ("A =", "(", ")"), row


def test_inline_formulas_stay_in_the_line(qtbot):
    view = _view(qtbot, "Energy $E = mc^2$ and $\\alpha_i \\leq \\frac{1}{2}$ here.")
    assert _tables(view.rendered.document()) == []
    shown = view.rendered.toPlainText()
    assert shown.startswith("Energy E") and "here." in shown and "α" in shown and "≤" in shown
    html = view.rendered.toHtml()
    assert "vertical-align:super" in html and "vertical-align:sub" in html  # real scripts, not ^ and _


def test_line_breaks_in_table_cells(qtbot):
    view = _view(qtbot, "| a | b |\n|---|---|\n| one<br>two | x |\n\n<table><tr><td>three<br/>four</td></tr></table>")
    tables = [_cell_texts(t) for t in _tables(view.rendered.document())]
    assert [["a", "b"], ["one\u2028two", "x"]] in tables, tables
    assert [["three\u2028four"]] in tables, tables
    assert "<br" not in view.rendered.toPlainText()


def test_formulas_in_html_table_cells_are_typeset(qtbot):
    view = _view(qtbot, "<table><tr><td>$\\pm$ 0.5</td><td>\\(x^2\\)</td></tr></table>")
    (table,) = _tables(view.rendered.document())
    assert _cell_texts(table) == [["± 0.5", "x2"]]


def test_an_unreadable_formula_shows_its_source(qtbot):
    view = _view(qtbot, "Broken $\\frac{$ and fine $x$.\n\n$$\\sqrt[$$")
    shown = view.rendered.toPlainText()
    assert "Broken \\frac{ and fine x." in shown and "\\sqrt[" in shown, shown


def test_a_range_running_into_the_next_block_selects_all_it_can_in_the_rendered_tab(qtbot):
    from app.markdown_view import MarkdownView

    view = MarkdownView()
    qtbot.addWidget(view)
    md = "# HSD Studio Sample Document\n\n## 1. Introduction\n\nThis sample shows what."
    view.set_texts(page=md, document=md)
    view.show_range(0, md.index("Introduction") + 5)  # the title and the start of the next heading
    # the same text as in the source, across the two rendered blocks
    assert view.rendered.textCursor().selectedText().replace("\u2029", "\n") == "HSD Studio Sample Document\n1. Intro"
