"""Formulas as Word equations: the whitelisted MathML tree (``core.exports.mathml``) as Office Math
(OMML), the markup Word edits as an equation.

Each presentation element has an OMML counterpart: fractions (``m:f``), roots (``m:rad``),
scripts (``m:sSub``, ``m:sSup``, ``m:sSubSup``), limits and accents (``m:limLow``, ``m:limUpp``,
``m:acc``), matrices (``m:m``); rows, styles and the like give their children. Text is a run
(``m:r``), upright for numbers, words and multi-letter names, as Word writes them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from docx.oxml import OxmlElement
from docx.oxml.ns import qn

_PASS_THROUGH = {"math", "mrow", "mstyle", "mpadded", "mphantom", "menclose", "merror", "semantics", "mfenced",
                 "mtd", "mlabeledtr", "mmultiscripts", "none", "mprescripts"}
#: Characters that make ``mover`` an accent over its base rather than a limit above it.
_ACCENTS = set("^ˆ~˜¯‾―→⃗˙¨ˇ˘´`")


def _element(name: str, **values) -> object:
    el = OxmlElement(f"m:{name}")
    for key, value in values.items():
        el.set(qn(f"m:{key}"), value)
    return el


def _run(text: str, upright: bool) -> object:
    run = _element("r")
    if upright:
        props = _element("rPr")
        props.append(_element("sty", val="p"))
        run.append(props)
    t = _element("t")
    t.text = text
    t.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    run.append(t)
    return run


def _text_of(node: ET.Element) -> str:
    return "".join(node.itertext())


def _slot(name: str, nodes) -> object:
    """An OMML argument (``m:e``, ``m:num``...) holding ``nodes``."""
    slot = _element(name)
    for node in nodes:
        _convert(node, slot)
    return slot


def _convert(node: ET.Element, into) -> None:
    name = node.tag
    kids = list(node)
    if name in ("mi", "mn", "mo", "mtext", "ms"):
        text = _text_of(node)
        if text:
            upright = name in ("mn", "mtext", "ms") or (name == "mi" and (len(text) > 1 or
                                                                           node.get("mathvariant") == "normal"))
            into.append(_run(text, upright))
    elif name == "mspace":
        into.append(_run(" ", True))
    elif name == "mfrac" and len(kids) == 2:
        frac = _element("f")
        frac.append(_slot("num", kids[:1]))
        frac.append(_slot("den", kids[1:]))
        into.append(frac)
    elif name in ("msqrt", "mroot"):
        rad = _element("rad")
        props = _element("radPr")
        if name == "msqrt":
            props.append(_element("degHide", val="1"))
        rad.append(props)
        rad.append(_slot("deg", kids[1:2] if name == "mroot" else []))
        rad.append(_slot("e", kids[:1] if name == "mroot" else kids))
        into.append(rad)
    elif name in ("msub", "msup", "msubsup") and len(kids) >= 2:
        tag = {"msub": "sSub", "msup": "sSup", "msubsup": "sSubSup"}[name]
        script = _element(tag)
        script.append(_slot("e", kids[:1]))
        if name == "msup":
            script.append(_slot("sup", kids[1:2]))
        else:
            script.append(_slot("sub", kids[1:2]))
            if name == "msubsup" and len(kids) >= 3:
                script.append(_slot("sup", kids[2:3]))
        into.append(script)
    elif name == "mover" and len(kids) == 2 and _text_of(kids[1]).strip() in _ACCENTS and _text_of(kids[1]).strip():
        acc = _element("acc")
        props = _element("accPr")
        props.append(_element("chr", val=_text_of(kids[1]).strip()))
        acc.append(props)
        acc.append(_slot("e", kids[:1]))
        into.append(acc)
    elif name in ("munder", "mover") and len(kids) == 2:
        lim = _element("limLow" if name == "munder" else "limUpp")
        lim.append(_slot("e", kids[:1]))
        lim.append(_slot("lim", kids[1:2]))
        into.append(lim)
    elif name == "munderover" and len(kids) == 3:
        upper = _element("limUpp")
        lower = _element("limLow")
        lower.append(_slot("e", kids[:1]))
        lower.append(_slot("lim", kids[1:2]))
        base = _element("e")
        base.append(lower)
        upper.append(base)
        upper.append(_slot("lim", kids[2:3]))
        into.append(upper)
    elif name == "mtable":
        matrix = _element("m")
        for row in kids:
            mr = _element("mr")
            for cell in list(row):
                mr.append(_slot("e", [cell]))
            matrix.append(mr)
        into.append(matrix)
    else:  # rows, styles, anything else: its children in order
        if name not in _PASS_THROUGH and node.text and node.text.strip():
            into.append(_run(node.text, True))
        for kid in kids:
            _convert(kid, into)


def omml(tree: ET.Element, display: bool = False):
    """The ``m:oMath`` of a MathML tree (inside an ``m:oMathPara`` for a display formula)."""
    math = _element("oMath")
    _convert(tree, math)
    if not display:
        return math
    para = _element("oMathPara")
    para.append(math)
    return para
