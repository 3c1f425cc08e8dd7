"""A Ray run's drafts on the cluster's CPUs: the worker's drafting (called here directly, no Ray)
gives the regions, warnings and errors of a drafting on this machine; on a local Ray instance the
cluster drafter gives the same regions and sends the pages after the one asked for ahead."""

from __future__ import annotations

import pymupdf
import pytest

from core.documents import open_document
from core.drafters import get_drafter
from core.scale.drafting import draft_on_worker
from tests.core.pdf_factory import text_pdf

OCR_SPEC = "rapidocr:layout=false"


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    """Two pages of printed lines (OCR reads their pixels), and an encrypted copy."""
    folder = tmp_path_factory.mktemp("scan")
    lines = ["Drafting on the cluster", "reads the scans of an archive", "while the models decode."]
    one = text_pdf(folder / "one.pdf", lines, size=16, width=420, height=200)
    pdf = folder / "page.pdf"
    with pymupdf.open() as doc, pymupdf.open(one) as page:
        doc.insert_pdf(page)
        doc.insert_pdf(page)  # a second page, the same
        doc.save(pdf)
        doc.save(folder / "secret.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
    return pdf, folder / "secret.pdf"


def test_the_worker_drafts_what_this_machine_drafts(scan):
    pdf, secret = scan
    with open_document(pdf) as document:
        want = get_drafter(OCR_SPEC).draft(document.page(1))
    assert want
    regions, warned, error = draft_on_worker(OCR_SPEC, [pdf.read_bytes()], (pdf.name, None, "off", 1, 0))
    assert (regions, warned, error) == (want, [], None)
    regions, _, error = draft_on_worker(OCR_SPEC, [secret.read_bytes()], (secret.name, "pw", "off", 1, 0))
    assert error is None and regions == want


def test_the_worker_drafts_text_layers_as_this_machine(scale_inputs):
    path = scale_inputs[0]
    with open_document(path) as document:
        want = [get_drafter("textlayer").draft(document.page(i)) for i in range(document.page_count)]
    got = [draft_on_worker("textlayer", [path.read_bytes()], (path.name, None, "off", i, 0)) for i in range(3)]
    assert [regions for regions, _, _ in got] == want and all(error is None for _, _, error in got)


def test_the_drafter_s_error_comes_back_with_its_type_and_message(scan):
    from core.errors import PageRangeError

    pdf, _ = scan
    regions, _, error = draft_on_worker(OCR_SPEC, [pdf.read_bytes()], (pdf.name, None, "off", 7, 0))
    assert regions == [] and isinstance(error, PageRangeError) and "page 8" in str(error)


@pytest.mark.slow
def test_the_cluster_drafter_sends_the_planned_pages_ahead(ray_local, scale_inputs):
    """Asked for a page, the drafter sends it and the pages after it in the run's plan (its
    window), and gives the regions the drafter on this machine gives; ``meanwhile`` runs once."""
    from core.scale.drafting import ClusterDrafter, drafting_task

    path = scale_inputs[0]
    here = get_drafter("textlayer")
    drafter = ClusterDrafter("textlayer", here, window=2, task=drafting_task(1, 256 << 20, 0))
    drafter.expect([0, 2])  # page 2 (index 1) kept from an earlier run: never drafted
    ran = []
    with open_document(path) as document:
        want = [here.draft(document.page(i)) for i in (0, 2)]
        first = drafter.draft(document.page(0), meanwhile=lambda: ran.append(1))
        assert ran == [1] and set(drafter._sent) == {2}  # sent ahead while the first was asked for
        assert [first, drafter.draft(document.page(2))] == want and drafter._sent == {}
        # a page no plan names is drafted when asked for
        assert drafter.draft(document.page(1)) == here.draft(document.page(1))
    drafter.close()


def test_the_progress_line_names_what_auto_chose_on_the_cluster(scale_inputs):
    """A Ray run's "drafting (...)" names the drafter ``auto`` picks for the page, as a local run's."""
    from core.page_pipeline import drafter_name
    from core.scale.drafting import ClusterDrafter

    here = get_drafter("auto")
    drafter = ClusterDrafter("auto", here, window=1, task=None)
    with open_document(scale_inputs[0]) as document:
        page = document.page(0)
        assert drafter_name(drafter, page) == drafter_name(here, page) == here.choose(page).name != "auto"


@pytest.mark.slow
def test_the_decode_takes_a_page_s_drafting_task_sent_or_not(ray_local, scale_inputs):
    """A page handed to the decode before its drafts (``reference``): its task where the drafting
    thread sent it, else sent then (its turn known once rendered), and that same task is the one
    the drafting thread waits for; none for a page the drafting thread has gone past (its drafts
    are the run's). On the model actor, ``ClusterDrafts`` gives the task's regions."""
    from core.scale.drafting import ClusterDrafter, ClusterDrafts, drafting_task

    path = scale_inputs[0]
    here = get_drafter("textlayer")
    drafter = ClusterDrafter("textlayer", here, window=1, task=drafting_task(1, 256 << 20, 0))
    drafter.expect([0, 1, 2])
    with open_document(path) as document:
        want = [here.draft(document.page(i)) for i in range(3)]
    with open_document(path) as document:
        first = document.page(0)
        assert drafter.reference(1) is None  # nothing sent yet: no document to send it from
        sent = drafter._send_from(first)  # what ``draft`` does first
        taken = drafter.reference(1)
        assert taken is sent and drafter.reference(1) is sent  # asked again: the same task
        assert drafter.reference(2) is None  # page 2 is not rendered: its turn is not known here
        document.page(1).render(36)
        second = drafter.reference(2)  # sent by the decode, ahead of the drafting thread (window 1)
        assert second is not None and drafter._sent[1] is second
        drafts = ClusterDrafts(second)
        assert drafts.result() == want[1] and drafts.done() and drafts.error is None
        assert drafter.draft(document.page(1)) == want[1] and drafter._sent == {}
        assert drafter.reference(1) is None  # gone past: its drafts are the run's
        assert drafter.draft(document.page(2)) == want[2]
    drafter.close()


def test_closing_gives_up_its_tasks_without_cancelling_them(monkeypatch):
    """A stopped run drops its drafting tasks' results and tells its tasks the run's end, so that
    they end by themselves (``tests/core/scale/test_run_end.py``): a ``ray.cancel`` that met a
    task's reply aborted the driver inside Ray's core worker ("Tried to complete task that was not
    pending"), killing the run's whole process."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'hsd-studio[ray]')")
    from core.scale.drafting import ClusterDrafter

    class Told:
        times = 0

        def tell(self):
            self.times += 1

    cancelled, end = [], Told()
    monkeypatch.setattr(ray, "cancel", lambda reference, **kw: cancelled.append(reference))
    drafter = ClusterDrafter("textlayer", get_drafter("textlayer"), window=2, task=None, end=end)
    drafter.close()
    assert end.times == 0  # no task sent: nothing to tell
    drafter._document = ("page.pdf", "the file's bytes in the object store")
    drafter._sent, drafter._for_decode = {1: "task of page 2"}, {1: "task of page 2", 2: "task of page 3"}
    drafter.close()
    assert cancelled == [] and drafter._sent == {} and drafter._for_decode == {} and end.times == 1
