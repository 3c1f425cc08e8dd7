"""A page of 14,400 pt asked for at 1,200 dpi would be 57,600 pixels square (3.3 gigapixels): every
render of a page stays under ``tuning.MAX_RENDER_PIXELS``, at a lower resolution, with one warning."""

from __future__ import annotations

import warnings

import pymupdf
import pytest

from core import tuning
from core.errors import HSDWarning


def _poster(path, side: float = 14_400):
    doc = pymupdf.open()
    page = doc.new_page(width=side, height=side)
    for i in range(8):
        page.insert_text((400, 1200 + i * 1500), f"Poster line {i} in large type", fontsize=600)
    doc.save(path)
    return path


def test_a_poster_page_renders_under_the_pixel_cap_with_a_warning(tmp_path, monkeypatch):
    from core.documents import open_document

    monkeypatch.setattr(tuning, "MAX_RENDER_PIXELS", 1_000_000)  # the same path, at a small cost
    with open_document(_poster(tmp_path / "poster.pdf")) as doc, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = doc.page(0).render(dpi=1200)
    assert image.width * image.height <= 1_000_000 and image.width > 900
    told = [str(w.message) for w in caught if issubclass(w.category, HSDWarning)]
    assert len(told) == 1 and "rendered at 5 dpi instead of 1200" in told[0], told


def test_an_ordinary_page_renders_as_asked_without_a_word(tmp_path):
    from core.documents import open_document

    with open_document(_poster(tmp_path / "a4.pdf", side=595)) as doc, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = doc.page(0).render(dpi=300)
    assert abs(image.width - 595 * 300 / 72) <= 1
    assert not [w for w in caught if issubclass(w.category, HSDWarning)]
    assert (595 * 600 / 72) ** 2 < tuning.MAX_RENDER_PIXELS  # a page of A4 size at 600 dpi is never capped


def test_draft_with_rapidocr_at_1200_dpi_on_a_poster_page_says_how_it_rendered(cli, tmp_path, monkeypatch):
    """``hsd draft --drafter rapidocr --dpi 1200`` on this page took 5.2 GB; the cap is lowered here so
    that the check costs seconds."""
    pytest.importorskip("rapidocr")
    monkeypatch.setattr(tuning, "MAX_RENDER_PIXELS", 2_000_000)
    rc, out, err = cli("draft", _poster(tmp_path / "poster.pdf"), "--drafter", "rapidocr", "--dpi", "1200",
                       "--json", tmp_path / "d.json")
    assert rc == 0, err
    lines = [line for line in err.splitlines() if "rendered at" in line]
    assert lines and all(line.startswith("hsd: warning: ") and "instead of 1200" in line for line in lines), err
    assert "Poster" in (tmp_path / "d.json").read_text()


def test_the_layout_steps_picture_of_a_poster_page_is_capped_too(monkeypatch):
    """The scan layout step draws the page again at 2 pixels a point (829 megapixels for this page,
    most of the 5.2 GB): it is sized by the same cap."""
    from PIL import Image

    from core.drafters import scan_layout

    try:
        scan_layout.load_model()
    except Exception as exc:  # noqa: BLE001 - the layout package is optional
        pytest.skip(str(exc))
    monkeypatch.setattr(tuning, "MAX_RENDER_PIXELS", 1_000_000)
    doc = scan_layout.text_page(14_400, 14_400, Image.new("RGB", (1000, 1000), "white"), [])
    (xref, *_), = doc[0].get_images(full=True)
    info = doc.extract_image(xref)
    assert info["width"] * info["height"] <= 1_000_000 and info["width"] > 900
