"""``hsd draft``: readable listing, JSON output, and one-line errors with a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.cli import main
from tests.core import pdf_factory
from tests.core.conftest import REPO_ROOT


def test_listing(report_pdf, capsys):
    assert main(["draft", str(report_pdf), "--pages", "2", "--drafter", "textlayer"]) == 0
    out = capsys.readouterr().out
    assert "=== page 2 (595 x 842 pt) drafter=textlayer" in out
    assert "[title]" in out and "# Annual Report on Widgets" in out
    assert "=== page 1 " not in out


def test_json_file(report_pdf, tmp_path):
    out = tmp_path / "drafts.json"
    assert main(["draft", str(report_pdf), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["file"] == str(report_pdf)
    assert [p["page"] for p in data["pages"]] == [1, 2]
    first = data["pages"][0]
    assert (first["width"], first["height"], first["drafter"]) == (595.0, 842.0, "textlayer")
    region = first["regions"][1]
    assert set(region) == {"label", "bbox", "text", "source", "source_reason", "confidence"}
    assert region["label"] == "title" and len(region["bbox"]) == 4
    assert region["source"] == "textlayer" and "passed" in region["source_reason"]


def test_json_to_stdout(report_pdf, capsys):
    assert main(["draft", str(report_pdf), "--pages", "1", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["pages"][0]["page"] == 1


def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "core.cli", "draft", *map(str, args)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", ["missing", "folder", "text", "range", "encrypted", "drafter"])
def test_bad_input_exits_non_zero_with_one_line(case, tmp_path, report_pdf, capsys):
    args = {
        "missing": [tmp_path / "missing.pdf"],
        "folder": [tmp_path],
        "text": [tmp_path / "notes.pdf"],
        "range": [report_pdf, "--pages", "3-9"],
        "encrypted": [pdf_factory.encrypted_pdf(tmp_path / "secret.pdf", "pw")],
        "drafter": [report_pdf, "--drafter", "paddle"],
    }[case]
    (tmp_path / "notes.pdf").write_text("not a pdf")
    capsys.readouterr()
    assert main(["draft", *map(str, args)]) != 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hsd: error:"), err
    assert "Traceback" not in err


def test_sample_runs_through_the_cli():
    """``python -m core.cli draft`` in a fresh process, end to end."""
    result = _run_cli(REPO_ROOT / "resources" / "sample.pdf")
    assert result.returncode == 0, result.stderr
    assert "HSD Studio Sample Document" in result.stdout and "<table>" in result.stdout


def test_a_page_whose_drafter_fails_costs_that_page_only(report_pdf, tmp_path, monkeypatch, capsys):
    from core.drafters.textlayer import TextLayerDrafter

    real = TextLayerDrafter.draft

    def flaky(self, page):
        if page.number == 1:
            raise RuntimeError("broken content stream")
        return real(self, page)

    monkeypatch.setattr(TextLayerDrafter, "draft", flaky)
    out = tmp_path / "drafts.json"
    assert main(["draft", str(report_pdf), "--drafter", "textlayer", "--json", str(out)]) == 1
    first, second = json.loads(out.read_text())["pages"]
    assert first["regions"] == [] and "broken content stream" in first["error"]
    assert second["regions"] and "error" not in second
    err = capsys.readouterr().err
    assert "page(s) 1 could not be drafted (RuntimeError: broken content stream)" in err
    assert list(tmp_path.iterdir()) == [out]  # written in one piece: no temporary file left behind


def test_a_scan_drafted_with_pymupdfs_layout(report_pdf, tmp_path):
    scan = pdf_factory.image_only_pdf(tmp_path / "scan.pdf", pdf_factory.page_image(tmp_path / "p.png", report_pdf))
    out = tmp_path / "regions.json"
    assert main(["draft", str(scan), "--scan-layout", "pymupdf", "--json", str(out)]) == 0
    page = json.loads(out.read_text())["pages"][0]
    assert page["drafter"] == "rapidocr"
    text = " ".join(r["text"] for r in page["regions"])
    assert pdf_factory.HEADER.split()[0] in text and pdf_factory.CAPTION.split()[0] in text
