"""Fuzz the HTML and DOCX exports with model output built from hostile fragments and random text:
they never fail, the HTML never holds a script, an event handler, a load or a link to a file, and
the DOCX always opens."""

from __future__ import annotations

import io
import re

from hypothesis import given

from core.export import page_markdown
from tests.fuzz.conftest import fuzz_settings
from tests.fuzz.test_fuzz_markdown import OUTPUT, _result
from tests.reliability.test_untrusted_output import HOSTILE

#: What a browser would load, run or follow in the body: any URL attribute but an embedded PNG, a
#: web link or an anchor; event handlers; script and frames.
_UNSAFE = re.compile(r"<(?:script|iframe|object|embed|svg|img(?![^>]*src=\"data:image/png;base64,))|\son\w+\s*="
                     r"|\s(?:src|srcset|action|formaction|background|poster)\s*=\s*\"(?!data:image/png)"
                     r"|href\s*=\s*\"(?!https?:|mailto:|#)", re.IGNORECASE)


def _check(markdown: str) -> None:
    import docx

    from core.exports.html import document_html
    from core.exports.word import document_docx

    page = document_html(markdown, "t")
    body = page.split("<body>", 1)[1]
    found = _UNSAFE.search(body)
    assert found is None, (found.group(0), markdown)
    docx.Document(io.BytesIO(document_docx(markdown, "t")))


@fuzz_settings(150)
@given(output=OUTPUT)
def test_fuzzed_model_output_exports_safely(output):
    _check(page_markdown(_result(output), {1: "doc_images/page-0001-figure-02.png"}))


def test_every_hostile_output_exports_safely_raw_and_sanitised():
    for hostile in HOSTILE:
        _check(hostile)  # a Markdown file that is not ours goes to the exports unsanitised
        _check(page_markdown(_result(hostile)))
