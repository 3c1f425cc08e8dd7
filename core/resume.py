"""One document's pages, converted or taken from an earlier run: the loop ``hsd convert`` and the
app's worker share.

A conversion saves every finished page (``DocumentOutput.save_page``); running it again under the
same input and settings takes those pages back (``DocumentOutput.finished``) and converts only the
rest. A saved page that does not verify (copied from another page, written under other settings,
edited) is converted again, with one warning line for the document. Pages taken back still teach the engine: before the next page is converted they join the
document's history (``Engine.remember_pages``), so a resumed run drafts later pages from them as
the first run would have.
"""

from __future__ import annotations

import warnings
from typing import Callable, Iterator

from core.errors import CancelledError, HSDWarning
from core.results import PageResult


def convert_with_resume(document, indices: list[int], output, engine_for: Callable[[int], object],
                        on_event=None, should_cancel: Callable[[], bool] | None = None,
                        before_page: Callable[[int, int], None] | None = None
                        ) -> Iterator[tuple[int, PageResult, bool]]:
    """Yield ``(position, result, reused)`` for each page index of ``indices`` (0-based), in order.

    ``output``: the document's ``DocumentOutput``. ``reused``: the result was saved by an earlier
    run. ``engine_for(position)`` gives the engine, asked once, at the first page to convert (a
    document that is all saved loads no model). ``before_page(position, index)`` runs just before a
    page is converted. A converted page is saved at once and its rendered image dropped (pages
    stream; only the results stay). Cancelling (``should_cancel``) raises ``CancelledError``
    between pages; the engine checks it between passes too.
    """
    warn_rejected(output, indices)
    engine = None
    reused: list[PageResult] = []  # saved pages not yet handed to the engine's history
    for position, index in enumerate(indices):
        if should_cancel and should_cancel():
            raise CancelledError("cancelled")
        done = output.finished(index + 1)
        if done is not None:
            reused.append(done)
            yield position, done, True
            continue
        if engine is None:
            engine = engine_for(position)
        engine.remember_pages(document, reused)
        reused = []
        if before_page is not None:
            before_page(position, index)
        done = next(iter(engine.convert_document(document, [index], on_event=on_event,
                                                 should_cancel=should_cancel)))
        output.save_page(done, done.page_image)
        done.page_image = None
        yield position, done, False


def warn_rejected(output, indices: list[int]) -> list[int]:
    """One warning for the saved pages of ``indices`` (0-based) that do not verify; returns their
    page numbers."""
    rejected = output.rejected_pages([i + 1 for i in indices]) if hasattr(output, "rejected_pages") else []
    if rejected:
        numbers = ", ".join(map(str, rejected))
        warnings.warn(HSDWarning(f"{output.markdown_path}: saved page{'s' if len(rejected) > 1 else ''} {numbers} "
                                 "did not verify (copied, edited, damaged or from other settings) and "
                                 f"{'are' if len(rejected) > 1 else 'is'} converted again"), stacklevel=3)
    return rejected
