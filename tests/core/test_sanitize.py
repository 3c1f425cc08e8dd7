"""``core.sanitize``: model output loses what could load or run anything, and keeps its text and tables.

Hostile input at scale is fuzzed in ``tests/fuzz/test_fuzz_markdown``; these are the rules, one each."""

from __future__ import annotations

from core.sanitize import clean_model_html, numeric_span, sanitize_model_markdown, strip_model_images


def test_model_images_become_their_alt_text():
    assert strip_model_images("a ![chart [1]](http://x/y.png) b ![logo][ref] c") == "a chart [1] b logo c"


def test_script_links_keep_only_their_text():
    text = "[click](javascript:alert(1)) [data](  data:text/html,x) [ok](https://example.org)"
    assert sanitize_model_markdown(text) == "click data [ok](https://example.org)"


def test_tables_and_formatting_stay_what_runs_or_loads_goes_with_its_content():
    text = ('<table><tr><td colspan="2" onclick="x()">A <b>1</b></td></tr></table>\n\n'
            "<script>alert(1)</script>after <img src=x onerror=alert(1)>"
            '<iframe src="http://x">inside</iframe><span style="color:red">kept</span>')
    assert sanitize_model_markdown(text) == ('<table><tr><td colspan="2">A <b>1</b></td></tr></table>\n\n'
                                             "after <span>kept</span>")


def test_spans_survive_only_as_small_numbers():
    assert [numeric_span("td", "colspan", v) for v in ("2", " 3 ", "0", "100", "2;x", "-1")] == [
        "2", "3", None, None, None, None]
    assert numeric_span("col", "span", "4") == "4"


def test_text_between_tags_is_left_byte_for_byte():
    for text in ("a < b and $x<y$ and `if a < b:` &amp; 5 > 3", "no markup at all", "x &lt; y"):
        assert clean_model_html(text) == text, text
    assert clean_model_html("<b>a < b & c</b>") == "<b>a < b & c</b>"


def test_what_markdown_reads_as_text_is_not_taken_for_a_tag():
    """``<b:`` is no tag to Markdown (a tag's name ends at a space, ``/`` or ``>``): the text stays."""
    for text in ("`if a<b:` &amp; 5 > 3", "x <y2: z> w", "a <3 b > c"):
        assert clean_model_html(text) == text, text
    # inside an HTML block a browser would read one: there its '<' becomes an entity, the text stays
    assert clean_model_html("<div>\n<svg:x onload=alert(1)>") == "<div>\n&lt;svg:x onload=alert(1)></div>"


def test_an_unclosed_table_ends_with_its_block():
    cleaned = clean_model_html("<table><tr><td>cell\n\n# Heading after\n\nplain text")
    assert cleaned.endswith("\n\n# Heading after\n\nplain text")
    assert "<table>" in cleaned.split("\n\n")[0]
