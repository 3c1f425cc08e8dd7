"""A Ray run's drafts, made on the cluster's CPUs: each page's drafting is a Ray task.

A scan's OCR and layout take seconds a page; in the driver they would set the pace of every GPU of
the cluster. ``ClusterDrafter`` is the drafter a Ray run drafts with (``RayPageDecoder.drafter``):
the run's own drafting thread (``core.draft_ahead``) asks it for one page at a time, in order, as it
asks any drafter, and it hands the page to a Ray CPU task (``draft_on_worker``) that drafts it with
the drafter the run's spec builds, exactly as ``hsd convert`` drafts it, and sends back the regions,
the warnings and the drafter's error. The run renders each page in the driver as before (the model
sees the very image a run on one machine renders).

Look-ahead: told the pages the run will draft (``expect``, from the run's plan), the drafter keeps
``window`` of them drafting at once, from the page it is asked for on, so the cluster's CPUs read a
document's later pages while the drafting thread waits for this one. A page asked for before its
task was sent (no plan told) is sent then.

The decode does not wait for the drafts: the run hands the decode each page as soon as it is
rendered (``core.draft_ahead``, beside the decode), and ``RayPageDecoder`` ships the page to its
model actor with its drafting task's reference (``reference``: the task, sent then where the
drafting thread has not sent it yet). On the actor, ``ClusterDrafts`` is the page's drafting as the
engine sees any drafting still running (``core.page_job.Drafting``): the engine asks it between
passes whether it is done (``ray.wait`` with no timeout), and speculates from the drafts from the
next pass on, as it does on one machine. The drafting thread waits for the same task and announces
its regions and warnings in the driver.

A document's run that has ended (stopped, failed or done) leaves no task drafting for long: each
task asks the run's ``RunEnds`` (a Ray actor of no CPU, one a Ray run) once it has opened the
document (before it builds its drafter and drafts) and, where an OCR drafter reads the page,
between its chunks of lines (``RapidOCRDrafter.stop_when``: the lines read are kept, no further
line is read); told that the run has ended (``ClusterDrafter.close``), it returns early. Nothing is
cancelled from the driver (``close``: a ``ray.cancel`` aborted it).

The tasks run in Ray workers of their own, which lower their priority as the drafting process of a
run on one machine does (``core.scale.priority``): the model actors take a core first, and no model
actor ever runs in a worker a drafting task has lowered.

The document travels once (its file's bytes, put in Ray's object store with its first page): the
tasks open it again from them (``_Opened``), so the input files need only be readable by the
driver. A worker keeps the last document and the drafter of each spec it built between tasks.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
import uuid
import warnings
from pathlib import Path

from core import tuning
from core.drafters.base import DrafterBase, Region, draft_page
from core.drafters.process import _sendable  # an error as the drafting process sends it
from core.errors import HSDWarning


class ClusterDrafter(DrafterBase):
    """A drafter that reads a document's pages on Ray CPU tasks (module docstring). ``spec``: the
    run's drafter spec (what the tasks build); ``here``: that drafter built in the driver (its
    name; a spec that cannot build one fails the run before any task); ``window``: pages drafting
    at once; ``task``: ``draft_on_worker`` as a Ray task (``drafting_task``), with ``cpus`` CPUs;
    ``end``: the run's end as its tasks ask it (``RunEnd``; None: they draft their pages whole)."""

    drafts_elsewhere = True  # ``draft(page, meanwhile=..., waiting=...)``: the driver's thread is free
    # ``spec`` stays None: this drafter is not one a spec builds (a drafting process would take a
    # spec and draft in the driver); the spec it drafts with is ``drafter_spec``.

    def __init__(self, spec: str, here, window: int, task, cpus: float = 1, end: "RunEnd | None" = None):
        self.drafter_spec, self.name, self.window = spec, here.name, max(1, window)
        self._here = here
        self._task = task
        self._end = end
        self._cpus = max(1, int(cpus))  # an OCR drafter's workers in a task
        self._order: list[int] = []          # the pages the run drafts, in order (0-based)
        self._position: dict[int, int] = {}  # page index -> its place in ``_order``
        self._sent: dict[int, object] = {}   # page index -> its task's result reference
        # page index -> the reference of its task too, for the decode (``reference``), until the
        # drafting thread has gone past the page (its drafts delivered: the decode ships them)
        self._for_decode: dict[int, object] = {}
        self._drafting_at = -1               # the place in ``_order`` of the page the drafting thread drafts
        self._document = None                # (path, reference to the file's bytes in the store)
        self._source = None                  # the document (``reference`` sends its pages from plain data)
        self._lock = threading.Lock()

    def choose(self, page):
        """What reads ``page`` in the tasks: the driver's drafter says (``auto`` names its choice)."""
        return self._here.choose(page)

    def expect(self, indices) -> None:
        """The pages the run will draft, in its order: those after a page asked for are sent ahead."""
        with self._lock:
            self._order = list(indices)
            self._position = {index: at for at, index in enumerate(self._order)}

    def reference(self, number: int):
        """The drafting task of page ``number`` (1-based), for the model actor that decodes the page
        (``ClusterDrafts``): sent now where it was not (the decode never waits for the drafting
        thread to send it; the drafting thread then waits for this task). None where the page's
        drafts are delivered to the run already (the drafting thread has gone past it), or where
        the page cannot be sent from here (its document or its turn not known yet: the decode then
        waits for its drafts)."""
        index = number - 1
        with self._lock:
            reference = self._for_decode.get(index)
            if reference is not None:
                return reference
            if self._position.get(index, len(self._order)) < self._drafting_at:
                return None
            document = self._source
            if document is None or index not in document.turns:  # rendered pages have their turn
                return None
            reference = self._sent[index] = self._send_where(document, index, document.turns[index])
            return reference

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None) -> list[Region]:
        """``page``'s regions, drafted on the cluster; ``meanwhile()`` runs once its task is sent,
        ``waiting()`` every ``tuning.DRAFTING_ANSWER_POLL_SECONDS`` until its answer is back. The
        drafter's warnings are warned again here, its error raised here (``DraftJob`` records it
        as a local drafting's)."""
        import ray

        reference = self._send_from(page)
        if meanwhile is not None:
            meanwhile()
        while not ray.wait([reference], timeout=tuning.DRAFTING_ANSWER_POLL_SECONDS)[0]:
            if waiting is not None:
                waiting()
        regions, warned, error = ray.get(reference)
        for category, message in warned:
            warnings.warn(message, category, stacklevel=3)
        if error is not None:
            raise error
        return regions

    def _send_from(self, page):
        """Send ``page``'s task (where not sent yet) and those of the ``window - 1`` pages after it in
        the run's order; return ``page``'s result reference."""
        with self._lock:
            order = self._order
            at = self._position.get(page.index)
            ahead = order[at + 1:at + self.window] if at is not None else []
            if at is not None:  # the pages before it are delivered: the decode no longer asks for them
                self._drafting_at = at
                for index in [index for index in self._for_decode if self._position.get(index, at) < at]:
                    del self._for_decode[index]
            if page.index not in self._sent:
                self._sent[page.index] = self._send(page)
            for index in ahead:
                if index not in self._sent:
                    try:
                        self._sent[index] = self._send(page.document.page(index))
                    except Exception:  # a page that cannot be read: the run meets it when it gets there
                        break
            return self._sent.pop(page.index)

    def _send(self, page):
        # the page's turn travels with it: the task sees the page as the driver renders it
        return self._send_where(page.document, page.index, page.turn)

    def _send_where(self, document, index: int, turn: int):
        """Send the task of page ``index`` of ``document`` turned ``turn`` (plain data: no page is
        read here, so the decode's thread may send too); the lock is held."""
        import ray

        if self._document is None or self._document[0] != document.path:
            self._document = (document.path, ray.put(Path(document.path).read_bytes()))
        self._source = document
        path, data = self._document
        where = (Path(path).name, document.password, document.rotate, index, turn)
        reference = self._for_decode[index] = self._task.remote(self.drafter_spec, [data], where, self._cpus,
                                                                self._end)
        return reference

    def close(self) -> None:
        """Give up the tasks still drafting (the run has ended): their results are dropped, and
        the tasks are told the run's end (``end``), so that each returns early, at its next stage
        or chunk of lines. Not ``ray.cancel``: a cancel that meets a task's reply in the driver's
        Ray core worker fails one of its internal checks ("Tried to complete task that was not
        pending") and aborts the whole driver process."""
        with self._lock:
            self._sent, self._for_decode = {}, {}
            sent_any = self._document is not None
        if sent_any and self._end is not None:
            self._end.tell()


class ClusterDrafts:
    """A page's drafting on a Ray task as a model actor's engine sees it (``core.page_job.Drafting``):
    ``reference`` is the task's (``draft_on_worker``'s) result. ``done`` asks Ray without waiting
    (the engine asks between passes), ``result`` waits; the error as a drafting on one machine
    records it. The drafter's warnings are told in the driver, where the run's drafting thread
    waits for the same task."""

    def __init__(self, reference):
        self._reference = reference
        self._regions: list[Region] | None = None
        self._asked_at = float("-inf")
        self.error: str | None = None
        self.seconds = 0.0  # the driver's drafting thread times the drafting (``RayPageDecoder``)

    def done(self) -> bool:
        if self._regions is None:
            import ray

            # Ray is asked as often as the run's drafting thread asks it, not every pass: an answer
            # costs 0.1-0.2 ms, a pass on a GPU 5-20 ms
            now = time.monotonic()
            if now - self._asked_at < tuning.DRAFTING_ANSWER_POLL_SECONDS:
                return False
            self._asked_at = now
            if not ray.wait([self._reference], timeout=0)[0]:
                return False
            self._take()
        return True

    def early_lines(self) -> list:
        return []  # the task sends its regions whole

    def result(self) -> list[Region]:
        if self._regions is None:
            self._take()
        return self._regions

    def _take(self) -> None:
        import ray

        try:
            regions, _, error = ray.get(self._reference)
        except Exception as exc:  # the task's worker died past its retries, or it was cancelled
            regions, error = [], exc
        self.error = None if error is None else f"{type(error).__name__}: {error}"
        self._regions = list(regions) if error is None else []
        self._reference = None


def drafting_task(cpus: float, memory: int, retries: int):
    """``draft_on_worker`` as a Ray task of ``cpus`` CPUs and ``memory`` bytes, run again up to
    ``retries`` times where its worker dies (Ray must be connected), in workers of its own at a
    priority below the model actors' (``core.scale.priority``)."""
    import ray

    return ray.remote(draft_on_worker).options(**drafting_options(cpus, memory, retries))


def drafting_options(cpus: float, memory: int, retries: int) -> dict:
    """The Ray options of a drafting task (``drafting_task``)."""
    from core.scale.priority import drafting_runtime_env
    from core.scale.ray_pipeline import WORKER_ENV

    return {"num_cpus": cpus, "memory": memory, "max_retries": retries,
            "runtime_env": drafting_runtime_env(WORKER_ENV)}


# -- a run's end, as its tasks ask it -----------------------------------------------------------


class RunEnds:
    """The document runs of a Ray run that have ended (``end``), as their drafting tasks ask
    (``ended``). Plain Python: Ray makes it an actor (``run_ends``)."""

    def __init__(self):
        self._ended: set[str] = set()

    def end(self, key: str) -> None:
        self._ended.add(key)

    def ended(self, key: str) -> bool:
        return key in self._ended


def run_ends():
    """A ``RunEnds`` actor (Ray must be connected). It holds no CPU (it answers a set lookup), and
    ends once no handle of it is left: the driver's and those its runs' tasks hold."""
    import ray

    return ray.remote(RunEnds).options(num_cpus=0).remote()


class RunEnd:
    """One document run's end: ``tell()`` in the driver once the run has ended
    (``ClusterDrafter.close``); ``check()`` in a drafting task, the ``EndCheck`` it asks. It
    travels with each of the run's tasks (the ``RunEnds`` actor's handle and the run's key)."""

    def __init__(self, ends, key: str | None = None):
        self.ends = ends
        self.key = key or uuid.uuid4().hex

    def tell(self) -> None:
        try:
            self.ends.end.remote(self.key)
        except Exception:  # Ray has gone, and the run's tasks with it
            pass

    def check(self) -> "EndCheck":
        return EndCheck(self.ends, self.key)


class EndCheck:
    """Whether a task's run has ended, asked between the task's stages and chunks of lines; it
    never waits: each call takes the answer to the question the call before sent, where it has
    come, and sends the next (an actor's answer takes a round trip; a chunk of lines takes
    hundreds of milliseconds). A ``RunEnds`` that cannot answer ends nothing: the page is
    drafted whole."""

    def __init__(self, ends, key: str):
        self._ends, self._key = ends, key
        self._question = None
        self.ended = False

    def __call__(self) -> bool:
        if self.ended or self._ends is None:
            return self.ended
        if self._question is not None:
            import ray

            if not ray.wait([self._question], timeout=0)[0]:
                return False
            try:
                self.ended = bool(ray.get(self._question))
            except Exception:
                self._ends = None
            self._question = None
            if self.ended or self._ends is None:
                return self.ended
        self._question = self._ends.ended.remote(self._key)
        return False


class RunEndedError(RuntimeError):
    """A drafting task told that its run had ended before it drafted its page."""


# -- the worker's side ---------------------------------------------------------------------------


def draft_on_worker(spec: str, data: list, where: tuple, cpus: int = 1, end: RunEnd | None = None) -> tuple:
    """A Ray task: draft page ``where`` = (file name, password, rotate, index, turn) of the document
    whose file's bytes are ``data[0]`` (a reference, fetched only where this worker has not opened
    that document) with the drafter ``spec`` builds (an OCR drafter's lines read by ``cpus``
    workers, the task's CPUs). Returns (regions, [(warning category, message)], the drafter's
    error or None), as the drafting process answers. ``end``: the run's end (``RunEnd``), asked
    once the document is open (before the drafter is built: a worker's first builds load models)
    and between an OCR drafter's chunks of lines: once the run has ended, the page is not drafted
    (``RunEndedError``) or no further line is read."""
    from core.scale.priority import lower_drafting_worker

    lower_drafting_worker()  # in a drafting worker only: the decode's actors take a core first
    name, password, rotate, index, turn = where
    ended = end.check() if end is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error, regions = None, []
        try:
            if ended is not None:
                ended()  # the question goes out while the document opens
            document = _OPENED.document(data[0], name, password, rotate)
            document.turns[index] = turn
            if ended is not None and ended():
                raise RunEndedError("not drafted: its run has ended")
            regions = _draft(_drafter(spec, cpus), document.page(index), ended)
        except Exception as exc:
            error = _sendable(exc)
    warned = [(w.category, str(w.message)) for w in caught if issubclass(w.category, HSDWarning)]
    return regions, warned, error


def _draft(drafter, page, ended) -> list[Region]:
    """``page``'s regions; where an OCR drafter that can stop reads it, it stops reading once
    ``ended()`` says so (``RapidOCRDrafter.stop_when``)."""
    from core.drafters.ocr_ahead import stoppable_reader_of

    reader = stoppable_reader_of(drafter, page) if ended is not None else None
    if reader is None:
        return list(draft_page(drafter, page))
    reader.stop_when(ended)
    try:
        return list(draft_page(drafter, page))
    finally:
        reader.stop_when(None)  # the worker's next page, maybe another run's, is read whole unless told


_drafters: dict[tuple, object] = {}


def _drafter(spec: str, cpus: int):
    """The drafter ``spec`` builds, once per worker; an OCR drafter's lines read by ``cpus``
    workers unless the spec says how many (the task's share of its node, not the whole node: the
    drafts are the same with any number of workers)."""
    drafter = _drafters.get((spec, cpus))
    if drafter is None:
        from core.drafters import OCR_DRAFTERS, get_drafter, parse_drafter_spec

        name, options = parse_drafter_spec(spec)
        extra = {"workers": cpus} if name in OCR_DRAFTERS and "workers" not in options else {}
        drafter = _drafters[(spec, cpus)] = get_drafter(spec, **extra)
    return drafter


class _Opened:
    """The document a worker drafts from: the last one it was sent, kept open between its pages.
    Its bytes become a file of the worker's temporary folder (named as the input is, so that a
    message names it), removed once PyMuPDF holds it open (where the system allows)."""

    def __init__(self):
        self._key = None
        self._document = None

    def document(self, reference, name: str, password, rotate: str):
        """The document whose bytes are ``reference`` (a Ray object reference, or the bytes)."""
        given = isinstance(reference, (bytes, bytearray))
        key = (hashlib.sha256(reference).hexdigest() if given else reference.hex(), name, password, rotate)
        if key != self._key:
            from core.documents import open_document

            self.close()
            if given:
                data = reference
            else:
                import ray

                data = ray.get(reference)
            folder = Path(tempfile.mkdtemp(prefix="hsd-draft-"))
            path = folder / name
            path.write_bytes(data)
            try:
                self._document = open_document(path, password=password, rotate=rotate)
            finally:
                _remove(path, folder)
            self._key = key
        return self._document

    def close(self) -> None:
        if self._document is not None:
            self._document.close()
        self._document, self._key = None, None


def _remove(path: Path, folder: Path) -> None:
    try:
        os.unlink(path)
        os.rmdir(folder)
    except OSError:  # a system that keeps an open file: it goes with the worker's temporary folder
        pass


_OPENED = _Opened()


__all__ = ["ClusterDrafter", "ClusterDrafts", "RunEnd", "RunEndedError", "RunEnds", "draft_on_worker",
           "drafting_options", "drafting_task", "run_ends"]
