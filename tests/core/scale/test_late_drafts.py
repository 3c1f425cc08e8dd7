"""On Ray, a page is decoded as soon as it is rendered and its drafts join the decode when they
come, as on one machine: a page whose decode ends before its drafts is done then (``PageDone``
without regions) and saved with them (``PageSaved``); drafts that come after the first pass are
used from then on. The drafting task here is held until the test lets it go (no timing), and the
model actor decodes with the replay stand-in (``core.bench.replay``), which takes every draft that
matches its reference, so drafts show in the passes."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pymupdf
import pytest

from core import tuning
from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.base import Region
from core.engine import Engine, EngineConfig
from core.events import TextAppended

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.usefixtures("workers_unpickle_this_module")]

PARAGRAPHS = [f"Paragraph {i}: a page decoded before its drafts are in takes them when they come "
              f"({i * 41} of them)." for i in range(3)]
REF = "\n\n".join(PARAGRAPHS)
PAGES = 2


def _regions() -> list[Region]:
    return [Region("text", (20, 20 + 60 * i, 400, 70 + 60 * i), text, "rapidocr") for i, text in enumerate(PARAGRAPHS)]


def _target() -> ReplayTarget:
    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    target.set_page(REF, PARAGRAPHS)
    return target


def _wait_for(ready, what: str) -> None:
    deadline = time.monotonic() + tuning.PATIENCE_SECONDS
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.01)


def held_drafting(folder: str):
    """A drafting task (``draft_on_worker``'s signature) that drafts a page only once the file
    ``go-<file name>-<page index>`` is in ``folder``, then gives ``_regions()``."""

    def draft(spec, data, where, cpus=1, end=None):
        go = Path(folder) / f"go-{where[0]}-{where[3]}"
        _wait_for(go.exists, f"{go} never came")
        return _regions(), [], None

    return draft


class AfterFirstPass:
    """A page's drafting on the cluster (``core.scale.drafting.ClusterDrafts``) whose task is let
    go when the engine first asks for the drafts (before its first pass). Until the page's first
    pass has told its text the drafts are not done; from then on the engine waits for them: they
    come after the first pass and before the page ends."""

    def __init__(self, drafting, go: Path, passed: threading.Event):
        self.drafting, self.go, self.passed = drafting, go, passed

    @property
    def error(self):
        return self.drafting.error

    @property
    def seconds(self):
        return self.drafting.seconds

    def early_lines(self):
        return self.drafting.early_lines()

    def result(self):
        return self.drafting.result()

    def done(self) -> bool:
        if not self.passed.is_set():
            self.go.touch()
            return False
        _wait_for(self.drafting.done, "the drafts never came")
        return True


class ReplayEngine(Engine):
    """The replay stand-in's engine; on a document named ``mid*``, each page's drafts come after
    its first pass (``AfterFirstPass``)."""

    folder = ""

    def decode_image(self, page, on_event=None, should_cancel=None):
        name = Path(str(self._memory.key)).name
        if name.startswith("mid"):
            passed, tell = threading.Event(), on_event

            def on_event(event):
                if isinstance(event, TextAppended):
                    passed.set()
                if tell is not None:
                    tell(event)

            go = Path(self.folder) / f"go-{name}-{page.number - 1}"
            page = replace(page, drafts=AfterFirstPass(page.drafts, go, passed))
        return super().decode_image(page, on_event, should_cancel)


def replay_engine(folder: str):
    def make(config):
        engine = ReplayEngine(config, target=_target())
        engine.folder = folder
        return engine
    return make


def _pdf(path: Path) -> Path:
    doc = pymupdf.open()
    for _ in range(PAGES):
        doc.new_page(width=420, height=300)
    doc.save(path)
    doc.close()
    return path


def _config(**kw) -> EngineConfig:
    from core.speculative.proposal_config import ProposalConfig

    return EngineConfig(mode="hsd", max_new_tokens=2048, dpi=36, drafter="textlayer", device="cpu",
                        proposal=ProposalConfig(cost_aware=False), **kw)


def _of(events, kind, page=None) -> list:
    return [e for e in events if isinstance(e, kind) and (page is None or e.page == page)]


@pytest.fixture(scope="module")
def late_and_mid(ray_local, tmp_path_factory):
    """One Ray run of two copies of a document on one actor, decoding beside the drafting: ``late``
    (each page's drafting let go once the run has told the page done) and ``mid`` (let go at the
    page's first asking, taken after its first pass: ``AfterFirstPass``); and the run on one
    machine with its drafts in first. Returns {name: (events, Markdown bytes)}."""
    from core.api import ConversionRequest, convert_document
    from core.drafters.base import DrafterBase
    from core.events import PageDone
    from core.scale import drafting
    from core.scale.ray_pipeline import RayDocuments, RayOptions

    folder = tmp_path_factory.mktemp("late-drafts")
    late, mid = _pdf(folder / "late.pdf"), _pdf(folder / "mid.pdf")

    class Instant(DrafterBase):
        name = "textlayer"

        def draft(self, page):
            return _regions()

    config = _config()
    local = list(convert_document(ConversionRequest(late, folder / "one" / "late.md", config),
                                  Engine(config, target=_target(), drafter=Instant())))
    got = {"one": (local, (folder / "one" / "late.md").read_bytes())}
    beside = replace(config, background_drafting="on")
    requests = [ConversionRequest(path, folder / "ray" / f"{path.stem}.md", beside) for path in (late, mid)]
    held = held_drafting(str(folder))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(drafting, "drafting_task", lambda cpus, memory, retries: ray_local.remote(held).options(
            num_cpus=cpus, memory=memory, max_retries=retries))
        with RayDocuments(beside, RayOptions(actors=1), engine_factory=replay_engine(str(folder))) as documents:
            for request, run in zip(requests, documents.runs(requests)):
                events = []
                with run:
                    for event in run:
                        events.append(event)
                        if isinstance(event, PageDone) and request.input.name.startswith("late"):
                            (folder / f"go-{request.input.name}-{event.page - 1}").touch()
                got[request.input.stem] = (events, request.output.read_bytes())
    return got


def test_a_page_decoded_before_its_drafts_is_done_then_and_saved_with_them(ray_local, late_and_mid):
    from core.events import DocumentDone, PageDone, PageSaved, PageStarted, RegionsDrafted

    events, markdown = late_and_mid["late"]
    local_events, local_markdown = late_and_mid["one"]
    assert markdown == local_markdown and markdown.decode("utf-8").count("Paragraph 2:") == PAGES
    assert isinstance(events[-1], DocumentDone) and not events[-1].stats["totals"]["failed_pages"]
    for page in range(1, PAGES + 1):
        (done,), (saved,), (drafted,) = _of(events, PageDone, page), _of(events, PageSaved, page), \
            _of(events, RegionsDrafted, page)
        # the decode started and ended before the drafts were let go: done then, saved once they came
        assert events.index(_of(events, PageStarted, page)[0]) < events.index(done) < events.index(drafted) \
            < events.index(saved)
        assert done.result.regions == [] and done.result.markdown == REF
        whole = saved.result
        assert whole.markdown == REF and whole.regions == _regions() == drafted.regions
        assert whole.output_tokens == done.result.output_tokens
        passes = whole.stats.stage1_passes + whole.stats.stage2_passes
        assert whole.stats.passes_before_drafts == passes > 0 and whole.stats.draft_error is None
    pages = events[-1].stats["pages"]
    assert [len(page["regions"]) for page in pages] == [len(PARAGRAPHS)] * PAGES  # saved with their regions
    assert [e.result.markdown for e in _of(events, PageDone)] == [e.result.markdown
                                                                 for e in _of(local_events, PageDone)]


def test_drafts_that_come_during_the_decode_are_used_from_then_on(ray_local, late_and_mid):
    from core.events import DocumentDone, PageDone, PageSaved, RegionsDrafted, RegionVerified

    events, markdown = late_and_mid["mid"]
    late_events, _ = late_and_mid["late"]
    assert markdown == late_and_mid["one"][1]
    assert isinstance(events[-1], DocumentDone) and not _of(events, PageSaved)  # every page done with its drafts
    late = {e.page: e.result for e in _of(late_events, PageSaved)}
    for page in range(1, PAGES + 1):
        (done,) = _of(events, PageDone, page)
        stats = done.result.stats
        assert done.result.markdown == REF and done.result.regions == _regions()
        assert 0 < stats.passes_before_drafts < stats.stage1_passes + stats.stage2_passes
        # the regions announced before any event of the decode about them, as on one machine
        drafted = events.index(_of(events, RegionsDrafted, page)[0])
        assert all(events.index(e) > drafted for e in _of(events, RegionVerified, page))
        assert stats.forward_passes <= late[page].stats.forward_passes
    assert _of(events, PageDone, 1)[0].result.stats.forward_passes < late[1].stats.forward_passes
