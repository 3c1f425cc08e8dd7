"""Code listings found on scans from where OCR places each character."""

from __future__ import annotations

import pymupdf
import pytest

from core.documents import open_document
from core.drafters.layout import TextLine
from core import tuning
from core.drafters.monospace import mark_monospace, pitch_fit
from core.drafters.rapidocr import RapidOCRDrafter

STEP = 2.5  # CTC reports centres on a grid of time steps; quantise like it


def centres(text: str, widths) -> list[tuple[str, float]]:
    """(character, centre) of ``text`` set with per-character ``widths``, spaces not reported."""
    out, x = [], 0.0
    for char in text:
        w = widths(char)
        if char != " ":
            out.append((char, round((x + w / 2) / STEP) * STEP))
        x += w
    return out


def courier(char):
    return 6.0


HELVETICA = pymupdf.Font("helv")


def helvetica(char):
    return HELVETICA.text_length(char, fontsize=10)


CODE = 'print(tabulate(table, headers, tablefmt="plain"))'
PROSE = "Most answers came from small shops near the river."


def test_a_monospaced_line_lies_on_one_straight_line():
    fit = pitch_fit(CODE, centres(CODE, courier))
    assert fit.pitch == pytest.approx(6.0, rel=0.02)
    assert fit.straight <= tuning.MAX_STRAIGHT_RMS


def test_proportional_text_does_not():
    fit = pitch_fit(PROSE, centres(PROSE, helvetica))
    assert fit.straight > tuning.MAX_STRAIGHT_RMS
    assert fit.per_word >= tuning.MIN_PROSE_WORD_RMS


def test_a_space_misread_by_ocr_spoils_the_straight_fit_but_not_the_per_word_one():
    misread = CODE.replace("print(", "print (")  # OCR saw a space that is not there
    fit = pitch_fit(misread, centres(CODE, courier))
    assert fit.straight > tuning.MAX_STRAIGHT_RMS
    assert fit.per_word < tuning.MIN_PROSE_WORD_RMS


def test_cjk_and_short_lines_get_no_verdict():
    text = "在跨越中西不同的国家民族跨越中西不同的文化"
    assert pitch_fit(text, centres(text, lambda c: 10.0)) is None
    assert pitch_fit("a = 1", centres("a = 1", courier)) is None


def _line(x, y, text, width=None, h=10.0):
    return TextLine((x, y, x + (width if width is not None else 6.0 * len(text) + 4), y + h), text, h / 1.25)


def test_a_listing_takes_its_short_cells_and_joins_each_row():
    prose = _line(10, 0, PROSE, width=260)
    code = _line(10, 16, CODE)  # 6 pt under the prose: a paragraph gap
    cells = [_line(10, 26, "item"), _line(70, 26, "qty"), _line(10, 36, "spam"), _line(76, 36, "42"),
             _line(10, 56, "eggs")]  # one line further down: a rule OCR did not read
    lines = [prose, code, *cells]
    fits = [pitch_fit(ln.text, centres(ln.text, helvetica if ln is prose else courier)) for ln in lines]
    out = mark_monospace(lines, fits)
    mono = sorted((ln for ln in out if ln.mono), key=lambda ln: ln.bbox[1])
    assert [ln.text.split() for ln in mono] == [CODE.split(), ["item", "qty"], ["spam", "42"], ["eggs"]]
    assert mono[1].text == "item" + " " * 6 + "qty"  # "qty" starts at column 10 (60 pt at 6 pt a character)
    assert [ln for ln in out if not ln.mono] == [prose]


def test_the_last_line_of_a_paragraph_stays_prose_above_a_listing():
    prose = _line(10, 0, PROSE, width=260)
    tail = _line(10, 12, "example:", width=40)  # flush under the prose, aligned with the listing
    code = _line(10, 34, CODE)  # one line further down
    fits = [pitch_fit(PROSE, centres(PROSE, helvetica)), None, pitch_fit(CODE, centres(CODE, courier))]
    out = mark_monospace([prose, tail, code], fits)
    assert [ln.text for ln in out if ln.mono] == [CODE]


def test_a_paragraph_line_of_inline_code_is_not_a_listing():
    """scan_orjson p3: a paragraph's middle line held only type names set in code font."""
    inline = "typing.TypedDict, datetime.datetime, datetime.date, uuid.UUID,"
    lines = [_line(10, 0, PROSE, width=260), _line(10, 12, inline), _line(10, 24, PROSE, width=260)]
    fits = [pitch_fit(PROSE, centres(PROSE, helvetica)), pitch_fit(inline, centres(inline, courier)),
            pitch_fit(PROSE, centres(PROSE, helvetica))]
    assert not any(ln.mono for ln in mark_monospace(lines, fits))


def test_no_monospaced_line_leaves_the_lines_as_they_are():
    lines = [_line(10, 0, PROSE, width=260), _line(10, 12, "42")]
    fits = [pitch_fit(PROSE, centres(PROSE, helvetica)), None]
    assert mark_monospace(lines, fits) is lines


def test_ocr_drafts_a_scanned_listing_as_a_code_block(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    page.insert_text((40, 50), "The example below prints a small table:", fontsize=11, fontname="helv")
    listing = [">>> table = [['spam', 42], ['eggs', 451]]", ">>> print(tabulate(table, headers))",
               "item      qty", "spam       42", "eggs      451"]
    for i, text in enumerate(listing):
        page.insert_text((40, 80 + 13 * i), text, fontsize=10, fontname="cour")
    page.insert_text((40, 170), "Every row of the listing stays on its own line.", fontsize=11, fontname="helv")
    page.get_pixmap(dpi=150).save(tmp_path / "page.png")
    with open_document(tmp_path / "page.png") as image_doc:
        regions = RapidOCRDrafter(layout=False).draft(image_doc.page(0))
    labels = [r.label for r in regions]
    assert labels == ["text", "code", "text"], [(r.label, r.text) for r in regions]
    code = regions[1].text.splitlines()
    assert code[0] == code[-1] == "```"
    assert [ln.split()[0] for ln in code[1:-1]] == [">>>", ">>>", "item", "spam", "eggs"]
    assert code[3].split() == ["item", "qty"]
