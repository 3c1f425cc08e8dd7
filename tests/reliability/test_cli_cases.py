"""Cases of the command line that lost data, hung, crashed or misled: a user's JSON file taken for
hsd's own, ``hsd bench`` writing over files and into its corpus, a device as an output, outputs
that fail only after the work, an empty or endless page range, closed standard streams, a
model configuration of impossible sizes, passwords on standard input, names that forge lines, an
image refused by the wrong limit, a second Ctrl-C, and the tiny model's file modes.

Each runs the real entry point: ``hsd`` in a subprocess where the process itself matters (its
streams, its signals, its memory), else ``core.cli.main`` in this process (``cli``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from core import tuning
from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR, REPO, assert_clear_error, hsd_command, run_hsd

#: A model folder that does not exist: an output check that runs first answers instead of it.
NO_MODEL = "/nonexistent/hsd-model"


def _popen_env() -> dict:
    return {**os.environ, "PYTHONPATH": REPO, "PYTHONIOENCODING": "utf-8"}


# --- a user's JSON file is never taken for hsd's own ---------------------------------------------------


@pytest.mark.parametrize("content", [
    {"documents": [], "my": "notes"},                       # an empty list: nothing says it is not ours
    {"documents": []},                                      # hsd's shape, but no marker
    {"format": "hsd-stats/1", "documents": [], "my": 1},    # the marker, and a key hsd never writes
    {"file": "a.pdf", "output": "a.md", "settings": {}, "totals": {}, "pages": []},  # an older file, no marker
])
def test_stats_that_hsd_did_not_write_is_never_replaced(content, tmp_path, cli):
    """``--stats n.json`` replaced ``{"documents": [], "my": "notes"}`` without --overwrite
    (``all([])`` is true): hsd's own statistics are known by their format marker only."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    notes = tmp_path / "n.json"
    notes.write_text(json.dumps(content))
    before = notes.read_bytes()
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--stats", notes, "--model", NO_MODEL, *FAST_AR)
    assert_clear_error(rc, err, "n.json", "--overwrite")
    assert notes.read_bytes() == before and not (tmp_path / "g.md").exists()


@pytest.mark.parametrize("content", [
    {"file": "x", "pages": [], "my": 1},
    {"file": "x", "pages": []},
    {"format": "hsd-drafts/1", "file": "x", "pages": [], "my": 1},
    {"format": "hsd-stats/1", "file": "x", "pages": []},
])
def test_draft_json_that_hsd_did_not_write_is_never_replaced(content, tmp_path, cli):
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    notes = tmp_path / "n2.json"
    notes.write_text(json.dumps(content))
    before = notes.read_bytes()
    rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", notes)
    assert_clear_error(rc, err, "n2.json", "--overwrite")
    assert notes.read_bytes() == before


def test_hsd_s_own_json_files_carry_their_marker_and_are_replaced_on_a_rerun(tmp_path, cli, model_dir):
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    drafts = tmp_path / "drafts.json"
    for _ in range(2):
        rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", drafts)
        assert rc == 0, err
    assert json.loads(drafts.read_text())["format"] == "hsd-drafts/1"
    stats = tmp_path / "stats.json"
    for _ in range(2):
        rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--stats", stats, "--model", model_dir, *FAST_AR)
        assert rc == 0, err
    data = json.loads(stats.read_text())
    assert data["format"] == "hsd-stats/1" and data["totals"]["pages"] == 1
    # edited by hand (a key of the user's own): theirs from then on
    stats.write_text(json.dumps({**data, "reviewed": True}))
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--stats", stats, "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "stats.json", "--overwrite")
    assert json.loads(stats.read_text())["reviewed"] is True


# --- hsd bench never writes over files it did not write, nor into its corpus ---------------------------


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corp"
    (root / "pairs").mkdir(parents=True)
    h.text_pdf(root / "pairs" / "a.pdf", pages=1)
    (root / "pairs" / "a.md").write_text(h.TEXT + "\n")
    return root


BENCH = ["--drafter", "textlayer", "--tokenizer", "tiny", "--methods", "hsd", "--dpi", "36", "-q"]


def test_bench_refuses_files_it_did_not_write_and_the_corpus_itself(corpus, tmp_path, cli):
    """``hsd bench corp --out mine`` replaced mine/report.md and mine/pages.jsonl without a word;
    ``--out corp/pairs`` overwrote a reference of the corpus."""
    reference = (corpus / "pairs" / "a.md").read_bytes()
    for out in (corpus / "pairs", corpus, corpus / "pairs" / "deeper"):
        for extra in ([], ["--overwrite"]):
            rc, _, err = cli("bench", corpus, "--out", out, *BENCH, *extra)
            assert_clear_error(rc, err, "corpus")
    assert (corpus / "pairs" / "a.md").read_bytes() == reference
    assert sorted(p.name for p in (corpus / "pairs").iterdir()) == ["a.md", "a.pdf"]
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("report.md", "pages.jsonl"):
        (mine / name).write_text("my notes\n")
        rc, _, err = cli("bench", corpus, "--out", mine, *BENCH)
        assert_clear_error(rc, err, name, "--overwrite")
        assert (mine / name).read_text() == "my notes\n"
        (mine / name).unlink()
    (mine / "unrelated.txt").write_text("kept\n")
    # a new folder, then the same command over its own report; an edited report is the user's
    out = tmp_path / "bench-out"
    for _ in range(2):
        rc, _, err = cli("bench", corpus, "--out", out, *BENCH)
        assert rc == 0, err
    assert (out / "report.md").is_file() and (out / "bench.json").is_file()
    (out / "report.md").write_text((out / "report.md").read_text() + "\nmy conclusion\n")
    rc, _, err = cli("bench", corpus, "--out", out, *BENCH)
    assert_clear_error(rc, err, "report.md", "--overwrite")
    assert (out / "report.md").read_text().endswith("my conclusion\n")
    rc, _, err = cli("bench", corpus, "--out", out, *BENCH, "--overwrite")
    assert rc == 0, err
    assert "my conclusion" not in (out / "report.md").read_text()


# --- no device, kernel file or unwritable place is ever an output; all checked before the work ----------


def test_a_device_is_never_an_output_even_with_overwrite(tmp_path, cli):
    """As root, ``hsd draft g.pdf --json /dev/null --overwrite`` turned /dev/null into a regular
    file. A device (also through a symbolic link), a FIFO or a socket is refused by every output
    option, --overwrite or not."""
    import socket

    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    os.symlink("/dev/null", tmp_path / "null.json")
    os.mkfifo(tmp_path / "pipe.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.json"))
    try:
        for target in ("/dev/null", "/dev/zero", "/dev/full", tmp_path / "null.json", tmp_path / "pipe.json",
                       tmp_path / "sock.json"):
            rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", target, "--overwrite")
            assert_clear_error(rc, err, str(target), "not a regular file")
            rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--stats", target, "--overwrite",
                             "--model", NO_MODEL, *FAST_AR)
            assert_clear_error(rc, err, str(target), "not a regular file")
    finally:
        sock.close()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and (tmp_path / "pipe.json").is_fifo()
    assert not (tmp_path / "g.md").exists()


@pytest.mark.parametrize("command", ["bench", "tiny-model"])
def test_a_command_writing_a_folder_refuses_a_device_or_kernel_folder(command, tmp_path, cli):
    """The folders ``hsd bench --out`` and ``hsd tiny-model DIR`` write into: never a device, never
    under /proc or /sys, never below a file."""
    corpus = tmp_path / "corp"
    (corpus / "pairs").mkdir(parents=True)
    blocker = tmp_path / "a-file"
    blocker.write_text("x\n")
    for target, words in (("/dev/null", "not a folder"), ("/proc/self/hsd", "kernel"), ("/sys/hsd", "kernel"),
                          (blocker / "below", "not a folder")):
        args = ["bench", corpus, "--out", target, *BENCH] if command == "bench" else \
            ["tiny-model", target, "--arch", "qwen2_5_vl"]
        rc, _, err = cli(*args)
        assert_clear_error(rc, err, str(target), words)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and blocker.read_text() == "x\n"


@pytest.mark.parametrize("where", ["proc", "sys", "dev-full", "stats-below-a-file", "output-below-a-file"])
def test_an_output_that_cannot_be_written_is_refused_before_the_model_loads(where, tmp_path, cli):
    """``--stats g.pdf/st.json`` failed only after the whole conversion, ``-o`` under /proc, /sys or
    /dev/full only after the model had loaded (14-32 s). Now each is one line before anything
    loads: the model named here does not even exist, and the output's line comes first."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    args = {"proc": ["-o", "/proc/self/hsd-out.md"], "sys": ["-o", "/sys/hsd-out.md"],
            "dev-full": ["-o", "/dev/full/g.md"],
            "stats-below-a-file": ["-o", tmp_path / "g.md", "--stats", pdf / "st.json"],
            "output-below-a-file": ["-o", pdf / "g.md"]}[where]
    rc, _, err = cli("convert", pdf, *args, "--model", NO_MODEL, *FAST_AR)
    assert_clear_error(rc, err)
    assert "could not load model" not in err
    assert not (tmp_path / "g.md").exists()
    if where in ("proc", "sys"):
        rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", f"/{where}/hsd-drafts.json")
        assert_clear_error(rc, err, where, "kernel")


def test_a_full_disk_is_found_before_the_model_loads(tmp_path, cli, small_fs):
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    disk = small_fs("64k")
    filler = disk / "filler"
    with open(filler, "wb") as f:
        try:
            f.write(b"\0" * (1 << 20))
        except OSError:
            pass
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--stats", disk / "st.json", "--model", NO_MODEL,
                     *FAST_AR)
    assert_clear_error(rc, err, "st.json", "No space left")
    rc, _, err = cli("draft", pdf, "--drafter", "textlayer", "--json", disk / "d.json")
    assert_clear_error(rc, err, "d.json", "No space left")
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # no probe left behind


# --- page ranges ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("pages", ["", " ", ",", "1-" + "9" * 5000, "9" * 5000])
def test_an_empty_or_endless_page_range_is_one_line(pages, tmp_path):
    """``--pages ""`` drafted or converted every page (10,000 of them); ``--pages 1-<5000 nines>``
    ended in Python's integer conversion limit."""
    pdf = h.many_pages_pdf(tmp_path / "big.pdf", pages=50)
    rc, out, err = run_hsd("draft", pdf, "--drafter", "textlayer", "--pages", pages, timeout=tuning.PATIENCE_SECONDS)
    assert_clear_error(rc, err, "page range")
    assert out == "" and len(err) < 400
    rc, _, err = run_hsd("convert", pdf, "-o", tmp_path / "big.md", "--pages", pages, "--model", NO_MODEL,
                         *FAST_AR, timeout=tuning.PATIENCE_SECONDS)
    assert_clear_error(rc, err, "page range")
    assert not (tmp_path / "big.md").exists()


# --- the process's own streams -------------------------------------------------------------------------


@pytest.mark.parametrize("closed", ["stdout", "stdout --json -", "stderr", "stdin --ask-password"])
def test_closed_standard_streams_end_quietly(closed, tmp_path):
    """``hsd draft g.pdf >&-`` ended in an AttributeError. With standard output closed the listing
    cannot be written: the command ends as a reader that left does (141), without a traceback."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    args = [*hsd_command(), "draft", str(pdf), "--drafter", "textlayer"]
    fd = {"stdout": 1, "stderr": 2, "stdin": 0}[closed.split()[0]]
    if closed.endswith("--json -"):
        args += ["--json", "-"]
    if "--ask-password" in closed:
        args += ["--ask-password"]
    proc = subprocess.run(["sh", "-c", f'exec "$@" {fd}>&-', "hsd", *args], capture_output=True,
                          env=_popen_env(), timeout=300)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert "Traceback" not in text and "Error" not in text, text
    if fd == 1:
        assert proc.returncode == 141 and text == "", (proc.returncode, text)
    elif fd == 2:
        assert proc.returncode == 0 and "=== page 1" in text, (proc.returncode, text)
    else:
        assert proc.returncode == 2 and "nothing to read" in text, (proc.returncode, text)


def _draft_with_stdin(tmp_path, stdin, *extra, limit_memory: bool = False):
    pdf = h.encrypted_pdf(tmp_path / "locked.pdf")

    def cap():  # a read without bound fails fast here instead of exhausting the machine
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    proc = subprocess.run([*hsd_command(), "draft", str(pdf), "--drafter", "textlayer", "--ask-password", *extra],
                          stdin=stdin, capture_output=True, env=_popen_env(), timeout=300,
                          preexec_fn=cap if limit_memory else None)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def test_a_password_that_is_not_utf8_is_one_line(tmp_path):
    """A password with bytes that are not UTF-8 ended in a message of PyMuPDF's SWIG layer."""
    pdf = h.encrypted_pdf(tmp_path / "locked.pdf")
    for data in (b"\xff\xfe\n", b"s3cr\xe9t\n"):
        proc = subprocess.run([*hsd_command(), "draft", str(pdf), "--drafter", "textlayer", "--ask-password"],
                              input=data, capture_output=True, env=_popen_env(), timeout=300)
        assert_clear_error(proc.returncode, proc.stderr.decode("utf-8", "replace"), "--ask-password", "UTF-8")
    # the environment variable the same
    rc, _, err = run_hsd("draft", tmp_path / "locked.pdf", "--drafter", "textlayer",
                         env={"HSD_PASSWORD": os.fsdecode(b"s3cr\xe9t")})
    assert_clear_error(rc, err, "HSD_PASSWORD", "UTF-8")
    # the right one, read from a pipe, still opens it
    proc = subprocess.run([*hsd_command(), "draft", str(tmp_path / "locked.pdf"), "--drafter", "textlayer",
                           "--ask-password"], input=b"s3cret\n", capture_output=True, env=_popen_env(), timeout=300)
    assert proc.returncode == 0 and b"Confidential" in proc.stdout, proc.stderr


def test_a_password_read_from_an_endless_stream_is_bounded(tmp_path):
    """``--ask-password < /dev/zero`` read one "line" until memory ran out."""
    with open("/dev/zero", "rb") as zero:
        rc, _, err = _draft_with_stdin(tmp_path, zero, limit_memory=True)
    assert_clear_error(rc, err, "--ask-password", "4096 bytes")
    with open(tmp_path / "long.txt", "wb") as f:
        f.write(b"x" * 5000 + b"\n")
    with open(tmp_path / "long.txt", "rb") as long:
        rc, _, err = _draft_with_stdin(tmp_path, long)
    assert_clear_error(rc, err, "--ask-password", "4096 bytes")


# --- a model configuration of impossible sizes ---------------------------------------------------------


@pytest.mark.parametrize("field", ["vocab_size", "text_config.hidden_size", "vision_config.depth",
                                   "num_hidden_layers"])
@pytest.mark.parametrize("value", [4_000_000_000, -1, "many"])
def test_a_config_of_impossible_sizes_is_one_line_before_anything_is_allocated(field, value, tmp_path, cli,
                                                                                model_dir):
    """``vocab_size`` 4e9 in a model's config.json ended in transformers' RuntimeError (after
    trying to allocate it)."""
    bad = tmp_path / "bad-model"
    shutil.copytree(model_dir, bad)
    config = json.loads((bad / "config.json").read_text())
    where = config
    *parents, key = field.split(".")
    for parent in parents:
        where = where.setdefault(parent, {})
    where[key] = value
    (bad / "config.json").write_text(json.dumps(config))
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    rc, _, err = cli("convert", pdf, "-o", tmp_path / "g.md", "--model", bad, *FAST_AR)
    assert_clear_error(rc, err, "bad-model", key, "impossible size")
    assert not (tmp_path / "g.md").exists()


# --- messages ------------------------------------------------------------------------------------------


def test_a_file_name_cannot_forge_a_line(tmp_path):
    """A file name with a newline forged a second ``hsd: warning:`` line; a carriage return, a
    terminal escape or a bidirectional override in a name reached the terminal as is."""
    forged = ("hsd: warning: forged", "hsd: error: forged")
    for name in ("a\nhsd: warning: forged.pdf", "b\rhsd: error: forged.pdf", "c\x1b[2Jd.pdf", "e\u202efdp.exe.pdf"):
        pdf = h.text_pdf(tmp_path / name, pages=1)
        broken = h.truncated_pdf(tmp_path / ("cut " + name))
        runs = [run_hsd("draft", pdf, pdf, "--drafter", "textlayer"),      # argparse's error line
                run_hsd("draft", tmp_path / (name + ".missing")),          # an error line
                run_hsd("draft", broken, "--drafter", "textlayer"),        # a warning or error line
                run_hsd("convert", pdf, pdf, "-o", tmp_path / "out", "--model", NO_MODEL)]  # a warning, an error
        for rc, _, err in runs:
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert lines and all(ln.startswith("hsd: ") for ln in lines), err
            assert not any(ln.startswith(forged) for ln in lines), err
            assert not any(c in err for c in "\r\x1b\u202e"), err
    rc, _, err = run_hsd("convert", pdf, pdf, "-o", tmp_path / "out", "--model", NO_MODEL)
    assert "e\\u202efdp.exe.pdf: given more than once" in err, err


def _gif_claiming(path: Path, width: int, height: int) -> Path:
    """A GIF whose header claims ``width`` x ``height`` pixels, with next to no image data."""
    path.write_bytes(b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
                     + b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x44\x01\x00\x3b")
    return path


def test_an_image_under_our_pixel_limit_is_not_refused_as_over_it(tmp_path, cli):
    """A 200-megapixel GIF was refused as "larger than 400 megapixels" by Pillow's own 179 MP
    limit. Now it is read (and this one, holding no pixels, is called cut short); one above 400
    MP is refused with the size it claims."""
    rc, _, err = cli("draft", _gif_claiming(tmp_path / "wide.gif", 20_000, 10_000), "--drafter", "textlayer")
    assert_clear_error(rc, err, "wide.gif", "cannot be parsed as GIF")
    assert "megapixels" not in err
    rc, _, err = cli("draft", _gif_claiming(tmp_path / "huge.gif", 25_000, 20_000), "--drafter", "textlayer")
    assert_clear_error(rc, err, "huge.gif", "25000 x 20000", "400 megapixels")


def test_a_second_ctrl_c_before_the_first_is_said_still_says_one_line(tmp_path, model_dir):
    """A double Ctrl-C exited 130 with nothing on stderr: the second signal ended the process
    before the first one's line. The second now says "cancelled" when nothing was said yet."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    prelude = """
import importlib.abc, os, signal, sys
from core import cli as _cli
_handle = _cli.StopSignals.handle
def handle(self, signum, frame):
    if self.signal is None:  # the first Ctrl-C: a second one follows at once, while it is handled
        self.signal = signum
        os.kill(os.getpid(), signal.SIGINT)
    _handle(self, signum, frame)
_cli.StopSignals.handle = handle
class _CtrlCWhileLoading(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, _CtrlCWhileLoading())
"""
    rc, _, err = run_hsd("convert", pdf, "-o", tmp_path / "g.md", "--model", model_dir, *FAST_AR,
                         prelude=prelude, timeout=300)
    assert rc == 128 + signal.SIGINT, (rc, err)
    assert [ln for ln in err.splitlines() if ln.strip()] == ["hsd: cancelled"], err


# --- hsd tiny-model's file modes ---------------------------------------------------------------------


def test_the_tiny_model_s_files_share_one_mode(tmp_path):
    """``model.safetensors`` was written 0600 while the rest was 0644."""
    for umask in (0o022, 0o077):
        folder = tmp_path / f"tiny-{umask:o}"
        proc = subprocess.run([sys.executable, "-c", f"import os, sys; os.umask({umask}); from core.cli import main; "
                               f"sys.exit(main(['tiny-model', {str(folder)!r}, '--arch', 'qwen2_5_vl']))"],
                              capture_output=True, env=_popen_env(), timeout=600)
        assert proc.returncode == 0, proc.stderr
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir() if p.is_file()}
        assert set(modes.values()) == {0o666 & ~umask}, modes
