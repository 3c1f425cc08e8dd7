"""One document's run: plan it, then take each page through the page pipeline, the decode and the
save, yielding typed events (``core.events``). It is the one loop over a document's pages:
``hsd convert``, the app (through ``core.api``), ``hsd convert --ray`` and the benchmark all run
documents this way, and differ only in the ``PageDecoder`` that decodes each page:

    the engine (``core.engine.Engine``)          on this machine
    ``core.scale.ray_pipeline.RayPageDecoder``   on a Ray model actor (the page travels there)
    ``core.bench.document_run.ReplayDecoder``    the engine, the replay target told each page's
                                                 reference first, every page measured

    plan_document(document, output, pages)  ->  DocumentPlan: this run's pages, those an earlier run
                                                kept (resume), those to convert, and the kept pages
                                                each of those remembers first
    DocumentRun(request, decoder)           ->  iterate it for the events, in order; ``close()``

A run's threads:

* the caller's: opens the document, plans, loads the model (so that Ctrl-C stops a load at once),
  relays the events of the other two, writes the Markdown;
* drafting (``core.draft_ahead``): owns the PDF from the plan on; renders and drafts the pages
  ahead of the decode, bounded, and the first one while the model loads;
* decode: each page through ``PageDecoder.decode_image`` (``start_page``), saved at once
  (``DocumentOutput.save_page``), so that a stopped run keeps every finished page. Neither the
  decode nor the page waits for a drafter: a page whose decode ends before its drafter does (a
  scan's OCR, beside the decode) is done then (``PageDone``: its Markdown is final; its regions,
  the overlay, come with ``RegionsDrafted``) and is saved once its regions have come, on a thread
  of its own (``PageSaver``: its figures are cut from them), with the pages decoded after it,
  while the decode goes on with the next page. The document's Markdown is written with every
  page's figures.

Cancelling (``should_cancel``, Ctrl-C, ``close()``) stops the decode within one forward pass and
waits for the drafting thread to finish its page: no thread outlives the run or reads a closed PDF.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Protocol

from core.draft_ahead import DraftAhead
from core.errors import CancelledError
from core.events import (DocumentDone, DocumentPlanned, ModelLoaded, ModelLoading, Notice, PageDone, PageKept,
                         PageSaved, PageStarted)
from core.notices import warnings_to
from core.page_pipeline import DraftedPage, PendingDrafts, failed_page, page_error
from core.results import PageResult

if TYPE_CHECKING:
    from core.engine import EngineConfig


class Decoded(Protocol):
    """A page whose decode has ended (``core.engine.DecodedPage`` on this machine): ``drafted()``
    says whether its drafter has delivered, ``finish()`` waits for it and gives the result."""

    def drafted(self) -> bool: ...

    def finish(self) -> PageResult: ...

    def result_so_far(self) -> PageResult:
        """The result at the end of the decode, its regions not waited for (asked only while
        ``drafted()`` is False)."""
        ...


class PageDecoder(Protocol):
    """What a document run decodes its pages with (the module docstring names the three). The run
    renders and drafts each page (``core.draft_ahead``, with ``drafter``; ``pages_ahead`` of them
    ahead of and beside the decode, or, where 0, each page's drafter first while nothing decodes),
    hands it to ``decode_image`` and saves what ``finish`` gives. ``config``: the settings it
    decodes under (an ``EngineConfig``); ``loaded``: whether ``prepare`` (load the model; it raises
    the user's error; it returns the seconds of it spent compiling passes) has run; ``remember_pages``: the kept pages of a document join its history
    before the next page of it is decoded."""

    config: "EngineConfig"

    @property
    def drafter(self): ...

    @property
    def pages_ahead(self) -> int: ...

    @property
    def loaded(self) -> bool: ...

    def prepare(self) -> float: ...

    def remember_pages(self, key, results: Iterable[PageResult]) -> None: ...

    def decode_image(self, page: DraftedPage, on_event: Callable[[object], None] | None = None,
                     should_cancel: Callable[[], bool] | None = None) -> Decoded: ...


@dataclass(frozen=True)
class ConversionRequest:
    """One document to convert: ``input`` into the Markdown file ``output`` (figures and the resume
    folder beside it) under ``config`` (an ``EngineConfig``). ``pages``: a range such as ``1-3,7``
    (None: all). ``fresh``: ignore pages an earlier run finished. ``overwrite=False``: refuse to
    replace a figure file this tool did not write."""

    input: Path
    output: Path
    config: "EngineConfig"
    pages: str | None = None
    password: str | None = None
    fresh: bool = False
    overwrite: bool = True


def settings_of(config) -> dict:
    """What decides the output: pages converted under other settings are not reused."""
    return {"model": str(config.model or "default"), "mode": config.mode, "tau": config.tau,
            "drafter": _drafts_of(config.drafter), "dpi": config.dpi, "device": config.device or "auto",
            "dtype": config.dtype or "auto", "max_new_tokens": config.max_new_tokens,
            "rotate": config.rotate}


def _drafts_of(spec: str | None) -> str | None:
    """The drafter spec less what changes how fast it drafts, never what it drafts (its OCR
    workers): pages converted with another ``--ocr-workers`` are reused."""
    if not spec or ":" not in spec:
        return spec
    name, _, options = spec.partition(":")
    kept = [item for item in options.split(",") if item and not item.startswith("workers=")]
    return name + (":" + ",".join(kept) if kept else "")


# --- the plan --------------------------------------------------------------------------------------


@dataclass
class DocumentPlan:
    """Which pages a run does. ``pages``: this run's, 0-based, in order (the range applied);
    ``kept``: page -> the result an earlier run saved and that verifies (taken back, not converted);
    ``rejected``: page numbers whose saved result did not verify (they are converted again)."""

    pages: list[int]
    kept: dict[int, PageResult]
    rejected: list[int]

    @property
    def to_convert(self) -> list[int]:
        return [i for i in self.pages if i not in self.kept]

    def steps(self) -> list[tuple[int, list[PageResult]]]:
        """Each page to convert, with the kept pages since the one before it: those join the
        document's history first (``Engine.remember_pages``), so a resumed page is drafted from the
        same pages as in an uninterrupted run, wherever it runs."""
        out, kept = [], []
        for i in self.pages:
            if i in self.kept:
                kept.append(self.kept[i])
            else:
                out.append((i, kept))
                kept = []
        return out


def plan_document(document, output, pages: str | None) -> DocumentPlan:
    """The plan of ``document`` (open) into ``output`` (a ``DocumentOutput``) for page range ``pages``."""
    from core.documents import parse_page_range

    indices = parse_page_range(pages, document.page_count)
    kept = {}
    for i in indices:
        result = output.finished(i + 1)
        if result is not None:
            kept[i] = result
    return DocumentPlan(indices, kept, output.rejected_pages([i + 1 for i in indices]))


def rejected_notice(markdown_path, rejected: list[int]) -> str:
    """What the user is told about saved pages that did not verify."""
    many = len(rejected) > 1
    return (f"{markdown_path}: saved page{'s' if many else ''} {', '.join(map(str, rejected))} did not verify "
            f"(copied, edited, damaged or from other settings) and {'are' if many else 'is'} converted again")


# --- one page --------------------------------------------------------------------------------------


def start_page(decoder: PageDecoder, page: DraftedPage, on_event: Callable[[object], None] | None = None,
               should_cancel: Callable[[], bool] | None = None, waited: float = 0.0) -> "_Guarded | _KnownPage":
    """Decode a prepared page with ``decoder`` up to the end of its decode (``decode_image``).
    ``waited``: seconds the decode waited for it (its total counts them). ``finish()`` waits for
    the page's drafter where it is still reading and gives the result: a page that could not be
    rendered, or whose decode or finishing raised, is recorded as failed and the run goes on; a
    cancel raises."""
    mode = decoder.config.mode
    if page.error is not None:
        return _KnownPage(failed_page(page.number, page.width, page.height, mode, page.error))
    try:
        decoded = decoder.decode_image(replace(page, seconds=dict(page.seconds, total=waited)),
                                       on_event=on_event, should_cancel=should_cancel)
    except (CancelledError, KeyboardInterrupt):
        raise
    except Exception as exc:  # one bad page never sinks the document
        return _KnownPage(failed_page(page.number, page.width, page.height, mode, page_error(exc)))
    return _Guarded(decoded, page, mode)


@dataclass
class _KnownPage:
    """A page whose result is known when its decode ends (``start_page``)."""

    result: PageResult

    def drafted(self) -> bool:
        return True

    def finish(self) -> PageResult:
        return self.result

    result_so_far = finish


@dataclass
class _Guarded:
    """A decoded page whose finishing, should it raise, makes the page failed, not the run."""

    decoded: Decoded
    page: DraftedPage
    mode: str

    def drafted(self) -> bool:
        return self.decoded.drafted()

    def finish(self) -> PageResult:
        return self._guarded(self.decoded.finish)

    def result_so_far(self) -> PageResult:
        return self._guarded(self.decoded.result_so_far)

    def _guarded(self, result: Callable[[], PageResult]) -> PageResult:
        try:
            return result()
        except (CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:
            return failed_page(self.page.number, self.page.width, self.page.height, self.mode, page_error(exc))


class PageSaver:
    """Saves a run's decoded pages in order, and never holds up the decode or a page's result for
    a drafter. A page whose decode ended before its drafter did (a scan's OCR still reading it, the
    decode beside it) is announced at once (``announce(page, result)``: its result so far, without
    the regions), and waits for its regions on a thread of its own to be saved (its figures are
    cut from them, and the resume folder keeps the page as an uninterrupted run would), and so
    does every page decoded after it until its turn (announced at once too): the decode goes on to
    the next page meanwhile instead of idling. Its drafts are told the decode ended
    (``PendingDrafts.end_decode``): a drafter that comes to it later reads only its layout, not its
    text, which can no longer save a pass. How many pages wait so is bounded by the drafting
    ahead (``DraftAhead``: the drafter reads the pages in order, and the decode gets a page no more
    than ``ahead`` beyond it). ``save(page, decoded)`` (``start_page``'s; without ``announce``, a
    waiting page is only saved), ``wait()`` for every page handed over; an error in
    a waiting page's saving is raised by the next ``save`` or ``wait``, and the pages after it are
    not saved."""

    def __init__(self, save: Callable[[DraftedPage, PageResult], None], emit: Callable[[object], None],
                 announce: Callable[[DraftedPage, PageResult], None] | None = None):
        self._save, self._emit, self._announce = save, emit, announce
        self._waiting: deque = deque()  # (page, decoded), in order, for the saving thread
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def save(self, page: DraftedPage, decoded) -> None:
        self._raise()
        drafts = getattr(page, "drafts", None)  # a DraftedPage's; a run's stand-ins may have none
        if isinstance(drafts, PendingDrafts):
            drafts.end_decode()  # a drafter not at this page yet reads only its layout (``DraftAhead``)
        with self._lock:
            here = self._thread is None and decoded.drafted()  # nothing waits before it, nothing to wait for
            if not here:
                if self._announce is not None:  # the decode's output is final: the page is done
                    self._announce(page, decoded.finish() if decoded.drafted() else decoded.result_so_far())
                self._waiting.append((page, decoded))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._drain, name="hsd-page-save", daemon=True)
                    self._thread.start()
        if here:
            self._save(page, decoded.finish())

    def waiting(self) -> int:
        """Pages handed over and not saved yet."""
        with self._lock:
            return len(self._waiting)

    def wait(self) -> None:
        while True:
            with self._lock:
                thread = self._thread
            if thread is None:
                break
            thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _drain(self) -> None:
        """The saving thread: the waiting pages in order, each once its drafter has delivered."""
        while True:
            with self._lock:
                if not self._waiting or self._error is not None:
                    self._waiting.clear()  # after an error: not saved (the run ends with it)
                    self._thread = None
                    return
                page, decoded = self._waiting[0]
            try:
                with warnings_to(lambda message: self._emit(Notice(message, page=page.number))):
                    self._save(page, decoded.finish())
            except BaseException as exc:  # raised on the decode's thread
                self._error = exc
            with self._lock:
                self._waiting.popleft()
            del page, decoded  # its rendered image goes once it is saved


# --- the run ---------------------------------------------------------------------------------------


class _Finished:
    """The decode thread has saved its last page."""


@dataclass
class _Raised:
    """The decode thread stopped on ``error``; the caller's thread raises it."""

    error: BaseException


class DocumentRun:
    """One document converted: an iterator of events (module docstring).

    ``decoder`` (a ``PageDecoder``: on this machine the ``Engine``) decodes under
    ``request.config``'s settings (``settings_of``; it loads its model on first need: a document
    whose pages are all kept loads none). ``should_cancel`` is checked between forward
    passes and pages (``CancelledError``). ``kept`` and ``converted`` list the page numbers taken
    back and those this run converted and saved, final once it has ended (``close()`` ends an
    interrupted one)."""

    def __init__(self, request: ConversionRequest, decoder: PageDecoder,
                 should_cancel: Callable[[], bool] | None = None):
        if settings_of(decoder.config) != settings_of(request.config):
            raise ValueError("the decoder decodes under other settings than the request's")
        self.request, self.decoder = request, decoder
        self._should_cancel = should_cancel
        self._stop = threading.Event()
        self.kept: list[int] = []
        self.converted: list[int] = []
        self._events = self._run()

    def __iter__(self) -> Iterator[object]:
        return self

    def __next__(self):
        return next(self._events)

    def close(self) -> None:
        """Stop the run (if it has not ended) and wait for its threads."""
        self._events.close()

    def __enter__(self) -> "DocumentRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def cancelled(self) -> bool:
        return self._stop.is_set() or bool(self._should_cancel and self._should_cancel())

    # -- the caller's thread ----------------------------------------------------------------------

    def _run(self) -> Iterator[object]:
        from core.documents import open_document
        from core.export import DocumentOutput
        from core.stats import document_stats

        request = self.request
        settings = settings_of(request.config)
        notices: list[str] = []
        with warnings_to(notices.append):
            document = open_document(request.input, password=request.password, rotate=request.config.rotate)
        try:
            output = DocumentOutput(request.input, request.output, settings, resume=not request.fresh,
                                    overwrite=request.overwrite)
            plan = plan_document(document, output, request.pages)
            yield DocumentPlanned(path=str(request.input), output=str(output.markdown_path),
                                  page_count=document.page_count, pages=tuple(i + 1 for i in plan.pages),
                                  kept=tuple(i + 1 for i in plan.pages if i in plan.kept),
                                  damaged=document.damaged)
            for message in notices:
                yield Notice(message)
            if plan.rejected:
                yield Notice(rejected_notice(output.markdown_path, plan.rejected))
            results = {}
            for i in plan.pages:
                if i in plan.kept:
                    results[i] = plan.kept[i]
                    self.kept.append(i + 1)
                    yield PageKept(page=i + 1, result=plan.kept[i])
            if plan.to_convert:
                yield from self._convert(document, plan, output, results)
        finally:
            damaged = document.damaged  # pages that failed to render while it ran count too
            document.close()  # after ``_convert`` has joined the thread that drafted from it
        ordered = [results[i] for i in plan.pages]
        output.write_markdown(ordered)
        stats = document_stats(str(request.input), str(request.output), settings, ordered)
        if damaged:
            stats["damaged"] = damaged
        yield DocumentDone(markdown_path=str(output.markdown_path), stats=stats)

    def _convert(self, document, plan: DocumentPlan, output, results: dict) -> Iterator[object]:
        from core.engine import default_model

        decoder, events = self.decoder, queue.Queue()
        drafter = decoder.drafter  # a drafter that cannot be built is the run's error, before any thread
        ahead = decoder.pages_ahead
        drafting = DraftAhead(document, plan.to_convert, drafter, decoder.config.dpi, ahead=ahead, beside=ahead > 0,
                              emit=events.put)
        decoding = None
        try:
            if not decoder.loaded:
                if self.cancelled():
                    raise CancelledError("cancelled")
                model = decoder.config.model or default_model()
                yield ModelLoading(model=model)
                t0 = time.perf_counter()
                loading: list[str] = []
                with warnings_to(loading.append):  # the fast engine with no room in memory, say
                    compiled = decoder.prepare()
                yield ModelLoaded(model=model, seconds=time.perf_counter() - t0, compile_seconds=compiled)
                for message in loading:
                    yield Notice(message)
            decoding = threading.Thread(target=self._decode, args=(plan, drafting, output, events.put),
                                        name="hsd-decode", daemon=True)
            decoding.start()
            while True:
                event = events.get()
                if isinstance(event, _Finished):
                    return
                if isinstance(event, _Raised):
                    raise event.error
                if isinstance(event, (PageDone, PageSaved)):
                    results[event.page - 1] = event.result
                yield event
        finally:
            self._stop.set()
            if decoding is not None:
                decoding.join()
            drafting.stop()
            drafting.join()

    # -- the decode thread ------------------------------------------------------------------------

    def _decode(self, plan: DocumentPlan, drafting: DraftAhead, output, emit) -> None:
        decoder, key = self.decoder, str(self.request.input)
        total = len(plan.to_convert)

        announced: set[int] = set()

        def announce(page: DraftedPage, result: PageResult) -> None:
            announced.add(page.number)
            emit(PageDone(page=page.number, result=result))

        def save(page: DraftedPage, result: PageResult) -> None:
            output.save_page(result, page.image if result.error is None else None)
            if result.error is None:
                self.converted.append(page.number)
            emit((PageSaved if page.number in announced else PageDone)(page=page.number, result=result))

        saver = PageSaver(save, emit, announce)
        try:
            try:
                with warnings_to(lambda message: emit(Notice(message))):
                    for position, (index, remember) in enumerate(plan.steps()):
                        if self.cancelled():
                            raise CancelledError("cancelled")
                        decoder.remember_pages(key, remember)
                        t0 = time.perf_counter()
                        page = drafting.next()
                        emit(PageStarted(page=page.number, index=position, total=total))
                        decoded = start_page(decoder, page, emit, self.cancelled, waited=time.perf_counter() - t0)
                        saver.save(page, decoded)
                        del page, decoded  # its rendered image goes once it is saved
            finally:
                saver.wait()  # a page decoded before a cancel or an error is still saved
            emit(_Finished())
        except BaseException as exc:  # raised on the caller's thread
            emit(_Raised(exc))


def convert_document(request: ConversionRequest, engine: PageDecoder | None = None,
                     should_cancel: Callable[[], bool] | None = None) -> DocumentRun:
    """The run of ``request``: iterate it for its events. ``engine``: the ``PageDecoder`` to use
    (built from ``request.config``; default: a new ``Engine``, which loads its model only if a page
    needs it)."""
    if engine is None:
        from core.engine import Engine

        engine = Engine(request.config)
    return DocumentRun(request, engine, should_cancel)
