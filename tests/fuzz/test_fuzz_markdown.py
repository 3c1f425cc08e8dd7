"""Fuzz the Markdown path with model output built from hostile fragments and random text: the
export links images only to exported figures, and the app renders no script, no event handler and
no image outside the session folder."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from core.drafters.base import Region
from core.export import page_markdown, sanitize_model_markdown
from core.results import PageResult, PageStats
from tests.fuzz.conftest import fuzz_settings

FRAGMENTS = ["![", "](", ")", "[", "]", "![x](/etc/passwd)", "<img src=", "http://evil.example/a.png", "<script>",
             "</script>", "javascript:", "<svg", "onload=", " onerror=", "<a href=", '"', "'", ">", "<", "\n", "\n\n",
             "[r]: /etc/passwd", "![r][r]", "<table><tr><td>", "</td></tr></table>", "$x<y$", "\\", "`", "```\n",
             "<iframe src=", "<style>", "url(", "<", "!", "data:", "file://", "../", "<IMG", "<!--", "-->",
             "<object data=", "<picture><source srcset=", " style=", "\\(", "\\)", "$$"]
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
