"""Fuzz the HTML and DOCX exports with model output built from hostile fragments and random text:
they never fail, the HTML never holds a script, an event handler, a load or a link to a file, and
the DOCX always opens."""

from __future__ import annotations

import io
from html.parser import HTMLParser

from hypothesis import given

from core.export import page_markdown
from tests.fuzz.conftest import fuzz_settings
from tests.fuzz.test_fuzz_markdown import OUTPUT, _result
from tests.reliability.test_untrusted_output import HOSTILE

#: Elements a browser would run or load whatever their attributes.
_UNSAFE_TAGS = {"script", "iframe", "frame", "object", "embed", "svg", "applet", "base", "link", "meta",
                "form", "style"}
#: Attributes that load a URL: only an embedded PNG may be loaded.
_LOADING = {"src", "srcset", "action", "formaction", "background", "poster", "data"}


class _Unsafe(HTMLParser):
    """What a browser would load, run or follow in the body, read from the parsed elements (text
    that merely reads like markup, escaped, is not an element): script, frames and their kin; any
    event handler; any loaded URL but an embedded PNG; a link that is not a web link, mail or an
    anchor."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in _UNSAFE_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on"):
                self.found.append(f"{tag} {name}=")
            elif name in _LOADING and not value.startswith("data:image/png"):
                self.found.append(f"{tag} {name}={value[:40]}")
            elif name in ("href", "xlink:href") and not value.startswith(("https:", "http:", "mailto:", "#")):
                self.found.append(f"{tag} {name}={value[:40]}")

    handle_startendtag = handle_starttag


def _check(markdown: str) -> None:
    import docx

    from core.exports.html import document_html
    from core.exports.word import document_docx

    page = document_html(markdown, "t")
    body = page.split("<body>", 1)[1]
    unsafe = _Unsafe()
    unsafe.feed(body)
    unsafe.close()
    assert not unsafe.found, (unsafe.found, markdown)
    docx.Document(io.BytesIO(document_docx(markdown, "t")))


@fuzz_settings(150)
@given(output=OUTPUT)
def test_fuzzed_model_output_exports_safely(output):
    _check(page_markdown(_result(output), {1: "doc_images/page-0001-figure-02.png"}))


def test_every_hostile_output_exports_safely_raw_and_sanitised():
    for hostile in HOSTILE:
        _check(hostile)  # a Markdown file that is not ours goes to the exports unsanitised
        _check(page_markdown(_result(hostile)))
