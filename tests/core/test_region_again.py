"""Convert one region again: the crop read with the family's request, lossless at tau = 1 (the
reading is the target's greedy output on the crop), put in the region's place in the page's
Markdown and kept as an edit that stays; a region whose text is not found changes nothing.

Counted, never timed. Tiny random models of real families, loaded through the user's path."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from core.drafters.base import Region
from core.edits import PageEdits
from core.engine import Engine, EngineConfig
from core.errors import HSDError
from core.region_again import (RegionAgainRequest, RegionReading, convert_region_again, fitted, place_reading,
                               read_region, region_ranges, region_request, region_span)
from core.results import PageResult, PageStats, TextSpan
from core.review import review_page
from core.targets.profiles import get_profile

MAX_NEW = 40
PAGE_W, PAGE_H = 300.0, 390.0
#: A HunyuanOCR page (its own region prompts), a Qwen3-VL page (read with its page prompt), and an
#: element-level PaddleOCR-VL page.
ARCHS = ["hunyuan_vl", "qwen3_vl", "paddleocr_vl"]


def _result(markdown: str, regions: list[Region], spans=(), page: int = 1, width=PAGE_W, height=PAGE_H) -> PageResult:
    return PageResult(page=page, width=width, height=height, markdown=markdown, regions=regions, region_stats=[],
                      region_outputs=[""] * len(regions), spans=list(spans), stats=PageStats(mode="hsd"))


def _reading(index: int, text: str, page: int = 1) -> RegionReading:
    return RegionReading(page=page, region=index, label="text", text=text, request="test")


# -- the request a crop is read with ------------------------------------------------------------------


def test_each_family_reads_a_region_with_its_own_request_else_its_page_request():
    hunyuan, qwen3, qwen25 = get_profile("hunyuan_vl"), get_profile("qwen3_vl"), get_profile("qwen2_5_vl")
    assert region_request(hunyuan, "text") == ("region", hunyuan.text_prompt)
    assert region_request(hunyuan, "table") == ("region", hunyuan.table_prompt)
    # Qwen's model cards ask for no single region: the crop is read as a page, written as its pages are
    assert region_request(qwen3, "text") == ("page", "qwenvl markdown")
    assert region_request(qwen25, "formula") == ("page", "QwenVL HTML")
    for family in ("paddleocr_vl", "glm_ocr"):
        profile = get_profile(family)
        assert region_request(profile, "formula") == ("region", profile.formula_prompt)
        assert region_request(profile, "table") == ("region", profile.table_prompt)


# -- reading: lossless on the real families -----------------------------------------------------------

_GREEDY: dict = {}
LAYOUT = [Region("title", (10, 10, 290, 40), "Line 0: speculative decoding", "rapidocr"),
          Region("text", (10, 50, 290, 150), "Line 1: speculative decoding of a test page", "rapidocr"),
          Region("figure", (10, 310, 290, 380), "", "rapidocr")]


@pytest.fixture(params=ARCHS)
def family(request, lined_page_ar):
    """(target, page image, the page's ar result, the region's ar reading), built once per family."""
    arch = request.param
    target, image, page = lined_page_ar(arch, LAYOUT, MAX_NEW, (PAGE_W, PAGE_H))
    if arch not in _GREEDY:
        greedy = read_region(Engine(EngineConfig(mode="ar", max_new_tokens=MAX_NEW), target=target), image, page, 1)
        assert len(set(greedy.tokens)) > 10, "degenerate model: a lossless test would prove nothing"
        _GREEDY[arch] = greedy
    return target, image, page, _GREEDY[arch]


def _with_draft(result: PageResult, index: int, text: str) -> PageResult:
    regions = list(result.regions)
    regions[index] = replace(regions[index], text=text)
    return replace(result, regions=regions)


def _corrupt(target, tokens: list[int], rate: float) -> str:
    rng = random.Random(7)
    kept = [t if rng.random() > rate else rng.randrange(300, 4000) for t in tokens if rng.random() > rate / 2]
    return target.decode(kept)


@pytest.mark.parametrize("draft", ["exact", "corrupt", "drafter"])
def test_the_reading_is_the_greedy_reading_of_the_crop_whatever_the_draft(family, draft):
    target, image, page, greedy = family
    text = {"exact": target.decode(greedy.tokens), "corrupt": _corrupt(target, greedy.tokens, 0.3),
            "drafter": LAYOUT[1].text}[draft]
    engine = Engine(EngineConfig(mode="hsd", tau=1.0, max_new_tokens=MAX_NEW), target=target)
    reading = read_region(engine, image, _with_draft(page, 1, text), 1)
    assert reading.tokens == greedy.tokens and reading.text == greedy.text
    assert reading.stop_reason == greedy.stop_reason and reading.drafted_tokens > 0
    if draft == "exact":
        assert reading.accepted_tokens > len(greedy.tokens) // 2
        assert reading.forward_passes < greedy.forward_passes


def test_the_fast_engine_reads_the_region_as_the_eager_one(family, monkeypatch):
    from core.targets.fast_pass import FastPasses

    target, image, page, greedy = family
    fast = FastPasses(target, 4096, (1, 16, 64, 128), compiled=False)
    monkeypatch.setitem(vars(target), "fast_passes", fast)  # uncompiled: the session's target is shared
    engine = Engine(EngineConfig(mode="hsd", tau=1.0, max_new_tokens=MAX_NEW), target=target)
    reading = read_region(engine, image, _with_draft(page, 1, _corrupt(target, greedy.tokens, 0.3)), 1)
    assert reading.tokens == greedy.tokens and fast.shapes  # the one row went through the static cache


def test_an_element_level_family_reads_the_region_as_its_page_did(family):
    target, _image, page, greedy = family
    if not target.profile.element_level:
        pytest.skip("a page-level family reads the page whole")
    assert target.decode(greedy.tokens) == page.region_outputs[1]


def test_a_figure_or_a_missing_region_is_refused_in_one_line(family):
    target, image, page, _ = family
    engine = Engine(EngineConfig(mode="hsd", max_new_tokens=MAX_NEW), target=target)
    with pytest.raises(HSDError, match="figure: it has no text"):
        read_region(engine, image, page, 2)
    with pytest.raises(HSDError, match="no region 9"):
        read_region(engine, image, page, 8)


# -- where the reading goes ----------------------------------------------------------------------------

PAGE = ("# Results of page 1\n\nLine 0: speculative decoding verifies drafts. Line 1: it keeps the model's "
        "output.\n\nA second paragraph closes the page.")
REGIONS = [Region("title", (36, 40, 300, 60), "Results of page 1", "textlayer"),
           Region("text", (36, 90, 300, 140), "Line 0: speculative decoding verifies drafts. Line 1: it keeps "
                                              "the model's output.", "textlayer"),
           Region("text", (36, 190, 300, 210), "A second paragraph closes the page.", "textlayer")]


def test_the_reading_replaces_its_region_and_nothing_else():
    result = _result(PAGE, REGIONS)
    placed = place_reading(result, PAGE, _reading(1, "Line 0: speculative decoding verifies every draft."))
    assert placed.placed and placed.text == PAGE.replace(
        "Line 0: speculative decoding verifies drafts. Line 1: it keeps the model's output.",
        "Line 0: speculative decoding verifies every draft.")
    assert "replaced" in placed.note and "\n" not in placed.note


def test_a_heading_keeps_its_mark_and_a_formula_its_delimiters():
    result = _result(PAGE, REGIONS)
    assert place_reading(result, PAGE, _reading(0, "Results of page one")).text.startswith("# Results of page one\n\n")
    assert place_reading(result, PAGE, _reading(0, "## Results")).text.startswith("## Results\n\n")
    assert fitted("$$\nE = mc^2\n$$", "E = m c^{2}") == "$$\nE = m c^{2}\n$$"
    assert fitted("\\[E\\]", "$$E$$") == "$$E$$"
    assert fitted("- first item", "first item, read again") == "- first item, read again"


def test_a_region_the_alignment_misses_is_found_by_the_engines_span():
    formula = "$$\n\\int_0^1 x\\,dx\n$$"
    text = f"Some words first.\n\n{formula}\n\nAnd after."
    regions = [Region("text", (0, 0, 10, 10), "Some words first.", "ocr"),
               Region("formula", (0, 20, 10, 30), "", "ocr"), Region("text", (0, 40, 10, 50), "And after.", "ocr")]
    start = text.index(formula)
    result = _result(text, regions, [TextSpan(1, start, start + len(formula))])
    assert region_span(result, text, 1) == (start, start + len(formula))
    placed = place_reading(result, text, _reading(1, "\\int_{0}^{1} x \\, d x"))
    assert placed.text == "Some words first.\n\n$$\n\\int_{0}^{1} x \\, d x\n$$\n\nAnd after."
    # the alignment gives the formula's LaTeX (no word of any draft) to the paragraph above it; the
    # formula's own span keeps it out of the paragraph's stretch, so reading that again keeps the formula
    assert any(s <= start < e for r, s, e in review_page(result, text).region_spans if r == 0)
    assert region_span(result, text, 0) == (0, len("Some words first."))
    placed = place_reading(result, text, _reading(0, "Some words come first."))
    assert placed.text == f"Some words come first.\n\n{formula}\n\nAnd after."


def test_a_page_without_blank_lines_is_placed_by_lines():
    text = "Results of page 1\nLine 0: speculative decoding verifies drafts.\nA second paragraph closes the page."
    regions = [Region("title", (0, 0, 1, 1), "Results of page 1", "t"),
               Region("text", (0, 2, 1, 3), "Line 0: speculative decoding verifies drafts.", "t"),
               Region("text", (0, 4, 1, 5), "A second paragraph closes the page.", "t")]
    placed = place_reading(_result(text, regions), text, _reading(1, "Line 0 read again."))
    assert placed.text == "Results of page 1\nLine 0 read again.\nA second paragraph closes the page."


def test_a_region_whose_text_is_not_found_changes_nothing():
    regions = REGIONS + [Region("text", (36, 300, 300, 320), "Quarterly revenue grew by twelve percent", "ocr")]
    placed = place_reading(_result(PAGE, regions), PAGE, _reading(3, "Quarterly revenue grew by 12 percent"))
    assert not placed.placed and placed.text is None and placed.span is None
    assert "not found in the page's Markdown" in placed.note and "unchanged" in placed.note
    empty = place_reading(_result(PAGE, REGIONS), PAGE, _reading(1, "  "))
    assert not empty.placed and "read nothing" in empty.note


def _copies_page(text: str | None = None):
    """Three regions without drafts (the engine's spans only), the first and last the same word."""
    model = "Total\n\nSome words here.\n\nTotal"
    regions = [Region("text", (0, 10 * i, 1, 10 * i + 5), "", "ocr") for i in range(3)]
    return _result(model, regions, [TextSpan(0, 0, 5), TextSpan(1, 7, 23), TextSpan(2, 25, 30)]), text or model


def test_text_that_occurs_twice_goes_to_the_copy_each_region_wrote():
    result, text = _copies_page()
    assert [region_span(result, text, i) for i in range(3)] == [(0, 5), (7, 23), (25, 30)]
    placed = place_reading(result, text, _reading(2, "Grand total"))
    assert placed.text == "Total\n\nSome words here.\n\nGrand total"
    # the user's edit wrote a third copy: which is whose is no longer known, and nothing is replaced
    result, text = _copies_page("Total\n\nSome words here.\n\nTotal\n\nTotal")
    assert region_span(result, text, 0) is None and region_span(result, text, 2) is None
    placed = place_reading(result, text, _reading(2, "Grand total"))
    assert not placed.placed and "not found in the page's Markdown" in placed.note and "\n" not in placed.note
    assert region_span(result, text, 1) == (7, 23)  # a copy it holds as often as the model wrote it


def test_two_regions_written_as_one_paragraph_each_keep_their_words():
    text = "Alpha beta gamma. Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron."
    regions = [Region("text", (0, 0, 1, 1), "Alpha beta gamma.", "t"),
               Region("text", (0, 2, 1, 3), "Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron.", "t")]
    assert region_span(_result(text, regions), text, 0) == (0, len("Alpha beta gamma."))
    placed = place_reading(_result(text, regions), text, _reading(0, "Alpha, beta and gamma."))
    assert placed.text == "Alpha, beta and gamma. Delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron."
    # the region that wrote most of the paragraph does not take the other's words with it
    placed = place_reading(_result(text, regions), text, _reading(1, "Delta and the rest."))
    assert placed.text == "Alpha beta gamma. Delta and the rest."


def test_a_stray_word_of_a_draft_is_no_stretch_to_replace():
    text = PAGE + " Quarterly."
    regions = REGIONS + [Region("text", (36, 300, 300, 320), "Quarterly revenue grew by twelve percent over the year",
                                "ocr")]
    result = _result(text, regions)
    assert region_ranges(result, text, 3) == [(text.index("Quarterly"), len(text) - 1)]  # its one word ...
    placed = place_reading(result, text, _reading(3, "Quarterly revenue grew by 12 percent over the year"))
    assert not placed.placed and placed.span is None  # ... is no stretch: another region's text stays


def test_a_partly_rejected_draft_and_an_edited_page_keep_the_regions_stretch():
    rewritten = PAGE.replace("verifies drafts", "checks each of the drafts it is given")
    result = _result(rewritten, REGIONS)
    paragraph = ("Line 0: speculative decoding checks each of the drafts it is given. Line 1: it keeps the model's "
                 "output.")
    start = rewritten.index(paragraph)
    assert region_span(result, rewritten, 1) == (start, start + len(paragraph))
    # the user's own paragraph above it and their correction inside it move nothing else
    edited = rewritten.replace("# Results of page 1", "# Results of page 1\n\nMy own note.").replace("keeps", "kept")
    span = region_span(result, edited, 1)
    assert edited[slice(*span)] == paragraph.replace("keeps", "kept")
    review = review_page(result, edited)
    assert region_span(result, edited, 1, review) == span  # the caller's review of the same text: the same span


# -- the whole step: a document's page, an edit that stays -------------------------------------------------


def _pdf(path):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=360, height=460)
    page.insert_text((36, 56), "Results of page 1", fontsize=18)
    page.insert_text((36, 100), "Line 0: speculative decoding verifies drafts.", fontsize=10)
    page.insert_text((36, 116), "Line 1: it keeps the model's output.", fontsize=10)
    page.insert_text((36, 200), "A second paragraph closes the page.", fontsize=10)
    doc.save(str(path))
    doc.close()
    return path


def test_converting_a_region_again_keeps_the_new_page_as_an_edit(tmp_path, tiny_target):
    from core.documents import open_document
    from core.export import page_markdown

    pdf = _pdf(tmp_path / "doc.pdf")
    regions = [replace(r, bbox=b) for r, b in zip(REGIONS, [(36, 38, 300, 60), (36, 90, 300, 120),
                                                            (36, 190, 300, 204)])]
    result = _result(PAGE, regions, width=360.0, height=460.0)
    engine = Engine(EngineConfig(mode="hsd", tau=1.0, max_new_tokens=MAX_NEW, dpi=72), target=tiny_target("hunyuan_vl"))
    edits = PageEdits(tmp_path / "work")
    done = convert_region_again(RegionAgainRequest(pdf, result, 1), engine, edits)
    with open_document(pdf) as document:  # the page as a conversion renders it
        expected = read_region(engine, document.page(0).render(72), result, 1)
    assert done.reading.tokens == expected.tokens and done.kept and done.placement.placed
    new = done.placement.text
    assert new.startswith("# Results of page 1\n\n") and new.endswith("\n\nA second paragraph closes the page.")
    assert expected.text in new and "Line 1: it keeps" not in new
    # the edit stays: read back from its folder, what the page shows and exports; dropped, the model's again
    again = PageEdits(tmp_path / "work")
    model = page_markdown(result)
    assert again.text_of(1, model) == new and again.pages() == [1]
    again.discard([1])
    assert PageEdits(tmp_path / "work").text_of(1, model) == model

    # on a page the user edited already, their edit stays around the region's new reading
    mine = PAGE.replace("A second paragraph", "My corrected paragraph")
    edits = PageEdits(tmp_path / "work")
    edits.set(1, mine, model)
    done = convert_region_again(RegionAgainRequest(pdf, result, 1), engine, edits)
    assert done.kept and edits.text_of(1, model).endswith("My corrected paragraph closes the page.")
    assert expected.text in edits.text_of(1, model)


def test_a_region_not_found_keeps_the_page_and_its_edits_as_they_were(tmp_path, tiny_target):
    pdf = _pdf(tmp_path / "doc.pdf")
    regions = REGIONS + [Region("text", (36, 300, 300, 320), "Quarterly revenue grew by twelve percent", "ocr")]
    result = _result(PAGE, regions, width=360.0, height=460.0)
    engine = Engine(EngineConfig(mode="hsd", max_new_tokens=MAX_NEW, dpi=72), target=tiny_target("hunyuan_vl"))
    edits = PageEdits(tmp_path / "work")
    done = convert_region_again(RegionAgainRequest(pdf, result, 3), engine, edits)
    assert not done.kept and not done.placement.placed and not edits and not edits.path.exists()
    with pytest.raises(HSDError, match="not the page that was converted"):
        convert_region_again(RegionAgainRequest(pdf, replace(result, width=500.0), 1), engine, edits)
