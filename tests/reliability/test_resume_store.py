"""The resume folder (``.NAME.md.hsd/``) is checked, not trusted: a page file copied over another, one
written under other settings or edited by hand is converted again with one warning line, and
whatever is read back goes through the same sanitising as fresh output.

Every case runs ``hsd`` in this process with a tiny model, loaded once (``cli``): each run reads
the resume folder from disk, so a later run knows only what an earlier one saved there.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR


@pytest.fixture(scope="module")
def three_pages(tmp_path_factory):
    """Three pages that look different enough for the tiny model to write different text."""
    import pymupdf

    path = tmp_path_factory.mktemp("store-in") / "doc.pdf"
    doc = pymupdf.open()
    for k, colour in enumerate([(0.9, 0.1, 0.1), (0.1, 0.7, 0.2), (0.1, 0.2, 0.9)]):
        page = doc.new_page(width=420, height=560)
        page.insert_text((40, 60), f"Section {k + 1}: " + "results " * (k + 1), fontsize=16)
        page.draw_rect(pymupdf.Rect(40 + 60 * k, 100, 380, 300 + 80 * k), color=colour, fill=colour)
        page.insert_textbox(pymupdf.Rect(40, 420, 380, 540), (h.TEXT + " ") * (k + 1), fontsize=10)
    doc.save(str(path))
    return path


@pytest.fixture
def convert(cli, model_dir):
    """``convert(pdf, out, *extra)`` -> (exit code, stdout, stderr) of ``hsd convert`` in this process."""
    return lambda pdf, out, *extra: cli("convert", pdf, "-o", out, "--model", model_dir, *FAST_AR, *extra)


def _page_file(out, page: int):
    return out.with_name(f".{out.name}.hsd") / f"page-{page:04d}.json"


def _saved_markdown(out, page: int) -> str:
    return json.loads(_page_file(out, page).read_text("utf-8"))["result"]["markdown"]


def _warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("hsd: warning:")]


def test_a_page_file_copied_over_another_is_converted_again(three_pages, tmp_path, convert):
    out = tmp_path / "doc.md"
    rc, _, err = convert(three_pages, out)
    assert rc == 0, err
    reference = out.read_bytes()
    assert _saved_markdown(out, 1) != _saved_markdown(out, 3), "the pages must differ for this test"
    shutil.copyfile(_page_file(out, 1), _page_file(out, 3))
    rc, _, err = convert(three_pages, out)
    assert rc == 0, err
    assert out.read_bytes() == reference
    warned = _warnings(err)
    assert len(warned) == 1 and "3" in warned[0], err
    assert _saved_markdown(out, 3) != _saved_markdown(out, 1)


def test_a_page_file_written_under_other_settings_is_converted_again(three_pages, tmp_path, convert):
    short, full = tmp_path / "short.md", tmp_path / "full.md"
    assert convert(three_pages, short, "--max-new-tokens", "3")[0] == 0
    rc, _, err = convert(three_pages, full)
    assert rc == 0, err
    reference = full.read_bytes()
    assert _saved_markdown(short, 2) != _saved_markdown(full, 2), "the settings must change page 2"
    shutil.copyfile(_page_file(short, 2), _page_file(full, 2))
    rc, _, err = convert(three_pages, full)
    assert rc == 0, err
    assert full.read_bytes() == reference
    warned = _warnings(err)
    assert len(warned) == 1 and "2" in warned[0], err


def test_an_edited_page_file_is_converted_again(three_pages, tmp_path, convert):
    """Edited figure links (a remote URL, raw HTML) or edited text: redone, never written out."""
    out = tmp_path / "doc.md"
    assert convert(three_pages, out)[0] == 0
    reference = out.read_bytes()
    page1 = _page_file(out, 1)
    data = json.loads(page1.read_text("utf-8"))
    data["figures"] = {"0": "http://127.0.0.1:8765/track.png", "1": "x.png) <img src=x onerror=alert(1)> ("}
    page1.write_text(json.dumps(data), "utf-8")
    page2 = _page_file(out, 2)
    data = json.loads(page2.read_text("utf-8"))
    data["result"]["markdown"] = "forged text"
    page2.write_text(json.dumps(data), "utf-8")
    rc, _, err = convert(three_pages, out)
    assert rc == 0, err
    text = out.read_text("utf-8")
    assert "127.0.0.1" not in text and "<img" not in text and "forged" not in text
    assert out.read_bytes() == reference
    warned = _warnings(err)
    assert len(warned) == 1 and "1" in warned[0] and "2" in warned[0], err


def test_a_page_file_that_verifies_is_still_sanitised(three_pages, tmp_path, convert):
    """Someone who recomputes the checksum gets the page reused, but not past the sanitiser: no
    HTML image, script or foreign link reaches the Markdown, and figure links are our own names."""
    from core import export

    out = tmp_path / "doc.md"
    assert convert(three_pages, out)[0] == 0
    page1 = _page_file(out, 1)
    data = json.loads(page1.read_text("utf-8"))
    data["result"]["markdown"] = ("Hello <img src=http://127.0.0.1:8765/x.png onerror=alert(1)> "
                                  "<script>alert(1)</script> ![t](http://127.0.0.1:8765/y.png)")
    data["figures"] = {"0": "http://127.0.0.1:8765/track.png"}
    if hasattr(export, "page_file_checksum"):
        data["checksum"] = export.page_file_checksum(data)
    page1.write_text(json.dumps(data), "utf-8")
    rc, _, err = convert(three_pages, out)
    assert rc == 0, err
    text = out.read_text("utf-8")
    assert "Hello" in text
    assert "127.0.0.1" not in text and "<img" not in text.lower() and "<script" not in text.lower()
