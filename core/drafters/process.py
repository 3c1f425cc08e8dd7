"""A drafter that reads pages in a process of its own, beside the decode.

A scan's drafter runs seconds a page (OCR, layout and table models, and the Python that orders
their lines) while the target decodes, a text layer's up to a second (its ruled tables are found
in Python). On a thread of the decoding process its Python holds the interpreter lock that the
decode needs between two passes, and its model threads take the cores that the decode's thread
needs to launch the next pass. On two cores, a loop of 20 ms GPU-like waits and 2.3 ms of Python
(a simulated pass and the engine's own work) took 2.5 ms more a pass beside a drafting thread,
1.8 ms beside a drafting process, and nothing measurable beside a niced drafting process. In
whole document runs on the simulated GPU the niced process still cost the decode 1.7-1.9 ms a
pass (its thread waking to a busy core after each pass); on an idle machine a process that runs
only on CPU time nothing else wants (Linux's ``SCHED_IDLE``) cost it 1.3-1.4 ms. But a user's
machine is rarely idle: beside a browser or a build such a process gets no core, and a page's
drafts then came long after its decode. So the process is niced (``lower_priority``,
``tuning.DRAFTING_PROCESS_NICE``): it yields to the decode, not to the whole machine
(``tuning.DRAFTING_PROCESS_IDLE`` turns ``SCHED_IDLE`` back on). It is spawned without ``setsid``,
so where Linux schedules the processes of one ``setsid`` group together (``/proc/PID/autogroup``,
on by default on most desktops) its nice only weighs against the run's own threads, and other programs share the
machine with the run's group as a whole; elsewhere a nice of 5 still gets a third of a nice-0
program's share of a busy core, never none. A page never waits for its drafts at its end
(``core.run``: it is done when its decode ends), so a drafter slowed by other work costs
speculation, not a page's time.

    ProcessDrafter(spec)            a Drafter: ``draft(page)`` sends the page's document (path,
                                    password) and index to the process, which builds its drafter
                                    once from ``spec`` (``get_drafter``), opens the document once
                                    for all its pages and drafts the page; the regions come back, the drafter's
                                    warnings are warned again here, its errors raised again here.
                                    ``draft(page, on_lines=...)``: the lines the drafter reads
                                    come back as it reads them (``Drafter.streams_lines``);
                                    ``draft(page, meanwhile=...)``: this thread's other work,
                                    done once the process has the page;
                                    ``draft(page, waiting=...)``: called on this thread every
                                    ``tuning.DRAFTING_ANSWER_POLL_SECONDS`` while the process
                                    has not answered (the pages ahead are rendered then).
                                    A page of a document that is no file is drafted here, by
                                    the same spec's drafter built here when first needed
    draft_layout(page, meanwhile=..., waiting=...)
                                    only the page's layout, its text not read (``layout_of``): its
                                    decode has ended, so the text could save no pass
    read_in_order(document, indices) the pages of ``document`` will be asked for in this order:
                                    while the process's OCR reads one scan page's lines, it
                                    renders the next and runs its detector (``core.drafters.ocr_ahead``);
                                    with ``tuning.RENDER_PROCESS`` on (the default), the
                                    decode's images of its pages are rendered, and their turns
                                    decided, in a rendering process of this drafter's
                                    (``core.drafters.render_process``), not in this one
    stop_ahead(document)            nothing more of ``document`` prepared ahead: its order
                                    forgotten, and the look-ahead the process runs for it now
                                    stopped after its current step (a cancelled run)
    stop_reading()                  the page being drafted now has its decode ended: its OCR
                                    reads no further line (after the chunk it reads; the lines
                                    read are kept, the rest of the page is layout only:
                                    ``RapidOCRDrafter.stop_when``); the next request reads whole
    reader_for(drafter)             the drafter to read pages with: the shared ProcessDrafter of
                                    its spec (``Drafter.spec``), or the drafter itself (one no spec
                                    builds, or where ``tuning.DRAFTING_PROCESS`` is off)
    layout_of(drafter, page)        ``page``'s layout without its text where the drafter that
                                    reads it can (``LayoutDrafter``: OCR), else its whole draft (a
                                    text layer's text costs little and is the page's own)
    LayoutOnly(reader)              a drafter that asks ``reader`` (the above) only for layouts

The process is spawned (nothing of this process, its threads or its models, is copied into it) on
first use, loads its models with its first page and serves every later document with the same
spec; it ends with this process. If it cannot start or stops answering, the page is drafted here
here and so are the pages after it, with one warning.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from typing import Protocol, runtime_checkable

from core import tuning
from core.drafters.base import Drafter, DrafterBase, Region, draft_page
from core.errors import HSDWarning

#: The drafting process's name (``multiprocessing.current_process().name`` there): code that runs in
#: it and elsewhere tells by it where it runs (``core.drafters.rapidocr``).
DRAFTING_PROCESS_NAME = "hsd-drafting"

_shared: dict[str, "ProcessDrafter"] = {}
_shared_lock = threading.Lock()


def reader_for(drafter: Drafter) -> Drafter:
    """The drafter that reads pages for ``drafter`` (module docstring)."""
    if not tuning.DRAFTING_PROCESS or drafter.spec is None:
        return drafter
    with _shared_lock:
        reader = _shared.get(drafter.spec)
        if reader is None or reader.broken:
            reader = _shared[drafter.spec] = ProcessDrafter(drafter.spec, here=drafter)
        return reader


@runtime_checkable
class LayoutDrafter(Protocol):
    """A drafter that can give a page's layout without reading its text (``draft_layout``: the OCR
    drafter's render, detector and layout model, no recognition; regions with empty text and
    ``extra["unread"]``)."""

    def draft_layout(self, page) -> list[Region]: ...


def layout_of(drafter: Drafter, page) -> list[Region]:
    """``page``'s layout, its text not read, where the drafter that reads it is a ``LayoutDrafter``;
    else its whole draft."""
    chosen = drafter.choose(page)
    if isinstance(chosen, LayoutDrafter):
        return list(chosen.draft_layout(page))
    return list(draft_page(drafter, page))


class LayoutOnly(DrafterBase):
    """``reader`` (a drafter, or its ``ProcessDrafter``) asked only for pages' layouts (``layout_of``),
    for pages whose decode has ended (``core.draft_ahead``)."""

    def __init__(self, reader: Drafter):
        self.reader = reader
        self.name = reader.name
        self.drafts_elsewhere = reader.drafts_elsewhere

    def choose(self, page) -> Drafter:
        return self.reader.choose(page)

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None) -> list[Region]:
        if isinstance(self.reader, ProcessDrafter):
            return self.reader.draft_layout(page, meanwhile=meanwhile, waiting=waiting)
        if meanwhile is not None:
            meanwhile()
        return layout_of(self.reader, page)


class ServerEnd:
    """This side of a process spawned by ``spawn_server``: ``_process`` and ``_connection`` while it
    runs, ``broken`` (why) once given up, ``_lock`` held while the process is asked. ``_give_up``
    ends it and warns once: ``stopped`` (what the warning says, then why), ``stopped_stacklevel``
    (where the warning points, counted from ``_give_up``'s caller)."""

    stopped = "the process stopped"
    stopped_stacklevel = 3

    def __init__(self):
        self.broken: str | None = None  # why the process was given up
        self._process = None
        self._connection = None
        self._lock = threading.Lock()

    def _give_up(self, why: str) -> None:
        self.broken = why
        self._stop()
        warnings.warn(f"{self.stopped} ({why})", HSDWarning, stacklevel=self.stopped_stacklevel + 1)

    def _stop(self) -> None:
        end_server(self._process, self._connection)
        self._process = self._connection = None


class ProcessDrafter(ServerEnd, DrafterBase):
    """Drafts pages in a process of its own, with the drafter ``spec`` builds there (once, with
    its first page). Where the process cannot draft a page, the same spec's drafter drafts it
    here: ``here`` where the caller has built it already, else built on first need."""

    streams_lines = True  # where the process's drafter does; it says so by sending lines
    drafts_elsewhere = True  # ``draft(page, meanwhile=...)``: this thread is free while it drafts
    stopped = "drafting beside the decode in this process: the drafting process stopped"

    def __init__(self, spec: str, here: Drafter | None = None):
        from core.drafters import parse_drafter_spec

        super().__init__()
        self.spec = spec
        self.name = parse_drafter_spec(spec)[0]
        self._here = here
        # document -> {index: the index asked for after it} (``read_in_order``)
        self._following: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._asking = None  # the document whose page the process reads now
        self._drop = None  # set: the process stops preparing the page ahead (``stop_ahead``)
        self._cut = None  # set: the process stops reading the page it drafts (``stop_reading``)
        self._renderer = None  # the decode's pages rendered elsewhere (``read_in_order``)

    @property
    def here(self) -> Drafter:
        """The drafter of the same spec in this process, for the pages the process cannot draft."""
        if self._here is None:
            from core.drafters import get_drafter

            self._here = get_drafter(self.spec)
        return self._here

    def prepare(self, page) -> None:
        """Start the process and load the models for ``page`` now (the benchmark keeps loading
        out of a page's drafting time)."""
        if self._in_process(page):
            self._ask("prepare", page)

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None) -> list[Region]:
        """``page``'s regions; ``meanwhile()`` runs once the process has been sent the page (here,
        before the drafting, where the process cannot draft it); ``waiting()`` while its answer has
        not come (never where the page is drafted here)."""
        if not self._in_process(page):
            return draft_page(self.here, page, on_lines, meanwhile)
        return self._ask("draft", page, on_lines, meanwhile, waiting)

    def draft_layout(self, page, meanwhile=None, waiting=None) -> list[Region]:
        """``page``'s layout without its text (``layout_of``), in the process where it can be."""
        if not self._in_process(page):
            if meanwhile is not None:
                meanwhile()
            return layout_of(self.here, page)
        return self._ask("layout", page, None, meanwhile, waiting)

    def read_in_order(self, document, indices: list[int]) -> None:
        """The pages ``indices`` of ``document`` will be drafted in this order (module docstring);
        the decode's images of its pages are rendered, and their turns decided, in the rendering
        process (``core.drafters.render_process``, ``tuning.RENDER_PROCESS``)."""
        self._following[document] = dict(zip(indices, indices[1:]))
        # The first page is rendered and turned here: the decode waits for it before its first pass
        # (no pass to take the lock from), and a process started now is not up yet. So a document of
        # one page never uses the rendering process, nor pays for its start.
        if tuning.RENDER_PROCESS and not self.broken and len(indices) > 1:
            from core.drafters.render_process import RenderProcess, attach

            if self._renderer is None:
                self._renderer = RenderProcess()
            if attach(document, self._renderer, here=tuple(indices[:1])):
                self._renderer.start()  # it imports while the first page decodes

    @staticmethod
    def _turn(page) -> int:
        """``page``'s turn: the rendering process's where it renders the page's document."""
        from core.drafters.render_process import renderer_of

        renderer = renderer_of(page.document, page.index)
        return renderer.turn(page) if renderer is not None else page.turn

    def stop_ahead(self, document) -> None:
        """Prepare no page of ``document`` ahead any more (module docstring)."""
        self._following.pop(document, None)
        drop = self._drop
        if drop is not None and self._asking is document:
            drop.set()

    def stop_reading(self) -> None:
        """The page the process drafts now needs no more of its text (module docstring); called
        while its answer is awaited (``draft``'s ``waiting``)."""
        cut = self._cut
        if cut is not None:
            cut.set()

    @staticmethod
    def _in_process(page) -> bool:
        """Whether ``page`` is drafted in the process: whether it can open the page's document
        again (a file)."""
        path = page.document.path
        return path is not None and os.path.isfile(path)

    def close(self) -> None:
        with self._lock:
            self._stop()
        if self._renderer is not None:
            self._renderer.close()

    # -- this side --------------------------------------------------------------------------------

    def _ask(self, what: str, page, on_lines=None, meanwhile=None, waiting=None):
        document = page.document
        following = self._following.get(document, {}).get(page.index) if what != "prepare" else None
        # the page's turn goes with it: the process sees the page as this side does (``Page.turn``)
        request = (what, str(document.path), document.password, page.index, on_lines is not None,
                   document.rotate, self._turn(page), following)
        with self._lock:
            if not self.broken:
                try:
                    self._start()
                    if self._drop is not None:
                        self._drop.clear()  # a drop meant for an earlier request is not this one's
                    if self._cut is not None:
                        self._cut.clear()  # nor a stop meant for an earlier page
                    self._asking = document
                    self._connection.send(request)
                    try:
                        if meanwhile is not None:
                            meanwhile, run = None, meanwhile
                            run()
                    finally:  # the answer is read whatever happened meanwhile: the next request's is next
                        try:
                            status, value, caught = self._receive(on_lines, waiting)
                        finally:
                            self._asking = None
                except (EOFError, OSError) as exc:
                    self._give_up(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                else:
                    for category, message in caught:
                        warnings.warn(message, category, stacklevel=3)
                    if status == "error":
                        raise value
                    return value
        if what == "prepare":
            return self.here.prepare(page)
        if what == "layout":
            if meanwhile is not None:
                meanwhile()
            return layout_of(self.here, page)
        return draft_page(self.here, page, on_lines, meanwhile)  # meanwhile: None where it ran

    def _receive(self, on_lines, waiting=None) -> tuple:
        """The process's answer; the lines it sends before it go to ``on_lines``; ``waiting()`` is
        called while nothing has come. The answer is read whatever ``waiting`` raises (the next
        request's is next), and then that is raised."""
        failed = None
        while True:
            while waiting is not None and not self._connection.poll(tuning.DRAFTING_ANSWER_POLL_SECONDS):
                try:
                    waiting()
                except BaseException as exc:
                    failed, waiting = exc, None
            message = self._connection.recv()
            if message[0] != "lines":
                if failed is not None:
                    raise failed
                return message
            if on_lines is not None:
                on_lines(message[1])

    def _start(self) -> None:
        if self._process is not None:
            return
        import multiprocessing

        priority = (tuning.DRAFTING_PROCESS_NICE, tuning.DRAFTING_PROCESS_IDLE)
        context = multiprocessing.get_context("spawn")
        self._drop, self._cut = DropFlag(context), DropFlag(context)
        self._process, self._connection = spawn_server(serve, (self.spec, *priority, self._drop, self._cut),
                                                       DRAFTING_PROCESS_NAME)


def spawn_server(serve, args: tuple, name: str):
    """A spawned daemon process named ``name`` running ``serve(connection, *args)``, and this
    side's end of its pipe, which sees EOF once the process is gone."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=serve, args=(theirs, *args), name=name, daemon=True)
    process.start()
    theirs.close()
    return process, mine


def end_server(process, connection) -> None:
    """This side's pipe closed, then ``process`` ended (terminated where it still runs)."""
    if connection is not None:
        connection.close()
    if process is not None:
        if process.is_alive():
            process.terminate()
        process.join(timeout=5)


class DropFlag:
    """A flag both processes see (``stop_ahead`` sets it, the drafting process reads it between
    steps): one byte of shared memory. A ``multiprocessing.Event`` would do the same with five
    semaphores, which a run stopped by a signal leaves to the resource tracker to report as leaked
    on the user's terminal."""

    def __init__(self, context):
        self._value = context.RawValue("b", 0)

    def set(self) -> None:
        self._value.value = 1

    def clear(self) -> None:
        self._value.value = 0

    def is_set(self) -> bool:
        return bool(self._value.value)


# -- the drafting process ------------------------------------------------------------------------


def serve(connection, spec: str, nice: int, idle: bool = False, drop=None, cut=None) -> None:
    """The drafting process: answer requests until the other side closes the connection. Each
    answer is ``(status, value, warnings)``: ``("ok", regions or None, ...)`` or ``("error",
    exception, ...)``; ``warnings``: (category, message) of what the drafter warned. A request is
    ``("prepare" | "draft" | "layout", path, password, index, lines, rotate, turn, following)``. A page asked
    for with its lines is preceded by ``("lines", [OcrLine])`` messages as the drafter reads them.
    A page asked for with the index of the page asked for after it has that page prepared while
    its lines are read (``core.drafters.ocr_ahead``), until ``drop`` (an event) is set. A page
    drafted whole stops being read once ``cut`` is set (``stop_reading``)."""
    lower_priority(nice, idle)
    from core.drafters import get_drafter

    drafter = get_drafter(spec)
    opened: dict = {}  # the open document: {"key": (path, password, mtime, size), "document": ...}
    dropped = drop.is_set if drop is not None else None
    stopped = cut.is_set if cut is not None else None
    answer_requests(connection, lambda request: (_answer(request, drafter, opened, connection, dropped, stopped), None))
    if opened:
        opened["document"].close()


def answer_requests(connection, answer) -> None:
    """Answer each request that comes on ``connection`` until the other side closes it:
    ``answer(request)`` gives ``(value, data)``, sent as ``("ok", value, warnings)`` and then, where
    ``data`` is not None, ``data`` as bytes of its own; what it raises is sent as ``("error",
    exception, warnings)``. ``warnings``: (category, message) of the ``HSDWarning``s it warned."""
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        data = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value, data = answer(request)
                reply = ("ok", value)
            except Exception as exc:
                reply = ("error", _sendable(exc))
        reported = [(w.category, str(w.message)) for w in caught if issubclass(w.category, HSDWarning)]
        try:
            connection.send((*reply, reported))
            if data is not None:
                connection.send_bytes(data)
        except (EOFError, OSError):
            return


def lower_priority(nice: int, idle: bool) -> str:
    """Let the decode have a core first: this process (and the model threads it starts later) runs
    at a priority ``nice`` lower; with ``idle``, only on CPU time nothing else wants, where Linux
    offers that (``SCHED_IDLE``: a waking decode thread takes a core from it at once, but so does
    every other process on the machine, and beside other work it starves). Returns which it got:
    "idle", "nice" or "" (neither)."""
    if idle and hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            return "idle"
        except OSError:
            pass
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
            return "nice"
        except OSError:
            pass
    return ""


def kept_open(opened: dict, path: str, password, rotate):
    """The document at ``path`` that a serving process keeps open between requests (``opened``:
    ``{"document": ..., "key": ...}``, empty at first), opened again where the file has changed
    or the request names another password or rotation; ``opened["key"]`` names it."""
    stat = os.stat(path)
    key = (path, password, stat.st_mtime_ns, stat.st_size, rotate)
    if opened.get("key") != key:
        from core.documents import open_document

        if opened:
            opened.pop("document").close()
            opened.clear()
        opened["document"] = open_document(path, password=password, rotate=rotate)
        opened["key"] = key
    return opened["document"]


def _answer(request: tuple, drafter, opened: dict, connection, dropped=None, cut=None):
    what, path, password, index, lines, rotate, turn, following = request
    expected = opened.pop("next", None)  # (document key, index) the last draft said comes next
    kept_open(opened, path, password, rotate)
    key = opened["key"]
    opened["document"].turns[index] = turn
    page = opened["document"].page(index)
    if what == "prepare":
        opened["next"] = expected
        return drafter.prepare(page)
    on_lines = (lambda read: connection.send(("lines", list(read)))) if lines else None
    # Runs whose requests take turns (Ray's documents at once) would each drop the page prepared
    # for the other: the look-ahead waits until the page asked for is the one said to come next.
    if following is not None:
        opened["next"] = (key, following)
    if expected is not None and expected != (key, index):
        following = None
    reader = _expect(drafter, page, opened["document"], following, dropped)
    if what == "layout":
        cut = None
    stopping = _stop_when(drafter, page, cut) if cut is not None else None
    try:
        if what == "layout":
            return layout_of(drafter, page)
        return list(draft_page(drafter, page, on_lines))
    finally:
        if reader is not None:
            reader.end_expecting()  # no thread of the look-ahead outlives the answer
        if stopping is not None:
            stopping.stop_when(None)  # the next page is read whole unless told too


def _stop_when(drafter, page, cut):
    """The OCR drafter that reads ``page`` told to stop reading it once ``cut()`` says so
    (``RapidOCRDrafter.stop_when``); returns it, or None where the page is not read by one."""
    from core.drafters.ocr_ahead import stoppable_reader_of

    reader = stoppable_reader_of(drafter, page)
    if reader is not None:
        reader.stop_when(cut)
    return reader


def _expect(drafter, page, document, following: int | None, dropped):
    """Where ``page`` is read by OCR and page ``following`` is asked for next, that OCR drafter told
    to prepare it (``core.drafters.ocr_ahead``; only where that drafter also reads it: a text
    layer page is drafted as it comes). Returns the drafter told, or None."""
    from core.drafters.ocr_ahead import ocr_reader_of

    if following is None:
        return None
    reader = ocr_reader_of(drafter, page)
    if reader is None:
        return None
    try:
        ahead = document.page(following)
    except Exception:  # a page that does not load fails in its own request
        return None
    # Its turn is the run's to decide (``Page.turn``) and comes with its own request: it is prepared
    # upright, as most pages are, not decided here a second time; a page the run turns is drafted
    # as it comes (``PageAhead.take`` compares the turns).
    document.turns.setdefault(following, 0)
    reader.expect_next(ahead, wanted=lambda other: ocr_reader_of(drafter, other) is reader, dropped=dropped)
    return reader


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a RuntimeError with its type and message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
