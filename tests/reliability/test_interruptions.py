"""Stopped at the wrong moment: a kill -9, a full disk or no inodes between a figure and its page
record, then the same command once the cause is gone, gives what an undisturbed run gives, without
``--overwrite``; SIGTERM while the model loads, and a second Ctrl-C while the process winds down,
each end in one "stopped" line.

Faults a command line cannot make are made by a prelude (Python run in the ``hsd`` process before
``main``) where the process must die, or by patching the same functions in-process.
"""

from __future__ import annotations

import errno
import signal
from pathlib import Path

import pytest

from tests.reliability import hostile as h
from tests.reliability.conftest import FAST_AR, assert_clear_error, run_hsd

#: The text-layer drafter also reports two figures a page, as a layout drafter would for pictures.
TWO_FIGURES = """
from core.drafters import textlayer
from core.drafters.base import Region
_draft = textlayer.TextLayerDrafter.draft
textlayer.TextLayerDrafter.draft = lambda self, page: _draft(self, page) + [
    Region("figure", (40.0, 240.0, 200.0, 440.0), "", "textlayer"),
    Region("figure", (220.0, 240.0, 380.0, 440.0), "", "textlayer")]
"""

#: kill -9 of the process just before it writes page 2's second figure (its first is on disk).
KILL_AT_PAGE_2_FIGURE_2 = TWO_FIGURES + """
import os, signal
import core.export as export
_write, _seen = export.atomic_write_bytes, []
def _write_or_die(path, data):
    if "page-0002-figure" in str(path):
        _seen.append(path)
        if len(_seen) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    return _write(path, data)
export.atomic_write_bytes = _write_or_die
"""


def _outputs(folder: Path) -> dict[str, bytes]:
    """What a user reads: the Markdown and the figures (not the resume folder)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".hsd" not in str(p.relative_to(folder))}


@pytest.fixture
def two_figures(monkeypatch):
    from core.drafters import textlayer
    from core.drafters.base import Region

    draft = textlayer.TextLayerDrafter.draft
    monkeypatch.setattr(textlayer.TextLayerDrafter, "draft", lambda self, page: draft(self, page) + [
        Region("figure", (40.0, 240.0, 200.0, 440.0), "", "textlayer"),
        Region("figure", (220.0, 240.0, 380.0, 440.0), "", "textlayer")])


@pytest.fixture
def reference(tmp_path_factory, two_figures, cli, model_dir):
    """``reference(pdf)``: the outputs of an undisturbed run of ``pdf`` into ``g.md``."""
    def run(pdf: Path) -> dict[str, bytes]:
        folder = tmp_path_factory.mktemp("undisturbed")
        rc, _, err = cli("convert", pdf, "-o", folder / "g.md", "--model", model_dir, *FAST_AR)
        assert rc == 0, err
        return _outputs(folder)
    return run


# --- a figure written before it is recorded ----------------------------------------------------------


def test_killed_between_a_figure_and_its_page_record_the_same_command_continues(tmp_path, reference, cli, model_dir):
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=3)
    out = tmp_path / "out"
    out.mkdir()
    rc, _, err = run_hsd("convert", pdf, "-o", out / "g.md", "--model", model_dir, *FAST_AR,
                         prelude=KILL_AT_PAGE_2_FIGURE_2)
    assert rc == -signal.SIGKILL, (rc, err)
    assert list((out / "g_images").glob("page-0002-figure-*.png"))  # the fault happened where it should
    rc, _, err = cli("convert", pdf, "-o", out / "g.md", "--model", model_dir, *FAST_AR)  # the drafter still adds two figures (``reference``)
    assert rc == 0, err
    assert _outputs(out) == reference(pdf)


@pytest.mark.parametrize("fault", ["disk full", "no inodes"])
def test_a_full_disk_at_a_figure_then_the_same_command_continues(fault, tmp_path, reference, cli, model_dir):
    """The disk fills (or runs out of inodes) while page 2's second figure is written: one line;
    once there is room, the same command gives what an undisturbed run gives."""
    import core.export as export

    pdf = h.text_pdf(tmp_path / "g.pdf", pages=3)
    expected = reference(pdf)
    out = tmp_path / "out"
    out.mkdir()
    seen = []
    write, mkstemp = export.atomic_write_bytes, export.tempfile.mkstemp

    def full(path, data):
        if "page-0002-figure" in str(path):
            seen.append(path)
            if len(seen) == 2:
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return write(path, data)

    def no_inode(*args, **kwargs):  # a new file needs an inode; writing into one does not
        if str(kwargs.get("dir", "")).endswith("_images"):
            seen.append(kwargs["dir"])
            if len(seen) == 4:  # page 1's two figures, then page 2's first: its second has none
                raise OSError(errno.ENOSPC, "No space left on device")
        return mkstemp(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        if fault == "disk full":
            patch.setattr(export, "atomic_write_bytes", full)
        else:
            patch.setattr(export.tempfile, "mkstemp", no_inode)
        rc, _, err = cli("convert", pdf, "-o", out / "g.md", "--model", model_dir, *FAST_AR)
    assert_clear_error(rc, err, "No space left on device", "page-0002-figure")
    rc, _, err = cli("convert", pdf, "-o", out / "g.md", "--model", model_dir, *FAST_AR)
    assert rc == 0, err
    assert _outputs(out) == expected


# --- signals -----------------------------------------------------------------------------------------

#: ``signal.SIG`` sent to the process itself while torch is being imported (loading the model).
_SIGNAL_WHILE_LOADING = """
import importlib.abc, os, signal, sys, time
class _SignalWhileLoading(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.{sig})
            time.sleep(60)
        return None
sys.meta_path.insert(0, _SignalWhileLoading())
"""

#: And a second Ctrl-C while the process winds down (where torch's teardown runs).
_SECOND_INTERRUPT_AT_EXIT = """
import atexit
def _second_interrupt():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)
atexit.register(_second_interrupt)
"""


@pytest.mark.parametrize("case", ["SIGTERM while loading", "Ctrl-C twice"])
def test_a_stop_while_the_model_loads_is_one_line(case, tmp_path, model_dir):
    """SIGTERM during model loading exited silently; a second Ctrl-C printed a traceback from the
    interpreter's teardown. Both now say "stopped" in one line, and the second signal ends the
    process at once."""
    pdf = h.text_pdf(tmp_path / "g.pdf", pages=1)
    if case == "SIGTERM while loading":
        prelude, code = _SIGNAL_WHILE_LOADING.format(sig="SIGTERM"), 128 + signal.SIGTERM
    else:
        prelude, code = _SIGNAL_WHILE_LOADING.format(sig="SIGINT") + _SECOND_INTERRUPT_AT_EXIT, 128 + signal.SIGINT
    rc, _, err = run_hsd("convert", pdf, "-o", tmp_path / "g.md", "--model", model_dir, *FAST_AR,
                         prelude=prelude, timeout=300)
    assert rc == code, (rc, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hsd: stopped"), err
    assert "Traceback" not in err and not (tmp_path / "g.md").exists()
