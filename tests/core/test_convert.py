"""``hsd convert`` end to end on generated PDFs with a tiny model: identical output across lossless
modes, figures, statistics, per-page resume and one-line errors. ``hsd`` runs in this process,
except where the process is killed; one-line errors from a fresh process: ``tests/reliability``."""

from __future__ import annotations

import json
import subprocess
import sys

import pymupdf
import pytest

from core.cli import main

ARCH = "qwen2_5_vl"

#: Each conversion here is ``hsd convert`` in this process; the model is loaded once for all of them.
pytestmark = pytest.mark.usefixtures("shared_model_loads")


def _make_pdf(path, pages=2, figure=True):
    doc = pymupdf.open()
    for k in range(pages):
        page = doc.new_page(width=420, height=560)
        page.insert_text((50, 60), f"Section {k + 1}: results", fontsize=16)
        page.insert_textbox(pymupdf.Rect(50, 80, 370, 200),
                            "Speculative decoding verifies drafted tokens in parallel. " * 4, fontsize=10)
        if figure:
            page.draw_rect(pymupdf.Rect(60, 220, 360, 380), color=(0, 0, 1), fill=(0.7, 0.8, 1.0))
            page.insert_text((60, 400), f"Figure {k + 1}: a blue box.", fontsize=9)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tiny_target_dir):
    return str(tiny_target_dir(ARCH))


def _convert(pdf, out, model_dir, *extra):
    args = ["convert", str(pdf), "-o", str(out), "--model", model_dir, "--drafter", "textlayer",
            "--max-new-tokens", "60", "-q", *extra]
    return main(args)


def test_ar_and_hsd_write_identical_markdown(tmp_path, model_dir):
    pdf = _make_pdf(tmp_path / "doc.pdf")
    assert _convert(pdf, tmp_path / "ar.md", model_dir, "--mode", "ar", "--stats", str(tmp_path / "ar.json")) == 0
    assert _convert(pdf, tmp_path / "hsd.md", model_dir, "--mode", "hsd", "--stats", str(tmp_path / "hsd.json")) == 0
    assert (tmp_path / "ar.md").read_bytes() == (tmp_path / "hsd.md").read_bytes()
    ar, hsd = (json.loads((tmp_path / f"{m}.json").read_text()) for m in ("ar", "hsd"))
    assert ar["totals"]["forward_passes"] > 0 and hsd["totals"]["forward_passes"] > 0
    assert ar["totals"]["generated_tokens"] == hsd["totals"]["generated_tokens"]
    page = hsd["pages"][0]
    assert {"forward_passes", "generated_tokens", "mean_accepted_length", "seconds"} <= set(page["stats"])
    assert set(page["stats"]["seconds"]) >= {"render", "draft", "prefill", "verify", "total"}
    region = page["regions"][0]["stats"]
    assert {"label", "bbox", "drafted_tokens", "accepted_tokens", "acceptance_rate", "forward_passes"} <= set(region)


def test_figures_are_cropped_and_linked(tmp_path, model_dir):
    pdf = _make_pdf(tmp_path / "fig.pdf", pages=1)
    assert _convert(pdf, tmp_path / "out" / "fig.md", model_dir, "--mode", "ar") == 0
    images = sorted((tmp_path / "out" / "fig_images").glob("*.png"))
    text = (tmp_path / "out" / "fig.md").read_text()
    if images:  # the text layer drafter found the drawing as a figure
        assert f"](fig_images/{images[0].name})" in text


def test_resume_skips_finished_pages(tmp_path, model_dir, monkeypatch):
    pdf = _make_pdf(tmp_path / "doc.pdf", pages=3, figure=False)
    out = tmp_path / "doc.md"
    assert _convert(pdf, out, model_dir, "--mode", "ar") == 0
    first = out.read_bytes()
    from core.engine import Engine

    calls = []
    original = Engine.decode_image
    monkeypatch.setattr(Engine, "decode_image", lambda self, page, **k:
                        calls.append(page.number) or original(self, page, **k))
    assert _convert(pdf, out, model_dir, "--mode", "ar") == 0
    assert calls == [] and out.read_bytes() == first
    # other settings: pages are redone
    assert _convert(pdf, out, model_dir, "--mode", "ar", "--max-new-tokens", "50") == 0
    assert calls == [1, 2, 3]


def test_a_resumed_run_drafts_from_the_pages_it_reuses(tmp_path, model_dir, monkeypatch):
    """Pages saved by an earlier run join the document's history before the next page is decoded."""
    pdf = _make_pdf(tmp_path / "doc.pdf", pages=3, figure=False)
    out = tmp_path / "doc.md"
    assert _convert(pdf, out, model_dir, "--mode", "hsd", "--pages", "1-2") == 0
    from core.engine import Engine

    remembered = []
    original = Engine.remember_pages
    monkeypatch.setattr(Engine, "remember_pages", lambda self, key, results: remembered.append(
        [r.page for r in results]) or original(self, key, results))
    assert _convert(pdf, out, model_dir, "--mode", "hsd") == 0
    assert remembered == [[1, 2]]


def test_pages_the_drafter_failed_on_are_named_once(tmp_path, model_dir, monkeypatch, capsys):
    """A drafter crash costs speed, not the page, and the user is told which pages and why."""
    pdf = _make_pdf(tmp_path / "doc.pdf", pages=3, figure=False)
    assert _convert(pdf, tmp_path / "ar.md", model_dir, "--mode", "ar") == 0
    from core.drafters.textlayer import TextLayerDrafter

    original = TextLayerDrafter.draft

    def draft(self, page):
        if page.number == 2:
            raise RuntimeError("no text layer today")
        return original(self, page)

    monkeypatch.setattr(TextLayerDrafter, "draft", draft)
    capsys.readouterr()
    assert _convert(pdf, tmp_path / "hsd.md", model_dir, "--mode", "hsd") == 0
    err = capsys.readouterr().err
    assert "drafter failed on page(s) 2 (RuntimeError: no text layer today)" in err
    assert err.count("hsd: warning:") == 1 and "Traceback" not in err
    assert (tmp_path / "hsd.md").read_bytes() == (tmp_path / "ar.md").read_bytes()


@pytest.mark.parametrize("when", ["decoding", "saving"])
def test_killed_run_resumes_without_corrupt_output(tmp_path, model_dir, when):
    """kill -9 in the middle of page 2 (while decoding it, or between writing its result file and
    renaming it into place), then the same command finishes the job."""
    pdf = _make_pdf(tmp_path / "doc.pdf", pages=3, figure=False)
    out = tmp_path / "doc.md"
    script = f"""
import os, signal
import core.export
from core.engine import Engine
orig = Engine.decode_image
def convert_image(self, page, **k):
    if page.number == 2 and {when!r} == "decoding":
        os.kill(os.getpid(), signal.SIGKILL)
    return orig(self, page, **k)
Engine.decode_image = convert_image
real_replace = os.replace
def replace(src, dst):
    if str(dst).endswith("page-0002.json") and {when!r} == "saving":
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(src, dst)
core.export.os.replace = replace
from core.cli import main
main({["convert", str(pdf), "-o", str(out), "--model", model_dir, "--drafter", "textlayer", "--max-new-tokens", "60", "-q", "--mode", "ar"]!r})
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert proc.returncode == -9
    assert not out.exists()  # the final file is only ever written whole
    work = out.with_name(".doc.md.hsd")
    assert sorted(p.name for p in work.glob("page-*.json")) == ["page-0001.json"]
    partials = list(tmp_path.glob("**/*.partial"))
    assert len(partials) == (1 if when == "saving" else 0)  # the half-saved page 2, never renamed
    assert _convert(pdf, out, model_dir, "--mode", "ar") == 0
    assert not list(tmp_path.glob("**/*.partial"))  # cleaned up by the resumed run
    reference = tmp_path / "ref.md"
    assert _convert(pdf, reference, model_dir, "--mode", "ar") == 0
    assert out.read_bytes() == reference.read_bytes()


def test_bad_input_is_one_line_and_nonzero(tmp_path, model_dir, capsys):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\n this is not really a pdf")
    capsys.readouterr()
    assert main(["convert", str(bad), "-o", str(tmp_path / "x.md"), "--model", model_dir]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_model_is_one_line(tmp_path, capsys):
    pdf = _make_pdf(tmp_path / "doc.pdf", pages=1, figure=False)
    capsys.readouterr()
    assert main(["convert", str(pdf), "-o", str(tmp_path / "x.md"), "--model", str(tmp_path / "no-such-model"),
                 "-q"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "model" in err.lower() and "folder" in err.lower()
