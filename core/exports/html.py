"""HTML export: one self-contained page per document, formulas typeset as MathML.

Nothing in the file reaches out: figures are embedded (``data:`` PNGs we cropped ourselves, read from
the document's figures folder), formulas are MathML that browsers lay out themselves (no script, no
font or stylesheet to fetch), and a Content-Security-Policy forbids every other load and all script.

The page is the exported Markdown (already sanitised by ``core.sanitize``: model-written images are
alt text, links only safe ones, raw HTML only tables and plain formatting) rendered by markdown-it;
the rendered body passes one more whitelist (nh3), so no markup the model or the document wrote can
render as anything else, and document text is always escaped. Formulas and figures are put in only
after that pass, as markup we build: MathML rebuilt through its own whitelist (``core.exports.mathml``).
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from urllib.parse import unquote

import nh3

from core.exports.markdown_parse import MATH_TOKENS, markdown_reader, math_source
from core.exports.mathml import formula_mathml
from core.page_store import is_figure_name, read_small_file
from core.sanitize import MODEL_TAGS

#: Placeholders for what is put in after the whitelist pass (private-use characters, removed from the
#: Markdown first so that no text can forge one).
_OPEN, _CLOSE = "\ue000", "\ue001"
_PLACEHOLDER = re.compile(_OPEN + r"(\d+)" + _CLOSE)
#: A figure larger than this is not embedded (its alt text stays): our crops are a few hundred KB.
MAX_FIGURE_BYTES = 32 << 20

#: Formulas inside raw HTML (``$\\pm$`` in a table cell); linear: neither form holds its opener.
_HTML_MATH = re.compile(r"\$([^$\n<>]+)\$|\\\(((?:[^\\\n<>]|\\[^()\n])+)\\\)")
_TAG_OR_TEXT = re.compile(r"(<[^<>]*>)")


def _href(tag: str, attribute: str, value: str) -> str | None:
    if attribute in ("colspan", "rowspan", "span"):
        value = value.strip()
        return value if value.isdigit() and 0 < int(value) < 100 else None
    if attribute == "start":
        return value if value.isdigit() and len(value) < 10 else None
    if attribute == "href":
        return value if re.match(r"^(?:https?:|mailto:|#)", value, re.I) else None
    return value


_cleaner = nh3.Cleaner(
    tags=set(MODEL_TAGS) | {"a"},
    clean_content_tags={"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript"},
    attributes={"td": {"colspan", "rowspan", "style"}, "th": {"colspan", "rowspan", "style"},
                "col": {"span"}, "colgroup": {"span"}, "a": {"href"}, "ol": {"start"}},
    attribute_filter=_href, strip_comments=True, link_rel="noopener noreferrer",
    url_schemes={"http", "https", "mailto"}, filter_style_properties={"text-align"},
)

STYLE = """
body { font-family: serif; max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8em 0; }
td, th { border: 1px solid #999; padding: 0.2em 0.5em; }
th { background: #eee; }
pre, code { font-family: monospace; background: #f4f4f4; }
pre { padding: 0.5em; overflow-x: auto; }
img { max-width: 100%; }
math[display="block"] { margin: 0.6em 0; }
code.formula { background: #fff4d6; }
"""
#: No script, no load but our own embedded images and style.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


class _Inserts:
    """What goes in after the whitelist pass, by placeholder number."""

    def __init__(self):
        self.items: list[str] = []

    def add(self, markup: str) -> str:
        self.items.append(markup)
        return f"{_OPEN}{len(self.items) - 1}{_CLOSE}"

    def formula(self, tex: str, display: bool) -> str:
        mathml = formula_mathml(tex, display)
        if mathml is None:  # shown as its source, never dropped
            source = f'<code class="formula">{html.escape(tex.strip())}</code>'
            return self.add(f"<p>{source}</p>" if display else source)
        return self.add(mathml)

    def put_back(self, body: str) -> str:
        return _PLACEHOLDER.sub(lambda m: self.items[int(m.group(1))], body)


def _figure(src: str, alt: str, base_dir: Path | None, images_dir: Path | None) -> str:
    """An ``<img>`` embedding the exported figure ``src`` names (relative to ``base_dir``, inside
    ``images_dir``), or the alt text where it names anything else or cannot be read."""
    fallback = f"[figure: {html.escape(alt)}]"
    if base_dir is None or images_dir is None:
        return fallback
    parts = unquote(src).split("/")
    if len(parts) != 2 or parts[0] != images_dir.name or not is_figure_name(parts[1]):
        return fallback
    data = read_small_file(images_dir / parts[1], MAX_FIGURE_BYTES)
    if not data or not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return fallback
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img src="data:image/png;base64,{encoded}" alt="{html.escape(alt)}" />'


def render_body(markdown: str, base_dir: Path | None = None, images_dir: Path | None = None) -> str:
    """The HTML body of exported Markdown (see the module docstring)."""
    markdown = markdown.replace(_OPEN, "\ufffd").replace(_CLOSE, "\ufffd")
    inserts = _Inserts()
    md = markdown_reader()

    def math(renderer, tokens, idx, options, env):
        token = tokens[idx]
        out = inserts.formula(math_source(token), MATH_TOKENS[token.type])
        return out + ("\n" if token.block else "")

    def image(renderer, tokens, idx, options, env):
        token = tokens[idx]
        alt = renderer.renderInlineAsText(token.children or [], options, env)
        return inserts.add(_figure(token.attrGet("src") or "", alt, base_dir, images_dir))

    def raw_html(renderer, tokens, idx, options, env):
        content = tokens[idx].content
        if "$" not in content and "\\(" not in content:
            return content
        parts = _TAG_OR_TEXT.split(content)
        for i in range(0, len(parts), 2):
            parts[i] = _HTML_MATH.sub(
                lambda m: inserts.formula(html.unescape(m.group(1) or m.group(2)), False), parts[i])
        return "".join(parts)

    for rule in MATH_TOKENS:
        md.add_render_rule(rule, math)
    md.add_render_rule("image", image)
    md.add_render_rule("html_block", raw_html)
    body = _cleaner.clean(md.render(markdown))
    return inserts.put_back(body)


def document_html(markdown: str, title: str, base_dir: Path | None = None, images_dir: Path | None = None) -> str:
    """A whole HTML file for ``markdown``: head (title, charset, CSP, style) and body."""
    body = render_body(markdown, base_dir, images_dir)
    return ("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\" />\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\" />\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")
