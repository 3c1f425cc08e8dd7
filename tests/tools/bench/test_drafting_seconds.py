"""``tools.bench.drafting_seconds``: a scan page drafted and timed here and in a working tree's own
process, the same drafts, and the summary's quantiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.bench import drafting_seconds as bench

ROOT = Path(__file__).resolve().parents[3]


def test_quantiles_and_the_summary_per_kind():
    assert bench.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == pytest.approx(4.6)
    assert bench.percentile([7.0], 0.9) == 7.0
    pages = [{"kind": k, "wall": w, "cpu": c, "stages": {"recognise": w / 2, "layout": w / 4}}
             for k, w, c in [("slide", 1.0, 0.5), ("slide", 3.0, 1.5), ("report", 2.0, 4.0)]]
    table = bench.summary(pages)
    assert list(table) == ["report", "slide", "all"]
    assert table["slide"]["wall_median"] == 2.0 and table["all"]["cpu_median"] == 1.5
    assert table["all"]["pages"] == 3 and table["all"]["shares"]["recognise"] == pytest.approx(0.5)
    assert table["all"]["shares"]["detect"] == 0.0


def test_a_scan_set_gives_its_scans_and_kinds(tmp_path):
    (tmp_path / "scan" / "pairs").mkdir(parents=True)
    for name in ("slide_001.pdf", "mixed_000.pdf"):
        (tmp_path / "scan" / "pairs" / name).write_bytes(b"%PDF")
    (tmp_path / "stray.pdf").write_bytes(b"%PDF")
    assert [p.name for p in bench.pdfs_of(tmp_path)] == ["mixed_000.pdf", "slide_001.pdf"]
    assert bench.kind_of(Path("article2_003.pdf")) == "article2"


def test_a_page_is_timed_here_and_in_a_trees_process_with_the_same_drafts(tmp_path, capsys):
    pytest.importorskip("rapidocr")
    from tools.bench import scan_set

    _, scan, _, _ = scan_set.make_page("slide", 0)
    (tmp_path / "slide_000.pdf").write_bytes(scan)
    out = tmp_path / "run.json"
    assert bench.main([str(tmp_path), "--json", str(out), "--trees", f"{ROOT},{ROOT}"]) == 0
    report = json.loads(out.read_text())
    (run,) = report["runs"].values()  # one tree named twice: one run of two pages
    first, second = run["pages"]
    assert first["digest"] == second["digest"] and first["regions"] >= 1 and first["early_lines"] >= 1
    assert first["cpu"] > 0 and first["wall"] > 0 and first["stages"]["recognise"] > 0
    assert set(bench.STAGES) <= set(first["stages"])
    assert "drafts differing" not in capsys.readouterr().out  # one run: nothing to compare
    with pytest.raises(SystemExit):  # an existing file is not overwritten
        bench.main([str(tmp_path), "--json", str(out)])
