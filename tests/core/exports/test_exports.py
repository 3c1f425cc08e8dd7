"""Exports read back: the HTML (html.parser) and the DOCX (python-docx) say what the Markdown says,
formulas are MathML and Word equations, and the JSON carries regions, acceptance and departures."""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser

import pytest

from core.exports import document_payload, export_documents, open_finished, parse_formats
from core.exports.markdown_parse import MATH_TOKENS, markdown_reader

OMML = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"


def markdown_words(markdown: str) -> list[str]:
    """The words a reader sees in ``markdown``: text of every token but formulas and markup."""
    out = []
    for token in markdown_reader().parse(markdown):
        if token.type == "inline":
            for child in token.children:
                if child.type in ("text", "code_inline"):
                    out.append(child.content)
        elif token.type == "html_block":
            out.append(re.sub(r"\$[^$]*\$", " ", re.sub(r"<[^>]*>", " ", token.content)))
        elif token.type in ("fence", "code_block"):
            out.append(token.content)
    return re.findall(r"\w+", " ".join(out).replace("&amp;", "&"))


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.words, self.skip, self.tags = [], 0, []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("math", "style", "title", "script"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("math", "style", "title", "script"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.words += re.findall(r"\w+", data)


def test_html_reads_back_as_the_markdown_with_formulas_as_mathml(finished, tmp_path):
    document = open_finished(finished)
    [html_path] = export_documents([finished], ["html"], tmp_path / "out")
    text = html_path.read_text("utf-8")
    parser = _Text()
    parser.feed(text)
    assert parser.words == markdown_words(document.markdown())
    maths = [a for t, a in parser.tags if t == "math"]
    assert len(maths) == 3 and {"inline", "block"} <= {a.get("display") for a in maths}
    assert "<mfrac>" in text and ("<munderover>" in text or "<msubsup>" in text)
    img = [a for t, a in parser.tags if t == "img"]
    assert len(img) == 1 and img[0]["src"].startswith("data:image/png;base64,")
    assert not re.search(r"(?:src|href)=\"(?!data:|#)", text)  # nothing to fetch
    assert "default-src 'none'" in text and "<script" not in text.lower()


def test_html_export_never_renders_markup_from_the_document(tmp_path):
    from core.exports.html import document_html

    markdown = ('<img src=x onerror=alert(1)> <script>alert(2)</script> [a](javascript:alert(3)) '
                '$\\text{<iframe src=//x>}$ \\(\\href{javascript:alert(4)}{y}\\) \ue0000\ue001\n\n'
                '<table><tr><td onclick="x()" colspan="2; x">cell</td></tr></table>')
    page = document_html(markdown, "<title>")
    body = page.split("<body>", 1)[1]
    for bad in ("<img", "<script", "onerror", "onclick", "<iframe", "href="):
        assert bad not in body, bad
    assert "[a](javascript:alert(3))" in body  # a link that is refused stays text
    assert "&lt;title&gt;" in page and "<td>cell</td>" in body and "\ue000" not in body


def test_docx_reads_back_as_the_markdown_with_word_equations(finished, tmp_path):
    import docx

    document = open_finished(finished)
    [path] = export_documents([finished], ["docx"], tmp_path / "out")
    word = docx.Document(str(path))
    texts = [p.text for p in word.paragraphs]
    for table in word.tables:
        for row in table.rows:
            seen = []
            for cell in row.cells:
                if cell._tc not in seen:  # a merged cell is listed once per column it spans
                    seen.append(cell._tc)
                    texts.append(cell.text)
    # paragraphs come before tables here, so compare the words as multisets
    assert sorted(re.findall(r"\w+", " ".join(texts))) == sorted(markdown_words(document.markdown()))
    body = word.element.body
    assert len(body.findall(f".//{OMML}oMath")) == 3
    assert body.findall(f".//{OMML}f") and body.findall(f".//{OMML}oMathPara")
    styles = {p.style.name for p in word.paragraphs}
    assert {"Heading 1", "Heading 2", "List Bullet"} <= styles
    assert len(word.inline_shapes) == 1  # the figure, embedded


def test_json_has_regions_acceptance_and_departures(finished, tmp_path):
    [path] = export_documents([finished], ["json"], tmp_path / "out")
    data = json.loads(path.read_text("utf-8"))
    assert data["format"] == "hsd-document/1" and [p["page"] for p in data["pages"]] == [1, 2]
    first = data["pages"][0]
    assert [r["label"] for r in first["regions"]] == ["text", "figure", "text"]
    assert first["regions"][0]["acceptance"] == 0.7 and first["regions"][0]["bbox"] == [10, 10, 190, 60]
    assert "review" in first and isinstance(first["review"]["departures"], list)
    assert first["edited"] is False and first["markdown"] == first["model_markdown"]


def test_markdown_export_copies_figures_under_the_new_name(finished, tmp_path):
    [path] = export_documents([finished], ["md"], tmp_path / "out", "{n}-{stem}.{ext}")
    assert path.name == "1-study.md"
    text = path.read_text("utf-8")
    link = re.search(r"!\[[^\]]*\]\(([^)]+)\)", text).group(1)
    assert link.startswith("1-study_images/") and (path.parent / link).is_file()
    assert (path.parent / link).read_bytes() == (finished.parent / "study_images" / link.split("/")[1]).read_bytes()


def test_batch_names_refusals_and_overwrite(tmp_path):
    from core.errors import HSDError
    from tests.core.exports.conftest import make_finished

    a = make_finished(tmp_path / "a", "report")
    b = make_finished(tmp_path / "b", "report")
    out = tmp_path / "out"
    with pytest.raises(HSDError, match=r"would both be written there; add \{n\}"):
        export_documents([a, b], ["html"], out)
    written = export_documents([a, b], ["html", "json"], out, "{parent}-{stem}.{ext}")
    assert sorted(p.name for p in written) == ["a-report.html", "a-report.json", "b-report.html", "b-report.json"]
    before = (out / "a-report.html").read_bytes()
    (out / "b-report.json").write_text("mine")
    with pytest.raises(HSDError, match=r"a-report.html exists \(and 3 more\); pass --overwrite"):
        export_documents([a, b], ["html", "json"], out, "{parent}-{stem}.{ext}")
    assert (out / "b-report.json").read_text() == "mine" and (out / "a-report.html").read_bytes() == before
    export_documents([a, b], ["json"], out, "{parent}-{stem}.{ext}", overwrite=True)
    assert json.loads((out / "b-report.json").read_text())["format"] == "hsd-document/1"
    with pytest.raises(HSDError, match="would replace"):
        export_documents([a], ["md"], None, overwrite=True)  # beside itself, under its own name
    with pytest.raises(HSDError, match="not a field"):
        export_documents([a], ["html"], out, "{nope}.{ext}")
    with pytest.raises(HSDError, match="not a file name"):
        export_documents([a], ["html"], out, "../{stem}")


def test_formats_are_parsed_in_order_and_unknown_ones_named():
    assert parse_formats("json, HTML,markdown") == ["md", "html", "json"]
    with pytest.raises(ValueError, match="pdf is not a format"):
        parse_formats("html,pdf")


def test_edits_are_what_every_export_writes(finished, tmp_path):
    import docx

    from core.edits import PageEdits
    from core.export import work_dir_for

    document = open_finished(finished)
    model = document.model_text(document.results[1])
    PageEdits(work_dir_for(finished)).set(2, model.replace("Discussion", "Corrected heading"), model)
    document = open_finished(finished)
    assert document.edited_pages() == [2]
    html_path, docx_path, json_path = export_documents([finished], ["html", "docx", "json"], tmp_path / "out")
    assert "Corrected heading" in html_path.read_text("utf-8")
    assert any(p.text == "Corrected heading" for p in docx.Document(str(docx_path)).paragraphs)
    page = json.loads(json_path.read_text("utf-8"))["pages"][1]
    assert page["edited"] and "Corrected heading" in page["markdown"] and "Discussion" in page["model_markdown"]


def test_a_markdown_file_without_its_resume_folder_still_exports(tmp_path):
    plain = tmp_path / "notes.md"
    plain.write_text("# Notes\n\nA formula $a^2$.\n")
    [path] = export_documents([plain], ["html"], tmp_path / "out")
    assert "<msup>" in path.read_text("utf-8")
    payload = document_payload(open_finished(plain))
    assert payload["pages"] == [] and payload["markdown"].startswith("# Notes")


def test_formula_trees_are_rebuilt_through_the_whitelist():
    from core.exports.mathml import formula_mathml

    assert formula_mathml("\\frac{a}{") is None
    markup = formula_mathml("\\href{javascript:x}{y} \\text{<i>t</i>}")
    assert "href" not in markup and "<b" not in markup and "<i>" not in markup and ">t<" in markup
