"""The decode's page images rendered, and scan pages' turns decided, in a process of their own.

Beside a drafting process (``core.drafters.process``) the decode's process still rendered each
page for the model and decided each scan page's turn (``Page.turn``): PyMuPDF holds the
interpreter lock while it renders, and where a scan's ink cannot tell its turn OCR reads it
(``core.drafters.orientation.scan_reading``: 0.6-1.6 s of a slide or Chinese page on two cores),
all on the drafting thread of the decode's process, taking the lock from the decode between two
passes. Where a drafting process reads a document's pages (``ProcessDrafter.read_in_order``), this
process renders them for the decode and decides their turns instead: the decode's process only
waits for the answer (the lock free) and copies the pixels in. All but the first: the decode
waits for that one before its first pass, so there is no pass to take the lock from, and the
process is not up yet; a document of one page never uses the process (on one-page scans the
process's start and first turn made the first pages wait longer than rendering them here).

    RenderProcess()             render(page, dpi) -> PIL image, as ``page.render(dpi)`` gives it
                                turn(page)        -> the page's turn, decided there
                                Both record the turn in ``page.document.turns`` (``Page.turn``
                                then asks nothing more), ``render`` the render's dpi and scale on
                                ``page``. Render warnings are warned again here, errors raised
                                again here. Where the process cannot start or stops answering,
                                the page is rendered (and turned) here, with one warning.
    attach(document, renderer, here)  ``renderer`` renders ``document``'s pages for the decode (a
                                file), but for the pages ``here``
    renderer_of(document, index)  the renderer attached to ``document`` for page ``index``, or None

On by default beside a drafting process (``tuning.RENDER_PROCESS``; off, the decode's process renders
and turns its pages itself, as it always does without a drafting process).
The process is spawned on first use (nothing of this process is copied into it) and runs at the
decode's priority (``tuning.RENDER_PROCESS_NICE``): the decode waits for its answers. It keeps one document open, for
all its pages. The same ``open_document`` and ``Page.render`` as here give the same pixels, the
same ``orientation.page_turn`` the same turn.
"""

from __future__ import annotations

import os
import warnings
import weakref

from core import tuning
from core.drafters.process import ServerEnd, answer_requests, kept_open, lower_priority, spawn_server
from core.errors import CorruptDocumentError

_attached: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def attach(document, renderer: "RenderProcess", here: tuple[int, ...] = ()) -> bool:
    """``renderer`` renders ``document``'s pages for the decode, but for the pages ``here``
    (indices), where it is a file (the process opens it again); returns whether it does."""
    if document.path is None or not os.path.isfile(document.path):
        return False
    _attached[document] = (renderer, frozenset(here))
    return True


def renderer_of(document, index: int | None = None) -> "RenderProcess | None":
    """The renderer attached to ``document`` that renders its page ``index``; None where there is
    none (or no document), or that page is rendered here."""
    try:
        renderer, here = _attached.get(document, (None, ()))
    except TypeError:  # not a document: nothing renders it elsewhere
        return None
    return renderer if renderer is not None and not renderer.broken and index not in here else None


def known_turn(page) -> int | None:
    """``page``'s turn where it is decided already (a view's own, or its document's), else None."""
    own = getattr(page, "_turn", None)
    if own is not None:
        return own
    return page.document.turns.get(page.index)


class RenderProcess(ServerEnd):
    """Renders pages and decides their turns in a process of its own (module docstring)."""

    stopped = "rendering pages in the decode's process: the rendering process stopped"
    stopped_stacklevel = 4

    def start(self) -> None:
        """Spawn the process now (it imports while this side goes on)."""
        with self._lock:
            if not self.broken:
                try:
                    self._start()
                except OSError as exc:
                    self._give_up(f"{type(exc).__name__}: {exc}")

    def turn(self, page) -> int:
        """``page``'s turn (``Page.turn``), decided in the process where it is not decided yet."""
        known = known_turn(page)
        if known is not None:
            return known
        answer = self._ask(("turn", page, None, None))
        if answer is None:
            return page.turn
        page.document.turns[page.index] = answer[0]
        return answer[0]

    def render(self, page, dpi: int):
        """``page.render(dpi)``, rendered (and, where not decided yet, turned) in the process."""
        answer = self._ask(("render", page, known_turn(page), dpi))
        if answer is None:
            return page.render(dpi)
        from PIL import Image

        turn, render_dpi, size, pixels = answer
        page.document.turns.setdefault(page.index, turn)
        page.last_render_dpi, page.last_render_scale = render_dpi, render_dpi / 72.0
        return Image.frombytes("RGB", size, pixels)

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _ask(self, request: tuple):
        """The process's answer to ``(what, page, turn, dpi)``, or None where it cannot give one
        (then this side does the work)."""
        what, page, turn, dpi = request
        document = page.document
        message = (what, str(document.path), document.password, document.rotate, page.index, turn, dpi)
        with self._lock:
            if self.broken:
                return None
            try:
                self._start()
                self._connection.send(message)
                status, value, caught = self._connection.recv()
                pixels = self._connection.recv_bytes() if status == "ok" and what == "render" else None
            except (EOFError, OSError) as exc:
                self._give_up(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                return None
        for category, text in caught:
            warnings.warn(text, category, stacklevel=4)
        if status == "error":
            if isinstance(value, CorruptDocumentError):
                document.unreadable_pages.add(page.number)
            raise value
        return (*value, pixels) if pixels is not None else value

    def _start(self) -> None:
        if self._process is not None:
            return
        self._process, self._connection = spawn_server(serve, (tuning.RENDER_PROCESS_NICE,), "hsd-render")


# -- the rendering process -----------------------------------------------------------------------


def serve(connection, nice: int = 0) -> None:
    """Answer requests ``(what, path, password, rotate, index, turn, dpi)`` until the other side
    closes the connection: ``("ok", value, warnings)`` or ``("error", exception, warnings)``;
    ``value``: ``(turn,)`` for ``"turn"``, ``(turn, render dpi, (width, height))`` for
    ``"render"``, whose RGB bytes follow as a message of their own."""
    lower_priority(nice, False)
    opened: dict = {}
    answer_requests(connection, lambda request: _answer(request, opened))
    if opened:
        opened["document"].close()


def _answer(request: tuple, opened: dict) -> tuple:
    what, path, password, rotate, index, turn, dpi = request
    page = kept_open(opened, path, password, rotate).page(index)
    if turn is not None:  # decided on the other side (a view turned further keeps its own)
        page._turn = turn
    if what == "turn":
        return (page.turn,), None
    image = page.render(dpi)
    return (page.turn, page.last_render_dpi, image.size), image.tobytes()
