"""One document's run: its events in order, resume (kept pages teach the engine first), the model
loading while the first page drafts, drafts arriving after some passes, cancel, a failing page,
notices. On the replay stand-in (``core.bench.replay``): every page reads as one reference text."""

from __future__ import annotations

import json
import threading
import warnings

import pymupdf
import pytest

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.base import DrafterBase, OcrLine, Region
from core.engine import Engine, EngineConfig
from core.errors import CancelledError, HSDWarning
from core.events import (DocumentDone, DocumentPlanned, ModelLoaded, ModelLoading, Notice, PageDone, PageDrafting,
                         PageKept, PageSaved, PageStarted, RegionsDrafted, RegionVerified)
from core.run import ConversionRequest, DocumentPlan, PageSaver, convert_document, plan_document

PARAGRAPHS = [f"Paragraph {i}: the drafts of this page are verified by the target in batched passes "
              f"({i * 37} of them)." for i in range(4)]
REF = "\n\n".join(PARAGRAPHS)


class Paragraphs(DrafterBase):
    """Drafts every page as the first ``count`` of ``PARAGRAPHS`` (an OCR drafter, so Stage 1 reads
    the crops); the rest of the page is left to the target and the document's history."""

    name = "rapidocr"

    def __init__(self, gate: threading.Event | None = None, started: threading.Event | None = None,
                 count: int = 2):
        self.gate, self.started, self.count = gate, started, count

    def draft(self, page):
        if self.started is not None:
            self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        return [Region("text", (20, 20 + 60 * i, 400, 70 + 60 * i), t, "rapidocr")
                for i, t in enumerate(PARAGRAPHS[:self.count])]


@pytest.fixture
def pdf(tmp_path):
    doc = pymupdf.open()
    for _ in range(3):
        doc.new_page(width=420, height=300)
    path = tmp_path / "doc.pdf"
    doc.save(path)
    return path


def _target() -> ReplayTarget:
    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    target.set_page(REF, PARAGRAPHS)
    return target


def _config(**kw) -> EngineConfig:
    return EngineConfig(mode="hsd", max_new_tokens=2048, dpi=36, drafter="rapidocr", **kw)


def _run(pdf, out, engine, **kw) -> list:
    return list(convert_document(ConversionRequest(pdf, out, engine.config, **kw), engine))


def _of(events, kind, page=None) -> list:
    return [e for e in events if isinstance(e, kind) and (page is None or e.page == page)]


def test_a_run_yields_its_events_in_order_and_writes_the_document(pdf, tmp_path):
    engine = Engine(_config(), target=_target(), drafter=Paragraphs())
    events = _run(pdf, tmp_path / "doc.md", engine)
    assert isinstance(events[0], DocumentPlanned) and isinstance(events[-1], DocumentDone)
    assert events[0].pages == (1, 2, 3) and events[0].kept == () and events[0].to_convert == (1, 2, 3)
    assert not _of(events, ModelLoading)  # the target was given: nothing to load
    for page in (1, 2, 3):
        order = [events.index(_of(events, kind, page)[0])
                 for kind in (PageDrafting, RegionsDrafted, PageStarted, RegionVerified, PageDone)]
        assert order == sorted(order), page
    assert [e.index for e in _of(events, PageStarted)] == [0, 1, 2]
    results = [e.result for e in _of(events, PageDone)]
    assert [r.markdown for r in results] == [REF] * 3
    assert results[2].stats.forward_passes < results[0].stats.forward_passes  # earlier pages draft later ones
    assert (tmp_path / "doc.md").read_text("utf-8").count("Paragraph 3:") == 3
    assert events[-1].stats["totals"]["pages"] == 3


def test_a_resumed_run_keeps_saved_pages_and_they_teach_the_engine_first(pdf, tmp_path, monkeypatch):
    out = tmp_path / "doc.md"
    first = _run(pdf, out, Engine(_config(), target=_target(), drafter=Paragraphs()), pages="1-2")
    uninterrupted = _run(pdf, tmp_path / "all.md", Engine(_config(), target=_target(), drafter=Paragraphs()))
    remembered = []
    original = Engine.remember_pages
    monkeypatch.setattr(Engine, "remember_pages", lambda self, key, results: remembered.append(
        (key, [r.page for r in results])) or original(self, key, results))
    events = _run(pdf, out, Engine(_config(), target=_target(), drafter=Paragraphs()))
    assert events[0].kept == (1, 2) and events[0].to_convert == (3,)
    assert [e.page for e in _of(events, PageKept)] == [1, 2] and [e.page for e in _of(events, PageDone)] == [3]
    assert remembered == [(str(pdf), [1, 2])]
    assert _of(first, PageDone)[1].result.markdown == _of(events, PageKept)[1].result.markdown
    resumed, whole = _of(events, PageDone)[0].result, _of(uninterrupted, PageDone)[2].result
    assert resumed.output_tokens == whole.output_tokens
    assert resumed.stats.forward_passes == whole.stats.forward_passes
    assert out.read_bytes() == (tmp_path / "all.md").read_bytes()


def test_a_document_all_kept_loads_no_model(pdf, tmp_path):
    out = tmp_path / "doc.md"
    _run(pdf, out, Engine(_config(), target=_target(), drafter=Paragraphs()))
    idle = Engine(_config(), drafter=Paragraphs())  # its model (the default) would fail to load here
    with pytest.raises(ValueError):  # the engine must decode under the request's settings
        convert_document(ConversionRequest(pdf, out, _config(tau=0.5)), idle)
    events = _run(pdf, out, idle)
    assert [type(e) for e in events] == [DocumentPlanned, PageKept, PageKept, PageKept, DocumentDone]
    assert idle.loaded_target is None


def test_the_first_page_drafts_while_the_model_loads(pdf, tmp_path, monkeypatch):
    import core.targets.loader as loader

    started = threading.Event()
    target = _target()

    def load_target(*a, **k):
        assert started.wait(10), "the first page's drafter did not start while the model loaded"
        return target

    monkeypatch.setattr(loader, "load_target", load_target)
    engine = Engine(_config(model="some-model"), drafter=Paragraphs(started=started))
    events = _run(pdf, tmp_path / "doc.md", engine)
    loading, loaded = _of(events, ModelLoading)[0], _of(events, ModelLoaded)[0]
    assert loading.model == "some-model" and loaded.seconds >= 0
    assert events.index(loaded) < events.index(_of(events, PageStarted)[0])
    assert all(e.result.error is None for e in _of(events, PageDone))


def test_beside_the_decode_a_page_records_the_passes_before_its_drafts(pdf, tmp_path):
    """Drafting beside the decode (on): page 1's drafter is held until the decode has run passes
    without drafts; the page says how many, also in its statistics, and its text is the same."""
    gate, checks = threading.Event(), {"n": 0}

    def should_cancel():
        checks["n"] += 1
        if checks["n"] == 12:
            gate.set()
        return False

    engine = Engine(_config(background_drafting="on"), target=_target(), drafter=Paragraphs(gate))
    events = list(convert_document(ConversionRequest(pdf, tmp_path / "doc.md", engine.config), engine,
                                   should_cancel=should_cancel))
    first = _of(events, PageDone, 1)[0].result
    assert first.markdown == REF and first.regions and first.stats.passes_before_drafts > 0
    assert _of(events, PageDone, 3)[0].result.stats.passes_before_drafts == 0  # drafted ahead
    saved = events[-1].stats["pages"][0]["stats"]
    assert saved["passes_before_drafts"] == first.stats.passes_before_drafts
    regions_drafted = events.index(_of(events, RegionsDrafted, 1)[0])
    assert all(events.index(e) > regions_drafted for e in _of(events, RegionVerified, 1))


class HeldFirstPage(Paragraphs):
    """Tells page 1's first line at once, then holds its regions until ``gate`` opens (an OCR
    drafter still reading a page whose decode has ended); later pages come at once."""

    streams_lines = True

    def draft(self, page, on_lines=None):
        if page.index == 0:
            if on_lines is not None:
                on_lines([OcrLine(PARAGRAPHS[0])])
            self.gate.wait(10)
        return super().draft(page)


def test_a_page_whose_decode_ends_before_its_drafter_is_done_then_and_saved_with_its_regions(pdf, tmp_path):
    """Page 1's decode ends before its drafter does: the page is done at once (its Markdown final,
    no regions), the decode starts page 2 meanwhile (no pass idles), page 1 is saved with its
    regions once they come (``PageSaved``), and the pages are saved in order."""
    gate = threading.Event()
    engine = Engine(_config(background_drafting="on"), target=_target(), drafter=HeldFirstPage(gate))
    events = []
    for event in convert_document(ConversionRequest(pdf, tmp_path / "doc.md", engine.config), engine):
        events.append(event)
        if isinstance(event, PageStarted) and event.page == 2:
            gate.set()  # page 1's regions come only once its decode has moved on
    assert gate.is_set()
    done, saved = _of(events, PageDone, 1)[0], _of(events, PageSaved, 1)[0]
    # done before the decode moved on, and before its drafter delivered
    assert events.index(done) < events.index(_of(events, PageStarted, 2)[0]) < events.index(saved)
    assert events.index(done) < events.index(_of(events, RegionsDrafted, 1)[0]) < events.index(saved)
    assert [e.page for e in _of(events, PageDone)] == [1, 2, 3]
    assert done.result.markdown == REF and done.result.regions == []
    assert done.result.stats.passes_before_drafts == done.result.stats.stage1_passes + done.result.stats.stage2_passes
    first = saved.result
    assert first.markdown == REF and len(first.regions) == 2 and first.stats.passes_before_drafts > 0
    assert first.stats.passes_before_drafts == first.stats.stage1_passes + first.stats.stage2_passes
    assert [e.result.markdown for e in _of(events, PageDone)] == [REF] * 3
    assert (tmp_path / "doc.md").read_text("utf-8").count("Paragraph 3:") == 3
    assert len(events[-1].stats["pages"][0]["regions"]) == 2  # the document's record: with its regions
    assert not [t for t in threading.enumerate() if t.name.startswith("hsd-") and t.name != "hsd-drafting"]


class SlowElsewhere(Paragraphs):
    """Reads its pages elsewhere, as the drafting process does (``drafts_elsewhere``), and is slow
    on page 1: it answers only once ``gate`` opens, calling ``waiting`` meanwhile as the process's
    reader does while no answer has come."""

    drafts_elsewhere = True

    def __init__(self, gate: threading.Event):
        super().__init__()
        self.held = gate
        self.released_by_the_run = False

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None):
        if meanwhile is not None:
            meanwhile()
        if page.index == 0:
            for _ in range(1000):  # a bound for a broken run, not a timing: the run opens the gate
                if self.held.wait(0.01):
                    self.released_by_the_run = True
                    break
                if waiting is not None:
                    waiting()
        return super().draft(page)


def test_the_decode_never_waits_for_a_slow_drafter_reading_elsewhere(pdf, tmp_path):
    """Page 1's drafter answers only after pages 1 and 2 have decoded and page 3 has started: the
    decode gets each page rendered while the drafter still reads page 1, each page is done when its
    decode ends, the pages are saved in order with their regions once they come, and the output is
    the one drafts never change."""
    gate = threading.Event()
    drafter = SlowElsewhere(gate)
    engine = Engine(_config(background_drafting="on"), target=_target(), drafter=drafter)
    events = []
    for event in convert_document(ConversionRequest(pdf, tmp_path / "doc.md", engine.config), engine):
        events.append(event)
        if isinstance(event, PageStarted) and event.page == 3:
            gate.set()
    assert drafter.released_by_the_run
    third = events.index(_of(events, PageStarted, 3)[0])
    assert events.index(_of(events, PageDone, 2)[0]) < third < events.index(_of(events, RegionsDrafted, 1)[0])
    assert events.index(_of(events, RegionsDrafted, 1)[0]) < events.index(_of(events, PageSaved, 1)[0])
    assert [e.page for e in _of(events, PageDone)] == [1, 2, 3]
    # done before page 1's drafter answered (page 3 too where it ended before page 1 was saved)
    assert [e.page for e in _of(events, PageSaved)][:2] == [1, 2]
    final = {e.page: e.result for e in events if isinstance(e, (PageDone, PageSaved))}  # the last one
    results = [final[n] for n in (1, 2, 3)]
    assert [r.markdown for r in results] == [REF] * 3 and all(len(r.regions) == 2 for r in results)
    for r in results[:2]:  # decoded before page 1's drafter answered: without drafts throughout
        assert r.stats.passes_before_drafts == r.stats.stage1_passes + r.stats.stage2_passes > 0
    saved = [json.loads((tmp_path / ".doc.md.hsd" / f"page-000{n}.json").read_text("utf-8")) for n in (1, 2, 3)]
    assert all(len(page["result"]["regions"]) == 2 for page in saved)
    assert not [t for t in threading.enumerate() if t.name.startswith("hsd-") and t.name != "hsd-drafting"]


def test_a_cancel_while_a_page_waits_for_its_regions_still_saves_that_page(pdf, tmp_path):
    gate, cancel = threading.Event(), threading.Event()
    engine = Engine(_config(background_drafting="on"), target=_target(), drafter=HeldFirstPage(gate))
    run = convert_document(ConversionRequest(pdf, tmp_path / "doc.md", engine.config), engine,
                           should_cancel=cancel.is_set)
    with pytest.raises(CancelledError):
        for event in run:
            if isinstance(event, PageStarted) and event.page == 2:
                cancel.set()
                gate.set()
    # page 2 may have ended too before the cancel was seen; page 1 waited for its regions throughout
    assert run.converted[:1] == [1] and (tmp_path / ".doc.md.hsd" / "page-0001.json").exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("hsd-") and t.name != "hsd-drafting"]


class Decoded:
    """A decoded page as ``PageSaver`` sees it: its drafter delivers when ``gate`` opens."""

    def __init__(self, number: int, gate: threading.Event | None = None):
        self.number, self.gate = number, gate

    def drafted(self) -> bool:
        return self.gate is None or self.gate.is_set()

    def finish(self):
        if self.gate is not None:
            assert self.gate.wait(10)
        return self.number


def test_page_saver_keeps_the_order_never_holds_up_the_decode_and_raises_a_waiting_pages_error():
    saved, gate = [], threading.Event()

    def save(page, result):
        if result == 5:
            raise OSError("no space left on device")
        saved.append((page, result, threading.current_thread().name))

    saver = PageSaver(save, emit=lambda event: None)
    saver.save("p1", Decoded(1, gate))  # waits for its regions on a thread of its own
    saver.save("p2", Decoded(2))  # drafted, but after page 1: it waits its turn, the decode does not
    saver.save("p3", Decoded(3, gate))
    assert saved == [] and saver.waiting() == 3  # every save returned while page 1's drafter reads
    gate.set()
    saver.wait()
    assert saved == [(f"p{n}", n, "hsd-page-save") for n in (1, 2, 3)] and saver.waiting() == 0
    saver.save("p4", Decoded(4))  # nothing waits before it: saved here
    assert saved[-1] == ("p4", 4, threading.current_thread().name)
    late = threading.Event()
    saver.save("p5", Decoded(5, late))
    saver.save("p6", Decoded(6))
    late.set()
    with pytest.raises(OSError, match="no space"):  # the waiting page's failure, on the decode's thread
        saver.wait()
    saver.wait()  # raised once
    assert [p for p, _, _ in saved] == ["p1", "p2", "p3", "p4"]  # nothing after the failed page


def test_cancel_stops_the_run_keeps_finished_pages_and_ends_its_threads(pdf, tmp_path):
    done = threading.Event()
    engine = Engine(_config(), target=_target(), drafter=Paragraphs())
    run = convert_document(ConversionRequest(pdf, tmp_path / "doc.md", engine.config), engine,
                           should_cancel=done.is_set)
    with pytest.raises(CancelledError):
        for event in run:
            if isinstance(event, PageDone):
                done.set()
    assert run.converted == [1] and not [t for t in threading.enumerate() if t.name.startswith("hsd-")]
    assert (tmp_path / ".doc.md.hsd" / "page-0001.json").exists() and not (tmp_path / "doc.md").exists()


def test_closing_a_run_mid_way_stops_it(pdf, tmp_path):
    engine = Engine(_config(), target=_target(), drafter=Paragraphs())
    with convert_document(ConversionRequest(pdf, tmp_path / "doc.md", engine.config), engine) as run:
        for event in run:
            if isinstance(event, PageStarted):
                break
    assert not [t for t in threading.enumerate() if t.name.startswith("hsd-")]
    assert run.converted in ([], [1])


def test_a_failing_page_is_recorded_and_the_others_convert(pdf, tmp_path):
    class CrashesOnPage2(ReplayTarget):
        pages = 0

        def prefill_batch(self, requests):
            if requests[0].kind == "page":
                self.pages += 1
                if self.pages == 2:
                    raise RuntimeError("simulated crash")
            return super().prefill_batch(requests)

    target = CrashesOnPage2(ReplayTokenizer(base_tokenizer("tiny")))
    target.set_page(REF, PARAGRAPHS)
    events = _run(pdf, tmp_path / "doc.md", Engine(_config(), target=target, drafter=Paragraphs()))
    assert [e.result.error for e in _of(events, PageDone)] == [None, "RuntimeError: simulated crash", None]
    assert events[-1].stats["totals"]["failed_pages"] == [2]


def test_saved_pages_that_do_not_verify_and_drafter_warnings_are_notices(pdf, tmp_path):
    out = tmp_path / "doc.md"
    _run(pdf, out, Engine(_config(), target=_target(), drafter=Paragraphs()))
    page2 = tmp_path / ".doc.md.hsd" / "page-0002.json"
    data = json.loads(page2.read_text("utf-8"))
    data["result"]["markdown"] = "edited"
    page2.write_text(json.dumps(data), "utf-8")

    class Warns(Paragraphs):
        def draft(self, page):
            warnings.warn(HSDWarning("OCR drafts without tables (no table model)"))
            return super().draft(page)

    events = _run(pdf, out, Engine(_config(), target=_target(), drafter=Warns()))
    notices = _of(events, Notice)
    assert any("saved page 2 did not verify" in n.message and n.page is None for n in notices)
    assert Notice("OCR drafts without tables (no table model)", page=2) in notices
    assert [e.page for e in _of(events, PageDone)] == [2]


def test_the_plan_says_what_each_page_to_convert_remembers_first():
    from core.results import PageResult, PageStats

    saved = {i: PageResult(page=i + 1, width=1, height=1, markdown=f"p{i + 1}", regions=[], region_stats=[],
                           region_outputs=[], spans=[], stats=PageStats()) for i in (0, 1, 3)}
    plan = DocumentPlan(pages=[0, 1, 2, 3, 4, 5], kept=saved, rejected=[])
    assert plan.to_convert == [2, 4, 5]
    assert [(i, [r.page for r in kept]) for i, kept in plan.steps()] == [(2, [1, 2]), (4, [4]), (5, [])]


def test_plan_document_applies_the_range(pdf, tmp_path):
    from core.documents import open_document
    from core.export import DocumentOutput

    with open_document(pdf) as doc:
        plan = plan_document(doc, DocumentOutput(pdf, tmp_path / "x.md", {"k": 1}), "2-3")
    assert plan.pages == [1, 2] and plan.kept == {} and plan.rejected == []


def test_the_resume_key_ignores_how_many_ocr_workers_drafted():
    from core.run import settings_of

    def key(drafter):
        return settings_of(EngineConfig(drafter=drafter))["drafter"]

    assert key("auto:layout=pymupdf,workers=2") == key("auto:layout=pymupdf,workers=8") == "auto:layout=pymupdf"
    assert key("rapidocr:workers=3") == "rapidocr"
    assert key("auto:layout=pymupdf,device=cpu") != key("auto:layout=pymupdf")  # another device may read otherwise
    assert key("textlayer") == "textlayer"


def test_a_decoded_page_gives_its_result_so_far_without_waiting_and_its_whole_result_once(pdf):
    """``DecodedPage.result_so_far`` does not wait for a drafter still reading: the decode's output,
    no regions, every pass before them; ``finish`` waits, and gives one result however often asked."""
    from core.drafters.background import DraftJob
    from core.page_pipeline import DraftedPage, PendingDrafts, render

    from core.documents import open_document

    engine = Engine(_config(), target=_target(), drafter=Paragraphs())
    with open_document(pdf) as document:
        page = document.page(0)
        image, seconds = render(page, 36)
        pending = PendingDrafts()
        decoded = engine.decode_image(DraftedPage(1, page.width, page.height, image, pending, seconds))
        assert not decoded.drafted()
        so_far = decoded.result_so_far()  # returns: nothing delivered the drafts
        assert so_far.markdown == REF and so_far.regions == [] and so_far.output_tokens
        assert so_far.stats.passes_before_drafts == so_far.stats.stage1_passes + so_far.stats.stage2_passes > 0
        pending.deliver(DraftJob.finished(Paragraphs().draft(page)))
        whole = decoded.finish()
        assert whole.markdown == REF and len(whole.regions) == 2 and whole.output_tokens == so_far.output_tokens
        assert decoded.finish() is whole and decoded.result_so_far() is whole
        assert whole.stats is not so_far.stats and so_far.regions == []  # the early result kept as it was
