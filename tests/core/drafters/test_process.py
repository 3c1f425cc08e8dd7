"""Drafting in a process of its own: the same regions as drafting here (OCR and text layer), the
drafter's errors and warnings carried back, documents opened once, and a process that stops costs
one warning, no page."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import warnings

import pymupdf
import pytest

from core import tuning
from core.documents import open_document
from core.drafters import get_drafter, parse_drafter_spec
from core.drafters.base import DrafterBase, Region
from core.drafters.process import ProcessDrafter, reader_for, serve
from core.errors import HSDWarning, PageRangeError
from tests.core.pdf_factory import encrypted_pdf, text_pdf

OCR_SPEC = "rapidocr:layout=false"

pytestmark = [pytest.mark.drafting_process, pytest.mark.usefixtures("no_shared_readers")]


# -- the process's priority ------------------------------------------------------------------------

_POLICY_SCRIPT = """
import os, sys, threading
from core.drafters.process import lower_priority
got = lower_priority(10, sys.argv[1] == "idle")
seen = []
worker = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(0)))  # as a model's threads
worker.start(); worker.join()
print(got, os.sched_getscheduler(0) == os.SCHED_IDLE, seen[0] == os.SCHED_IDLE, os.nice(0))
"""


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's scheduling policies")
@pytest.mark.parametrize("policy", ["idle", "nice"])
def test_the_drafting_process_leaves_the_cores_to_the_decode(policy):
    """SCHED_IDLE where offered, for the process and the threads it starts afterwards (its model's);
    a niced process where it is turned off."""
    out = subprocess.run([sys.executable, "-c", _POLICY_SCRIPT, policy], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    nice0 = os.nice(0)
    if policy == "idle":
        assert out == ["idle", "True", "True", str(nice0)]
    else:
        assert out == ["nice", "False", "False", str(min(19, nice0 + 10))]


# -- which drafter reads -------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["auto", "auto:layout=pymupdf", "rapidocr:layout=false,threads=2", "rapidocr:layout=cdla"])
def test_a_drafter_knows_the_spec_that_builds_it_again(spec):
    drafter = get_drafter(spec)
    assert parse_drafter_spec(drafter.spec) == parse_drafter_spec(spec)
    assert type(get_drafter(drafter.spec)) is type(drafter)


def test_options_that_a_spec_cannot_say_leave_no_spec():
    assert get_drafter("rapidocr", dpi=None).spec is None  # None would come back as the string "None"
    assert get_drafter("rapidocr", layout_order="a,b").spec is None


def test_reader_for_a_pixel_drafter_is_one_shared_process_drafter():
    first, second = get_drafter(OCR_SPEC), get_drafter(OCR_SPEC)
    reader = reader_for(first)
    assert isinstance(reader, ProcessDrafter) and reader.name == "rapidocr"
    assert reader_for(second) is reader
    assert reader._process is None  # nothing starts before a page needs it


def test_the_process_drafter_is_its_spec_and_builds_a_drafter_here_only_when_one_is_needed():
    reader = ProcessDrafter(OCR_SPEC)
    assert (reader.spec, reader.name) == (OCR_SPEC, "rapidocr")
    assert reader.streams_lines and reader.drafts_elsewhere and reader.last_step is None
    assert reader._here is None  # nothing built on this side yet
    here = reader.here
    assert type(here).__name__ == "RapidOCRDrafter" and here.spec == OCR_SPEC and reader.here is here
    first = get_drafter(OCR_SPEC)
    assert reader_for(first).here is first  # the caller's drafter is kept for the pages drafted here


def test_drafters_without_spec_and_the_switch_read_here(monkeypatch):
    assert isinstance(reader_for(get_drafter("textlayer")), ProcessDrafter)

    class Bare(DrafterBase):
        name = "rapidocr"

    bare = Bare()
    assert reader_for(bare) is bare
    monkeypatch.setattr(tuning, "DRAFTING_PROCESS", False)
    drafter = get_drafter(OCR_SPEC)
    assert reader_for(drafter) is drafter




# -- the protocol, served on a thread ------------------------------------------------------------


class WarningDrafter(DrafterBase):
    """Warns on every page and fails on the second; counts what it was asked."""

    name = "rapidocr"

    def __init__(self):
        self.prepared = []
        self.drafting = threading.Event()  # set once a page is being drafted

    def prepare(self, page):
        self.prepared.append(page.index)

    def draft(self, page):
        self.drafting.set()
        warnings.warn(f"page {page.number} drafted with less", HSDWarning)
        if page.index == 1:
            raise PageRangeError("the second page cannot be drafted")
        return [Region("text", (0, 0, 10, 10), f"page {page.number}", "rapidocr")]


class ServingThread:
    """``serve`` on a thread, standing in for the process (same interface as far as it is used)."""

    def __init__(self, connection, spec):
        self.thread = threading.Thread(target=serve, args=(connection, spec, 0, False), daemon=True)
        self.thread.start()

    def is_alive(self):
        return self.thread.is_alive()

    def terminate(self):
        pass

    def join(self, timeout=None):
        self.thread.join(timeout)


@pytest.fixture
def served(monkeypatch):
    """A ProcessDrafter whose 'process' is ``serve`` on a thread with a WarningDrafter; the
    documents it opens are counted."""
    drafter = WarningDrafter()
    monkeypatch.setattr("core.drafters.get_drafter", lambda spec: drafter)
    opened = []
    real_open = open_document

    def counting_open(path, password=None, **options):
        opened.append((path, password))
        return real_open(path, password=password, **options)

    monkeypatch.setattr("core.documents.open_document", counting_open)

    def start(self):
        if self._process is None:
            mine, theirs = multiprocessing.Pipe()
            self._process, self._connection = ServingThread(theirs, self.spec), mine

    monkeypatch.setattr(ProcessDrafter, "_start", start)
    reader = ProcessDrafter("fake", here=WarningDrafter())  # the local drafter is not the served one
    yield reader, drafter, opened
    reader.close()


def test_regions_come_back_and_warnings_are_warned_here(served, tmp_path):
    reader, _, _ = served
    pdf = text_pdf(tmp_path / "two.pdf", ["one"])
    with open_document(pdf) as document:
        with pytest.warns(HSDWarning, match="page 1 drafted with less"):
            regions = reader.draft(document.page(0))
    assert regions == [Region("text", (0, 0, 10, 10), "page 1", "rapidocr")]


def test_the_drafters_error_is_raised_here_with_its_type_and_message(served, tmp_path):
    reader, _, _ = served
    doc = pymupdf.open()
    doc.new_page()
    doc.new_page()
    doc.save(tmp_path / "two.pdf")
    with open_document(tmp_path / "two.pdf") as document:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HSDWarning)
            with pytest.raises(PageRangeError, match="second page cannot be drafted"):
                reader.draft(document.page(1))
            assert reader.draft(document.page(0))  # the process serves on after an error
    assert not reader.broken


def test_a_document_is_opened_once_for_its_pages_and_again_with_its_password(served, tmp_path):
    reader, drafter, opened = served
    doc = pymupdf.open()
    for _ in range(3):
        doc.new_page()
    doc.save(tmp_path / "three.pdf")
    secret = encrypted_pdf(tmp_path / "secret.pdf", "s3cret")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HSDWarning)
        with open_document(tmp_path / "three.pdf") as document:
            reader.prepare(document.page(2))
            reader.draft(document.page(0))
            reader.draft(document.page(2))
        with open_document(secret, password="s3cret") as document:
            assert reader.draft(document.page(0))[0].text == "page 1"
    assert opened == [(str(tmp_path / "three.pdf"), None), (str(secret), "s3cret")]
    assert drafter.prepared == [2]


def test_a_page_of_no_file_is_drafted_here(served, tmp_path):
    reader, _, opened = served
    pdf = text_pdf(tmp_path / "gone.pdf", ["one"])
    with open_document(pdf) as document:
        page = document.page(0)
        pdf.unlink()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HSDWarning)
            assert reader.draft(page)[0].text == "page 1"
    assert reader._process is None and opened == []


def test_meanwhile_runs_once_while_the_process_drafts_the_page(served, tmp_path):
    reader, drafter, _ = served
    pdf = text_pdf(tmp_path / "one.pdf", ["one"])
    ran = []
    with open_document(pdf) as document, warnings.catch_warnings():
        warnings.simplefilter("ignore", HSDWarning)
        # the served drafter starts the page while this thread is still in ``meanwhile``
        regions = reader.draft(document.page(0),
                               meanwhile=lambda: ran.append(drafter.drafting.wait(tuning.PATIENCE_SECONDS)))
    assert ran == [True] and regions[0].text == "page 1"


def test_waiting_is_called_while_a_slow_drafter_has_not_answered(served, tmp_path, monkeypatch):
    """The reader looks up from a drafter that has not answered (the pages ahead are rendered
    then); a ``waiting`` that raises is raised once the answer is read, and the next page's answer
    is its own."""
    reader, drafter, _ = served
    pdf = text_pdf(tmp_path / "two.pdf", ["one", "two"])
    gate, calls = threading.Event(), []
    slow = drafter.draft

    def held(page):
        assert gate.wait(tuning.PATIENCE_SECONDS)  # a bound for a broken reader: ``waiting`` opens the gate
        return slow(page)

    monkeypatch.setattr(drafter, "draft", held)

    def waiting():
        calls.append(gate.is_set())
        gate.set()

    with open_document(pdf) as document, warnings.catch_warnings():
        warnings.simplefilter("ignore", HSDWarning)
        assert reader.draft(document.page(0), waiting=waiting)[0].text == "page 1"
        assert calls[0] is False  # called before the drafter could answer
        gate.clear()

        def broken():
            gate.set()
            raise RuntimeError("a render failed")

        with pytest.raises(RuntimeError, match="a render failed"):
            reader.draft(document.page(0), waiting=broken)
        gate.set()
        with pytest.raises(PageRangeError):  # page 2's own answer, not page 1's left behind
            reader.draft(document.page(1))
    assert not reader.broken


def test_meanwhile_of_a_page_drafted_here_runs_first(served, tmp_path):
    reader, _, _ = served
    pdf = text_pdf(tmp_path / "gone.pdf", ["one"])
    order = []
    reader.here.draft = lambda page: order.append("draft") or []
    with open_document(pdf) as document:
        page = document.page(0)
        pdf.unlink()
        reader.draft(page, meanwhile=lambda: order.append("meanwhile"))
    assert order == ["meanwhile", "draft"]


class ExpectingDrafter(WarningDrafter):
    """Reads every page itself (an OCR drafter's ``choose``) and records the pages it is told
    come next (``expect_next``) and the drafts they were told around."""

    reads_ahead = True

    def __init__(self):
        super().__init__()
        self.told = []

    def draft(self, page):
        self.told.append(("draft", page.index))
        return [Region("text", (0, 0, 10, 10), f"page {page.number}", "rapidocr")]

    def expect_next(self, page, wanted=None, dropped=None):
        self.told.append(("expect", page.index, wanted(page), dropped is not None and dropped()))

    def end_expecting(self):
        self.told.append(("end",))


def test_the_process_is_told_which_page_comes_next_in_the_runs_order(served, tmp_path, monkeypatch):
    reader, _, _ = served
    drafter = ExpectingDrafter()
    monkeypatch.setattr("core.drafters.get_drafter", lambda spec: drafter)
    doc = pymupdf.open()
    for _ in range(3):
        doc.new_page()
    doc.save(tmp_path / "three.pdf")
    with open_document(tmp_path / "three.pdf") as document:
        reader.read_in_order(document, [0, 2, 1])
        for index in (0, 2, 1):
            reader.draft(document.page(index))
        reader.stop_ahead(document)  # forgotten: the next draft is told nothing
        reader.draft(document.page(0))
    assert drafter.told == [("expect", 2, True, False), ("draft", 0), ("end",),
                            ("expect", 1, True, False), ("draft", 2), ("end",),
                            ("draft", 1), ("draft", 0)]


def test_stopping_a_documents_look_ahead_drops_only_its_own_request(served, tmp_path):
    reader, _, _ = served
    reader._drop = threading.Event()  # the real process's is made when it starts
    pdf = text_pdf(tmp_path / "one.pdf", ["one"])
    with open_document(pdf) as document, open_document(pdf) as other:
        reader.read_in_order(document, [0])
        reader._asking = other  # another run's page is being read
        reader.stop_ahead(document)
        assert not reader._drop.is_set() and document not in reader._following
        reader._asking = document
        reader.stop_ahead(document)
        assert reader._drop.is_set()
        reader._asking = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HSDWarning)
            reader.draft(document.page(0))
        assert not reader._drop.is_set()  # cleared for the next request, which is not dropped


# -- a real process ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    """A page of printed lines, read by OCR; and an encrypted copy."""
    folder = tmp_path_factory.mktemp("scan")
    lines = ["Drafting in a process of its own", "gives the decode its core back", "between two passes."]
    pdf = text_pdf(folder / "page.pdf", lines, size=16, width=420, height=200)
    with pymupdf.open(pdf) as doc:
        doc.save(folder / "secret.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
    return pdf, folder / "secret.pdf"


def test_text_layer_pages_are_drafted_there_too(tmp_path):
    pdf = text_pdf(tmp_path / "born.pdf", ["A page with a text layer.", "Its drafts are its own text."])
    drafter = get_drafter("auto")
    reader = ProcessDrafter(drafter.spec)
    try:
        with open_document(pdf) as document:
            page = document.page(0)
            want = drafter.draft(page)
            assert want[0].source == "textlayer" and reader.draft(page) == want
        assert reader._process is not None and not reader.broken
    finally:
        reader.close()


@pytest.mark.skipif(not hasattr(os, "getsid"), reason="POSIX only")
def test_the_drafting_process_is_niced_in_the_runs_own_scheduling_group(tmp_path, monkeypatch):
    """Its nice weighs against the run's own threads where Linux schedules a ``setsid`` group's
    processes together (autogroup): it is spawned in the run's group, not one of its own, and niced."""
    monkeypatch.setattr(tuning, "DRAFTING_PROCESS_IDLE", False)
    pdf = text_pdf(tmp_path / "born.pdf", ["A page with a text layer."])
    reader = ProcessDrafter(get_drafter("auto").spec)
    try:
        with open_document(pdf) as document:
            assert reader.draft(document.page(0))  # the process has started and answered
        pid = reader._process.pid
        assert os.getsid(pid) == os.getsid(0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0)
                                                           + tuning.DRAFTING_PROCESS_NICE)
    finally:
        reader.close()


def test_a_drafting_process_drafts_what_this_process_drafts(scan):
    pdf, secret = scan
    local = get_drafter(OCR_SPEC)
    reader = ProcessDrafter(OCR_SPEC)
    try:
        with open_document(pdf) as document:
            page = document.page(0)
            want = local.draft(page)
            assert want and reader.draft(page) == want
            assert reader._process is not None and reader._process.pid is not None
            lines = []  # the lines come back as the process's recogniser reads them
            assert reader.draft(page, on_lines=lines.extend) == want
            assert " ".join(line.text for line in lines).split() == " ".join(r.text for r in want).split()
            assert all(line.bbox is not None for line in lines)  # with their boxes, through the pipe
        with open_document(secret, password="pw") as document:
            assert reader.draft(document.page(0)) == want
        with open_document(pdf) as document:  # an error of the process's side, raised here
            page = document.page(0)
        with pytest.raises(Exception):
            reader.draft(_PageOf(page, index=7))
        assert not reader.broken

        reader._process.kill()  # a process that stops: this page and the next drafted here
        reader._process.join(tuning.PATIENCE_SECONDS)
        with open_document(pdf) as document:
            with pytest.warns(HSDWarning, match="drafting process stopped"):
                assert reader.draft(document.page(0)) == want
            with warnings.catch_warnings():
                warnings.simplefilter("error", HSDWarning)  # one warning, not one a page
                assert reader.draft(document.page(0)) == want
        assert reader.broken and reader._process is None
    finally:
        reader.close()


class _PageOf:
    """``page`` claiming another index (a page the process's document does not have)."""

    def __init__(self, page, index):
        self.document, self.index, self.number = page.document, index, index + 1


def test_a_document_run_drafts_its_pages_in_the_process(report_pdf):
    """Drafting ahead of the decode (every document run) reads through the shared process and
    hands the decode the regions that drafting here gives."""
    from core.draft_ahead import DraftAhead
    from core.events import RegionsDrafted

    drafter = get_drafter("auto")
    events = []
    with open_document(report_pdf) as document:
        want = [drafter.draft(document.page(i)) for i in range(document.page_count)]
        ahead = DraftAhead(document, [0, 1], drafter, 72, ahead=1, beside=True, emit=events.append)
        try:
            got = [ahead.next().drafts.result() for _ in range(2)]
        finally:
            ahead.stop()
            ahead.join()
    assert isinstance(ahead.reader, ProcessDrafter) and ahead.reader._process is not None
    assert got == want and want[0]
    assert [e.regions for e in events if isinstance(e, RegionsDrafted)] == want
