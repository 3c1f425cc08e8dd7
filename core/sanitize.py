"""The one sanitiser of model output, for the exported Markdown and for the app's rendered view.

Model output is untrusted: it may not reference files, run anything or load anything. Raw HTML in it
goes through nh3 (the Rust ``ammonia`` sanitiser, which parses HTML as a browser does) with a whitelist:
tables (numeric ``colspan``/``rowspan`` only) and plain formatting stay; ``<script>``, ``<style>``,
``<iframe>``, ``<svg>``... go with their content; every other tag, every event handler, URL and
``style`` attribute goes. The Markdown text between the tags is left byte for byte as it was (``a < b``,
``$x<y$``, code), so only the HTML changes. Markdown images that the model wrote are reduced to their
alt text (``strip_model_images``): an exported file links only the figures we cropped ourselves.

Every step is linear in the length of the text: the HTML scan remembers where the next ``>`` and
``-->`` are instead of searching again from every ``<``, and nh3 is linear.
"""

from __future__ import annotations

import html
import re

import nh3

#: Formatting and table tags that model output keeps (document models write HTML tables).
MODEL_TAGS = frozenset({
    "table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "td", "th",
    "br", "hr", "p", "div", "span", "b", "strong", "i", "em", "u", "s", "strike", "del", "ins", "sub", "sup",
    "small", "big", "mark", "code", "kbd", "samp", "var", "pre", "blockquote", "q", "cite", "abbr",
    "ul", "ol", "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "center",
})
#: Elements that load, run or embed something: removed together with their content.
REMOVED_WITH_CONTENT = frozenset({
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "video", "audio",
    "picture", "template", "noscript", "noembed", "noframes", "textarea", "select", "title", "xmp",
})
_SPANS = {"colspan", "rowspan"}
MODEL_ATTRIBUTES = {"td": _SPANS, "th": _SPANS, "col": {"span"}, "colgroup": {"span"}}


def numeric_span(tag: str, attribute: str, value: str) -> str | None:
    """``colspan``/``rowspan``/``span`` survive only as a plain number from 1 to 99."""
    if attribute in _SPANS or attribute == "span":
        value = value.strip()
        return str(int(value)) if value.isdigit() and 0 < int(value) < 100 else None
    return value


_model_cleaner = nh3.Cleaner(tags=set(MODEL_TAGS), clean_content_tags=set(REMOVED_WITH_CONTENT),
                             attributes={k: set(v) for k, v in MODEL_ATTRIBUTES.items()},
                             attribute_filter=numeric_span, strip_comments=True, link_rel=None, url_schemes=set())

# --- Markdown images -------------------------------------------------------------------------------

# Alt text: any text with brackets nested one level; destination: parentheses nested one level.
_ALT = r"((?:[^\[\]]|\[[^\[\]]*\])*)"
_MD_IMAGE = re.compile(r"!\[" + _ALT + r"\]\((?:[^()]|\([^()]*\))*\)")          # ![alt](dest)
_MD_IMAGE_REF = re.compile(r"!\[" + _ALT + r"\](?:[ \t]?\[[^\[\]]*\])?")          # ![alt][ref], ![alt]
_SCRIPT_LINK = re.compile(r"\[([^\[\]]*)\]\([ \t]*<?[ \t]*(?:javascript|vbscript|data):(?:[^()]|\([^()]*\))*\)",
                          re.IGNORECASE)


def strip_model_images(text: str) -> str:
    """Markdown images (inline, reference and shortcut forms) become their alt text, and any ``![``
    left (deeper nesting than the patterns know) is escaped: never an image."""
    if "![" not in text:
        return text
    text = _MD_IMAGE.sub(lambda m: m.group(1), text)
    text = _MD_IMAGE_REF.sub(lambda m: m.group(1), text)
    return text.replace("![", "!\\[")


# --- raw HTML ----------------------------------------------------------------------------------------

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
#: Markup: a tag, comment, declaration or processing instruction, ending before the next ``<``. A
#: tag's name is CommonMark's (a letter, then letters, digits or hyphens, then a space, ``/`` or
#: ``>``), so ``if a<b: x > 3`` is text, as Markdown reads it, and is not dropped as an unknown tag;
#: where such a ``<`` could still open a tag for a browser (in an HTML block) it becomes ``&lt;``
#: below. An autolink (``<scheme:...>``, no space) counts as markup, so that its URL goes as every
#: URL does. Each try stops at the next ``<`` or ``>``, so the scan is linear.
_MARKUP = re.compile(r"(<(?:[A-Za-z][A-Za-z0-9-]*(?=[\s/>])|/[A-Za-z][A-Za-z0-9-]*(?=[\s>])|[!?])[^<>]*>"
                     r"|<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*>)")
#: A line that may open a Markdown HTML block (inside a list item or quote too): what follows is
#: handed to a browser as it is, so there any other ``<`` that could start a tag becomes an entity.
_HTML_BLOCK_LINE = re.compile(r"^[ \t>*+\-\d.)]*<[A-Za-z/!?]", re.MULTILINE)
_TAG_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
#: Elsewhere only a '<' followed by an attribute value opening before the next '<' becomes an entity:
#: Markdown's inline HTML allows a '<' inside a quoted value, so such a tag could read on.
_QUOTED_OPENER = re.compile(r"<(?=[A-Za-z/!?][^<]*=[ \t\n]*[\"'])")


def _clean_block(block: str) -> str:
    if "<" not in block:
        return block
    opener = _TAG_OPENER if _HTML_BLOCK_LINE.search(block) else _QUOTED_OPENER
    parts = _MARKUP.split(block)  # text, markup, text, ...
    texts = [opener.sub("&lt;", t) if "<" in t else t for t in parts[::2]]
    if len(parts) == 1:
        return texts[0]
    # nh3 reads the text as text (escaped), the markup as HTML ...
    parts[::2] = [html.escape(t, quote=False) for t in texts]
    cleaned = _model_cleaner.clean("".join(parts))
    if "<tbody>" in cleaned and "tbody" not in block.lower():
        # the parser adds the body a table must have; the model's table needs no such change
        cleaned = cleaned.replace("<tbody>", "").replace("</tbody>", "")
    # ... and its text comes back as it was: nh3 writes no other entity, and the tags it keeps carry
    # only numeric attributes, so undoing its four escapes restores exactly the text we gave it.
    return cleaned.replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\xa0").replace("&amp;", "&")


def clean_model_html(text: str) -> str:
    """The raw HTML in Markdown ``text`` made safe (see the module docstring); the text around it is
    kept as written. Each block (between blank lines, as Markdown reads HTML blocks) is cleaned on
    its own, so an unclosed table ends with its block and never swallows the rest of the page."""
    if "<" not in text:
        return text
    out, pos = [], 0
    for gap in _BLANK_LINE.finditer(text):
        out.append(_clean_block(text[pos:gap.start()]))
        out.append(gap.group(0))
        pos = gap.end()
    out.append(_clean_block(text[pos:]))
    return "".join(out)


def sanitize_model_markdown(text: str) -> str:
    """Model output made safe to export: Markdown images become their alt text; ``<img>``,
    ``<script>``, ``<iframe>``, ``<svg>``... are removed, as are event-handler, URL and style attributes
    and ``javascript:``/``vbscript:``/``data:`` links. Tables and plain formatting stay."""
    text = strip_model_images(text)
    if "](" in text:
        text = _SCRIPT_LINK.sub(lambda m: m.group(1), text)
    return clean_model_html(text)
