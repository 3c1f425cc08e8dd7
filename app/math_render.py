"""Formulas typeset for the Markdown view: LaTeX -> MathML (latex2mathml) -> rich text QTextBrowser lays out.

QTextBrowser has no MathML, so the MathML tree is laid out with what its rich text has: a display
formula is a row of table cells, a fraction a two-row table with a rule between numerator and
denominator, a sum or integral with limits a three-row table, a matrix a table between brackets
grown to its height; scripts are ``<sub>``/``<sup>``; roots a radical with an overline. Inline
formulas stay in the line: scripts, ``a⁄b`` fractions, bracketed matrices. A formula the converter
cannot read is shown as its LaTeX source, never dropped.

Everything written here is built from escaped text, and the view still passes it through the
display sanitiser (``app.markdown_view``).
"""

from __future__ import annotations

import html
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import dataclass

#: Longer formulas are shown as source: converting one costs time that grows with its length.
MAX_FORMULA_CHARS = 4000

_BIG_OPERATORS = set("∑∏∐⋃⋂⨁⨂⨀⋁⋀")
_INTEGRALS = set("∫∬∭∮∯∰")
_FENCES = set("()[]{}|‖⟨⟩⌈⌉⌊⌋")
#: Accents over one letter as combining characters (``\hat{x}`` -> x̂).
_COMBINING = {"^": "\u0302", "ˆ": "\u0302", "\u00AF": "\u0304", "‾": "\u0305", "→": "\u20D7", "˙": "\u0307",
              "¨": "\u0308", "~": "\u0303", "˜": "\u0303", "ˇ": "\u030C", "˘": "\u0306", "´": "\u0301", "`": "\u0300"}
_VARIANTS = {"double-struck": "DOUBLE-STRUCK", "script": "SCRIPT", "fraktur": "FRAKTUR", "bold-script": "BOLD SCRIPT",
             "bold-fraktur": "BOLD FRAKTUR", "sans-serif": "SANS-SERIF", "monospace": "MONOSPACE"}
_SCRIPT_TAGS = {"msub", "msup", "msubsup"}
_LIMIT_TAGS = {"munder", "mover", "munderover"}


def formula_mathml(tex: str, display: bool = False) -> str | None:
    """The MathML of ``tex``, or None where the converter cannot read it."""
    tex = tex.strip()
    if not tex or len(tex) > MAX_FORMULA_CHARS:
        return None
    try:
        from latex2mathml.converter import convert

        return convert(tex, display="block" if display else "inline")
    except Exception:  # RecursionError and the converter's own errors: malformed or too deep
        return None


def formula_html(tex: str, display: bool = False) -> str:
    """Rich text for one formula (inline: a run of text; display: a centred block)."""
    mathml = formula_mathml(tex, display)
    tree = None
    if mathml is not None:
        try:
            tree = ET.fromstring(mathml)
        except ET.ParseError:
            tree = None
    if tree is None:
        source = html.escape(tex.strip())
        return f'<p align="center"><code>{source}</code></p>' if display else f"<code>{source}</code>"
    try:
        if display:
            return f'<table align="center" cellspacing="0" cellpadding="2">{_row_table_body(_boxes(tree, True))}</table>'
        return f'<span style="font-family: serif">{_inline(tree)}</span>'
    except RecursionError:
        return f"<code>{html.escape(tex.strip())}</code>"


# --- inline -------------------------------------------------------------------------------------


def _tag(node) -> str:
    return node.tag.rsplit("}", 1)[-1]


def _text(node) -> str:
    return "".join(node.itertext())


def _leaf(node) -> str:
    tag, text = _tag(node), _text(node)
    if tag == "mspace":
        return "\u2009"
    if tag == "mi":
        variant = node.get("mathvariant", "")
        if variant in _VARIANTS:
            return html.escape("".join(_styled(ch, _VARIANTS[variant]) for ch in text))
        if variant == "bold":
            return f"<b>{html.escape(text)}</b>"
        if len(text) == 1 and variant != "normal" and text.isalpha():
            return f"<i>{html.escape(text)}</i>"
    if tag == "mo" and text in ("=", "<", ">", "≤", "≥", "≠", "≈", "→", "⇒", "∈", "±", "+", "−", "×", "·") and \
            node.get("form") is None:
        return f"\u2009{html.escape(text)}\u2009"
    return html.escape(text)


def _styled(ch: str, variant: str) -> str:
    if not ch.isascii() or not ch.isalpha():
        return ch
    case = "CAPITAL" if ch.isupper() else "SMALL"
    for name in (f"MATHEMATICAL {variant} {case} {ch.upper()}", f"{variant} {case} {ch.upper()}"):
        try:
            return unicodedata.lookup(name)
        except KeyError:
            continue
    return ch


def _inline(node) -> str:
    tag, kids = _tag(node), list(node)
    if tag in ("mi", "mn", "mo", "mtext", "ms", "mspace"):
        return _leaf(node)
    if tag == "mphantom":
        return ""
    if tag in _SCRIPT_TAGS or tag in _LIMIT_TAGS:
        if len(kids) < 2:
            return "".join(_inline(k) for k in kids)
        base = _inline(kids[0])
        accent = _accent(node, kids)
        if accent is not None:
            return accent
        if tag in ("msub", "munder"):
            return f"{base}<sub>{_inline(kids[1])}</sub>"
        if tag in ("msup", "mover"):
            return f"{base}<sup>{_inline(kids[1])}</sup>"
        return f"{base}<sub>{_inline(kids[1])}</sub><sup>{_inline(kids[2])}</sup>" if len(kids) > 2 else base
    if tag == "mfrac" and len(kids) == 2:
        num, den = _inline(kids[0]), _inline(kids[1])
        if _simple(kids[0]) and _simple(kids[1]):
            return f"<sup>{num}</sup>\u2044<sub>{den}</sub>"
        return f"{_group(kids[0], num)}/{_group(kids[1], den)}"
    if tag == "msqrt":
        return f'√<span style="text-decoration: overline">{"".join(_inline(k) for k in kids)}</span>'
    if tag == "mroot" and len(kids) == 2:
        return f'<sup>{_inline(kids[1])}</sup>√<span style="text-decoration: overline">{_inline(kids[0])}</span>'
    if tag == "mtable":
        rows = ["\u2002".join(_inline(cell) for cell in row) for row in node if _tag(row) in ("mtr", "mlabeledtr")]
        return "; ".join(rows)
    return "".join(_inline(k) for k in kids)


def _accent(node, kids) -> str | None:
    """``\\hat{x}``, ``\\bar{x}``, ``\\vec{v}``: a combining mark over one letter, an overline over more."""
    if _tag(node) != "mover" or len(kids) != 2 or _tag(kids[1]) != "mo":
        return None
    mark, base_text = _text(kids[1]), _text(kids[0])
    if mark in ("\u00AF", "‾", "―") and len(base_text) != 1:
        return f'<span style="text-decoration: overline">{_inline(kids[0])}</span>'
    if mark in _COMBINING and len(base_text) == 1:
        return html.escape(base_text + _COMBINING[mark])
    return None


def _simple(node) -> bool:
    text = _text(node)
    return len(text) <= 3 and not any(_tag(n) in ("mfrac", "msqrt", "mroot", "mtable") for n in node.iter())


def _group(node, rendered: str) -> str:
    return rendered if len(_text(node)) == 1 or _tag(node) in ("mi", "mn") else f"({rendered})"


# --- display ------------------------------------------------------------------------------------


@dataclass
class _Box:
    html: str
    tall: bool = False      # a block (table): its own cell in the row
    height: float = 1.0     # in lines, for sizing the brackets beside it
    fence: str = ""         # an opening or closing bracket, grown to the row's height


def _boxes(node, display: bool) -> list[_Box]:
    tag, kids = _tag(node), list(node)
    if tag == "mo" and _text(node).strip() in _FENCES:
        return [_Box(html.escape(_text(node).strip()), fence=_text(node).strip())]
    if tag in ("mi", "mn", "mo", "mtext", "ms", "mspace"):
        return [_Box(_leaf(node))]
    if tag == "mphantom":
        return []
    if tag == "mfrac" and len(kids) == 2:
        num, den = _cell(kids[0]), _cell(kids[1])
        rule = "" if node.get("linethickness") in ("0", "0pt", "0em") else "border-bottom: 1px solid #888888; "
        table = (f'<table cellspacing="0" cellpadding="1"><tr><td align="center" style="{rule}padding: 0 3px">'
                 f'{num.html}</td></tr><tr><td align="center" style="padding: 0 3px">{den.html}</td></tr></table>')
        return [_Box(table, tall=True, height=num.height + den.height)]
    if tag in _SCRIPT_TAGS | _LIMIT_TAGS and len(kids) >= 2:
        base_text = _text(kids[0]).strip()
        if _accent(node, kids) is not None:
            return [_Box(_accent(node, kids))]
        if base_text in _BIG_OPERATORS or base_text in _INTEGRALS or tag in _LIMIT_TAGS:
            return [_limits(node, tag, kids, base_text)]
        return _boxes(kids[0], display) + [_Box(_inline_scripts(tag, kids))]
    if tag == "msqrt" or (tag == "mroot" and len(kids) == 2):
        inner = _cell(kids[0]) if tag == "mroot" else _cell_of(kids)
        index = f"<sup>{_inline(kids[1])}</sup>" if tag == "mroot" else ""
        if not inner.tall:
            return [_Box(f'{index}√<span style="text-decoration: overline">{inner.html}</span>')]
        size = max(14, int(11 * inner.height))
        table = (f'<table cellspacing="0" cellpadding="0"><tr><td valign="middle">{index}'
                 f'<span style="font-size: {size}pt">√</span></td>'
                 f'<td valign="middle" style="border-top: 1px solid #888888">{inner.html}</td></tr></table>')
        return [_Box(table, tall=True, height=inner.height + 0.3)]
    if tag == "mtable":
        rows, height = [], 0.0
        for row in node:
            if _tag(row) not in ("mtr", "mlabeledtr"):
                continue
            cells = [_cell(cell) for cell in row]
            height += max((c.height for c in cells), default=1.0)
            rows.append("<tr>" + "".join(f'<td align="center" style="padding: 1px 6px">{c.html}</td>' for c in cells)
                        + "</tr>")
        return [_Box(f'<table cellspacing="0" cellpadding="1">{"".join(rows)}</table>', tall=True, height=height)]
    out = []
    for kid in kids:
        out += _boxes(kid, display)
    return out


def _inline_scripts(tag: str, kids) -> str:
    if tag in ("msub", "munder"):
        return f"<sub>{_inline(kids[1])}</sub>"
    if tag in ("msup", "mover"):
        return f"<sup>{_inline(kids[1])}</sup>"
    return f"<sub>{_inline(kids[1])}</sub><sup>{_inline(kids[2])}</sup>" if len(kids) > 2 else ""


def _limits(node, tag, kids, base_text) -> _Box:
    """A big operator (or ``\\underbrace``-like construct) with its limits above and below."""
    if base_text in _BIG_OPERATORS or base_text in _INTEGRALS:
        base = f'<span style="font-size: 20pt">{html.escape(base_text)}</span>'
    else:
        base = _cell(kids[0]).html
    under = over = ""
    if tag in ("msub", "munder", "msubsup", "munderover"):
        under = _inline(kids[1])
    if tag in ("msup", "mover"):
        over = _inline(kids[1])
    elif tag in ("msubsup", "munderover") and len(kids) > 2:
        over = _inline(kids[2])
    if base_text in _INTEGRALS:  # integrals keep their limits at the side, as in print
        table = (f'<table cellspacing="0" cellpadding="0"><tr><td rowspan="2" valign="middle">{base}</td>'
                 f'<td valign="top"><small>{over}</small></td></tr>'
                 f'<tr><td valign="bottom"><small>{under}</small></td></tr></table>')
    else:
        table = (f'<table cellspacing="0" cellpadding="0"><tr><td align="center"><small>{over}</small></td></tr>'
                 f'<tr><td align="center">{base}</td></tr>'
                 f'<tr><td align="center"><small>{under}</small></td></tr></table>')
    return _Box(table, tall=True, height=2.2)


def _cell(node) -> _Box:
    return _row(_boxes(node, True))


def _cell_of(nodes) -> _Box:
    boxes = []
    for n in nodes:
        boxes += _boxes(n, True)
    return _row(boxes)


def _row(boxes: list[_Box]) -> _Box:
    """Boxes side by side: plain text where none is tall, else a one-row table, one cell per block."""
    if not any(b.tall for b in boxes):
        return _Box("".join(b.html for b in boxes))
    height = max(b.height for b in boxes)
    return _Box(f'<table cellspacing="0" cellpadding="0">{_row_table_body(boxes)}</table>', tall=True, height=height)


def _row_table_body(boxes: list[_Box]) -> str:
    height = max((b.height for b in boxes), default=1.0)
    cells, run = [], []
    for box in boxes:
        if box.tall:
            if run:
                cells.append("".join(run))
                run = []
            cells.append(box.html)
        elif box.fence and height > 1.2:
            if run:
                cells.append("".join(run))
                run = []
            cells.append(f'<span style="font-size: {int(12 * height)}pt">{box.html}</span>')
        else:
            run.append(box.html)
    if run:
        cells.append("".join(run))
    return "<tr>" + "".join(f'<td valign="middle">{c}</td>' for c in cells) + "</tr>"
