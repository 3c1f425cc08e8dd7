"""Fuzz the Markdown path with model output built from hostile fragments and random text: the
export links images only to exported figures, and the app renders no script, no event handler and
no image outside the work folder."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from core.drafters.base import Region
from core.export import page_markdown, sanitize_model_markdown
from core.sanitize import clean_model_html
from core.results import PageResult, PageStats
from tests.fuzz.conftest import fuzz_settings

FRAGMENTS = ["![", "](", ")", "[", "]", "![x](/etc/passwd)", "<img src=", "http://evil.example/a.png", "<script>",
             "</script>", "javascript:", "<svg", "onload=", " onerror=", "<a href=", '"', "'", ">", "<", "\n", "\n\n",
             "[r]: /etc/passwd", "![r][r]", "<table><tr><td>", "</td></tr></table>", "$x<y$", "\\", "`", "```\n",
             "<iframe src=", "<style>", "url(", "<", "!", "data:", "file://", "../", "<IMG", "<!--", "-->",
             "<object data=", "<picture><source srcset=", " style=", "\\(", "\\)", "$$",
             # formulas for the typesetter, and the browser's ways of reading on past a '<'
             "\\frac{", "\\begin{pmatrix}", "\\end{pmatrix}", "&", "\\\\", "^{", "_", "{", "}", "\\sqrt[",
             "\\sum", "\\[", "\\]", "=\"", "<b ", "<td colspan=", "<!", "<?", "</", "&lt;", "|", "\n|---|\n"]
OUTPUT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40).map("".join)
FIGURE = "doc_images/page-0001-figure-02.png"


def _result(markdown):
    regions = [Region("text", (10, 10, 300, 60), "Fuzzed page text", "fuzz"),
               Region("figure", (10, 80, 300, 300), "", "fuzz")]
    return PageResult(page=1, width=400, height=500, markdown=markdown, regions=regions, region_stats=[],
                      region_outputs=[], spans=[], stats=PageStats(mode="hsd"))


@fuzz_settings(300)
@given(output=OUTPUT)
def test_export_links_only_exported_figures(output):
    markdown_it = pytest.importorskip("markdown_it")
    text = page_markdown(_result(output), {1: FIGURE})
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).render(text)
    srcs = re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", html, re.I)
    assert srcs == [FIGURE], (output, text, html)
    assert "<script" not in html.lower() and "<iframe" not in html.lower()
    assert "<script" not in sanitize_model_markdown(output).lower()


@fuzz_settings(300)
@given(output=OUTPUT)
def test_app_renderer_is_safe(output):
    pytest.importorskip("PySide6")
    from app.markdown_view import render_markdown

    html = render_markdown(output)
    lowered = html.lower()
    assert "<script" not in lowered and "<iframe" not in lowered and "<svg" not in lowered and "<style" not in lowered
    assert not re.search(r"<[a-z][^<>]*\son[a-z]+\s*=", html, re.I), html
    for src in re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", html, re.I):
        assert not re.match(r"^(?:[a-z][a-z0-9+.-]*:|/|\\)", src, re.I) and ".." not in src, (output, html)


class _Elements:
    """Each element a browser builds from an HTML text, with its attributes."""

    def __init__(self, text):
        from html.parser import HTMLParser

        self.found = []
        parser = HTMLParser(convert_charrefs=True)
        parser.handle_starttag = lambda tag, attrs: self.found.append((tag, dict(attrs)))
        parser.handle_startendtag = parser.handle_starttag
        parser.feed(text)
        parser.close()


_ACTIVE = {"script", "style", "iframe", "object", "embed", "svg", "math", "link", "meta", "base", "form", "input",
           "video", "audio", "source", "noscript", "frame", "template"}


@fuzz_settings(300)
@given(output=OUTPUT)
def test_no_element_of_the_export_or_the_view_runs_or_loads_anything(output):
    """As a browser parses them: the exported Markdown (through a viewer that passes raw HTML) and the
    app's HTML hold no active element, no event handler and no URL but the exported figure."""
    markdown_it = pytest.importorskip("markdown_it")
    pytest.importorskip("PySide6")
    from app.markdown_view import render_markdown

    exported = markdown_it.MarkdownIt("commonmark", {"html": True}).render(page_markdown(_result(output), {1: FIGURE}))
    for html in (exported, render_markdown(output)):
        for tag, attrs in _Elements(html).found:
            assert tag not in _ACTIVE, (tag, output, html)
            assert not any(name.startswith("on") for name in attrs), (tag, attrs, output)
            assert not {"srcset", "background", "poster", "data", "action", "xlink:href"} & set(attrs), attrs
            style = attrs.get("style") or ""  # the view's formula layout only: sizes, rules, fonts
            assert "url(" not in style.lower() and "expression" not in style.lower() and "@" not in style, attrs
            href = attrs.get("href") or ""  # a link loads nothing; only script schemes are refused
            assert not re.match(r"^[\s\x00-\x1f]*(?:javascript|vbscript|data):", href, re.I), (tag, attrs, output)
            src = attrs.get("src")
            assert src is None or src == FIGURE or not re.match(r"^(?:[a-z][a-z0-9+.-]*:|/|\\\\)|.*\\.\\.", src,
                                                                re.I), (tag, attrs, output)


@fuzz_settings(300)
@given(text=st.text(alphabet=st.characters(blacklist_characters="<"), max_size=200))
def test_text_without_markup_is_kept_byte_for_byte(text):
    assert clean_model_html(text) == text
