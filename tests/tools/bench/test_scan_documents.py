"""Multi-page scanned documents bound from the generated scan set (``tools.bench.scan_documents``)."""

from __future__ import annotations

import pymupdf
import pytest

from core.bench.corpus import load_corpus
from tools.bench import scan_documents, scan_set


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("scandocs")
    names = scan_documents.make_scan_documents(out, seed=7, documents=(("slide", 3), ("form", 2)))
    return out, names


def test_each_document_is_the_scan_sets_pages_in_order_at_one_resolution(folder):
    out, names = folder
    assert names == ["slide_doc", "form_doc"]
    with pymupdf.open(out / "pairs" / "slide_doc.pdf") as doc:
        assert doc.page_count == 3
        sizes = set()
        for page in doc:
            assert not page.get_text().strip() and len(page.get_images()) == 1  # image-only: a scan
            xref = page.get_images()[0][0]
            info = doc.extract_image(xref)
            sizes.add((info["width"], info["height"]))
        assert len(sizes) == 1  # one resolution through the document
    pages = [scan_set.make_page("slide", i, seed=7)[3].strip() for i in range(3)]
    assert (out / "pairs" / "slide_doc.md").read_text(encoding="utf-8") == "\n\n".join(pages) + "\n"


def test_the_folder_is_a_benchmark_corpus_of_the_kinds_named(folder):
    out, _ = folder
    docs = load_corpus(out)
    assert [(d.name, d.kind) for d in docs] == [("form_doc", "form"), ("slide_doc", "slide")]
    assert not any(d.problem for d in docs)


def test_the_same_seed_makes_the_same_document():
    assert scan_documents.make_document("slide", 2, seed=3) == scan_documents.make_document("slide", 2, seed=3)


def test_documents_are_parsed_with_one_line_errors():
    assert scan_documents.parse_documents("article1:4, slide:5") == (("article1", 4), ("slide", 5))
    for bad, says in (("poster:3", "unknown kind"), ("slide", "KIND:PAGES"), ("slide:0", "KIND:PAGES"),
                      ("slide:2,slide:3", "named twice"), ("", "no document")):
        with pytest.raises(ValueError, match=says):
            scan_documents.parse_documents(bad)


def test_an_existing_folder_is_not_written_over(folder, capsys):
    out, _ = folder
    before = (out / "pairs" / "slide_doc.pdf").read_bytes()
    with pytest.raises(SystemExit):
        scan_documents.main(["--out", str(out), "--documents", "slide:1"])
    assert "already holds files" in capsys.readouterr().err
    assert (out / "pairs" / "slide_doc.pdf").read_bytes() == before
