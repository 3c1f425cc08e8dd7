"""The one sanitiser of model output, for the exported Markdown and for the app's rendered view.

Model output is untrusted: it may not reference files, run anything or load anything. Raw HTML in it
goes through nh3 (the Rust ``ammonia`` sanitiser, which parses HTML as a browser does) with a whitelist:
tables (numeric ``colspan``/``rowspan`` only) and plain formatting stay; ``<script>``, ``<style>``,
``<iframe>``, ``<svg>``... go with their content; every other tag, every event handler, URL and
``style`` attribute goes. The Markdown text between the tags is left byte for byte as it was (``a < b``,
``$x<y$``, code), so only the HTML changes. Markdown images that the model wrote are reduced to their
alt text (``strip_model_images``): an exported file links only the figures we cropped ourselves.
Links (inline, reference definitions, autolinks) keep only destinations that are http, https, mailto,
an in-document anchor or a relative path inside the document's folder, judged after undoing every
encoding a viewer might undo (``safe_link``); any other link keeps its text only.

HTML nested deeper than ``MAX_HTML_NESTING`` loses its deeper tags (their text stays) before the
parser sees it: an HTML parser checks the open elements at each tag, so its time grows with the
square of the nesting.

Every step is linear in the length of the text: the HTML scan remembers where the next ``>`` and
``-->`` are instead of searching again from every ``<``, and nh3 is linear.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from urllib.parse import unquote

import nh3

from core import tuning

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
def strip_model_images(text: str) -> str:
    """Markdown images (inline, reference and shortcut forms) become their alt text, and any ``![``
    left (deeper nesting than the patterns know) is escaped: never an image."""
    if "![" not in text:
        return text
    text = _MD_IMAGE.sub(lambda m: m.group(1), text)
    text = _MD_IMAGE_REF.sub(lambda m: m.group(1), text)
    return text.replace("![", "!\\[")


# --- links ---------------------------------------------------------------------------------------

#: Schemes a link of model output may have; anything else (``javascript:``, ``data:``, ``file:``...)
#: keeps only the link's text.
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
#: Characters of a destination read to judge it: its scheme (or that it has none) shows within
#: them, however it is encoded; one that does not is refused.
_JUDGED_CHARS = 512
#: A destination's beginning as a viewer may read it: up to a character that cannot be part of a
#: scheme and ends or splits a destination (a parenthesis, quote, angle bracket or blank line). Tabs,
#: spaces and single line breaks are kept: a lenient viewer may join them, and browsers drop them.
_DEST_START = re.compile(r"(?:[^()<>\"'\n]|\n(?![ \t]*\n)){0,%d}" % _JUDGED_CHARS)
_DEF_DEST_START = re.compile(r"[^()<>\"'\n]{0,%d}" % _JUDGED_CHARS)
#: Markdown's backslash escapes of ASCII punctuation (``javascript\\:`` is ``javascript:``).
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
#: What browsers drop from a URL (tabs, line breaks, leading controls and spaces) and what a lenient
#: viewer may: every ASCII control and space.
_URL_IGNORED = re.compile(r"[\x00-\x20\x7f]+")


def _decoded(raw: str) -> str:
    """``raw`` with Markdown escapes, HTML character references and percent escapes undone, again
    and again (``&amp;#106;`` is ``&#106;`` to a second reader), and what browsers ignore removed."""
    text = raw
    for _ in range(4):
        decoded = unquote(html.unescape(_MD_ESCAPE.sub(r"\1", text)))
        if decoded == text:
            break
        text = decoded
    return _URL_IGNORED.sub("", text)


def safe_link(raw: str, complete: bool = True) -> bool:
    """Whether a link to ``raw`` (a destination as written, or its beginning: ``complete`` False
    when more of it follows) opens only a web page, a mail or a place in the document: http, https
    and mailto, an in-document anchor, or a relative path that stays in the document's folder (no
    leading ``/`` or ``\\\\``, no ``..``; opened from a file, those reach the whole disk)."""
    url = _decoded(raw)
    end = len(url)
    for mark in ":/?#\\":
        found = url.find(mark)
        if 0 <= found < end:
            end = found
    if end < len(url) and url[end] == ":":
        return url[:end].lower() in SAFE_SCHEMES
    if end == len(url) and not complete:
        return False  # the judged beginning has no end of a scheme: whatever follows may make one
    path = url.replace("\\", "/").split("#")[0].split("?")[0]
    return not path.startswith("/") and ".." not in path.split("/")


#: An inline link whose text nests brackets one level: replaced by that text when refused.
_INLINE_LINK = re.compile(r"\[" + _ALT + r"\][ \t]*\(((?:[^()]|\([^()]*\))*)\)")
#: Where any inline link's destination starts (deeper nesting than the pattern above knows; a space
#: before the parenthesis too, as older viewers allow).
_LINK_OPEN = re.compile(r"\][ \t]*\(")
#: A reference definition's label, at the start of a line (in a quote or list item too).
_REF_DEF = re.compile(r"^([ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)*\[(?:[^\[\]\\]|\\.){0,999}\]):", re.MULTILINE)
#: The space before a destination: it may start on the next line (in a quote, after its ``>``).
_LEADING_SPACE = re.compile(r"[ \t]*(?:\n[ \t>]*)?")
#: A definition's destination and what may follow it on its line: nothing, or a title.
_DEF_SHAPE = re.compile(r"(?:<[^<>\n]*>|[^\s<][^\s]*)[ \t]*(?:$|[\"'(])", re.MULTILINE)
#: What ends a refused destination: a parenthesis, escaped characters or a blank line.
_DEST_TOKEN = re.compile(r"\\.|[()]|\n[ \t]*\n")


def _judge(text: str, pos: int, start_pattern: re.Pattern) -> bool:
    """Whether the destination starting at ``pos`` (at its leading space) is safe."""
    pos = _LEADING_SPACE.match(text, pos).end()
    if text.startswith("<", pos):
        pos += 1
    raw = start_pattern.match(text, pos).group(0)
    return safe_link(raw, complete=len(raw) < _JUDGED_CHARS)


def _destination_end(text: str, pos: int) -> int:
    """Where a refused inline destination ends: just past the parenthesis that closes the one
    opening it (at ``pos - 1``), else at the next blank line or the text's end."""
    depth = 1
    for token in _DEST_TOKEN.finditer(text, pos):
        mark = token.group(0)
        if mark == "(":
            depth += 1
        elif mark == ")":
            depth -= 1
            if depth == 0:
                return token.end()
        elif mark[0] == "\n":
            return token.start()
    return len(text)


def _drop_refused_inline(text: str) -> str:
    """Every inline destination not safe is removed with its title and parentheses; its ``[text]``
    stays as text. Each removal continues after what it removed, so the pass is linear."""
    out, pos = [], 0
    for match in _LINK_OPEN.finditer(text):
        if match.start() < pos or _judge(text, match.end(), _DEST_START):
            continue
        out.append(text[pos:match.start() + 1])
        pos = _destination_end(text, match.end())
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _drop_refused_definitions(text: str) -> str:
    """A reference definition whose destination is not safe loses the rest of its line, and its colon
    is escaped: ``[r]\\:`` is text, and a reference to ``r`` stays text too."""
    out, pos = [], 0
    for match in _REF_DEF.finditer(text):
        if match.start() < pos or _judge(text, match.end(), _DEF_DEST_START):
            continue
        if not _DEF_SHAPE.match(text, _LEADING_SPACE.match(text, match.end()).end()):
            continue  # no definition: its line goes on past the destination
        out.append(text[pos:match.end(1)] + "\\:")
        line_end = text.find("\n", _LEADING_SPACE.match(text, match.end()).end())
        pos = len(text) if line_end < 0 else line_end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def drop_refused_links(text: str) -> str:
    """Links whose destination ``safe_link`` refuses keep only their text: inline links (``[a](x)``,
    ``[a](<x> "t")``) become ``a``, or ``[a]`` where their text nests deeper; reference definitions
    become text. Autolinks are markup and go with the raw HTML (``clean_model_html``)."""
    if "](" in text or "] (" in text or "]\t(" in text:
        text = _INLINE_LINK.sub(lambda m: m.group(0) if _judge(m.group(2), 0, _DEST_START) else m.group(1), text)
        # a removal may join a ']' to a '(' after it: the pass repeats until nothing changes
        for _ in range(3):
            cleaned = _drop_refused_inline(text)
            if cleaned == text:
                break
            text = cleaned
        else:
            text = _LINK_OPEN.sub(lambda m: m.group(0)[:-1] + "\\(", text)
    if "]:" in text:
        text = _drop_refused_definitions(text)
    return text


# --- nesting -------------------------------------------------------------------------------------

#: The depth counted here is never below the parser's: where the parser might keep an element open,
#: so does the count. Elements that never hold others:
_VOID = frozenset({"area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
                   "input", "keygen", "link", "meta", "param", "source", "track", "wbr"})
#: A start tag closes the open element on top when it is one of these (a cell the next cell, a
#: row the last cell and row...), as the parser does.
_SECTION_PARTS = {"thead", "tbody", "tfoot", "tr", "td", "th"}
_CLOSES = {"p": {"p"}, "li": {"li"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "td": {"td", "th"}, "th": {"td", "th"},
           "tr": {"tr", "td", "th"}, "thead": _SECTION_PARTS, "tbody": _SECTION_PARTS, "tfoot": _SECTION_PARTS}
#: The parser's scopes: an end tag closes nothing past one of these (a ``</div>`` inside a table).
_TABLE_PARTS = frozenset({"table", "caption", "colgroup", "thead", "tbody", "tfoot", "tr", "td", "th"})
_TABLE_SCOPE = frozenset({"table", "template", "html"})
_DEFAULT_SCOPE = frozenset({"table", "td", "th", "caption", "template", "object", "applet", "marquee", "html"})
_LIST_SCOPE = _DEFAULT_SCOPE | {"ul", "ol"}
#: Elements the parser treats as blocks: the end tag of an element not among them (``</span>``)
#: closes nothing past one of them.
_SPECIAL = frozenset({
    "address", "applet", "area", "article", "aside", "base", "basefont", "bgsound", "blockquote", "body", "br",
    "button", "caption", "center", "col", "colgroup", "dd", "details", "dir", "div", "dl", "dt", "embed",
    "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6",
    "head", "header", "hgroup", "hr", "html", "iframe", "img", "input", "keygen", "li", "link", "listing", "main",
    "marquee", "menu", "meta", "nav", "noembed", "noframes", "noscript", "object", "ol", "p", "param",
    "plaintext", "pre", "script", "search", "section", "select", "source", "style", "summary", "table", "tbody",
    "td", "template", "textarea", "tfoot", "th", "thead", "title", "tr", "track", "ul", "wbr", "xmp",
    "svg", "math", "foreignobject", "desc", "mi", "mo", "mn", "ms", "mtext", "annotation-xml"})
#: The end tag of a formatting element with other elements open inside it moves them into a new
#: copy of it rather than closing them (the parser's "adoption agency"): the depth stays.
_FORMATTING = frozenset({"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong",
                         "tt", "u"})
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][^\s/>]*)")


def _end_tag(stack: list[str], name: str) -> None:
    """What an end tag closes, where the parser surely closes it too."""
    if name in _FORMATTING:
        if stack and stack[-1] == name:
            stack.pop()
        return
    if name not in _SPECIAL:
        scope = _SPECIAL
    elif name in _TABLE_PARTS:
        scope = _TABLE_SCOPE
    else:
        scope = _LIST_SCOPE if name in ("li", "dt", "dd") else _DEFAULT_SCOPE
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] == name:
            del stack[i:]
            return
        if stack[i] in scope:
            return


def bound_nesting(markup: list[str], limit: int) -> None:
    """``markup`` (the tags of one block, in order) rewritten in place so that an HTML parser never
    holds more than about ``limit`` open elements: start tags past it are dropped with their end
    tags. The other start tags lose their attributes where the cleaner would drop them anyway
    (every element but the table cells and columns, whose spans stay): the parser reopens closed
    formatting elements unless three identical ones are open, so distinct attributes could pile
    them up."""
    stack: list[str] = []
    dropped: Counter = Counter()
    for k, tag in enumerate(markup):
        found = _TAG_NAME.match(tag)
        if not found:
            continue  # a comment or declaration
        name = found.group(2).lower()
        if found.group(1):
            if dropped[name]:
                dropped[name] -= 1
                markup[k] = ""
            else:
                _end_tag(stack, name)
            continue
        if name not in MODEL_ATTRIBUTES and name not in REMOVED_WITH_CONTENT:
            markup[k] = f"<{name}>"
        if name in _VOID:
            continue
        if name in _CLOSES:
            while stack and stack[-1] in _CLOSES[name]:
                stack.pop()
        if len(stack) >= limit:
            dropped[name] += 1
            markup[k] = ""
        else:
            stack.append(name)


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
    markup = parts[1::2]
    bound_nesting(markup, tuning.MAX_HTML_NESTING)
    parts[1::2] = markup
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
    text = drop_refused_links(text)
    return clean_model_html(text)
