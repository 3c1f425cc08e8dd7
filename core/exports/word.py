"""DOCX export (python-docx): headings, paragraphs, lists, quotes, code, tables, figures, and formulas
as Word equations (Office Math, ``core.exports.omml``) that Word opens editable.

The exported Markdown is read by the same reader as the HTML export (``core.exports.markdown_parse``).
Raw HTML the Markdown keeps (``core.sanitize`` leaves tables and plain formatting) is never markup
here: an HTML table becomes a Word table of its cells' text, ``<b>``, ``<i>``, ``<sub>``, ``<sup>``
and ``<br>`` become run formatting, and every other tag is dropped while its text stays. Figures are
embedded from the document's figures folder, the files ``hsd`` cropped (never a path the text names).
A formula the converter cannot read is written as its LaTeX source in a monospace run.
"""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

from core.exports.markdown_parse import MATH_TOKENS, markdown_reader, math_source
from core.exports.mathml import formula_tree
from core.page_store import is_figure_name, read_small_file

MAX_FIGURE_BYTES = 32 << 20
#: Formulas inside an HTML table cell's text (as the HTML export reads them).
_CELL_MATH = re.compile(r"\$([^$\n]+)\$|\\\(((?:[^\\\n]|\\[^()\n])+)\\\)")
#: Word's built-in list styles go three levels deep.
_LIST_STYLES = {"bullet": ["List Bullet", "List Bullet 2", "List Bullet 3"],
                "ordered": ["List Number", "List Number 2", "List Number 3"]}
_INLINE_FORMAT = {"strong": "bold", "b": "bold", "em": "italic", "i": "italic", "s": "strike", "del": "strike",
                  "strike": "strike", "sub": "subscript", "sup": "superscript", "u": "underline"}


class _HtmlTable(HTMLParser):
    """The cells of HTML tables as rows of (text, colspan, rowspan); text outside any table too."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[list]]] = []
        self.outside: list[str] = []
        self._cell: list | None = None
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._depth += 1
            if self._depth == 1:
                self.tables.append([])
        elif tag == "tr" and self._depth == 1:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self._depth == 1:
            if not self.tables[-1]:
                self.tables[-1].append([])
            span = [_span(attrs.get("colspan")), _span(attrs.get("rowspan"))]
            self._cell = ["", *span]
            self.tables[-1][-1].append(self._cell)
        elif tag == "br":
            self._text("\n")

    def handle_endtag(self, tag):
        if tag == "table":
            self._depth = max(0, self._depth - 1)
        elif tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data):
        self._text(data)

    def _text(self, data):
        if self._cell is not None:
            self._cell[0] += data
        elif self._depth == 0:
            self.outside.append(data)


def _span(value) -> int:
    value = (value or "").strip()
    return int(value) if value.isdigit() and 0 < int(value) < 100 else 1


def _grid(rows: list[list[list]]) -> tuple[list[list[str | None]], list[tuple]]:
    """The cells laid on a grid (spans filled with None), and the merges (row, col, rows, cols)."""
    grid: dict[tuple[int, int], str | None] = {}
    merges = []
    for r, row in enumerate(rows):
        c = 0
        for text, colspan, rowspan in row:
            while (r, c) in grid:
                c += 1
            for dr in range(rowspan):
                for dc in range(colspan):
                    grid[(r + dr, c + dc)] = None
            grid[(r, c)] = text.strip()
            if colspan > 1 or rowspan > 1:
                merges.append((r, c, rowspan, colspan))
            c += colspan
    if not grid:
        return [], []
    height = max(r for r, _ in grid) + 1
    width = max(c for _, c in grid) + 1
    return [[grid.get((r, c), "") for c in range(width)] for r in range(height)], merges


class WordWriter:
    """Writes exported Markdown into a python-docx ``Document``."""

    def __init__(self, base_dir: Path | None = None, images_dir: Path | None = None):
        import docx

        self.document = docx.Document()
        self.base_dir = base_dir
        self.images_dir = images_dir
        self.formulas = 0
        self.formulas_as_source = 0

    # --- inline ---

    def _formula(self, paragraph, tex: str, display: bool) -> None:
        from core.exports.omml import omml

        tree = formula_tree(tex, display)
        if tree is None:
            self.formulas_as_source += 1
            run = paragraph.add_run(tex.strip())
            run.font.name = "Courier New"
            return
        self.formulas += 1
        paragraph._p.append(omml(tree, display))

    def _figure(self, paragraph, src: str, alt: str) -> None:
        from docx.shared import Inches

        parts = unquote(src).split("/")
        data = None
        if self.images_dir is not None and len(parts) == 2 and parts[0] == self.images_dir.name \
                and is_figure_name(parts[1]):
            data = read_small_file(self.images_dir / parts[1], MAX_FIGURE_BYTES)
        if data and data.startswith(b"\x89PNG\r\n\x1a\n"):
            try:
                paragraph.add_run().add_picture(io.BytesIO(data), width=Inches(5.5))
                return
            except Exception:  # a PNG python-docx cannot read: the alt text instead
                pass
        paragraph.add_run(f"[figure: {alt}]")

    def _text_with_formulas(self, paragraph, text: str, formats: set[str]) -> None:
        """Plain text (from HTML) in which ``$..$`` and ``\\(..\\)`` are formulas."""
        pos = 0
        for m in _CELL_MATH.finditer(text):
            self._styled(paragraph.add_run(text[pos:m.start()]), formats)
            self._formula(paragraph, m.group(1) or m.group(2), False)
            pos = m.end()
        self._styled(paragraph.add_run(text[pos:]), formats)

    @staticmethod
    def _styled(run, formats: set[str]) -> None:
        for name in formats:
            if name == "code":
                run.font.name = "Courier New"
            else:
                setattr(run.font, name, True)

    def inline(self, paragraph, children) -> None:
        formats: list[str] = []
        for token in children or []:
            kind = token.type
            if kind == "text":
                self._styled(paragraph.add_run(token.content), set(formats))
            elif kind == "softbreak":
                paragraph.add_run(" ")
            elif kind == "hardbreak":
                paragraph.add_run().add_break()
            elif kind == "code_inline":
                self._styled(paragraph.add_run(token.content), set(formats) | {"code"})
            elif kind.endswith("_open") and kind[:-5] in _INLINE_FORMAT:
                formats.append(_INLINE_FORMAT[kind[:-5]])
            elif kind.endswith("_close") and kind[:-6] in _INLINE_FORMAT:
                if _INLINE_FORMAT[kind[:-6]] in formats:
                    formats.remove(_INLINE_FORMAT[kind[:-6]])
            elif kind in MATH_TOKENS:
                self._formula(paragraph, math_source(token), False)
            elif kind == "image":
                alt = "".join(c.content for c in token.children or [] if c.type == "text")
                self._figure(paragraph, token.attrGet("src") or "", alt)
            elif kind == "html_inline":
                tag = re.match(r"<(/?)([A-Za-z][A-Za-z0-9]*)", token.content)
                if tag is None:
                    continue
                name = tag.group(2).lower()
                if name == "br":
                    paragraph.add_run().add_break()
                elif name in _INLINE_FORMAT:
                    if tag.group(1):
                        if _INLINE_FORMAT[name] in formats:
                            formats.remove(_INLINE_FORMAT[name])
                    else:
                        formats.append(_INLINE_FORMAT[name])

    # --- blocks ---

    def _table(self, rows: list[list[str | None]], merges=(), header: bool = False, cell_writer=None):
        if not rows or not rows[0]:
            return
        table = self.document.add_table(rows=len(rows), cols=len(rows[0]))
        table.style = "Table Grid"
        for r, c, nr, nc in merges:
            table.cell(r, c).merge(table.cell(min(len(rows), r + nr) - 1, min(len(rows[0]), c + nc) - 1))
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if value is None:
                    continue
                paragraph = table.cell(r, c).paragraphs[0]
                if cell_writer is not None:
                    cell_writer(paragraph, value)
                else:
                    self._text_with_formulas(paragraph, value, {"bold"} if header and r == 0 else set())

    def _html_block(self, content: str) -> None:
        parser = _HtmlTable()
        parser.feed(content)
        parser.close()
        for rows in parser.tables:
            grid, merges = _grid(rows)
            self._table(grid, merges)
        text = "".join(parser.outside).strip()
        if text:
            self._text_with_formulas(self.document.add_paragraph(), text, set())

    def write(self, markdown: str) -> None:
        tokens = markdown_reader().parse(markdown)
        lists: list[str] = []
        quote = 0
        item_first = False
        i = 0
        while i < len(tokens):
            token = tokens[i]
            kind = token.type
            if kind == "heading_open":
                level = min(int(token.tag[1:]), 9)
                self.inline(self.document.add_heading(level=level), tokens[i + 1].children)
                i += 3
                continue
            if kind == "paragraph_open":
                style = None
                if lists and item_first:
                    names = _LIST_STYLES[lists[-1]]
                    style = names[min(len(lists), len(names)) - 1]
                    item_first = False
                elif quote:
                    style = "Quote"
                paragraph = self.document.add_paragraph(style=style)
                self.inline(paragraph, tokens[i + 1].children)
                i += 3
                continue
            if kind in ("bullet_list_open", "ordered_list_open"):
                lists.append("bullet" if kind.startswith("bullet") else "ordered")
            elif kind in ("bullet_list_close", "ordered_list_close"):
                lists.pop()
            elif kind == "list_item_open":
                item_first = True
            elif kind == "blockquote_open":
                quote += 1
            elif kind == "blockquote_close":
                quote -= 1
            elif kind in ("fence", "code_block"):
                paragraph = self.document.add_paragraph()
                lines = token.content.rstrip("\n").split("\n")
                for n, line in enumerate(lines):
                    run = paragraph.add_run(line)
                    run.font.name = "Courier New"
                    if n < len(lines) - 1:
                        run.add_break()
            elif kind in MATH_TOKENS:
                self._formula(self.document.add_paragraph(), math_source(token), True)
            elif kind == "html_block":
                self._html_block(token.content)
            elif kind == "hr":
                self.document.add_paragraph()
            elif kind == "table_open":
                i = self._markdown_table(tokens, i)
                continue
            i += 1

    def _markdown_table(self, tokens, i: int) -> int:
        rows: list[list] = []
        while i < len(tokens) and tokens[i].type != "table_close":
            token = tokens[i]
            if token.type == "tr_open":
                rows.append([])
            elif token.type == "inline" and rows:
                rows[-1].append(token.children)
            i += 1
        width = max((len(r) for r in rows), default=0)
        grid = [r + [[]] * (width - len(r)) for r in rows]
        self._table(grid, cell_writer=lambda paragraph, children: self.inline(paragraph, children))
        if grid:  # the header row bold, as the Markdown's
            for cell in self.document.tables[-1].rows[0].cells:
                for run in cell.paragraphs[0].runs:
                    run.font.bold = True
        return i + 1

    def save(self, path_or_stream) -> None:
        self.document.save(path_or_stream)


#: Characters XML 1.0 cannot hold (controls but tab and line breaks, lone surrogates, U+FFFE/U+FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with what a Word file cannot hold replaced by U+FFFD (model output may hold anything)."""
    return _NOT_XML.sub("\ufffd", text)


def document_docx(markdown: str, title: str, base_dir: Path | None = None, images_dir: Path | None = None) -> bytes:
    """The DOCX file of ``markdown`` (its title in the file's properties)."""
    writer = WordWriter(base_dir, images_dir)
    writer.document.core_properties.title = xml_text(title)[:250]
    writer.write(xml_text(markdown))
    buf = io.BytesIO()
    writer.save(buf)
    return buf.getvalue()
