"""Model output is untrusted: exported Markdown links images only to exported figures and carries no
script; the app renders with raw HTML off, no scripts and no remote or outside images; nothing
the model writes ever names a file we write."""

from __future__ import annotations

import re

import pytest

from core.drafters.base import Region
from core.export import DocumentOutput, page_markdown, sanitize_model_markdown
from core.results import PageResult, PageStats

HOSTILE = [
    "![x](/etc/passwd)",
    "![x](../../../home/user/.ssh/id_rsa)",
    "![x](file:///etc/passwd)",
    "![x](http://evil.example/track.png)",
    '![x]( /etc/passwd "title")',
    "![x](</etc/pass wd>)",
    "![x](a(b)c.png)",
    "![a [b] c](/etc/passwd)",
    "![a [b [c]] d](/etc/passwd)",
    "![a\nb](/etc/passwd)",
    "![x][ref]\n\n[ref]: /etc/passwd",
    "![x][]\n\n[x]: http://evil.example/a.png",
    "![x]\n\n[x]: http://evil.example/a.png",
    "<img src=http://evil.example/x.png>",
    '<IMG SRC="file:///etc/passwd" onerror="alert(1)">',
    "<img\nsrc='/etc/passwd'>",
    "<script>alert(1)</script>",
    "<SCRIPT src=http://evil.example/x.js></SCRIPT>",
    "[a](javascript:alert(1))",
    "[a](JaVaScRiPt:alert(document.cookie))",
    "<javascript:alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<div onmouseover=alert(1)>x</div>",
    "<svg><image href='/etc/passwd'/></svg>",
    "<svg onload=alert(1)>",
    "<picture><source srcset='http://evil.example/x'></picture>",
    "<iframe src=http://evil.example></iframe>",
    "<object data=/etc/passwd></object>",
    "<embed src=/etc/passwd>",
    "<video poster=http://evil.example/p.png></video>",
    "<link rel=stylesheet href=http://evil.example/s.css>",
    "<meta http-equiv=refresh content='0;url=http://evil.example'>",
    "<base href=http://evil.example/>",
    "<style>body{background:url(http://evil.example/x)}</style>",
    '<table><tr><td colspan="2" style="background:url(http://evil.example/x)" onclick="x()">1</td></tr></table>',
    "<form action=http://evil.example><input type=image src=/etc/passwd></form>",
]


def _result(markdown: str, with_figure: bool = True) -> PageResult:
    regions = [Region("text", (10, 10, 300, 60), "Results of the study are shown below", "test")]
    if with_figure:
        regions.append(Region("figure", (10, 80, 300, 300), "", "test"))
    return PageResult(page=1, width=400, height=500, markdown=markdown, regions=regions, region_stats=[],
                      region_outputs=[], spans=[], stats=PageStats(mode="hsd"))


def _rendered_by_a_permissive_viewer(markdown: str) -> str:
    """HTML as a viewer that allows raw HTML would make it (the worst case for exported files)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def _loaded_urls(html: str) -> list[str]:
    return re.findall(r"""\b(?:src|srcset|href|data|poster|background|action)\s*=\s*["']?([^"'\s>]+)""", html, re.I)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_exported_markdown_links_only_exported_figures(hostile):
    pytest.importorskip("markdown_it")
    figure = "doc_images/page-0001-figure-02.png"
    text = page_markdown(_result("Results of the study are shown below\n\n" + hostile), {1: figure})
    html = _rendered_by_a_permissive_viewer(text)
    images = re.findall(r"<img\b[^>]*>", html, re.I)
    assert images == [f'<img src="{figure}" alt="Figure 2" />'], (hostile, text, html)
    lowered = html.lower()
    for bad in ("<script", "javascript:", "vbscript:", "<iframe", "<object", "<embed", "<svg", "<link", "<meta",
                "<base", "<style", "<form", "<input", "<video", "<source", "onerror", "onload", "onclick",
                "onmouseover", "url("):
        assert bad not in lowered, (bad, hostile, html)
    for url in _loaded_urls(html):
        assert url == figure or not re.match(r"^(?:[a-z]+:|/|\.\.)", url, re.I), (url, hostile, html)


def test_sanitizing_keeps_ordinary_output():
    ordinary = ("# Title\n\nSome *text* with <b>bold</b>, H<sub>2</sub>O and x<sup>2</sup>; a < b and c > d; "
                "$x<y$ and [a link](https://example.com).\n\n"
                '<table><tr><td colspan="2">1</td></tr><tr><td>a</td><td>b</td></tr></table>\n\n'
                "Exclamation! [1] and ![]() nothing.")
    cleaned = sanitize_model_markdown(ordinary)
    assert cleaned.split("Exclamation")[0] == ordinary.split("Exclamation")[0]
    assert "![" not in cleaned


def test_model_output_never_names_a_written_file(tmp_path):
    """A page whose output and region texts are full of paths: the only files written are the
    resume folder's page file and our own figure crops, all inside the output's folders."""
    from PIL import Image

    hostile = "\n".join(HOSTILE) + "\n../../../../tmp/pwned.png ![x](../../pwned.png)"
    result = _result(hostile)
    result.regions[1] = Region("figure", (10, 80, 300, 300), "../../../../tmp/evil.png", "test")
    out_dir = tmp_path / "out"
    output = DocumentOutput(_write(tmp_path / "in.pdf"), out_dir / "doc.md", {"k": 1})
    output.save_page(result, Image.new("RGB", (400, 500), "white"))
    output.write_markdown([result])
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["in.pdf", "out/.doc.md.hsd/manifest.json", "out/.doc.md.hsd/page-0001.json",
                       "out/doc.md", "out/doc_images/page-0001-figure-02.png"]
    assert result.figure_links == {1: "doc_images/page-0001-figure-02.png"}


def _write(path):
    path.write_bytes(b"%PDF-1.4 stand-in input")
    return path


# --- the app's renderer ------------------------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE)
def test_app_renders_no_html_scripts_or_foreign_images(hostile):
    pytest.importorskip("PySide6")
    from app.markdown_view import render_markdown

    html = render_markdown(hostile)
    lowered = html.lower()
    assert "<script" not in lowered and "<iframe" not in lowered and "<svg" not in lowered
    assert "<object" not in lowered and "<style" not in lowered and "<a href=\"javascript" not in lowered
    assert not re.search(r"<\w+[^>]*\son\w+\s*=", html), html  # no event handlers on real tags
    for tag in re.findall(r"<img\b[^>]*>", html, re.I):
        src = re.search(r'src="([^"]*)"', tag).group(1)
        assert not re.match(r"^(?:[a-z][a-z0-9+.-]*:|/|\\)", src, re.I) and ".." not in src, (hostile, html)


def test_app_viewer_loads_only_files_inside_its_folder(qtbot, tmp_path):
    """The rendered pane's resource loader: remote URLs, absolute paths, ``..`` and a symlink that
    points outside the work folder are all refused."""
    pytest.importorskip("PySide6")
    import os

    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QImage, QTextDocument

    from app.markdown_view import MarkdownView

    work = tmp_path / "work"
    (work / "doc_images").mkdir(parents=True)
    outside = tmp_path / "secret.png"
    image = QImage(4, 4, QImage.Format.Format_RGB32)
    image.fill(0)
    image.save(str(work / "doc_images" / "f.png"))
    image.save(str(outside))
    os.symlink(outside, work / "doc_images" / "link.png")
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_base_dir(work)
    view.set_texts(page="\n\n".join(HOSTILE), document="x")
    kind = QTextDocument.ResourceType.ImageResource.value
    assert view.rendered.loadResource(kind, QUrl("doc_images/f.png")) is not None
    for url in ("http://evil.example/x.png", "https://evil.example/x.png", f"file://{outside}", str(outside),
                "../secret.png", "doc_images/../../secret.png", "doc_images/link.png", "ftp://evil.example/x",
                "data:image/png;base64,iVBORw0KGgo="):
        assert view.rendered.loadResource(kind, QUrl(url)) is None, url


# --- the sanitiser is linear and parses HTML as a browser would ----------------------------------------


def test_export_sanitiser_is_linear_on_repeated_tags():
    """256 KB of repeated ``<script>`` took 101 s (quadratic); nothing of this kind may take minutes."""
    from tests.reliability.bounded import run_bounded

    times = run_bounded("""
import json, time
from core.export import sanitize_model_markdown
cases = {"script": "<script>" * 32768, "open tags": "<a" * 200000, "comments": "<!--" * 100000,
         "images": "![" * 200000, "quoted values": '<b x="' * 100000, "script links": "[a](javascript:" * 50000,
         "closed tags": "<td>x</td>" * 100000, "open tables": "<table " * 30000}
out = {}
for name, text in cases.items():
    start = time.process_time()
    sanitize_model_markdown(text)
    out[name] = time.process_time() - start
print(json.dumps(out))
""", timeout=90)
    slow = {name: round(t, 1) for name, t in times.items() if t > 20}  # CPU seconds
    assert not slow, slow


BROWSER_TRICKS = [
    '<b onclick="<i>alert(1)">x',                         # a '<' inside a quoted value
    "<div>\n<y$ onmouseover=alert(1) <b>\n</div>",         # a tag a browser reads on past the next '<'
    "<scr<script>ipt>alert(1)</script>",
    "<!-- <script>alert(1)</script> -->",
    "<svg><script>alert(1)</script></svg>",
    '<a href="javascript:alert(1)">x</a>',
    '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
    "<table><tr><td background=http://evil.example/x.png>1</td></tr></table>",
    '<img src="x" alt="<img src=x onerror=alert(1)>">',
    "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
    "<IMG SRC=`javascript:alert(1)`>",
    "<td colspan=\"2 onclick=alert(1)\">x</td>",
]


class _Elements:
    """Every element and attribute a browser would build from an HTML text."""

    def __init__(self, text: str):
        from html.parser import HTMLParser

        self.found: list[tuple[str, dict]] = []
        parser = HTMLParser(convert_charrefs=True)
        parser.handle_starttag = lambda tag, attrs: self.found.append((tag, dict(attrs)))
        parser.handle_startendtag = parser.handle_starttag
        parser.feed(text)
        parser.close()


@pytest.mark.parametrize("hostile", HOSTILE + BROWSER_TRICKS)
def test_no_element_of_the_export_runs_or_loads_anything(hostile):
    """What a viewer that passes raw HTML through builds from the exported Markdown: no script or
    embedding element, no event handler, no URL attribute except the exported figure."""
    pytest.importorskip("markdown_it")
    figure = "doc_images/page-0001-figure-02.png"
    text = page_markdown(_result("Results of the study are shown below\n\n" + hostile), {1: figure})
    for tag, attrs in _Elements(_rendered_by_a_permissive_viewer(text)).found:
        assert tag not in ("script", "style", "iframe", "object", "embed", "svg", "math", "link", "meta", "base",
                           "form", "input", "video", "audio", "source", "noscript"), (tag, hostile, text)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs, hostile, text)
        urls = {k: v for k, v in attrs.items() if k in ("src", "href", "srcset", "background", "poster", "data",
                                                         "action", "xlink:href", "style")}
        assert urls in ({}, {"src": figure}), (tag, attrs, hostile, text)


@pytest.mark.parametrize("hostile", HOSTILE + BROWSER_TRICKS)
def test_no_element_of_the_app_view_runs_or_loads_anything(hostile):
    pytest.importorskip("PySide6")
    from app.markdown_view import render_markdown

    for tag, attrs in _Elements(render_markdown(hostile)).found:
        assert tag not in ("script", "style", "iframe", "object", "embed", "svg", "math", "link", "meta", "base",
                           "form", "input", "video", "audio", "source", "noscript"), (tag, hostile)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs, hostile)
        assert not {"href", "srcset", "background", "poster", "data", "action", "xlink:href"} & set(attrs), attrs
        src = attrs.get("src", "rel.png")  # relative images only: the viewer loads them from its folder alone
        assert not re.match(r"^(?:[a-z][a-z0-9+.-]*:|/|\\\\)", src, re.I) and ".." not in src, (tag, attrs, hostile)


def test_sanitizing_leaves_markdown_text_alone():
    """Only the HTML changes: text, formulas with '<' and code keep every byte."""
    ordinary = ("a < b, c > d & e &amp; f; $x<y$ and $0<t<1$; it's `a<b` and\n\n```\nif (a < b) {}\n```\n\n"
                "| a | b |\n|---|---|\n| 1<br>2 | H<sub>2</sub>O |")
    assert sanitize_model_markdown(ordinary) == ordinary


# --- links a viewer would open -------------------------------------------------------------------------


def test_the_exported_file_has_no_link_but_to_pages_mail_or_its_folder(tmp_path):
    """Every link trick of model output (encoded schemes, reference definitions, autolinks, inline
    HTML) written to a document file as ``hsd convert`` writes it: a viewer that decodes everything
    and trusts every scheme opens only web pages, mail, anchors and the exported figure."""
    pytest.importorskip("markdown_it")
    from PIL import Image

    from tests.core.test_sanitize import LIVE_LINKS, _hrefs_of_a_trusting_viewer, _opens_only_pages_mail_or_the_document

    result = _result("Results of the study are shown below\n\n" + "\n\n".join(LIVE_LINKS) + "\n\nend of page")
    output = DocumentOutput(_write(tmp_path / "in.pdf"), tmp_path / "out" / "doc.md", {"k": 1})
    output.save_page(result, Image.new("RGB", (400, 500), "white"))
    exported = output.write_markdown([result]).read_text()
    urls = _hrefs_of_a_trusting_viewer(exported)
    assert "doc_images/page-0001-figure-02.png" in urls and "end of page" in exported
    for url in urls:
        assert _opens_only_pages_mail_or_the_document(url), (url, exported)


# --- nesting ------------------------------------------------------------------------------------------


def test_deeply_nested_html_comes_out_bounded_with_its_text():
    """100,000 nested elements of each kind (a parser's time grows with the square of the nesting:
    100,000 ``<div>`` took minutes) come out nested no deeper than the limit allows, text kept."""
    from core import tuning
    from tests.reliability.bounded import run_bounded

    result = run_bounded("""
import json
from html.parser import HTMLParser
from core.export import sanitize_model_markdown
n = 100000
cases = {"div": "<div>x" * n, "table": "<table>x" * n, "cells": "<table><tr><td>x" * n, "b": "<b>x" * n,
         "lists": "<ul><li>x" * n, "quotes": "<blockquote><p>x" * n, "span in div": "<span><div>x</span>" * n,
         "div in table": "<div><table>x</div>" * n, "bold around div": "<b><div>x</b>" * n,
         "bold in cells": "<table><tr><td><b>x" * n, "reopened": "".join(f"<p><b id={i}>x</p>" for i in range(n))}
out = {}
for name, text in cases.items():
    cleaned = sanitize_model_markdown(text)
    depth = [0, 0]
    def start(tag, attrs):
        if tag not in ("br", "hr", "col", "img"):
            depth[0] += 1
            depth[1] = max(depth[1], depth[0])
    def end(tag):
        depth[0] -= 1
    parser = HTMLParser()
    parser.handle_starttag, parser.handle_endtag = start, end
    parser.feed(cleaned)
    out[name] = [depth[1], cleaned.count("x")]
print(json.dumps(out))
""", timeout=tuning.HOSTILE_OUTPUT_SECONDS)
    for name, (depth, texts) in result.items():
        assert depth <= tuning.MAX_HTML_NESTING * 1.5, (name, depth)
        assert texts == 100000, (name, texts)


def test_the_app_view_shows_deeply_nested_or_mark_dense_output_bounded():
    """100,000 nested ``<b>`` took the view 64 s. Nesting past the limit loses its tags before the
    parsers see it, and a page dense with Markdown marks (each read in tens of microseconds, each
    formula typeset) is laid out up to ``PREVIEW_MARKS`` of them, with the "truncated" note."""
    from core import tuning
    from tests.reliability.bounded import run_bounded

    result = run_bounded("""
import json
from PySide6.QtWidgets import QApplication
app = QApplication([])
from app.markdown_view import MarkdownView, PREVIEW_MARKS, render_markdown
view = MarkdownView()
n = 100000
pages = {"bold": "<b>" * n + "deep text", "div": "<div>" * n + "deep text",
         "cells": "<table><tr><td>" * n + "deep text", "brackets": "![" * n, "formulas": "$a" * n, "links": "[](" * n}
out = {}
for name, text in pages.items():
    view.set_texts(page=text, document="")
    app.processEvents()
    html = render_markdown(text) if "deep" in text else ""
    out[name] = {"shown": view.rendered.toPlainText(), "truncated": view.preview_truncated, "deep": "deep text" in html,
                 "depth": max(html.count("<b>"), html.count("<div>"), html.count("<table"))}
print(json.dumps({"pages": out, "marks": PREVIEW_MARKS}))
""", timeout=tuning.HOSTILE_OUTPUT_SECONDS)
    pages = result["pages"]
    for name in ("bold", "div", "cells"):
        assert pages[name]["deep"] and pages[name]["depth"] <= tuning.MAX_HTML_NESTING, (name, pages[name])
    for name, page in pages.items():
        assert page["truncated"] and "Truncated in preview" in page["shown"], name


def test_regions_of_a_5_mb_page_map_onto_its_markdown_in_one_pass():
    """5,000 spans over 5 MB, every second one removed by the sanitiser: each search for a removed
    one ran to the end of the text (23 s on the GUI thread). The kept ones map to their own text."""
    from core import tuning
    from tests.reliability.bounded import run_bounded

    result = run_bounded("""
import json
from core.results import PageResult, PageStats, TextSpan
from core.export import page_markdown
from app.markdown_view import map_spans
markdown, spans = "", []
for i in range(5000):
    piece = f"<script>gone {i}</script>" + "z" * 980 if i % 2 else f"Paragraph {i} " + "word " * 196
    spans.append(TextSpan(i, len(markdown), len(markdown) + len(piece)))
    markdown += piece + "\\n\\n"
result = PageResult(page=1, width=1, height=1, markdown=markdown, regions=[], region_stats=[], region_outputs=[],
                    spans=spans, stats=PageStats(mode="hsd"))
display = page_markdown(result)
mapped = map_spans(result, display)
print(json.dumps({"regions": [r for r, _, _ in mapped],
                  "right": all(display[s:e] == markdown[spans[r].start:spans[r].end].strip() for r, s, e in mapped)}))
""", timeout=tuning.HOSTILE_OUTPUT_SECONDS)
    assert result["regions"] == list(range(0, 5000, 2)) and result["right"]
