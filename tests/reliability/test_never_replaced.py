"""No command writes over a file it did not write: ``hsd draft --json``, ``hsd tiny-model``, a special
file (FIFO, symbolic link) where an output goes, and a resume or figures folder that is a symbolic
link to someone's files.

Cases that could block on main (a FIFO opened for reading) run the real ``hsd`` in a subprocess with
a time limit; the others run it in-process (``cli``).
"""

from __future__ import annotations

import json
import os

from core import tuning
from tests.reliability import hostile as h
from tests.reliability.conftest import ARCH, FAST_AR, assert_clear_error, run_hsd


# --- hsd draft --json --------------------------------------------------------------------------------


def test_draft_json_never_replaces_its_input_or_a_file_it_did_not_write(tmp_path, cli):
    """``hsd draft g.pdf --json g.pdf`` replaced the PDF with JSON; ``--json notes.json`` replaced
    an existing file silently."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    original = pdf.read_bytes()
    os.symlink(pdf, tmp_path / "link.json")
    for target in (pdf, tmp_path / "link.json"):
        rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", target)
        assert_clear_error(rc, err, str(target), "input")
        assert pdf.read_bytes() == original
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}\n')
    rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", notes)
    assert_clear_error(rc, err, "notes.json", "--overwrite")
    assert notes.read_text() == '{"mine": true}\n'
    # its own JSON is replaced on a re-run; --overwrite replaces another file
    ours = tmp_path / "drafts.json"
    for _ in range(2):
        rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", ours)
        assert rc == 0, err
    rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", notes, "--overwrite")
    assert rc == 0, err
    assert json.loads(notes.read_text())["pages"][0]["page"] == 1


# --- hsd tiny-model ----------------------------------------------------------------------------------


def test_tiny_model_never_replaces_a_folder_it_did_not_write(tmp_path, cli, monkeypatch):
    """``hsd tiny-model DIR`` into a real model folder replaced its config.json and weights.

    The model itself is a stand-in of the same files (the real build is checked in
    ``tests/core/commands/test_tiny_model``): what is checked here is which files it may replace."""
    from core.targets import tiny

    def build(out_dir, arch, seed=0, metadata=None):
        (out_dir / "config.json").write_text(json.dumps({"model_type": arch, "seed": seed}))
        (out_dir / "model.safetensors").write_bytes(b"tiny weights %d" % seed)
        return out_dir

    monkeypatch.setattr(tiny, "build_tiny_model", build)
    real = tmp_path / "real-model"
    real.mkdir()
    (real / "config.json").write_text('{"model_type": "qwen2_5_vl", "hidden_size": 4096}')
    (real / "model.safetensors").write_bytes(b"precious weights")
    rc, _, err = cli("tiny-model", real, "--arch", ARCH)
    assert_clear_error(rc, err, "real-model", "--overwrite")
    assert (real / "model.safetensors").read_bytes() == b"precious weights"
    assert sorted(p.name for p in real.iterdir()) == ["config.json", "model.safetensors"]
    # a new folder, then the same command again over its own model; an edited file is not its own
    demo = tmp_path / "demo"
    for _ in range(2):
        rc, _, err = cli("tiny-model", demo, "--arch", ARCH)
        assert rc == 0, err
    assert (demo / "config.json").is_file() and not [p for p in demo.iterdir() if "building" in p.name]
    (demo / "config.json").write_text((demo / "config.json").read_text().replace("{", '{"edited": 1, ', 1))
    rc, _, err = cli("tiny-model", demo, "--arch", ARCH)
    assert_clear_error(rc, err, "config.json")
    assert '"edited": 1' in (demo / "config.json").read_text()


# --- special files where an output goes --------------------------------------------------------------


def test_special_files_at_output_paths_are_refused_as_existing_files_are(tmp_path, cli, model_dir, monkeypatch):
    """``mkfifo out.md`` was replaced without ``--overwrite``; a FIFO where a statistics file or a
    figure goes, or a symbolic link where the Markdown goes, is no file hsd wrote either. Each is
    one line naming it, before any model loads; nothing blocks on a FIFO."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone's notes\n")
    cases = {}
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "out.md")
    # a FIFO where the Markdown or the statistics go is never an output, even with --overwrite
    cases["fifo"] = (["-o", "fifo/out.md"], ["out.md", "not a regular file"])
    (tmp_path / "link").mkdir()
    os.symlink(victim, tmp_path / "link" / "out.md")
    cases["link"] = (["-o", "link/out.md"], ["out.md", "--overwrite"])
    (tmp_path / "stats").mkdir()
    os.mkfifo(tmp_path / "stats" / "s.json")
    cases["stats"] = (["-o", "stats/out.md", "--stats", "stats/s.json"], ["s.json", "not a regular file"])
    (tmp_path / "figure" / "out_images").mkdir(parents=True)
    os.mkfifo(tmp_path / "figure" / "out_images" / "page-0001-figure-01.png")
    cases["figure"] = (["-o", "figure/out.md"], ["page-0001-figure-01.png", "--overwrite"])
    for name, (args, words) in cases.items():
        for extra in ([], ["--overwrite"]) if "--overwrite" not in words else ([],):
            rc, _, err = run_hsd("convert", pdf, *args, "--model", model_dir, *FAST_AR, *extra, cwd=tmp_path,
                                 timeout=tuning.PATIENCE_SECONDS)
            assert_clear_error(rc, err, *words)
    assert (tmp_path / "fifo" / "out.md").is_fifo() and (tmp_path / "link" / "out.md").is_symlink()
    assert victim.read_text() == "someone's notes\n"
    # with --overwrite the special file itself is replaced (never what a link points to); no FIFO
    # is in its way, so it runs in this process
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli("convert", pdf, "-o", "link/out.md", "--model", model_dir, *FAST_AR, "--overwrite")
    assert rc == 0, err
    assert not (tmp_path / "link" / "out.md").is_symlink() and victim.read_text() == "someone's notes\n"


# --- a symbolic link for the resume or figures folder -----------------------------------------------


def test_a_symlinked_resume_or_figures_folder_is_refused(tmp_path, cli, model_dir):
    """``ln -s victim .g.md.hsd``: hsd convert replaced and deleted the user's files in victim/."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    for folder in (".g.md.hsd", "g_images"):
        victim = tmp_path / f"victim-{folder.strip('.')}"
        victim.mkdir()
        mine = {"page-0001.json": "my page", "manifest.json": "my manifest", "page-0001-figure-01.png": "my png"}
        for name, text in mine.items():
            (victim / name).write_text(text)
        os.symlink(victim, tmp_path / folder)
        for extra in ([], ["--overwrite"], ["--fresh"]):
            rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--model", model_dir, *FAST_AR, *extra)
            assert_clear_error(rc, err, folder, "symbolic link")
        assert {p.name: p.read_text() for p in victim.iterdir()} == mine
        assert not (tmp_path / "g.md").exists()
        os.unlink(tmp_path / folder)
