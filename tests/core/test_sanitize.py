"""``core.sanitize``: model output loses what could load or run anything, and keeps its text and tables.

Hostile input at scale is fuzzed in ``tests/fuzz/test_fuzz_markdown``; these are the rules, one each."""

from __future__ import annotations

import re

import pytest

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


# --- links -----------------------------------------------------------------------------------------

LIVE_LINKS = [
    "[c](java&#x73;cript:alert(1))",
    "[e](&#106;avascript:alert(1))",
    "[e2](&#0000106avascript:alert(1))",
    "[f](file:///etc/passwd)",
    "[a][r]\n\n[r]: javascript:alert(1)",
    "[a][r]\n\n[r]: data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "[a][r]\n\n[r]: <javascript:alert(1)> \"title\"",
    "[a][r]\n\n[r]:\n  javascript:alert(1)\n  'title'",
    "> [a][r]\n>\n> [r]:\n> javascript:alert(1)",
    "- [a][r]\n- [r]: vbscript:msgbox(1)",
    "[a]\n\n[a]: JaVaScRiPt:alert(1)",
    "[a](JAVASCRIPT:alert(1))",
    "[a](java\tscript:alert(1))",
    "[a](<java\nscript:alert(1)>)",
    "[a](java&Tab;script:alert(1))",
    "[a](java&NewLine;script:alert(1))",
    "[a](javascript&colon;alert(1))",
    "[a](javascript&#58;alert(1))",
    "[a](javascript&#x3A;alert(1))",
    "[a](javascript\\:alert(1))",
    "[a](%6Aavascript:alert(1))",
    "[a](javascript%3Aalert(1))",
    "[a](&amp;#106;avascript:alert(1))",
    "[a](&#x6A&#x61vascript:alert(1))",
    "[a](\x01javascript:alert(1))",
    "[a]( \n javascript:alert(1) \"t\")",
    "[a](<javascript:alert(1)>)",
    "[a] (javascript:alert(1))",
    '[a](javascript:alert(1) "title")',
    "[a](javascript:alert(document.cookie)(2))",
    "[a [b [c [d]]]](javascript:alert(1))",
    "[[a](javascript:alert(1))](https://example.org)",
    "[a](data:text/html,<script>alert(1)</script>)",
    "[a](file://server/share/x)",
    "[a](/etc/passwd)",
    "[a](//evil.example/share)",
    "[a](\\\\evil.example\\share)",
    "[a](../../../home/user/.ssh/id_rsa)",
    "[a](%2e%2e/%2e%2e/etc/passwd)",
    "[a](tel:123) [b](ftp://x.example/f)",
    "<javascript:alert(1)>",
    "<JAVASCRIPT:alert(1)>",
    "<file:///etc/passwd>",
    '<a href="java&#x73;cript:alert(1)">x</a>',
    "<a href=javascript:alert(1)>x</a><img src=file:///etc/passwd>",
    '<b><a href="data:text/html,x">x</a></b>',
]


def _hrefs_of_a_trusting_viewer(markdown: str) -> list[str]:
    """The link and image URLs a viewer that trusts every scheme and passes raw HTML through would
    open, as a browser reads them (references decoded, percent escapes undone, controls dropped)."""
    import html as html_module
    import re
    from html.parser import HTMLParser
    from urllib.parse import unquote

    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True})
    md.validateLink = lambda url: True
    urls: list[str] = []
    parser = HTMLParser(convert_charrefs=True)
    parser.handle_starttag = lambda tag, attrs: urls.extend(v or "" for k, v in attrs if k in ("href", "src"))
    parser.feed(md.render(markdown))
    parser.close()
    return [re.sub(r"[\x00-\x20]", "", unquote(html_module.unescape(unquote(u)))) for u in urls]


def _opens_only_pages_mail_or_the_document(url: str) -> bool:
    import re

    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", url)
    if scheme:
        return scheme.group(1).lower() in ("http", "https", "mailto")
    path = url.replace("\\", "/").split("#")[0]
    return not path.startswith("/") and ".." not in path.split("/")


@pytest.mark.parametrize("text", LIVE_LINKS)
def test_no_link_of_model_output_opens_anything_but_pages_mail_or_the_document(text):
    pytest.importorskip("markdown_it")
    cleaned = sanitize_model_markdown("Before " + text + "\n\nafter")
    for url in _hrefs_of_a_trusting_viewer(cleaned):
        assert _opens_only_pages_mail_or_the_document(url), (text, cleaned, url)
    assert "Before" in cleaned and "after" in cleaned


def test_refused_links_keep_their_text():
    assert sanitize_model_markdown("see [the table](java&#x73;cript:alert(1)) below") == "see the table below"
    assert sanitize_model_markdown('x [a](javascript:f(1) "t") y') == "x a y"
    assert sanitize_model_markdown("[a][r]\n\n[r]: javascript:alert(1)") == "[a][r]\n\n[r]\\:"
    # a link text nested deeper than the first pattern knows keeps its brackets
    assert sanitize_model_markdown("[a [b [c]]](javascript:x(1)) tail") == "[a [b [c]]] tail"


def test_safe_links_stay_as_written():
    text = ('[web](https://example.org/a_(b) "Title") [mail](mailto:a@example.org) [top](#results) '
            "[doc](figures/fig-1.png) <https://example.org>\n\n[r]: http://example.org/x 'T'\n\n"
            "[Table 2]: Results: what follows is prose, not a definition")
    expected = text.replace(" <https://example.org>", " ")  # autolinks are markup: they go with the HTML
    assert sanitize_model_markdown(text) == expected


def test_safe_link_judges_the_decoded_scheme():
    from core.sanitize import safe_link

    for url in ("https://x", "HTTP://x", "mailto:a@b", "#a", "a/b.md", "a.md?x=1", "", "figure%20one.png"):
        assert safe_link(url), url
    for url in ("javascript:x", "JaVa\tScRiPt:x", "java&#x73;cript:x", "&#106;avascript:x", "%6Aavascript:x",
                "javascript&colon;x", "javascript\\:x", "data:x", "file:///x", "vbscript:x", "/x", "//h/x",
                "\\\\h\\x", "../x", "a/../../x", "%2E%2E/x", "tel:1", "c:\\windows"):
        assert not safe_link(url), url
    # a beginning without the end of a scheme in it is refused: what follows may complete one
    assert not safe_link("&#9;" * 200, complete=False)
    assert safe_link("a/b", complete=False)


# --- nesting ---------------------------------------------------------------------------------------


def _max_depth(html_text: str) -> int:
    from html.parser import HTMLParser

    void = {"br", "hr", "col", "img", "wbr"}
    depth = [0, 0]

    def start(tag, attrs):
        if tag not in void:
            depth[0] += 1
            depth[1] = max(depth[1], depth[0])

    def end(tag):
        depth[0] -= 1

    parser = HTMLParser()
    parser.handle_starttag, parser.handle_endtag = start, end
    parser.feed(html_text)
    parser.close()
    return depth[1]


def test_html_nested_past_the_limit_keeps_its_text_not_its_tags(monkeypatch):
    from core import tuning

    monkeypatch.setattr(tuning, "MAX_HTML_NESTING", 8)
    for opener in ("<div>", "<table><tr><td>", "<b>", "<ul><li>", "<blockquote><p>", "<svg:x>"):
        text = "".join(f"{opener}{i}" for i in range(40))
        cleaned = clean_model_html(text)
        assert _max_depth(cleaned) <= 8 + 3, (opener, cleaned)
        words = [w for w in re.split(r"<[^>]*>", cleaned) if w]
        assert "".join(words) == "".join(str(i) for i in range(40)), (opener, cleaned)


def test_shallow_html_is_untouched_by_the_limit(monkeypatch):
    from core import tuning

    monkeypatch.setattr(tuning, "MAX_HTML_NESTING", 8)
    table = "<table>" + "<tr><td>a</td><td colspan=\"2\"><b><i>b</i></b></td></tr>" * 50 + "</table>"
    assert clean_model_html(table) == table
    implied = "<table><tr><td>1<td>2<tr><td>3<td>4</table>" * 20
    assert clean_model_html(implied).count("<td>") == 80
