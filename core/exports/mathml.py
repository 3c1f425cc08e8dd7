"""Formulas for exports: LaTeX -> MathML (latex2mathml), rebuilt through a whitelist.

The converter copies some of its input into the MathML as it is: ``\\text{<b>x</b>}`` comes out as
``<mtext><b>x</b></mtext>``, ``\\href{javascript:...}`` as an ``href`` attribute. A formula is model
output, so its MathML is parsed and written again with MathML elements and presentation attributes
only (any other element keeps its text, as text; attribute values are plain words). A formula the
converter cannot read is None, and the caller shows its source.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
#: Longer formulas are kept as source: converting one costs time that grows with its length.
MAX_FORMULA_CHARS = 4000

#: Presentation MathML (what latex2mathml writes, and nothing that loads or links).
ELEMENTS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "mfrac", "msqrt", "mroot", "msub", "msup",
    "msubsup", "munder", "mover", "munderover", "mtable", "mtr", "mtd", "mlabeledtr", "mstyle", "mpadded",
    "mphantom", "menclose", "merror", "mfenced", "mmultiscripts", "mprescripts", "none", "semantics",
})
ATTRIBUTES = frozenset({
    "display", "mathvariant", "stretchy", "fence", "form", "separator", "accent", "accentunder",
    "movablelimits", "largeop", "symmetric", "lspace", "rspace", "minsize", "maxsize", "linethickness",
    "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame", "width",
    "height", "depth", "displaystyle", "scriptlevel", "notation", "open", "close", "separators", "mathsize",
})
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9.%\- ]{0,40}")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _rebuild(node: ET.Element, into: ET.Element | None) -> ET.Element | None:
    """``node`` as a whitelisted element under ``into`` (None: the root); an element that is not
    MathML leaves its text to its parent."""
    name = _local(node.tag)
    if name not in ELEMENTS:
        text = "".join(node.itertext()) + (node.tail or "")
        if into is not None and text:
            if len(into):
                into[-1].tail = (into[-1].tail or "") + text
            else:
                into.text = (into.text or "") + text
        return None
    attrs = {k: v for k, v in node.attrib.items() if k in ATTRIBUTES and _PLAIN_VALUE.fullmatch(v)}
    out = ET.Element(name, attrs) if into is None else ET.SubElement(into, name, attrs)
    out.text = node.text
    out.tail = node.tail
    for child in node:
        _rebuild(child, out)
    return out


def formula_tree(tex: str, display: bool = False) -> ET.Element | None:
    """The whitelisted MathML tree of ``tex`` (tags without a namespace), or None."""
    tex = tex.strip()
    if not tex or len(tex) > MAX_FORMULA_CHARS:
        return None
    try:
        from latex2mathml.converter import convert

        mathml = convert(tex, display="block" if display else "inline")
        root = ET.fromstring(mathml)
    except Exception:  # the converter's own errors, RecursionError, XML it wrote unparseable
        return None
    if _local(root.tag) != "math":
        return None
    tree = _rebuild(root, None)
    tree.tail = None
    return tree


def formula_mathml(tex: str, display: bool = False) -> str | None:
    """MathML markup of ``tex`` for an HTML page (``<math display=...>``), or None."""
    tree = formula_tree(tex, display)
    if tree is None:
        return None
    tree.set("xmlns", MATHML_NS)
    return ET.tostring(tree, encoding="unicode", short_empty_elements=False)
