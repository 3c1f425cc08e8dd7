"""Departures (``core.review``): where the model's Markdown and the page's drafts part, per region;
the poor-drafts summary; ``hsd convert --review`` (HTML escaped, JSON, never replacing a foreign file)."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from core import tuning
from core.drafters.base import Region
from core.errors import HSDError
from core.results import PageResult, PageStats
from core.review import (refuse_unsafe_review, review_document, review_html, review_page, summary_line, words,
                         write_review)

TITLE = "Quarterly results"
BODY = "Revenue grew by 12.5% in the third quarter.\nCosts fell sharply after the merger."
CLOSING = "The board approved the plan. Dividends rise next year for every share class."


def _regions(formula: str = "E mc2") -> list[Region]:
    return [Region("title", (0, 0, 300, 20), TITLE, "textlayer"),
            Region("text", (0, 30, 300, 80), BODY, "textlayer"),
            Region("figure", (0, 90, 300, 140), "", "textlayer"),
            Region("formula", (0, 150, 300, 170), formula, "rapidocr"),
            Region("text", (0, 180, 300, 230), CLOSING, "textlayer"),
            Region("page_number", (140, 780, 160, 790), "7", "textlayer")]


def _page(markdown: str, regions=None, number: int = 1) -> PageResult:
    return PageResult(number, 300, 800, markdown, _regions() if regions is None else regions, [], [], [], PageStats())


FAITHFUL = (f"# {TITLE}\n\n{BODY.replace(chr(10), ' ')}\n\n$$\nE = mc^{{2}}\n$$\n\n{CLOSING}\n")


def test_a_faithful_page_has_no_departures_and_every_region_its_text():
    review = review_page(_page(FAITHFUL))
    assert review.departures == [] and review.agreement == 1.0 and not review.low_agreement
    spans = {region: FAITHFUL[s:e] for region, s, e in review.region_spans}
    assert spans[0] == TITLE and spans[1].startswith("Revenue") and spans[4].endswith("share class")
    assert "mc^{2" in spans[3]  # the formula's LaTeX is the formula region's text, not the paragraph's


def test_a_changed_number_is_one_departure_of_its_region():
    markdown = FAITHFUL.replace("12.5%", "13.5%")
    (d,) = review_page(_page(markdown)).departures
    assert (d.kind, d.region, d.label, d.model_text, d.page_text) == ("changed", 1, "text", "13", "12")
    assert markdown[d.start:d.end] == "13" and BODY[d.draft_start:d.draft_end] == "12"


def test_a_skipped_line_is_the_page_words_at_their_place():
    markdown = FAITHFUL.replace(" Costs fell sharply after the merger.", "")
    (d,) = review_page(_page(markdown)).departures
    assert d.kind == "skipped" and d.region == 1 and d.page_text == "Costs fell sharply after the merger"
    assert d.start == d.end == markdown.index("quarter") + len("quarter")


def test_an_invented_sentence_belongs_to_the_region_it_stands_in():
    markdown = FAITHFUL.replace("the plan. ", "the plan. We expect strong demand in Asia. ")
    (d,) = review_page(_page(markdown)).departures
    assert (d.kind, d.region, d.model_text, d.page_text) == ("invented", 4, "We expect strong demand in Asia", "")
    assert markdown[d.start:d.end] == d.model_text
    assert "We expect" in d.describe() and "no draft holds" in d.describe()


def test_markup_case_hyphens_and_a_moved_block_are_not_departures():
    regions = _regions()
    regions[1] = Region("text", (0, 30, 300, 80), BODY.replace("merger", "mer-\nger"), "textlayer")
    moved = (f"{CLOSING}\n\n## **{TITLE.upper()}**\n\n<p>{BODY}</p>\n\n\\[E = mc^{{2}}\\]\n")
    review = review_page(_page(moved, regions))
    assert review.departures == [] and review.agreement == 1.0


def test_a_left_out_page_number_is_no_departure_but_a_changed_one_is():
    assert review_page(_page(FAITHFUL)).departures == []
    (d,) = review_page(_page(FAITHFUL + "\n8\n")).departures
    assert d.model_text == "8" and d.kind in ("invented", "changed")


def test_drafts_that_agree_poorly_give_one_summary_not_a_flood():
    garbled = [Region("text", (0, 0, 300, 800), "Rcvcnuc gcw hy l2 5 ia tbc tbird qnartcr Csts fcll", "rapidocr")]
    review = review_page(_page(FAITHFUL, garbled))
    assert review.low_agreement and review.departures == []
    assert f"{review.agreement:.0%}" in review.note and review.agreement < tuning.REVIEW_POOR_AGREEMENT
    assert "agree too little to list" in summary_line([review])


def test_pages_without_drafts_or_that_failed_say_why():
    assert "no drafts" in review_page(_page(FAITHFUL, [])).note
    failed = _page("", [])
    failed.error = "out of memory"
    assert "failed" in review_page(failed).note


def test_offsets_are_in_the_text_given():
    shown = "![Figure 3](doc_images/p1-3.png)\n\n" + FAITHFUL.replace("12.5%", "13.5%")
    (d,) = review_page(_page(FAITHFUL.replace("12.5%", "13.5%")), shown).departures
    assert shown[d.start:d.end] == "13"


def test_words_are_letters_and_digits_and_each_cjk_character():
    assert [w.key for w in words("<b>Ünïcode</b> 数学 x_{i} &amp; \\alpha")] == ["ünïcode", "数", "学", "xi"]


def test_summary_counts_every_page():
    reviews = review_document([_page(FAITHFUL.replace("12.5", "13.5"), number=2), _page(FAITHFUL, number=1)])
    assert [r.page for r in reviews] == [1, 2]
    assert summary_line(reviews) == "1 place where the model departs from the page's text"


# -- the report ---------------------------------------------------------------------------------------


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_report_escapes_the_document_and_the_model():
    hostile = FAITHFUL.replace("the plan. ", "the plan. <script>alert(1)</script> <img src=x onerror=y> ")
    reviews = review_document([_page(hostile)])
    page = review_html([("<b>doc</b>.pdf", reviews)])
    parsed = _Text()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "b" not in parsed.tags
    assert "<b>doc</b>.pdf" in "".join(parsed.text)


def test_the_report_replaces_its_own_file_only(tmp_path):
    reviews = review_document([_page(FAITHFUL.replace("12.5", "13.5"))])
    for name in ("r.json", "r.html"):
        path = tmp_path / name
        write_review(path, [("doc.pdf", reviews)])
        refuse_unsafe_review(path, [tmp_path / "doc.pdf"], [tmp_path / "doc.md"])  # its own: replaced
    data = json.loads((tmp_path / "r.json").read_text())
    (page,) = data["documents"][0]["pages"]
    assert page["departures"][0]["model_text"] == "13"
    foreign = tmp_path / "notes.html"
    foreign.write_text("<html>my notes</html>")
    with pytest.raises(HSDError, match="not written by hsd"):
        refuse_unsafe_review(foreign, [], [])
    refuse_unsafe_review(foreign, [], [], overwrite=True)
    with pytest.raises(HSDError, match="replace the input"):
        refuse_unsafe_review(tmp_path / "doc.json", [tmp_path / "doc.json"], [])
    with pytest.raises(HSDError, match=r"\.html or a \.json"):
        refuse_unsafe_review(tmp_path / "r.txt", [], [])


@pytest.mark.usefixtures("shared_model_loads")
def test_convert_writes_the_review(tmp_path, tiny_target_dir, capsys):
    from core.cli import main
    from tests.core.test_convert import _make_pdf

    pdf = _make_pdf(tmp_path / "doc.pdf", pages=1, figure=False)
    out, report = tmp_path / "doc.md", tmp_path / "review.html"
    report.write_text("someone's page")
    args = ["convert", str(pdf), "-o", str(out), "--model", str(tiny_target_dir("qwen2_5_vl")),
            "--drafter", "textlayer", "--max-new-tokens", "40", "--review", str(report)]
    assert main(args) != 0 and report.read_text() == "someone's page" and not out.exists()
    assert "not written by hsd" in capsys.readouterr().err
    report.unlink()
    assert main(args) == 0
    parsed = _Text()
    parsed.feed(report.read_text())
    text = "".join(parsed.text)
    assert "doc.pdf" in text and "departs from the page" in text
    assert "hsd: review:" in capsys.readouterr().err
    assert main(args + ["--fresh"]) == 0  # its own report is replaced


def test_formulas_in_the_text_are_not_compared_but_the_words_around_them_are():
    regions = [Region("text", (0, 0, 300, 80), "The sum Σi = μ2 holds for all 12 nodes.", "rapidocr")]
    markdown = "The sum \\(\\Sigma_{i} = \\mu^{2}\\) holds for all 13 nodes."
    (d,) = review_page(_page(markdown, regions)).departures
    assert (d.kind, d.model_text, d.page_text) == ("changed", "13", "12")
    prices = "It costs $5 and $10 at most."
    (d,) = review_page(_page(prices, [Region("text", (0, 0, 300, 80), "It costs $5 and $12 at most.", "t")])).departures
    assert (d.model_text, d.page_text) == ("10", "12")  # dollars that are no formula are compared
