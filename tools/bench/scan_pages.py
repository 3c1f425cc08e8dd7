"""Typesetting for the generated scan set: blocks of text flowed into columns on a PyMuPDF page.

A ``PageBuilder`` draws one page and remembers, for each piece of text it draws, the region it
belongs to (``Fragment``: label, box, reading-order index, its Markdown) and the page's reference
Markdown, block by block in reading order. The generator (``tools.bench.scan_set``) composes pages
of every kind from these few operations: ``flow`` (blocks into one or more columns, a paragraph
continuing from the foot of one column to the head of the next), ``table``, ``rule``, ``box`` and
``chart``.

Fonts come with the packages a development install has: PyMuPDF's Base-14 faces and its built-in
CJK font (Droid Sans Fallback), matplotlib's Computer Modern for formulas (mathtext, drawn as
vector PDF), and a Fraktur face built from matplotlib's STIX fonts (``fraktur_font``: STIX draws
the Mathematical Fraktur letters; the face maps them to the plain Latin code points, so the text
layer says ``Die Freiheit`` while the page shows blackletter).
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass, field

import pymupdf

Box = tuple[float, float, float, float]


@dataclass
class Fragment:
    """One region of the page as the generator laid it out."""
    order: int
    label: str
    bbox: Box
    text: str
    block: int  # the reference block it belongs to (a paragraph split over two columns: one block)


@dataclass
class Style:
    font: str = "helv"  # helv, hebo, tiro, tibo, cour, cjk, fraktur
    size: float = 10.0
    leading: float = 1.25
    align: str = "left"  # left, justify, center
    color: tuple = (0, 0, 0)

    def with_(self, **changes) -> "Style":
        return Style(**{**self.__dict__, **changes})


@dataclass
class Block:
    """A paragraph, heading, list or display formula to flow. ``markdown`` is its reference text;
    ``text`` what is drawn (a list's items, one per line, without their ``- ``)."""
    label: str
    markdown: str
    style: Style
    text: str | list[str] = ""
    space_before: float = 0.6  # in line heights
    bullet: str = ""
    formula: str = ""  # display formula (LaTeX), drawn centred
    continued: bool = False  # the first item goes on from the previous column (no bullet)
    block_id: int | None = None  # its reference block, once a part of it is drawn

    def __post_init__(self):
        if not self.text and not self.formula:
            self.text = self.markdown


@functools.lru_cache(maxsize=None)
def font(name: str) -> pymupdf.Font:
    if name == "cjk":
        return pymupdf.Font("cjk")
    if name == "fraktur":
        return pymupdf.Font(fontbuffer=fraktur_font())
    return pymupdf.Font(name)


def _mpl_font_dir():
    import os

    import matplotlib
    return os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "fonts", "ttf")


@functools.lru_cache(maxsize=1)
def fraktur_font() -> bytes:
    """A TrueType font whose Latin letters are STIX's Mathematical Fraktur glyphs (digits and
    punctuation stay STIX's roman ones): a blackletter face the text layer reads as plain Latin.
    Each glyph has one code point (the text layer maps glyphs back to text), so umlauts are not
    drawn: the German text spells them "ae", "oe", "ue", as old prints often did."""
    import os

    from fontTools.ttLib import TTFont
    from fontTools.subset import Options, Subsetter

    ttf = TTFont(os.path.join(_mpl_font_dir(), "STIXGeneral.ttf"))
    cmap = ttf.getBestCmap()
    # Five capitals live among the letterlike symbols, not in the Fraktur block.
    special = {"C": 0x212D, "H": 0x210C, "I": 0x2111, "R": 0x211C, "Z": 0x2128}
    remap = {}
    for i in range(26):
        upper, lower = chr(65 + i), chr(97 + i)
        remap[ord(upper)] = cmap[special.get(upper, 0x1D504 + i)]
        remap[ord(lower)] = cmap[0x1D51E + i]
    keep = [c for c in cmap if c < 0x250]
    for table in ttf["cmap"].tables:
        if table.isUnicode():
            for code, glyph in remap.items():
                table.cmap[code] = glyph
    options = Options()
    options.notdef_outline = True
    subsetter = Subsetter(options)
    subsetter.populate(unicodes=keep)  # the remapped letters bring their Fraktur glyphs
    subsetter.subset(ttf)
    buf = io.BytesIO()
    ttf.save(buf)
    return buf.getvalue()


@functools.lru_cache(maxsize=512)
def formula_pdf(latex: str, size: float) -> bytes:
    """``latex`` set by matplotlib's mathtext in Computer Modern at ``size`` points, as a one-page PDF
    whose page is the formula's box."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import mathtext, rcParams
    from matplotlib.font_manager import FontProperties

    rcParams["mathtext.fontset"] = "cm"
    rcParams["pdf.fonttype"] = 42
    buf = io.BytesIO()
    mathtext.math_to_image(f"${latex}$", buf, prop=FontProperties(size=size), dpi=72, format="pdf")
    return buf.getvalue()


@dataclass
class _Token:
    text: str
    width: float
    space_after: bool
    formula: str = ""  # inline formula LaTeX (text is then its Markdown, ``$...$``)
    height: float = 0.0


_CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_INLINE_MATH = re.compile(r"(\$[^$]+\$)")


def _tokens(text: str, style: Style) -> list[_Token]:
    f = font(style.font)
    out: list[_Token] = []
    for part in _INLINE_MATH.split(text):
        if not part:
            continue
        if part.startswith("$") and part.endswith("$") and len(part) > 2:
            with pymupdf.open("pdf", formula_pdf(part[1:-1], style.size)) as src:
                rect = src[0].rect
            out.append(_Token(part, rect.width, True, part[1:-1], rect.height))
            continue
        for word in part.split(" "):
            if not word:
                continue
            pieces = re.findall(f"{_CJK.pattern}|[^{_CJK.pattern[1:-1]}]+", word)
            for k, piece in enumerate(pieces):
                out.append(_Token(piece, f.text_length(piece, style.size), k == len(pieces) - 1))
    return out


def _joined(tokens) -> str:
    return "".join(t.text + (" " if t.space_after else "") for t in tokens).strip()


def _wrap(tokens: list[_Token], width: float, space: float) -> list[list[_Token]]:
    lines, line, used = [], [], 0.0
    for tok in tokens:
        gap = space if line and line[-1].space_after else 0.0
        if line and used + gap + tok.width > width:
            lines.append(line)
            line, used, gap = [], 0.0, 0.0
        line.append(tok)
        used += gap + tok.width
    if line:
        lines.append(line)
    return lines


class PageBuilder:
    """One page being typeset; ``finish()`` returns (pdf bytes, fragments, reference Markdown)."""

    def __init__(self, width: float, height: float):
        self.doc = pymupdf.open()
        self.page = self.doc.new_page(width=width, height=height)
        self.width, self.height = width, height
        self.fragments: list[Fragment] = []
        self.blocks: list[str] = []  # reference Markdown, one entry per block
        self._writers: dict[tuple, pymupdf.TextWriter] = {}

    # -- reference bookkeeping ------------------------------------------------------------------
    def _new_block(self, markdown: str) -> int:
        self.blocks.append(markdown)
        return len(self.blocks) - 1

    def _fragment(self, label: str, bbox: Box, text: str, block: int) -> None:
        self.fragments.append(Fragment(len(self.fragments), label, tuple(round(v, 2) for v in bbox), text, block))

    def _write(self, pos, text: str, style: Style) -> None:
        writer = self._writers.setdefault(tuple(style.color), pymupdf.TextWriter(self.page.rect))
        writer.append(pos, text, font=font(style.font), fontsize=style.size)

    # -- drawing ---------------------------------------------------------------------------------
    def text_line(self, text: str, style: Style, x0: float, x1: float, y: float, label: str = "",
                  heading: int = 0) -> float:
        """One block of one or more lines between ``x0`` and ``x1`` from ``y`` (a heading, a masthead,
        a caption); ``heading``: its Markdown level. ``label=""`` draws text that is in no region of
        the reference (page headers, page numbers). Returns the y below it."""
        markdown = "#" * heading + " " + text if heading else text
        block = Block(label or "text", markdown, style, text=text, space_before=0)
        return self._place(block, [(x0, x1)], y, self.height, record=bool(label))[1]

    def flow(self, blocks: list[Block], x0: float, x1: float, y0: float, y1: float, columns: int = 1,
             gutter: float = 14.0, rules: bool = False, balance: bool = True) -> float:
        """Flow ``blocks`` into ``columns`` columns between ``x0`` and ``x1``, from ``y0`` down to at most
        ``y1``; with ``balance`` the columns are filled to about equal height. Blocks that do not fit
        are dropped (and left out of the reference). Returns the y below the lowest column."""
        width = (x1 - x0 - gutter * (columns - 1)) / columns
        cols = [(x0 + k * (width + gutter), x0 + k * (width + gutter) + width) for k in range(columns)]
        bottom = y1
        if balance and columns > 1:
            total = self._measure(blocks, width)
            bottom = min(y1, y0 + total / columns + 1.5 * max(b.style.size for b in blocks) * 1.3)
        mark = len(self.fragments)
        used = self._flow_into(blocks, cols, y0, bottom, y1)
        if rules and columns > 1:
            for left, right in zip(cols, cols[1:]):
                x = (left[1] + right[0]) / 2
                self.page.draw_line((x, y0), (x, used), width=0.5)
        return used if len(self.fragments) > mark else y0

    def _measure(self, blocks: list[Block], width: float) -> float:
        total = 0.0
        for b in blocks:
            lh = b.style.size * b.style.leading
            total += b.space_before * lh
            if b.formula:
                total += self._formula_box(b)[1] + lh * 0.6
                continue
            items = b.text if isinstance(b.text, list) else [b.text]
            indent = font(b.style.font).text_length(b.bullet + " ", b.style.size) if b.bullet else 0
            for item in items:
                total += len(_wrap(_tokens(item, b.style), width - indent, self._space(b.style))) * lh
        return total

    def _flow_into(self, blocks, cols, y0, bottom, hard_bottom) -> float:
        """Blocks into columns in order; a block may break at the foot of any column but the last,
        where a block that does not fit whole ends the flow (it and the rest are not drawn)."""
        col, y, lowest = 0, y0, y0
        width = cols[0][1] - cols[0][0]
        for block in blocks:
            if y > y0:
                y += block.space_before * block.style.size * block.style.leading
            while True:
                last = col == len(cols) - 1
                if last and y + self._measure([block], width) - block.space_before * block.style.size * \
                        block.style.leading > hard_bottom:
                    return lowest
                placed = self._place(block, [cols[col]], y, hard_bottom if last else bottom, record=True,
                                     partial=not last)
                if placed is not None:
                    lowest = max(lowest, placed[1])
                    if placed[0] is None:
                        y = placed[1]
                        break
                    block = placed[0]
                col, y = col + 1, y0
        return lowest

    def _space(self, style: Style) -> float:
        return font(style.font).text_length(" ", style.size)

    def _formula_box(self, block: Block) -> tuple[float, float]:
        with pymupdf.open("pdf", formula_pdf(block.formula, block.style.size * 1.15)) as src:
            return src[0].rect.width, src[0].rect.height

    def _place(self, block: Block, cols, y: float, bottom: float, record: bool, partial: bool = False):
        """Draw ``block`` in the column ``cols[0]`` from ``y``. Returns (rest, y below) where ``rest``
        is the block's remainder that did not fit (None when it all fitted), or None if not even its
        first line fits (with ``partial``)."""
        x0, x1 = cols[0]
        style = block.style
        lh = style.size * style.leading
        if block.formula:
            w, h = self._formula_box(block)
            if y + h > bottom and partial:
                return None
            left = x0 + max(0.0, (x1 - x0 - w) / 2)
            rect = pymupdf.Rect(left, y, left + w, y + h)
            with pymupdf.open("pdf", formula_pdf(block.formula, style.size * 1.15)) as src:
                self.page.show_pdf_page(rect, src, 0)
            if record:
                self._fragment("formula", tuple(rect), block.markdown, self._new_block(block.markdown))
            return None, y + h + lh * 0.3
        items = block.text if isinstance(block.text, list) else [block.text]
        indent = font(style.font).text_length(block.bullet + " ", style.size) if block.bullet else 0.0
        space = self._space(style)
        drawn: list[str] = []
        top, right, cur, rest = None, x0, y, None
        for n, item in enumerate(items):
            lines = _wrap(_tokens(item, style), x1 - x0 - indent, space)
            for k, line in enumerate(lines):
                if partial and cur + lh > bottom:
                    if top is None:
                        return None
                    remainder = [_joined(t for ln in lines[k:] for t in ln)] if k else [item]
                    rest = Block(block.label, block.markdown, style, text=remainder + list(items[n + 1:]),
                                 space_before=0, bullet=block.bullet, continued=k > 0, block_id=block.block_id)
                    break
                if k == 0 and block.bullet and not (n == 0 and block.continued):
                    self._write((x0, cur + style.size), block.bullet, style)
                right = max(right, self._draw_line(line, x0 + indent, x1, cur, style, last=k == len(lines) - 1))
                drawn.append(_joined(line))
                top = cur if top is None else top
                cur += lh
            if rest is not None:
                break
        if record and top is not None:
            if block.block_id is None:
                block.block_id = self._new_block(block.markdown)
                if rest is not None:
                    rest.block_id = block.block_id
            text = "\n".join(drawn) if block.label == "list" else " ".join(drawn)
            self._fragment(block.label, (x0, top, right, cur - (lh - style.size * 1.2)), text, block.block_id)
        return rest, cur

    def _draw_line(self, line: list[_Token], x0: float, x1: float, y: float, style: Style, last: bool) -> float:
        space = self._space(style)
        natural = sum(t.width for t in line) + sum(space for t in line[:-1] if t.space_after)
        gaps = [i for i, t in enumerate(line[:-1]) if t.space_after]
        extra = 0.0
        x = x0
        if style.align == "center":
            x = x0 + (x1 - x0 - natural) / 2
        elif style.align == "justify" and not last and gaps:
            extra = (x1 - x0 - natural) / len(gaps)
        baseline = y + style.size
        for i, tok in enumerate(line):
            if tok.formula:
                top = baseline - tok.height * 0.75
                with pymupdf.open("pdf", formula_pdf(tok.formula, style.size)) as src:
                    self.page.show_pdf_page(pymupdf.Rect(x, top, x + tok.width, top + tok.height), src, 0)
            else:
                self._write((x, baseline), tok.text, style)
            x += tok.width
            if tok.space_after and i < len(line) - 1:
                x += space + extra
        return x

    def rule(self, x0: float, x1: float, y: float, width: float = 0.8) -> None:
        self.page.draw_line((x0, y), (x1, y), width=width)

    def box(self, rect: Box, width: float = 0.8, fill=None) -> None:
        self.page.draw_rect(pymupdf.Rect(rect), width=width, fill=fill)

    def table(self, rows: list[list[str]], x0: float, y: float, style: Style, max_width: float,
              ruled: str = "grid", caption: str = "") -> float:
        """A table with a header row; ``ruled``: "grid" (every cell), "booktabs" (three rules) or
        "none". The reference is a pipe table. Returns the y below it."""
        f = font(style.font)
        pad = style.size * 0.6
        widths = [max(f.text_length(r[c], style.size) for r in rows) + 2 * pad for c in range(len(rows[0]))]
        scale = min(1.0, max_width / sum(widths))
        widths = [w * scale for w in widths]
        rh = style.size * 1.7
        if caption:
            y = self.text_line(caption, style.with_(font="hebo" if style.font == "helv" else style.font), x0,
                               x0 + max_width, y, label="caption") + style.size * 0.3
        top = y
        head = style.with_(font={"helv": "hebo", "tiro": "tibo"}.get(style.font, style.font))
        for r, row in enumerate(rows):
            x = x0
            for c, cell in enumerate(row):
                self._write((x + pad, y + rh * 0.5 + style.size * 0.35), cell, head if r == 0 else style)
                x += widths[c]
            y += rh
        right = x0 + sum(widths)
        if ruled == "grid":
            for k in range(len(rows) + 1):
                self.rule(x0, right, top + k * rh, 0.6)
            x = x0
            for w in [0.0] + widths:
                x += w
                self.page.draw_line((x, top), (x, y), width=0.6)
        elif ruled == "booktabs":
            self.rule(x0, right, top, 1.0)
            self.rule(x0, right, top + rh, 0.5)
            self.rule(x0, right, y, 1.0)
        markdown = "\n".join(["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
                             + ["| " + " | ".join(r) + " |" for r in rows[1:]])
        self._fragment("table", (x0, top, right, y), markdown, self._new_block(markdown))
        return y + style.size

    def chart(self, rect: Box, values: list[float], labels: list[str], style: Style) -> None:
        """A bar chart (bars, axis, tick labels): figure content, in no reference."""
        x0, y0, x1, y1 = rect
        self.page.draw_rect(pymupdf.Rect(rect), width=0.5)
        base, top = y1 - style.size * 2, y0 + style.size
        self.page.draw_line((x0 + 20, base), (x1 - 8, base), width=0.6)
        step = (x1 - x0 - 30) / len(values)
        peak = max(values) or 1.0
        for k, (v, lab) in enumerate(zip(values, labels)):
            bx = x0 + 24 + k * step
            self.page.draw_rect(pymupdf.Rect(bx, base - (base - top) * v / peak, bx + step * 0.6, base),
                                width=0.3, fill=(0.55, 0.55, 0.55))
            self._write((bx, base + style.size * 1.2), lab, style.with_(size=style.size * 0.8))

    def finish(self) -> tuple[bytes, list[Fragment], str]:
        for color, writer in self._writers.items():
            writer.write_text(self.page, color=color)
        data = self.doc.tobytes(garbage=3, deflate=True, no_new_id=True)  # same seed, same bytes
        self.doc.close()
        return data, self.fragments, "\n\n".join(self.blocks) + "\n"
