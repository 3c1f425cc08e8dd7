import pytest

from core.bench.metrics import Node, extract_tables, page_teds, parse_tables, teds, tree_edit_distance

T = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"


def test_identical_tables():
    assert teds(T, T) == 1.0
    assert teds(T.replace("<td>", "<td >"), T) == 1.0


def test_header_markup_does_not_count():
    head = "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>c</td><td>d</td></tr></tbody></table>"
    assert teds(head, T) == 1.0


def test_cell_text_and_structure_costs():
    # one cell's text fully different: rename cost 1 out of 7 nodes
    assert teds(T.replace(">d<", ">x<"), T) == pytest.approx(1 - 1 / 7)
    # a missing row: delete tr + 2 td
    assert teds("<table><tr><td>a</td><td>b</td></tr></table>", T) == pytest.approx(1 - 3 / 7)
    # a span mismatch renames at cost 1
    assert teds(T.replace("<td>a", '<td colspan="2">a'), T) == pytest.approx(1 - 1 / 7)
    assert teds("", T) == 0.0


def test_zhang_shasha_classic_example():
    # Zhang & Shasha's example: f(d(a c(b)) e) vs f(c(d(a b)) e) has distance 2
    def n(tag, *kids):
        return Node(tag, children=list(kids))

    t1 = n("f", n("d", n("a"), n("c", n("b"))), n("e"))
    t2 = n("f", n("c", n("d", n("a"), n("b"))), n("e"))
    assert tree_edit_distance(t1, t2) == 2


def test_page_teds_pairs_in_order():
    md_ref = f"text\n\n{T}\n\nmore\n\n{T}"
    assert page_teds(md_ref, md_ref) == 1.0
    assert page_teds(f"only one {T}", md_ref) == pytest.approx(0.5)
    assert page_teds("no tables", "none here either") is None
    assert len(extract_tables(md_ref)) == 2
    assert len(parse_tables(T)[0].children) == 2
