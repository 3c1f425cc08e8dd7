"""What ``hsd convert`` shows while it runs and when it ends, from a run's events (``core.events``).

The progress line counts pages of this run (pages kept from an earlier run are not work done now)
and says in words what is going on: the model loading, a page's drafter running (OCR on a scan
takes seconds: "page 4: drafting (OCR) 12 s"), the page decoding ("page 3: 1,204 characters
written"), the last page's tokens and forward passes. A clock thread refreshes the seconds while
nothing else happens. ``summary`` is the one line a run ends with.
"""

from __future__ import annotations

import sys
import threading
import time

from core import tuning
from core.events import (DocumentPlanned, ModelLoaded, ModelLoading, PageDone, PageDrafting, PageStarted,
                         RegionsDrafted, TextAppended)
from core.errors import one_line
from core.stats import format_duration

#: What a drafter is called on the progress line.
DRAFTER_WORDS = {"textlayer": "text layer", "rapidocr": "OCR", "paddle": "OCR"}


class ProgressLine:
    """One document's progress bar (tqdm on stderr) fed with its run's events; nothing when ``quiet``."""

    def __init__(self, name: str, quiet: bool = False, clock=time.monotonic):
        self.name, self.quiet, self.clock = name, quiet, clock
        self.bar = None
        self.loading: float | None = None        # when the model began to load
        self.drafting: dict[int, tuple[str, float]] = {}  # page -> (drafter, started)
        self.decoding: int | None = None
        self.written = 0                         # characters of the page decoding
        self.last: str = ""                      # the last finished page, in words
        self._lock = threading.RLock()
        self._ticking = threading.Event()
        self._ticker: threading.Thread | None = None

    def handle(self, event) -> None:
        if isinstance(event, DocumentPlanned):
            self._open(len(event.to_convert))
            return
        advance, refresh = 0, True
        with self._lock:  # the clock thread reads the state
            if isinstance(event, ModelLoading):
                self.loading = self.clock()
            elif isinstance(event, ModelLoaded):
                self.loading = None
                if event.compile_seconds and not self.quiet:  # a step of loading the fast engine
                    self.write(f"hsd: model loaded in {event.seconds:.0f} s, "
                               f"of which {event.compile_seconds:.0f} s compiling its passes")
            elif isinstance(event, PageDrafting):
                self.drafting[event.page] = (DRAFTER_WORDS.get(event.drafter, event.drafter), self.clock())
            elif isinstance(event, RegionsDrafted):
                self.drafting.pop(event.page, None)
            elif isinstance(event, PageStarted):
                self.decoding, self.written = event.page, 0
            elif isinstance(event, TextAppended):
                self.written += len(event.text)
                refresh = False  # up to ten a second: the clock shows it within a second
            elif isinstance(event, PageDone):  # the next page may be decoding already (core.run.PageSaver)
                if self.decoding == event.page:
                    self.decoding = None
                self.last, advance = page_words(event.result), 1
            else:
                refresh = False
        if refresh:
            self._refresh(advance)

    def text(self) -> str:
        """The line's words after the bar."""
        now = self.clock()
        parts = []
        if self.loading is not None:
            parts.append(f"loading the model {now - self.loading:.0f} s")
        if self.decoding is not None:
            parts.append(f"page {self.decoding}: {self.written:,} characters written")
        for page, (drafter, started) in sorted(self.drafting.items()):
            parts.append(f"page {page}: drafting ({drafter}) {now - started:.0f} s")
        if self.decoding is None and self.last:
            parts.append(self.last)
        return " · ".join(parts)

    def write(self, line: str) -> None:
        """A line above the bar (a warning)."""
        with self._lock:
            if self.bar is not None:
                self.bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr)

    def close(self) -> None:
        self._ticking.clear()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    # -- the bar ----------------------------------------------------------------------------------

    def _open(self, total: int) -> None:
        if self.quiet or self.bar is not None or not total:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=one_line(self.name)[:30], unit="page", file=sys.stderr, dynamic_ncols=True)
        self._ticking.set()
        self._ticker = threading.Thread(target=self._tick, name="hsd-progress", daemon=True)
        self._ticker.start()

    def _refresh(self, advance: int = 0) -> None:
        with self._lock:
            if self.bar is None:
                return
            self.bar.set_postfix_str(self.text(), refresh=not advance)
            if advance:
                self.bar.update(advance)

    def _tick(self) -> None:
        while self._ticking.is_set():
            time.sleep(tuning.PROGRESS_TICK_SECONDS)
            if self._ticking.is_set() and (self.loading is not None or self.drafting or self.decoding):
                self._refresh()


def page_words(result) -> str:
    """A finished page in words: its tokens and forward passes (prefills included), and how many
    tokens a pass wrote on average (1 is plain decoding, more is what speculation gained)."""
    if result.error:
        return f"page {result.page} failed"
    s = result.stats
    return (f"page {result.page}: {s.generated_tokens:,} tokens in {s.forward_passes:,} passes "
            f"({tokens_per_pass(s.generated_tokens, s.forward_passes)} a pass)")


def tokens_per_pass(tokens: int, passes: int) -> str:
    return f"{tokens / passes:.1f} tokens" if passes else "no tokens"


class RunTally:
    """What a ``hsd convert`` run did, for its summary line: documents, pages converted now and
    kept from an earlier run, failed pages, tokens and passes of the pages converted now."""

    def __init__(self, clock=time.monotonic):
        self.clock, self.started = clock, clock()
        self.outputs: list[str] = []
        self.converted = self.kept = self.failed = self.tokens = self.passes = 0

    def add(self, run, output: str, results: list) -> None:
        """A finished document: its run (``core.run.DocumentRun``), output path and this run's pages."""
        self.outputs.append(output)
        self.kept += len(run.kept)
        for result in results:
            if result.error:
                self.failed += 1
            else:
                self.converted += 1
                self.tokens += result.stats.generated_tokens
                self.passes += result.stats.forward_passes

    def summary(self, inputs: list[str], stats_path: str | None) -> str:
        """The run in one line."""
        where = (f"{inputs[0]} -> {self.outputs[0]}" if len(self.outputs) == 1
                 else f"{len(self.outputs)} documents -> {_common_folder(self.outputs)}")
        pages = f"{self.converted} page{'' if self.converted == 1 else 's'} converted"
        if self.kept:
            pages += f", {self.kept} kept from an earlier run"
        if self.failed:
            pages += f", {self.failed} failed"
        work = (f"{self.tokens:,} tokens in {self.passes:,} forward passes "
                f"({tokens_per_pass(self.tokens, self.passes)} a pass)" if self.passes else "nothing decoded")
        line = f"hsd: {where}: {pages}; {work}; {format_duration(self.clock() - self.started)}"
        return line + (f"; statistics in {stats_path}" if stats_path else "")


def _common_folder(paths: list[str]) -> str:
    import os

    return os.path.commonpath([os.path.dirname(p) or "." for p in paths]) + os.sep
