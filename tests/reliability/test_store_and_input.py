"""The resume folder and the input as they may be found on a re-run: anything in the store that is
not a small regular file of the expected shape is converted again with one warning (never a hang,
an out-of-memory or an internal error); an input changed anywhere, even past its first 64 MiB, is
converted again; an input changed during a run never leaves pages of the other version behind.

Re-runs that could block or exhaust memory on a faulty version run the real ``hsd`` in a
subprocess with a time limit and a cap on its memory (one run for both such stores).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR, assert_clear_error, run_hsd

#: A reading loop that never ends must fail the test, not the machine.
MEMORY_CAP = "import resource\nresource.setrlimit(resource.RLIMIT_DATA, (3 << 30, 3 << 30))\n"


def _warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("hsd: warning:")]


def _convert_in_process(cli, pdf: Path, md: Path, model: str, *extra):
    rc, _, err = cli("convert", pdf, "-o", md, "--model", model, *FAST_AR, *extra)
    assert rc == 0, err
    return md.read_bytes()


@pytest.fixture(scope="module")
def rerun_of_damaged_stores(tmp_path_factory, model_dir):
    """Two documents converted in this process, their resume folders then damaged, then one re-run
    of both in a subprocess (a time limit and a memory cap): ``g`` (5 pages) has page files that are
    not page files, ``m`` (2 pages) a manifest that is a FIFO. -> (output folder, the first run's
    Markdown by name, exit code, stderr of the re-run)."""
    from core.cli import main
    from core.targets import loader
    from tests.reliability.conftest import load_target_once

    folder = tmp_path_factory.mktemp("damaged-stores")
    pdfs = [h.text_pdf(folder / "g.pdf", pages=5), h.text_pdf(folder / "m.pdf", pages=2)]
    out = folder / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loader, "load_target", load_target_once)
        assert main(["convert", *map(str, pdfs), "-o", str(out), "--model", model_dir, *FAST_AR]) == 0
    expected = {name: (out / f"{name}.md").read_bytes() for name in ("g", "m")}

    # g: a page file that is a FIFO hung forever, a symbolic link to /dev/zero ran out of memory,
    # deeply nested JSON gave "internal error: RecursionError", a page file that is a folder
    # aborted the document
    store = out / ".g.md.hsd"
    for page in (2, 3, 4, 5):
        (store / f"page-{page:04d}.json").unlink()
    os.symlink("/dev/zero", store / "page-0002.json")
    os.mkfifo(store / "page-0003.json")
    (store / "page-0004.json").mkdir()
    (store / "page-0004.json" / "inside").write_text("x")
    (store / "page-0005.json").write_text("[" * 200_000 + "]" * 200_000)
    # m: as after a run stopped before the Markdown was written, with a FIFO for its manifest
    (out / "m.md").unlink()
    (out / ".m.md.hsd" / "manifest.json").unlink()
    os.mkfifo(out / ".m.md.hsd" / "manifest.json")

    rc, _, err = run_hsd("convert", *pdfs, "-o", out, "--model", model_dir, *FAST_AR, prelude=MEMORY_CAP,
                         timeout=300)
    return out, expected, rc, err


def _warnings_about(err: str, name: str) -> list[str]:
    return [ln for ln in _warnings(err) if f"{os.sep}{name}:" in ln]


def test_store_files_that_are_not_small_regular_page_files_are_redone(rerun_of_damaged_stores):
    """Each is converted again, with one warning naming them all."""
    out, expected, rc, err = rerun_of_damaged_stores
    assert rc == 0, err
    warned = _warnings_about(err, "g.md")
    assert len(warned) == 1 and "2, 3, 4, 5" in warned[0] and "internal error" not in err, err
    assert (out / "g.md").read_bytes() == expected["g"]
    assert all((out / ".g.md.hsd" / f"page-{p:04d}.json").is_file() for p in range(1, 6))


def test_a_manifest_that_is_a_fifo_is_redone_not_waited_on(rerun_of_damaged_stores):
    out, expected, rc, err = rerun_of_damaged_stores
    assert rc == 0, err
    assert len(_warnings_about(err, "m.md")) == 1 and len(_warnings(err)) == 2, err
    assert (out / "m.md").read_bytes() == expected["m"] and (out / ".m.md.hsd" / "manifest.json").is_file()


def _stats_text(stats: Path) -> str:
    return " ".join(r["text"] for p in json.loads(stats.read_text("utf-8"))["pages"] for r in p["regions"])


def test_an_input_changed_past_its_first_64_mib_is_converted_again(tmp_path, cli, model_dir):
    """The fingerprint read only the first 64 MiB (and the size): a re-run after a change past
    them kept the old pages and showed the old text."""
    pad = (64 << 20) + 4096

    def document(word: bytes) -> bytes:
        stream = b"BT /F1 12 Tf 20 150 Td (The quarterly figure is " + word + b".) Tj ET"
        return h.raw_pdf(tmp_path / "make.pdf", [stream], padding=pad).read_bytes()

    before, after = document(b"ALPHA"), document(b"OMEGA")
    assert len(before) == len(after) and before[:pad] == after[:pad]
    pdf, stats = tmp_path / "report.pdf", tmp_path / "stats.json"
    pdf.write_bytes(before)
    _convert_in_process(cli, pdf, tmp_path / "report.md", model_dir, "--stats", stats)
    assert "ALPHA" in _stats_text(stats)
    pdf.write_bytes(after)
    _convert_in_process(cli, pdf, tmp_path / "report.md", model_dir, "--stats", stats)
    assert "OMEGA" in _stats_text(stats) and "ALPHA" not in _stats_text(stats)
    (tmp_path / "fresh").mkdir()
    expected = _convert_in_process(cli, pdf, tmp_path / "fresh" / "report.md", model_dir)
    assert (tmp_path / "report.md").read_bytes() == expected


def test_an_input_cut_short_during_a_run_leaves_no_page_of_the_cut_file(tmp_path, cli, model_dir, monkeypatch):
    """The PDF is cut while page 2 is being converted (a copy or download still in progress); the
    run stops with one line, and once the whole file is back the same command gives what an
    undisturbed run gives (pages of the cut file used to be kept under the whole file's fingerprint)."""
    from core.export import DocumentOutput

    pdf = h.text_pdf(tmp_path / "g.pdf", pages=3)
    whole = pdf.read_bytes()
    (tmp_path / "undisturbed").mkdir()
    expected = _convert_in_process(cli, pdf, tmp_path / "undisturbed" / "g.md", model_dir)
    save = DocumentOutput.save_page
    saved = []

    def save_then_cut(self, result, page_image=None):
        save(self, result, page_image)
        saved.append(result.page)
        if len(saved) == 1:
            pdf.write_bytes(whole[: len(whole) * 6 // 10])

    md = tmp_path / "g.md"
    with monkeypatch.context() as patch:
        patch.setattr(DocumentOutput, "save_page", save_then_cut)
        rc, _, err = cli("convert", pdf, "-o", md, "--model", model_dir, *FAST_AR)
    pdf.write_bytes(whole)
    assert _convert_in_process(cli, pdf, md, model_dir, "--overwrite") == expected
    assert_clear_error(rc, err, "g.pdf", "changed")
    assert saved == [1]
