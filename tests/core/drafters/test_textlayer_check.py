"""The text layer checked before it is trusted (``core.drafters.textlayer_check``): broken
encodings, scrambled order and hidden text are found region by region, sound pages pass, a failing
region is drafted by OCR of its crop, an unsure one carries OCR's draft beside its own, ``hsd
draft`` says which source drafted each region and why, and at tau 1 hsd writes exactly ar's output
on a page with a broken text layer."""

from __future__ import annotations

import json
import random

import pymupdf
import pytest

from tools.bench.broken_layers import (image_with_layer, make_broken_page, ocr_noise, shifted_map, substituted_map,
                                      text_lines, with_wrong_maps)
from core import tuning
from core.cli import main
from core.documents import open_document
from core.drafters import textlayer_check as tc
from core.drafters.base import DrafterBase, Region
from core.drafters.layout import TextLine
from core.drafters.textlayer import TextLayerDrafter
from tests.core.drafters.each_mode import convert_in_each_mode

PARAGRAPHS = [
    "The review extended that the statistical samples of the northern district had been reduced with "
    "the average method, and the framework announced that the annual index had been revised.",
    "According to the local committee, the archive was examined during the regional period and the "
    "council published its final report on the harbour and the railway in the following spring.",
]


def typeset(path=None) -> bytes:
    """A page of two paragraphs under a heading, set with fonts that carry a ToUnicode map."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    body = "".join(f"<p>{p}</p>" for p in PARAGRAPHS)
    page.insert_htmlbox(pymupdf.Rect(60, 60, 535, 700), f"<h2>Annual Review of the District</h2>{body}",
                        css="* {font-family: sans-serif; font-size: 11pt;}")
    data = doc.tobytes()
    if path is not None:
        path.write_bytes(data)
    return data


def regions_of(pdf: bytes):
    doc = pymupdf.open("pdf", pdf)
    page = doc[0]
    return page, TextLayerDrafter().draft(page)


# --- the letter-pair model -------------------------------------------------------------------------


def test_prose_costs_little_and_a_shifted_alphabet_much():
    english = tc.letter_pair_cost(PARAGRAPHS[0])[0]
    german = tc.letter_pair_cost("Die Verwaltung des Bezirks hat den Bericht geprüft und veröffentlicht")[0]
    shifted = tc.letter_pair_cost("Sgd qduhdv dwsdmcdc sg‘s sgd rs‘shrshb‘k r‘lokdr")[0]
    assert english < tuning.TEXT_CHECK_UNSURE_COST and german < tuning.TEXT_CHECK_UNSURE_COST
    assert shifted >= tuning.TEXT_CHECK_BROKEN_COST
    assert tc.alphabet_shift("Sgd qduhdv dwsdmcdc sg‘s sgd rs‘shrshb‘k r‘lokdr") == 1
    assert tc.alphabet_shift(PARAGRAPHS[0]) is None


def test_the_model_table_is_what_its_builder_makes_of_its_shape():
    table = tc.letter_pair_table({"a": "the cat sat on the mat", "b": "der hund lief"})
    assert len(table) == 27 * 27 and all(c in "0123456789abcdef" for c in table)
    assert len(tc._PAIR_BITS) == 27 * 27


@pytest.mark.parametrize("text, reason", [
    ("The \ue001\ue002\ue003 review of the \ue004\ue005 district was published in the spring", "Unicode map"),
    ("The (cid:12)(cid:14) review (cid:3) of the district was published in the following spring", "Unicode map"),
    ("TThhee rreevviieeww eexxtteennddeedd tthhaatt tthhee ssttaattiissttiiccaall ssaammpplleess", "twice"),
    ("Pkg jgiwgb gnpgdsgs pkop pkg zpopwzpwxoc zovlcgz rf pkg drjpkgjd swzpjwxp kos aggd jgsqxgs", "words"),
    ("Thereviewextendedthatthestatisticalsamplesofthenortherndistricthadbeenreduced quickly", "run together"),
])
def test_broken_text_is_named(text, reason):
    verdict = tc.judge_text(tc.text_signs(text), text=text)
    assert verdict.state == tc.BROKEN and reason in verdict.reason


def test_a_poor_ocr_layer_is_doubted_and_a_clean_one_is_not():
    noisy = ocr_noise(PARAGRAPHS[0] + " " + PARAGRAPHS[1], 0.2, random.Random(3))
    assert tc.judge_text(tc.text_signs(noisy), ocr_layer=True, text=noisy).state != tc.SOUND
    clean = PARAGRAPHS[0]
    assert tc.judge_text(tc.text_signs(clean), ocr_layer=True, text=clean).state == tc.SOUND


def test_letters_of_a_script_the_page_does_not_write_are_doubted():
    page_scripts = tc.text_signs(" ".join(PARAGRAPHS)).scripts
    text = "Отчёт о годовом обзоре района был опубликован весной"
    verdict = tc.judge_text(tc.text_signs(text), page_scripts=page_scripts, text=text)
    assert verdict.state == tc.BROKEN and "cyrillic" in verdict.reason


def test_short_and_non_prose_regions_are_not_judged_by_language():
    assert tc.judge_text(tc.text_signs("Xqz vbn"), text="Xqz vbn").state == tc.SOUND
    code = "xqzv = vbnm(qwrt, zxcv) + kjhg * lkjh_mnbv(pqrs) - wxyz / bcdf(ghjk, lmnp)"
    assert tc.judge_text(tc.text_signs(code), label="code", text=code).state == tc.SOUND


# --- pages -----------------------------------------------------------------------------------------


def test_a_sound_page_passes():
    page, regions = regions_of(typeset())
    assert regions and all(v.state == tc.SOUND for v in tc.check_regions(page, regions))


@pytest.mark.parametrize("remap", [shifted_map, lambda e: substituted_map(e, random.Random(1))])
def test_a_font_with_a_wrong_unicode_map_fails_the_page(remap):
    page, regions = regions_of(with_wrong_maps(typeset(), remap))
    verdicts = tc.check_regions(page, regions)
    assert sum(v.state == tc.BROKEN for v in verdicts) >= 2
    assert tc.page_verdict(regions, verdicts).state == tc.BROKEN


def test_a_poor_ocr_layer_over_a_scan_sends_the_page_to_ocr_and_an_exact_one_does_not():
    born = typeset()
    rng = random.Random(2)
    lines = text_lines(born)
    for rate, state in ((0.25, tc.BROKEN), (0.0, tc.SOUND)):
        layer = [(o, s, ocr_noise(t, rate, rng)) for o, s, t, _ in lines]
        page, regions = regions_of(image_with_layer(born, layer, dpi=100))
        spans = tc.page_spans(page)
        assert all(s.over_image and not s.hidden for s in spans)
        assert tc.page_verdict(regions, tc.check_regions(page, regions, spans), ocr_layer=True).state == state


def test_invisible_and_white_text_over_nothing_is_hidden():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, 80), PARAGRAPHS[0][:80], fontsize=10)
    page.insert_text((60, 300), "Hidden instructions that no reader of the page can ever see", render_mode=3)
    page.insert_text((60, 500), "White words written on the white paper of this page", color=(1, 1, 1))
    page.draw_rect(pymupdf.Rect(50, 680, 500, 720), fill=(0, 0, 0.3))
    page.insert_text((60, 705), "White words on a dark band that everyone can read", color=(1, 1, 1))
    regions = TextLayerDrafter().draft(page)
    verdicts = tc.check_regions(page, regions)

    def said(words):
        return next(v for r, v in zip(regions, verdicts) if words in r.text)
    assert said("Hidden").state == tc.BROKEN and "invisible" in said("Hidden").reason
    assert said("white paper").state == tc.BROKEN and "white on white" in said("white paper").reason
    assert said("The review").state == tc.SOUND
    assert said("dark band").state == tc.SOUND


def test_text_outside_the_displayed_page_is_never_drafted():
    """MuPDF keeps only the glyphs inside the displayed page; a span the check is told of outside it
    fails its region."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 80), PARAGRAPHS[0][:80], fontsize=10)
    page.insert_text((60, 820), "Words printed in the trimmed margin of the sheet", fontsize=10)
    page.set_cropbox(pymupdf.Rect(0, 0, 595, 700))
    regions = TextLayerDrafter().draft(page)
    assert regions and not any("trimmed" in r.text for r in regions)
    assert not any(s.off_page for s in tc.page_spans(page))
    region = Region("text", (60, 690, 400, 710), "Words printed in the trimmed margin of the sheet", "textlayer")
    off = [tc.Span((60, 695, 400, 708), 40, False, False, True, 1, region.text)]
    assert tc.check_regions(page, [region], off)[0].reason.startswith("text outside")


def test_interleaved_glyph_runs_over_each_other_are_out_of_order():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((60, 100), "AMultilingual Pierrversity", fontsize=12)
    page.insert_text((62, 100.5), "MannyRayner rueb1orm Geneve", fontsize=12)
    regions = [Region("text", (55, 85, 300, 105), "AMultilingual Pierrversity MannyRayner rueb1orm Geneve",
                      "textlayer")]
    assert "over each other" in tc.check_regions(page, regions)[0].reason


# --- the drafter: OCR where the text layer fails ---------------------------------------------------


class FakeOcr(DrafterBase):
    """Stands in for ``RapidOCRDrafter``: reads every crop as one line of ``text``."""

    name = "rapidocr"

    def __init__(self, text: str = "OCR reads the crop"):
        self.text, self.crops, self.pages = text, 0, 0

    def ocr_dpi(self, page):
        return 72.0

    def ocr_lines(self, pixels, scale):
        self.crops += 1
        height, width = pixels.shape[:2]
        return [TextLine((2, 2, width / scale - 2, 14), self.text, 10.0, False, 0)], []

    def draft(self, page):
        self.pages += 1
        return [Region("text", (0, 0, 100, 20), self.text, self.name)]


def test_a_failing_page_is_drafted_by_ocr_and_says_why():
    ocr = FakeOcr()
    with _document(with_wrong_maps(typeset(), shifted_map)) as doc:
        regions = tc.CheckedTextLayer(ocr=lambda: ocr).draft(doc.page(0))
    assert ocr.pages == 1 and regions[0].source == "rapidocr"
    assert "alphabet shifted" in regions[0].extra["source_reason"]


def test_a_sound_page_never_calls_ocr():
    def no_ocr():
        raise AssertionError("OCR was asked for on a sound page")
    with _document(typeset()) as doc:
        regions = tc.CheckedTextLayer(ocr=no_ocr).draft(doc.page(0))
    assert regions and all(r.extra["source_reason"] == tc.TEXT_LAYER_REASON for r in regions)


def test_one_failing_region_is_read_on_its_crop_and_an_unsure_one_gets_a_second_draft(tmp_path):
    pdf = pymupdf.open("pdf", typeset())
    page = pdf[0]
    page.insert_text((60, 760), "Pkg jgiwgb gnpgdsgs pkop pkg zpopwzpwxoc zovlcgz rf pkg drjpkgjd", fontsize=9)
    path = tmp_path / "one.pdf"
    pdf.save(path)
    ocr = FakeOcr("The review extended")
    with open_document(path) as doc:
        regions = tc.CheckedTextLayer(ocr=lambda: ocr).draft(doc.page(0))
    broken = [r for r in regions if r.source == "rapidocr"]
    assert len(broken) == 1 and broken[0].text == "The review extended" and ocr.crops == 1 and ocr.pages == 0
    assert "OCR of the crop" in broken[0].extra["source_reason"]
    unsure = tc.CheckedTextLayer(ocr=lambda: ocr)
    doubtful = "Xci viqjir iyzifeie zcoz zci nzozjnzjbot nodgtin pl Onclpve coe hiif vieabie rjzc zci"
    assert tc.judge_text(tc.text_signs(doubtful), text=doubtful).state == tc.UNSURE
    page_regions = [Region("text", (60, 60, 400, 80), doubtful, "textlayer")]
    unsure.text_layer = _Fixed(page_regions)
    with open_document(path) as doc:
        out = unsure.draft(doc.page(0))
    assert out[0].source == "textlayer" and out[0].extra["second_draft"] == "The review extended"
    assert "unsure" in out[0].extra["source_reason"]


class _Fixed(DrafterBase):
    def __init__(self, regions):
        self.regions = regions

    def draft(self, page):
        return [Region(r.label, r.bbox, r.text, r.source) for r in self.regions]


def _document(data: bytes):
    import tempfile
    from pathlib import Path
    path = Path(tempfile.mkdtemp()) / "page.pdf"
    path.write_bytes(data)
    return open_document(path)


def test_the_second_draft_is_a_draft_of_its_region():
    from core.speculative.proposal_config import ProposalConfig
    from core.speculative.page_drafts import PageDrafts

    encode = lambda s: [ord(c) for c in s]  # noqa: E731
    decode = lambda t: "".join(map(chr, t))  # noqa: E731
    layer, ocr = "Tho rovicw qf tbe dlstrlct", "The review of the district"
    out = encode("The review o")
    alone = PageDrafts([encode(layer)], [layer], encode, decode, ProposalConfig())
    both = PageDrafts([encode(layer)], [layer], encode, decode, ProposalConfig(), second_texts=[ocr])
    assert decode(alone.proposer.propose(out[:-1], out[-1], 16).tokens[1:6]) != "f the"
    tree = both.proposer.propose(out[:-1], out[-1], 16)
    assert decode(tree.tokens[1:6]) == "f the"
    assert tree.origins[1][0] == 0  # credited to its region


# --- through the real entry points -----------------------------------------------------------------


def test_hsd_draft_says_which_source_drafted_each_region_and_why(tmp_path, capsys):
    pytest.importorskip("rapidocr")
    path = tmp_path / "shifted.pdf"
    path.write_bytes(with_wrong_maps(typeset(), shifted_map))
    out = tmp_path / "drafts.json"
    assert main(["draft", str(path), "--json", str(out)]) == 0
    regions = json.loads(out.read_text())["pages"][0]["regions"]
    assert regions and all(r["source"] == "rapidocr" for r in regions)
    assert all("alphabet shifted" in r["source_reason"] for r in regions)
    words = " ".join(r["text"] for r in regions)
    assert "review" in words and "district" in words
    assert main(["draft", str(path)]) == 0
    assert "source=rapidocr (OCR: the page's text layer fails (alphabet shifted by +1" in capsys.readouterr().out


def test_the_generated_classes_break_their_text_layer():
    for cls in ("shifted", "scrambled"):
        broken, born, reference = make_broken_page(cls, "slide", 0)
        assert "Review" in reference or reference
        assert pymupdf.open("pdf", broken)[0].get_text().strip() != pymupdf.open("pdf", born)[0].get_text().strip()
    lines = text_lines(born)
    noisy = image_with_layer(born, [(o, s, t) for o, s, t, _ in lines], dpi=72)
    page = pymupdf.open("pdf", noisy)[0]
    assert page.get_images() and page.get_text().split()[:3] == pymupdf.open("pdf", born)[0].get_text().split()[:3]


@pytest.mark.usefixtures("shared_model_loads")
def test_hsd_is_lossless_on_a_page_with_a_broken_text_layer(tmp_path, tiny_target_dir):
    """Page 1's fonts map every letter one off (drafted by OCR), page 2 is an image with a poor
    invisible OCR layer (regions doubted: the layer's draft and OCR's both go in)."""
    pytest.importorskip("rapidocr")
    model = str(tiny_target_dir("qwen2_5_vl"))
    shifted = pymupdf.open("pdf", with_wrong_maps(typeset(), shifted_map))
    born = typeset()
    rng = random.Random(5)
    layer = [(o, s, ocr_noise(t, 0.2, rng)) for o, s, t, _ in text_lines(born)]
    poor = pymupdf.open("pdf", image_with_layer(born, layer, dpi=150))
    shifted.insert_pdf(poor)
    pdf = tmp_path / "broken.pdf"
    shifted.save(pdf)
    outputs, _ = convert_in_each_mode(pdf, model, tmp_path)
    assert outputs["ar"] == outputs["hsd"] == outputs["page"]
