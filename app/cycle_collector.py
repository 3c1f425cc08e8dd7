"""Python's cycle collector runs on the GUI thread only, while the app runs.

Python collects reference cycles on whichever thread happens to allocate when a generation's count
passes its threshold. In the app that is often a conversion's thread (loading a model, decoding,
drafting), and what it frees may hold a Qt object: a closed dialog or an old window's wrapper kept in
a cycle by a connected lambda. A widget destroyed off the GUI thread blocks in its destructor waiting
for the GUI thread to flush window events, while holding the interpreter lock that thread needs (the
app hangs for good), or crashes outright. So automatic collection is turned off and a timer on the
GUI thread collects what is due, by the same counts and thresholds Python itself uses: the oldest
generation whose count has passed its threshold. A conversion's thread then frees only what reference
counting frees, which never holds a window (windows and dialogs live and die on the GUI thread).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

#: How often the GUI thread looks for due collections. A young generation's collection takes well
#: under a millisecond; an old one's, with torch and a model loaded, tens of milliseconds, and is due
#: about once per hundred looks.
COLLECT_EVERY_MS = 1000


def due_generation(counts: tuple[int, int, int], thresholds: tuple[int, int, int]) -> int | None:
    """The generation Python would collect now: the oldest one whose count passed its threshold.

    >>> due_generation((701, 3, 0), (700, 10, 10))
    0
    >>> due_generation((701, 11, 2), (700, 10, 10))
    1
    >>> due_generation((5, 0, 0), (700, 10, 10)) is None
    True
    """
    for generation in (2, 1, 0):
        if thresholds[generation] and counts[generation] > thresholds[generation]:
            return generation
    return None


class GuiThreadCollector(QObject):
    """Turns automatic cycle collection off and collects on the thread this object lives on (the GUI
    thread's, created there) every ``interval_ms``, until ``stop``."""

    def __init__(self, interval_ms: int = COLLECT_EVERY_MS, parent: QObject | None = None):
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect_due)
        self._was_enabled = True

    @property
    def active(self) -> bool:
        return self._timer.isActive()

    def start(self) -> None:
        if self.active:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collect everything once, here, then give collection back to Python as it was."""
        if not self.active:
            return
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def collect_due(self) -> int | None:
        """Collect the generation Python would have collected by now; which one, or None."""
        generation = due_generation(gc.get_count(), gc.get_threshold())
        if generation is not None:
            gc.collect(generation)
        return generation
