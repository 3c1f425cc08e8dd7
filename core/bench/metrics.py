"""TEDS for HTML tables, the benchmark's table metric (its text metric: ``core.text_distance``).

TEDS (tree-edit-distance similarity, Zhong et al. 2020, as in PubTabNet / OmniDocBench):
``1 - TED(T_pred, T_ref) / max(|T_pred|, |T_ref|)`` where ``|T|`` counts nodes and ``TED`` is the
tree edit distance with unit insert / delete cost and this rename cost:

* different tags, or two cells whose ``colspan`` / ``rowspan`` differ: 1;
* two cells (``td``) with the same spans: the normalised Levenshtein distance of their texts;
* otherwise 0.

Trees: ``table`` -> ``tr`` -> ``td`` (``th`` counts as ``td``; ``thead`` / ``tbody`` / ``tfoot``
wrappers are dropped, so header markup style does not count; cell text is the cell's text with inner
tags removed and whitespace collapsed). TED is Zhang & Shasha's algorithm (1989), written out here
because neither ``apted`` nor ``zss`` is a dependency.

Tables of a page are paired in reading order: the i-th reference table with the i-th output table;
a reference table with no partner scores 0. ``page_teds`` is None for a page whose reference has no
table, so such pages neither help nor hurt an average of TEDS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser

from rapidfuzz.distance import Levenshtein

_TABLE = re.compile(r"<table\b.*?</table>", re.IGNORECASE | re.DOTALL)
_SPACE = re.compile(r"\s+")


@dataclass
class Node:
    tag: str
    colspan: int = 1
    rowspan: int = 1
    text: str = ""
    children: list["Node"] = field(default_factory=list)

    def size(self) -> int:
        return 1 + sum(c.size() for c in self.children)


class _TableParser(HTMLParser):
    _KEEP = {"table", "tr", "td"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[Node] = []
        self.stack: list[Node] = []

    def handle_starttag(self, tag, attrs):
        tag = "td" if tag == "th" else tag
        if tag not in self._KEEP:
            return
        a = dict(attrs)
        node = Node(tag, _int(a.get("colspan")), _int(a.get("rowspan")))
        if tag == "table":
            if self.stack:  # nested table: flatten into the enclosing cell's text
                return
            self.tables.append(node)
            self.stack = [node]
            return
        if not self.stack:
            return
        if tag == "tr":
            while len(self.stack) > 1:
                self.stack.pop()
        elif tag == "td":
            if self.stack[-1].tag == "td":
                self.stack.pop()
            if self.stack[-1].tag == "table":  # a cell outside any row: give it one
                row = Node("tr")
                self.stack[-1].children.append(row)
                self.stack.append(row)
        self.stack[-1].children.append(node)
        self.stack.append(node)

    def handle_endtag(self, tag):
        tag = "td" if tag == "th" else tag
        if tag not in self._KEEP or not self.stack:
            return
        while self.stack and self.stack[-1].tag != tag:
            self.stack.pop()
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1].tag == "td":
            self.stack[-1].text += data


def _int(v) -> int:
    try:
        return max(1, int(v))
    except (TypeError, ValueError):
        return 1


def extract_tables(markdown: str) -> list[str]:
    """The ``<table>...</table>`` elements of a Markdown text, in order."""
    return _TABLE.findall(markdown or "")


def parse_tables(html: str) -> list[Node]:
    """Every top-level table in ``html`` as a ``Node`` tree."""
    parser = _TableParser()
    parser.feed(html)
    parser.close()
    for table in parser.tables:
        _clean(table)
    return parser.tables


def _clean(node: Node) -> None:
    node.text = _SPACE.sub(" ", node.text).strip()
    for c in node.children:
        _clean(c)


# --- Zhang-Shasha tree edit distance -------------------------------------------------------------


def _postorder(root: Node) -> tuple[list[Node], list[int]]:
    """Nodes in post-order and, per node, the post-order index of its leftmost leaf descendant."""
    nodes: list[Node] = []
    lml: list[int] = []

    def walk(n: Node) -> int:
        first = None
        for c in n.children:
            leftmost = walk(c)
            if first is None:
                first = leftmost
        nodes.append(n)
        lml.append(len(nodes) - 1 if first is None else first)
        return lml[-1]

    walk(root)
    return nodes, lml


def _keyroots(lml: list[int]) -> list[int]:
    """Nodes that are the highest with their leftmost leaf (root included), ascending."""
    seen: dict[int, int] = {}
    for i, l in enumerate(lml):
        seen[l] = i  # post-order: the last node with a given leftmost leaf is the highest
    return sorted(seen.values())


def _rename_cost(a: Node, b: Node) -> float:
    if a.tag != b.tag:
        return 1.0
    if a.tag == "td":
        if a.colspan != b.colspan or a.rowspan != b.rowspan:
            return 1.0
        if a.text == b.text:
            return 0.0
        return Levenshtein.normalized_distance(a.text, b.text)
    return 0.0


def tree_edit_distance(t1: Node, t2: Node) -> float:
    """Zhang-Shasha TED with unit insert/delete and ``_rename_cost`` (see the module docstring)."""
    n1, l1 = _postorder(t1)
    n2, l2 = _postorder(t2)
    td = [[0.0] * len(n2) for _ in n1]
    for i in _keyroots(l1):
        for j in _keyroots(l2):
            li, lj = l1[i], l2[j]
            rows, cols = i - li + 2, j - lj + 2
            fd = [[0.0] * cols for _ in range(rows)]
            for x in range(1, rows):
                fd[x][0] = fd[x - 1][0] + 1.0
            for y in range(1, cols):
                fd[0][y] = fd[0][y - 1] + 1.0
            for x in range(1, rows):
                a = li + x - 1
                for y in range(1, cols):
                    b = lj + y - 1
                    if l1[a] == li and l2[b] == lj:
                        fd[x][y] = min(fd[x - 1][y] + 1.0, fd[x][y - 1] + 1.0,
                                       fd[x - 1][y - 1] + _rename_cost(n1[a], n2[b]))
                        td[a][b] = fd[x][y]
                    else:
                        fd[x][y] = min(fd[x - 1][y] + 1.0, fd[x][y - 1] + 1.0,
                                       fd[l1[a] - li][l2[b] - lj] + td[a][b])
    return td[-1][-1]


#: Trees above this many nodes (both together) are compared with a cheaper row-level bound
#: (``_teds_large``) to keep pure-Python TED time bounded.
MAX_TED_NODES = 400


@lru_cache(maxsize=4096)
def teds(pred_html: str, ref_html: str) -> float:
    """TEDS of two HTML tables (the first table of each string), in [0, 1]; 1 = identical."""
    if pred_html == ref_html:
        return 1.0
    p, r = parse_tables(pred_html), parse_tables(ref_html)
    if not r:
        return 1.0 if not p else 0.0
    if not p:
        return 0.0
    a, b = p[0], r[0]
    sa, sb = a.size(), b.size()
    if sa + sb > MAX_TED_NODES:
        return _teds_large(a, b)
    return max(0.0, 1.0 - tree_edit_distance(a, b) / max(sa, sb))


def _teds_large(a: Node, b: Node) -> float:
    """For very large tables: rows aligned by position, TED per row pair (rows are small trees),
    unmatched rows cost their size. An upper bound of the true TED, so a lower bound of TEDS."""
    cost = 0.0
    ra, rb = a.children, b.children
    for i in range(max(len(ra), len(rb))):
        if i < len(ra) and i < len(rb):
            cost += tree_edit_distance(ra[i], rb[i])
        else:
            cost += (ra[i] if i < len(ra) else rb[i]).size()
    return max(0.0, 1.0 - cost / max(a.size(), b.size()))


def page_teds(pred_markdown: str, ref_markdown: str) -> float | None:
    """Mean TEDS over the reference's tables, paired in order (module docstring); None without any."""
    refs = extract_tables(ref_markdown)
    if not refs:
        return None
    preds = extract_tables(pred_markdown)
    scores = [teds(preds[i], r) if i < len(preds) else 0.0 for i, r in enumerate(refs)]
    return sum(scores) / len(scores)
