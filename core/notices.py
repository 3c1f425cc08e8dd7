"""Our warnings (``HSDWarning``: a drafter step turned off, an animated image cut to one frame) as a
run's ``Notice`` events, where the run can see them.

Core modules warn through Python's ``warnings`` wherever they are (a drafter knows nothing of runs).
A run's threads say where their warnings go (``warnings_to(sink)``); a warning raised on any other
thread keeps Python's handling (and whatever the command line or the app installed for it).
"""

from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator

from core.errors import HSDWarning

_sinks: dict[int, Callable[[str], None]] = {}  # thread id -> where its HSDWarnings go


@contextmanager
def warnings_to(sink: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, ``HSDWarning``s raised on this thread go to ``sink`` as their message."""
    _install()
    thread = threading.get_ident()
    outer = _sinks.get(thread)
    _sinks[thread] = sink
    try:
        yield
    finally:
        if outer is None:
            _sinks.pop(thread, None)
        else:
            _sinks[thread] = outer


def _install() -> None:
    """Route warnings through ``_sinks`` first, once (again if something has wrapped Python's
    display since: the one installed last is asked first). Every HSDWarning reaches a run: the
    same message from a new run's drafter is news to that run."""
    if getattr(warnings.showwarning, "routes_notices", False):
        return
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        sink = _sinks.get(threading.get_ident())
        if sink is not None and issubclass(category, HSDWarning):
            sink(str(message))
        else:
            previous(message, category, filename, lineno, file, line)

    show.routes_notices = True
    warnings.showwarning = show
    warnings.filterwarnings("always", category=HSDWarning)
