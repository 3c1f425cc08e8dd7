from core.bench.corpus import (document_kind, load_corpus, oracle_regions, pipe_tables_to_html, region_references,
                               region_spans, split_reference)
from core.drafters.base import Region


def _r(text, label="text"):
    return Region(label=label, bbox=(0, 0, 10, 10), text=text, source="test")


def test_load_corpus_pairs_only(synthetic_corpus):
    docs = load_corpus(synthetic_corpus)
    assert [d.name for d in docs] == ["alpha_report", "beta_note"]  # orphan.pdf has no .md
    assert docs[0].kind == "alpha"
    assert load_corpus(synthetic_corpus, ["beta"])[0].name == "beta_note"


def test_document_kind():
    assert document_kind("odb_00_PPT2PDF_english", "PPT2PDF; layout=single") == "odb:PPT2PDF"
    assert document_kind("odb_03_academic_literature_english") == "odb:academic_literature"
    assert document_kind("docling_multi_page") == "docling"
    assert document_kind("plain") == "other"


def test_pipe_tables_to_html():
    md = "intro\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\nafter | not a table"
    assert pipe_tables_to_html(md) == ("intro\n\n<table><tr><td>a</td><td>b</td></tr>"
                                       "<tr><td>1</td><td>2</td></tr></table>\n\nafter | not a table")


def test_pipe_tables_inside_code_fences_stay_as_they_are():
    code = "```\n>>> print(t)\n| a | b |\n|---|---|\n| 1 | 2 |\n```"
    md = f"{code}\n\n| x |\n|---|\n| 9 |\n\n~~~~\n| c |\n|---|\n```\n| d |\n~~~~"
    assert pipe_tables_to_html(md) == (f"{code}\n\n<table><tr><td>x</td></tr><tr><td>9</td></tr></table>\n\n"
                                       "~~~~\n| c |\n|---|\n```\n| d |\n~~~~")


def test_split_reference_follows_page_text_in_order():
    ref = "# One\n\nalpha beta gamma delta\n\n# Two\n\nepsilon zeta eta theta\n\niota kappa lambda"
    pages = ["One alpha beta gamma delta", "Two epsilon zeta eta theta", "iota kappa lambda"]
    assert split_reference(ref, pages) == ["# One\n\nalpha beta gamma delta", "# Two\n\nepsilon zeta eta theta",
                                           "iota kappa lambda"]
    assert split_reference(ref, ["whatever"]) == [ref]


def test_region_spans_include_markup_and_skip_unmatched():
    ref = "## 5.1 Results\n\nThe model is fast and accurate.\n\n<table><tr><td>x</td><td>42</td></tr></table>"
    regions = [_r("Page 9 header junk qq", "header"), _r("5.1 Results", "title"),
               _r("The model is fast and accurate."), _r("x 42", "table"), _r("", "figure")]
    refs = region_references(ref, regions)
    assert refs[0] == ""
    assert refs[1] == "## 5.1 Results"
    assert refs[2] == "The model is fast and accurate."
    assert refs[3] == "<table><tr><td>x</td><td>42</td></tr></table>"
    assert refs[4] == ""


def test_region_spans_take_the_markup_lines_of_their_block():
    # A crop of the listing shows its fences and the box's closing rule; a crop reader writes them.
    ref = "Intro words here.\n\n```\n>>> show(grid)\n╔══╗\n║ a ║\n╚══╝\n```\n\n$$\nx = y\n$$\n\nLast words."
    regions = [_r("Intro words here."), _r(">>> show(grid) ║ a ║", "code"), _r("x = y", "formula"), _r("Last words.")]
    refs = region_references(ref, regions)
    assert refs == ["Intro words here.", "```\n>>> show(grid)\n╔══╗\n║ a ║\n╚══╝\n```", "$$\nx = y\n$$", "Last words."]
    # Lines holding text are not markup lines: consecutive list items keep their own spans.
    items = "- one\n- two\n- three"
    assert region_references(items, [_r("one", "list"), _r("two", "list"), _r("three", "list")]) == \
        ["- one", "- two", "- three"]


def test_short_drafts_matched_in_reading_order():
    ref = "## 5.1 Intro\n\ntext 5.2 inside\n\n## 5.2 Next"
    spans = region_spans(ref, [_r("5.1 Intro"), _r("text 5.2 inside"), _r("5.2 Next")])
    assert ref[spans[2][0]:spans[2][1]] == "## 5.2 Next"


def test_oracle_regions_partition_the_reference():
    ref = "lead-in words\n\n# Title\n\nbody text here\n\nmissed by the drafter\n\nlast part"
    regions = [_r("Title", "title"), _r("body text here"), _r("last part"), _r("nothing like it zzz")]
    oracle = oracle_regions(ref, regions)
    joined = "".join(r.text for r in oracle)
    assert [c for c in joined if c.isalnum()] == [c for c in ref if c.isalnum()]
    assert all(r.source == "oracle" for r in oracle)
    assert oracle_regions("whole page", [])[0].text == "whole page"


def test_unmatched_body_regions_take_the_stretch_between_their_matched_neighbours():
    from core.bench.corpus import region_references
    from core.drafters.base import Region

    ref = "# Title\n\nFirst para here.\n\n$$x^2$$\n\nSecond para there.\n\n$$y$$\n\nextra block"
    regs = [Region("title", (0, 0, 1, 1), "Title", "t"), Region("text", (0, 0, 1, 1), "First para here.", "t"),
            Region("formula", (0, 0, 1, 1), "@@", "t"), Region("text", (0, 0, 1, 1), "Second para there.", "t"),
            Region("page_number", (0, 0, 1, 1), "7", "t")]
    # the formula's junk draft matched nothing, but its crop holds the stretch between its
    # neighbours; the trailing stretch has only a page number after it: no body region covers it
    assert region_references(ref, regs) == ["# Title", "First para here.", "$$x^2$$", "Second para there.", ""]
    two = regs[:2] + [Region("formula", (0, 0, 1, 1), "", "t"), Region("text", (0, 0, 1, 1), "##", "t")] + regs[3:]
    ref2 = "# Title\n\nFirst para here.\n\n$$a$$\n\n$$b$$\n\n$$c$$\n\nSecond para there."
    assert region_references(ref2, two)[2:4] == ["$$a$$", "$$b$$\n\n$$c$$"]


def test_a_paragraph_running_across_a_page_break_is_cut_at_the_break():
    from core.bench.corpus import split_reference

    ref = ("# Intro\n\nThe first page talks about alloys and their grains in some detail. "
           "It ends with a sentence that the first page still holds completely. "
           "Then the paragraph continues on the second page with milling times and particle sizes. "
           "And finishes there with a closing remark about hardness.\n\n## Methods\n\nBall milling.")
    pages = ["Intro The first page talks about alloys and their grains in some detail. It ends with a "
             "sentence that the first page still holds completely.",
             "Then the paragraph continues on the second page with milling times and particle sizes. "
             "And finishes there with a closing remark about hardness. Methods Ball milling."]
    first, second = split_reference(ref, pages)
    assert first.endswith("still holds completely.") and first.startswith("# Intro")
    assert second.startswith("Then the paragraph continues") and second.endswith("Ball milling.")


def test_a_table_the_reference_moved_past_a_page_break_goes_back_to_its_page():
    # MinerU-style silver references put a float after the paragraph that cites it, even when that
    # paragraph ends on the next page; the table's text is on the first page only.
    from core.bench.corpus import split_reference

    table = "<table><tr><td>Sample density</td><td>2.797 grams</td></tr><tr><td>Porosity</td><td>9.69</td></tr></table>"
    ref = ("Densities were measured by dipping the samples in water at room temperature.\n\n"
           "The second page goes on with hardness results for every sample we pressed.\n\n"
           f"{table}\n\nThe second page ends with wear tests on the pin and the disc.")
    pages = ["Densities were measured by dipping the samples in water at room temperature. "
             "Sample density 2.797 grams Porosity 9.69",
             "The second page goes on with hardness results for every sample we pressed. "
             "The second page ends with wear tests on the pin and the disc."]
    first, second = split_reference(ref, pages)
    assert table in first and table not in second
    assert second == ("The second page goes on with hardness results for every sample we pressed.\n\n"
                      "The second page ends with wear tests on the pin and the disc.")


def test_a_less_than_sign_in_prose_masks_no_text():
    from core.bench.corpus import NormText

    assert NormText.of("very low (<97%), higher temperatures <b>were</b> applied").norm == (
        "verylow97highertemperatureswereapplied")
