"""The generated scan set: reproducible pages whose reference is what they show, and its report."""

from __future__ import annotations

import json
import re
import unicodedata

import pymupdf
import pytest

from core.drafters.base import Region
from core.drafters.normalize import normalize_for_match
from tools.bench import scan_set
from tools.bench.scan_report import kind_rows, markdown_table, order_accuracy, text_reached


@pytest.fixture(scope="module")
def pages():
    return {kind: scan_set.make_page(kind, 0, seed=7) for kind in ("article3", "formula", "fraktur", "japanese")}


def _text_layer(pdf: bytes) -> str:
    with pymupdf.open("pdf", pdf) as doc:
        return unicodedata.normalize("NFKC", doc[0].get_text())


def test_every_region_of_the_reference_is_on_the_born_digital_page(pages):
    for kind, (born, _, layout, reference) in pages.items():
        page_text = normalize_for_match(_text_layer(born))
        assert layout["regions"], kind
        for region in layout["regions"]:
            if region["label"] == "formula":
                continue  # drawn by mathtext: its text layer is glyph soup, as in real papers
            words = normalize_for_match(re.sub(r"\$[^$]*\$", " ", region["text"]))  # inline formulas aside
            assert words in page_text, (kind, region["text"][:60])
        # the reference is the regions' blocks, in the generator's order
        assert normalize_for_match(layout["regions"][0]["text"]) in normalize_for_match(reference.split("\n\n")[0]) \
            or layout["regions"][0]["label"] == "formula"


def test_the_scan_is_an_image_of_the_same_page(pages):
    for kind, (born, scan, layout, _) in pages.items():
        with pymupdf.open("pdf", born) as b, pymupdf.open("pdf", scan) as s:
            assert s[0].rect == b[0].rect
            assert not s[0].get_text().strip()
            assert len(s[0].get_images()) == 1
        params = layout["scan"]
        assert 150 <= params["dpi"] <= 300 and abs(params["skew_degrees"]) <= 1.5


def test_the_same_seed_makes_the_same_page_and_another_seed_another():
    a = scan_set.make_page("gazette", 3, seed=11)
    b = scan_set.make_page("gazette", 3, seed=11)
    c = scan_set.make_page("gazette", 3, seed=12)
    assert a == b  # byte for byte
    assert a[3] != c[3]


def test_fraktur_reads_as_plain_latin_and_formulas_keep_their_latex(pages):
    born, _, layout, reference = pages["fraktur"]
    assert "Von der" in _text_layer(born) and not any(0x1D500 <= ord(c) <= 0x1D5FF for c in _text_layer(born))
    assert not any(c in reference for c in "äöüÄÖÜ")  # the face draws no umlaut dots
    _, _, layout, reference = pages["formula"]
    assert "$$\n" in reference and any(r["label"] == "formula" for r in layout["regions"])
    assert "$" in reference.replace("$$", "")  # inline formulas too


def test_the_set_is_written_in_the_layout_hsd_bench_reads(tmp_path):
    from core.bench.corpus import load_corpus

    names = scan_set.make_scan_set(tmp_path, seed=5, per_kind=1, kinds=("slide", "form"))
    assert names == ["slide_000", "form_000"]
    for half in ("born", "scan"):
        docs = load_corpus(tmp_path / half)
        assert [d.name for d in docs] == ["form_000", "slide_000"] and {d.kind for d in docs} == {"form", "slide"}
    layout = json.loads((tmp_path / "layout" / "form_000.json").read_text(encoding="utf-8"))
    assert layout["seed"] == 5 and layout["kind"] == "form"


def test_the_command_writes_the_set_from_a_seed(tmp_path, capsys, monkeypatch):
    calls = []

    def fake(out, seed, per_kind, kinds=scan_set.KINDS, log=None):
        calls.append((seed, per_kind, kinds))
        return ["slide_000"]

    monkeypatch.setattr(scan_set, "make_scan_set", fake)
    assert scan_set.main(["--seed", "3", "--per-kind", "2", "--kinds", "slide", "--out", str(tmp_path / "s")]) == 0
    assert calls == [(3, 2, ("slide",))] and "wrote 1 pages" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        scan_set.main(["--kinds", "slide,poster", "--out", str(tmp_path / "s")])
    assert "unknown kinds poster" in capsys.readouterr().err and calls == [(3, 2, ("slide",))]


def test_order_accuracy_and_text_reached():
    truth = [{"order": i, "bbox": (0, 100 * i, 100, 100 * i + 50)} for i in range(4)]

    def region(y, text="x"):
        return Region("text", (0, y, 100, y + 50), text, "t")

    assert order_accuracy(truth, [region(0), region(100), region(200), region(300)]) == 1.0
    assert order_accuracy(truth, [region(300), region(200), region(100), region(0)]) == 0.0
    assert order_accuracy(truth, [Region("text", (0, 0, 100, 400), "all", "t")]) is None  # one region: no pair apart
    assert text_reached("abcdef ghij", [region(0, "abcdef"), region(100, "ghij")]) == 1.0
    assert text_reached("abcdef", [region(0, "abc")]) == 0.25  # one trigram of four


def test_kind_rows_compare_the_same_pages_born_and_scanned():
    def bench(passes):
        return {"info": {"drafter": "auto"}, "pages": [
            {"doc": name, "methods": {"hsd": {"forward_passes": p, "generated_tokens": 10 * p, "stage2_passes": p},
                                      "ar": {"forward_passes": 100}}} for name, p in passes.items()]}

    born = bench({"slide_000": 10, "slide_001": 10, "form_000": 20})
    scan = bench({"slide_000": 15, "slide_001": 20, "form_000": 20})
    rows = kind_rows(born, scan, {"slide": {"order": 1.0, "reached": 1.0}}, {"slide": {"order": 0.5, "reached": 0.9}})
    by_kind = {r["kind"]: r for r in rows}
    assert by_kind["slide"]["ratio"] == 1.75 and by_kind["form"]["ratio"] == 1.0
    assert by_kind["all"]["born_hsd"] == 40 and by_kind["all"]["scan_hsd"] == 55
    assert by_kind["slide"]["worst"] == (2.0, "slide_001")
    assert "| **all** | 3 | 40 / 55 | 1.38x |" in markdown_table(rows)
    assert by_kind["slide"]["scan_order"] == 0.5 and by_kind["form"]["scan_order"] is None
