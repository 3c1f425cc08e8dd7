"""Sideways and upside-down pages: a landscape slide drawn turned inside a portrait page, the same
slide scanned, a page whose /Rotate turns its text. The text layer drafts each direction of text in
its own frame; ``--rotate auto`` shows the page upright to the model and the drafter, and the
regions are in the coordinates of that image; at tau 1 hsd writes exactly ar's output."""

from __future__ import annotations

import json

import numpy as np
import pymupdf
import pytest

from core.cli import main
from core.documents import open_document
from core.drafters import get_drafter
from core.drafters.orientation import scan_turn, text_turn
from tests.core.drafters.each_mode import convert_in_each_mode

TITLE = "Quarterly results of the northern region"
ITEMS = [f"Item number {i} explains the growth of sales in market {i}" for i in range(5)]


def slide() -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=800, height=450)
    page.insert_text((40, 60), TITLE, fontsize=26)
    for i, item in enumerate(ITEMS):
        page.insert_text((60, 120 + 40 * i), f"- {item}", fontsize=16)
    return doc


def turned_slide(path, rotate: int):
    """The slide drawn turned by ``rotate`` degrees inside a portrait page (as a landscape slide
    printed on a portrait sheet)."""
    out = pymupdf.open()
    page = out.new_page(width=612, height=792)
    where = pymupdf.Rect(6, 200, 606, 560) if rotate == 180 else pymupdf.Rect(36, 36, 576, 756)
    page.show_pdf_page(where, slide(), 0, rotate=rotate)
    out.save(path)
    return path


def _texts(regions) -> list[str]:
    return [" ".join(r.text.replace("#", "").replace("- ", "").split()) for r in regions]


def _words(regions) -> list[str]:
    return " ".join(_texts(regions)).split()


@pytest.mark.parametrize("rotate", [90, 180, 270])
@pytest.mark.parametrize("mode", ["auto", "off"])
def test_a_turned_slide_is_drafted_in_its_own_frame(tmp_path, rotate, mode):
    pdf = turned_slide(tmp_path / "slide.pdf", rotate)
    upright = slide()
    want = _words(get_drafter("textlayer").draft(upright[0]))
    with open_document(pdf, rotate=mode) as doc:
        page = doc.page(0)
        regions = get_drafter("textlayer").draft(page)
        assert _words(regions) == want  # every line, in the slide's own reading order
        assert regions[0].label == "title"
        if mode == "auto":
            assert page.turn == rotate and (page.width > page.height) == (rotate != 180)
            assert all("turn" not in r.extra for r in regions)  # upright in the model's image
        else:
            assert page.turn == 0 and all(r.extra.get("turn") for r in regions)
        image = np.asarray(page.render(dpi=72).convert("L"))
        scale = image.shape[1] / page.width
        for region in regions:  # each box holds its ink, in the image the model sees
            x0, y0, x1, y1 = (int(v * scale) for v in region.bbox)
            assert x1 <= image.shape[1] + 1 and y1 <= image.shape[0] + 1
            assert (image[y0:y1 + 1, x0:x1 + 1] < 128).sum() > 20


def test_an_upright_page_is_not_turned_and_drafts_as_before(report_pdf):
    with open_document(report_pdf, rotate="auto") as doc, open_document(report_pdf, rotate="off") as off:
        assert doc.page(0).turn == 0
        auto_regions = get_drafter("textlayer").draft(doc.page(0))
        assert [r.to_dict() for r in auto_regions] == [r.to_dict() for r in get_drafter("textlayer").draft(off.page(0))]


def test_a_margin_stamp_stays_out_and_a_sideways_table_comes_in(tmp_path):
    """Upright body text with a short vertical stamp in the margin (arXiv's): the stamp is left
    out as before. With as much text running sideways (a table set across the page), that text
    is drafted in its own frame, after the page's own; the page is not turned (no direction
    holds most of the text)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    body = "The body of the paper runs across the page in the usual way. " * 6
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 300), body, fontsize=11)
    page.insert_text((30, 600), "arXiv:2401.00001v1 [cs.CL] 1 Jan 2024", fontsize=12, rotate=90)
    doc.save(tmp_path / "stamp.pdf")
    with open_document(tmp_path / "stamp.pdf", rotate="auto") as opened:
        regions = get_drafter("textlayer").draft(opened.page(0))
        assert opened.page(0).turn == 0
        assert not any("arXiv" in r.text for r in regions)
    sideways = "Sideways column of a wide table with numbers 12 34 56 and more words here"
    for i in range(6):
        page.insert_text((330 + 22 * i, 800), sideways, fontsize=10, rotate=90)
    doc.save(tmp_path / "table.pdf")
    with open_document(tmp_path / "table.pdf", rotate="auto") as opened:
        page = opened.page(0)
        assert text_turn(page.fitz_page) == 0
        regions = get_drafter("textlayer").draft(page)
        turned = [r for r in regions if r.extra.get("turn")]
        assert turned and all(r.extra["turn"] == 90 for r in turned)
        assert sum(r.text.count("Sideways column") for r in turned) == 6


def test_a_page_rotated_by_its_rotate_key_turns_upright(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 300), "Text set upright on the page, shown turned. " * 8, fontsize=11)
    page.set_rotation(90)
    doc.save(tmp_path / "rotated.pdf")
    with open_document(tmp_path / "rotated.pdf", rotate="auto") as opened:
        page = opened.page(0)
        assert page.turn == 270 and page.width < page.height  # back to the portrait page it was set on
        regions = get_drafter("textlayer").draft(page)
        assert regions and regions[0].bbox[0] >= 60 and regions[0].bbox[1] >= 60
        assert all("turn" not in r.extra for r in regions)


def test_hsd_draft_says_the_turn_and_the_step(tmp_path, capsys):
    pdf = turned_slide(tmp_path / "slide.pdf", 90)
    assert main(["draft", str(pdf), "--json", "-"]) == 0
    record = json.loads(capsys.readouterr().out)["pages"][0]
    assert record["turn"] == 90 and record["step"] == "textlayer" and record["width"] > record["height"]
    assert main(["draft", str(pdf), "--rotate", "off"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("drafter=textlayer step=textlayer regions=2") and "turn=" not in header


def _scan(path, rotate: int):
    """The turned slide as a scan: a grey JPEG of it, no text layer."""
    src = turned_slide(path.with_suffix(".src.pdf"), rotate) if rotate else None
    page = pymupdf.open(src)[0] if src else slide()[0]
    pix = page.get_pixmap(dpi=120, colorspace=pymupdf.csGRAY)
    out = pymupdf.open()
    target = out.new_page(width=page.rect.width, height=page.rect.height)
    target.insert_image(target.rect, stream=pix.tobytes("jpeg"))
    out.save(path)
    return path


@pytest.mark.parametrize("rotate", [0, 90, 180, 270])
def test_ocr_finds_a_scan_s_turn(tmp_path, rotate):
    pytest.importorskip("rapidocr")
    pdf = _scan(tmp_path / "scan.pdf", rotate)
    with open_document(pdf, rotate="off") as doc:
        page = doc.page(0)
        assert not page.is_born_digital and scan_turn(page) == rotate
    with open_document(pdf, rotate="auto") as doc:
        assert doc.page(0).turn == rotate


def test_ocr_drafts_a_sideways_scan_turned_back_under_rotate_off(tmp_path):
    """Under ``--rotate off`` the model sees the page as drawn; OCR reads the scan turned upright
    and its regions are turned back onto the page as drawn."""
    pytest.importorskip("rapidocr")
    with open_document(_scan(tmp_path / "scan.pdf", 90), rotate="off") as doc:
        page = doc.page(0)
        regions = get_drafter("auto").draft(page)
        words = " ".join(r.text for r in regions)
        assert "northern region" in words and "market 3" in words
        assert all(r.extra.get("turn") == 90 for r in regions)
        assert all(0 <= r.bbox[0] < r.bbox[2] <= page.width + 1 and 0 <= r.bbox[1] < r.bbox[3] <= page.height + 1
                   for r in regions)
        title = next(r for r in regions if "northern" in r.text)
        assert title.bbox[3] - title.bbox[1] > title.bbox[2] - title.bbox[0]  # a line running up the page


# --- at tau 1, hsd writes exactly ar's output on a turned page -----------------------------------


@pytest.mark.usefixtures("shared_model_loads")
def test_hsd_is_lossless_on_a_turned_page(tmp_path, tiny_target_dir):
    model = str(tiny_target_dir("qwen2_5_vl"))
    pdf = turned_slide(tmp_path / "slide.pdf", 90)
    outputs, stats = convert_in_each_mode(pdf, model, tmp_path)
    for mode, record in stats.items():
        page = record["pages"][0]
        assert page["width"] > page["height"]  # the model saw the slide upright (landscape)
        if mode == "hsd":
            assert page["regions"] and page["regions"][0]["bbox"][2] <= page["width"] + 1
    assert outputs["ar"] == outputs["hsd"] == outputs["page"]
