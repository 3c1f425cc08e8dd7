"""``hsd convert`` never destroys a file: an output that is an input is refused, a file the tool did
not write is kept unless ``--overwrite`` says otherwise, two inputs never share an output, one
input's failure costs only that input, and a failed run leaves nothing behind.

Every case runs ``hsd`` in this process (``cli``) with a tiny model, loaded once; that a failure is
one line end to end, from a fresh process, is checked in ``test_cli_inputs``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR, assert_clear_error


def _no_partials(folder: Path) -> None:
    assert not [p for p in Path(folder).rglob("*") if p.name.endswith(".partial")]


# --- 1. an output that is an input ------------------------------------------------------------------


def test_an_output_that_is_or_resolves_to_an_input_is_refused(tmp_path, cli, model_dir, monkeypatch):
    """A PDF named ``same.md`` converted to ``same.md`` (directly, through a symlink, through ``..``),
    ``--stats`` onto the input, an input where the figures folder or the resume folder would go:
    each is refused with one line before any work, and the input is untouched."""
    pdf = h.text_pdf(tmp_path / "src.pdf", pages=1).read_bytes()
    (tmp_path / "same.md").write_bytes(pdf)
    (tmp_path / "doc_images").write_bytes(pdf)
    (tmp_path / ".doc.md.hsd").write_bytes(pdf)
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "same.md", tmp_path / "link.md")
    cases = [
        (["same.md", "-o", "same.md"], "same.md"),
        (["same.md", "-o", "link.md"], "link.md"),
        (["same.md", "-o", "sub/../same.md"], "same.md"),
        (["link.md", "-o", "same.md"], "same.md"),
        (["same.md", "-o", "out.md", "--stats", "same.md"], "same.md"),
        (["doc_images", "-o", "doc.md"], "doc_images"),
        ([".doc.md.hsd", "-o", "doc.md"], ".doc.md.hsd"),
    ]
    monkeypatch.chdir(tmp_path)
    for args, name in cases:
        rc, _, err = cli("convert", *args, "--model", model_dir, *FAST_AR)
        assert_clear_error(rc, err, name, "input")
        for victim in ("same.md", "doc_images", ".doc.md.hsd"):
            assert (tmp_path / victim).read_bytes() == pdf, (args, victim)
        assert not (tmp_path / "out.md").exists() and not (tmp_path / "doc.md").exists()
    _no_partials(tmp_path)


# --- 2. files the tool did not write -----------------------------------------------------------------


def test_a_file_the_tool_did_not_write_is_kept_without_overwrite(tmp_path, cli, model_dir):
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    notes = tmp_path / "notes.md"
    notes.write_text("precious\n")
    rc, _, err = cli("convert", pdf, "-o", notes, "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "notes.md", "--overwrite")
    assert notes.read_text() == "precious\n"
    assert not (tmp_path / ".notes.md.hsd").exists()

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.md").write_text("mine\n")
    rc, _, err = cli("convert", pdf, "-o", folder, "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "a.md", "--overwrite")
    assert (folder / "a.md").read_text() == "mine\n"

    stats = tmp_path / "numbers.json"
    stats.write_text('{"my": "numbers"}')
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "fresh.md", "--stats", stats, "--model", model_dir,
                         *FAST_AR)
    assert_clear_error(rc, err, "numbers.json", "--overwrite")
    assert stats.read_text() == '{"my": "numbers"}' and not (tmp_path / "fresh.md").exists()

    rc, _, err = cli("convert", pdf, "-o", notes, "--overwrite", "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    written = notes.read_bytes()
    assert written != b"precious\n"
    # its own output, recognised from its resume folder, is replaced on a re-run as before
    rc, _, err = cli("convert", pdf, "-o", notes, "--fresh", "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert notes.read_bytes() == written
    # ... until someone edits it: then it is theirs
    notes.write_bytes(written + b"\nmy own note\n")
    rc, _, err = cli("convert", pdf, "-o", notes, "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "notes.md", "--overwrite")
    assert notes.read_bytes().endswith(b"my own note\n")


# --- 3. two inputs, one output -----------------------------------------------------------------------


def test_inputs_that_share_a_name_get_outputs_of_their_own(tmp_path, cli, model_dir):
    """``c/x.pdf c/x-2.pdf c/sub/x.pdf -o out``: three documents, three outputs, three resume folders,
    each holding its own document's pages (1, 2 and 3 pages)."""
    c = tmp_path / "c"
    (c / "sub").mkdir(parents=True)
    inputs = [h.text_pdf(c / "x.pdf", pages=1), h.text_pdf(c / "x-2.pdf", pages=2),
              h.text_pdf(c / "sub" / "x.pdf", pages=3)]
    out, stats = tmp_path / "out", tmp_path / "stats.json"
    rc, _, err = cli("convert", *inputs, "-o", out, "--stats", stats, "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    docs = json.loads(stats.read_text())["documents"]
    outputs = [Path(d["output"]) for d in docs]
    assert len(set(outputs)) == 3, outputs
    for doc, pages in zip(docs, (1, 2, 3)):
        md = Path(doc["output"])
        assert doc["totals"]["pages"] == pages and md.is_file()
        saved = sorted(p.name for p in md.with_name(f".{md.name}.hsd").glob("page-*.json"))
        assert saved == [f"page-{n:04d}.json" for n in range(1, pages + 1)], (md, saved)
    assert {p.relative_to(out).as_posix() for p in outputs} == {"x.md", "x-2.md", "sub/x.md"}


def test_ray_names_a_folder_s_documents_as_the_single_machine_path_does(tmp_path):
    """``--ray c`` expands the folder and names its documents with the same function as the
    single-machine path: no two documents share an output or a resume folder."""
    from core.scale.inputs import expand_inputs

    try:
        from core.outputs import output_paths
    except ImportError:  # where naming lived before it had a module of its own
        from core.commands.convert import output_paths

    c = tmp_path / "c"
    (c / "sub").mkdir(parents=True)
    for name in ("x.pdf", "x-2.pdf", "sub/x.pdf", "y.pdf", "y.png"):
        (c / name).write_bytes(b"%PDF-1.4 stand-in")
    files = expand_inputs([c])
    outputs = output_paths(files, tmp_path / "out")
    assert len(set(outputs)) == len(outputs) == 5, outputs
    assert outputs == output_paths([Path(p) for p in files], tmp_path / "out")


# --- 4. one input's OSError --------------------------------------------------------------------------


def test_one_input_failing_with_an_os_error_costs_only_that_input(tmp_path, cli, model_dir):
    """A 236-character name (its temporary file used to pass 255 bytes) converts; an input whose
    output folder cannot be made (a file is in the way) is reported in one line naming it, and
    the others are converted; the exit code says something failed; no temporary name shows."""
    c = tmp_path / "c"
    (c / "sub").mkdir(parents=True)
    long_name = h.text_pdf(c / ("n" * 236 + ".pdf"), pages=1)
    blocked = h.text_pdf(c / "sub" / "y.pdf", pages=1)
    ok = h.text_pdf(c / "ok.pdf", pages=1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").write_text("a file where the folder would go\n")
    rc, _, err = cli("convert", long_name, blocked, ok, "-o", out, "--model", model_dir, *FAST_AR)
    assert rc == 1, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hsd: error: ") and "y.pdf" in lines[0], err
    assert "partial" not in err and "Traceback" not in err
    assert (out / ("n" * 236 + ".md")).is_file() and (out / "ok.md").is_file()
    assert (out / "sub").read_text() == "a file where the folder would go\n"
    _no_partials(tmp_path)


def test_a_folder_given_as_the_output_file_is_refused_before_any_work(tmp_path, cli):
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    (tmp_path / "out.md").mkdir()
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "out.md", "--model", tmp_path / "no-model",
                         *FAST_AR)
    assert_clear_error(rc, err, "out.md", "folder")
    assert "partial" not in err and list((tmp_path / "out.md").iterdir()) == []


# --- 6. nothing left behind --------------------------------------------------------------------------


def test_a_model_load_failure_leaves_nothing_behind(tmp_path, cli):
    pdf = h.text_pdf(tmp_path / "a.pdf", pages=1)
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "out" / "doc.md", "--model", tmp_path / "no-model",
                         *FAST_AR)
    assert_clear_error(rc, err, "no-model")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").rglob("*")) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pdf"]
