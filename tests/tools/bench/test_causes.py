"""Charging each page-level pass to the cause that ended it (``tools.bench.causes``)."""

from tools.bench.causes import CAUSES, PageCauses, add, markdown_table, page_causes

REF = "## Results\n\nThe mass is \\( m^2 \\) here.\n\n<table><tr><td>1</td></tr></table>\n\nAn invented phrase."
DRAFTS = ["Results", "The mass is m2 here.", "1", "An"]


def _at(text: str, needle: str) -> tuple[int, int]:
    i = REF.index(needle)
    return i, i + len(needle)


def test_positions_get_their_causes():
    pc = PageCauses(REF, DRAFTS)
    assert pc.cause(*_at(REF, "m^2")) == "formula"
    assert pc.cause(*_at(REF, "<td>")) == "table"
    assert pc.cause(*_at(REF, "## ")) == "markup and style"
    assert pc.cause(*_at(REF, "mass")) == "text the drafts hold"
    assert pc.cause(*_at(REF, "invented")) == "text no draft holds"


def test_passes_charged_by_their_last_token_and_tabled():
    ids = list(range(len(REF)))  # one character a token
    decode = lambda xs: "".join(REF[i] for i in xs)  # noqa: E731
    start = REF.index("invented")
    gains = [3, start - 3 + 1, 1, len(REF) - start - 2]  # "## ", up to the "i" of "invented", "n", the rest
    causes = page_causes(REF, DRAFTS, ids, gains, decode)
    assert sum(v.get("passes", 0) for v in causes.values()) == 4
    assert sum(v.get("gained", 0) for v in causes.values()) == len(REF)
    assert causes["markup and style"]["passes"] == 2  # "## " ended on its space, the last pass on "."
    assert causes["text no draft holds"] == {"passes": 2, "gained": start - 2 + 1, "one_token": 1}
    table = markdown_table(add({}, causes), 1)
    assert len(table) == 2 + len(CAUSES) + 1 and table[-1].startswith("| all (1 pages) | 4 |")


def test_trace_causes_over_a_corpus(synthetic_corpus):
    import io

    from tools.bench.trace import corpus_causes

    out = io.StringIO()
    result = corpus_causes(synthetic_corpus, drafter="textlayer", tokenizer="tiny", out=out)
    assert [(r["doc"], r["page"]) for r in result["pages"]] == [("alpha_report", 1), ("alpha_report", 2),
                                                                ("beta_note", 1)]
    for r in result["pages"]:  # every page-level pass charged to one cause, every token to its pass
        assert sum(v.get("gained", 0) for v in r["causes"].values()) == r["stats"]["generated_tokens"]
    assert "| all (3 pages) |" in out.getvalue()
