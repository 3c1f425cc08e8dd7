"""``hsd bench`` on a corpus with a document it cannot use (an empty PDF, a reference of megabytes):
that document is skipped with one warning line and the others still make the report."""

from __future__ import annotations

import json

from core import tuning
from tests.reliability import hostile as h

BENCH = ["--drafter", "textlayer", "--tokenizer", "tiny", "--methods", "hsd", "--dpi", "36", "-q"]


def test_bench_skips_an_empty_pdf_and_an_oversized_reference_and_still_reports(cli, tmp_path, monkeypatch):
    """An empty PDF ended the whole bench without a report; a 10 MB reference took 5.8 GB. The
    limit is lowered here, so that a reference read by mistake costs nothing."""
    monkeypatch.setattr(tuning, "MAX_BENCH_REFERENCE_BYTES", 4096)
    pairs = tmp_path / "corp" / "pairs"
    pairs.mkdir(parents=True)
    h.text_pdf(pairs / "a_good.pdf", pages=1)
    (pairs / "a_good.md").write_text(h.TEXT + "\n")
    (pairs / "b_empty.pdf").write_bytes(b"")
    (pairs / "b_empty.md").write_text(h.TEXT + "\n")
    h.text_pdf(pairs / "c_huge.pdf", pages=1)
    (pairs / "c_huge.md").write_text((h.TEXT + "\n\n") * (8192 // len(h.TEXT) + 1))
    out = tmp_path / "out"
    rc, stdout, err = cli("bench", tmp_path / "corp", "--out", out, *BENCH)
    assert rc == 0, err
    warnings = [line for line in err.splitlines() if line.strip()]
    assert len(warnings) == 2 and all(line.startswith("hsd: warning: ") for line in warnings), err
    assert "b_empty: skipped" in warnings[0] and "empty" in warnings[0], err
    assert "c_huge: skipped" in warnings[1] and "c_huge.md" in warnings[1] and "MiB" in warnings[1], err
    data = json.loads((out / "bench.json").read_text())
    assert {p["doc"] for p in data["pages"]} == {"a_good"}
    assert [s["doc"] for s in data["skipped"]] == ["b_empty", "c_huge"]
    assert "a_good" in (out / "report.md").read_text()
    assert "1 pages, 1 documents" in stdout


def test_bench_with_no_usable_document_says_so_in_one_line(cli, tmp_path):
    pairs = tmp_path / "corp" / "pairs"
    pairs.mkdir(parents=True)
    (pairs / "empty.pdf").write_bytes(b"")
    (pairs / "empty.md").write_text("text\n")
    rc, _, err = cli("bench", tmp_path / "corp", "--out", tmp_path / "out", *BENCH)
    assert rc in (1, 2), err
    assert "no document could be benchmarked" in err.splitlines()[-1] and "Traceback" not in err, err
