"""Progress people can trust: the pages of this run, tokens per second and time left.

Rate and time left come from the work of this run only. Pages an earlier run finished
(``DocumentPlanned.kept``, ``PageKept``) are neither counted as converted nor timed, and the model's
loading time is not decoding time (the first page's drafter runs while the model loads: the run's
work is timed from whichever ends last). Time left is estimated by tokens: the tokens a page needs (the
mean of this run's pages, and never less than the page converting has already written) times the
pages left, at this run's tokens per second.

``ProgressTracker`` is plain Python fed the run's events (its clock injectable, so tests can drive
it); the window shows ``text()`` beside the progress bar.
"""

from __future__ import annotations

import time

from core.api import format_duration

#: Characters per token before a page of this run has finished (Markdown in common tokenizers).
CHARS_PER_TOKEN = 4.0


class ProgressTracker:
    """Numbers of the running document, from its events."""

    def __init__(self, clock=time.monotonic, max_new_tokens: int | None = None):
        self.clock = clock
        self.max_new_tokens = max_new_tokens
        self.start()

    def start(self, max_new_tokens: int | None = None) -> None:
        self.max_new_tokens = max_new_tokens or self.max_new_tokens
        self.started = self.clock()
        self.pages = 0                # pages of the run's range
        self.kept = 0                 # of them, taken back from an earlier run
        self.to_convert = 0           # pages this run converts
        self.done = 0                 # of them, finished (failed included)
        self.tokens = 0               # tokens decoded by this run's finished pages
        self.chars = 0                # their Markdown's length
        self.page: int | None = None  # the page decoding now
        self.page_chars = 0           # its Markdown so far
        self.first_page: int | None = None
        self.work_started: float | None = None  # first drafting or decoding of this run
        self.loading = False

    # -- events ---------------------------------------------------------------------------------

    def planned(self, pages, kept) -> None:
        self.pages, self.kept = len(pages), len(set(kept) & set(pages))
        todo = [p for p in pages if p not in set(kept)]
        self.to_convert = len(todo)
        self.first_page = todo[0] if todo else None

    def model_loading(self) -> None:
        self.loading = True

    def model_loaded(self) -> None:
        self.loading = False
        if self.work_started is not None:  # drafting began during the load: time the work from now
            self.work_started = self.clock()

    def work(self) -> None:
        """A page of this run started drafting or decoding (a page drafting while the model loads
        does not end the load)."""
        if self.work_started is None:
            self.work_started = self.clock()

    def page_started(self, page: int) -> None:
        self.work()
        self.page, self.page_chars = page, 0

    def text_appended(self, text: str) -> None:
        self.page_chars += len(text)

    def page_done(self, result) -> None:
        self.done += 1
        if self.page == result.page:
            self.page, self.page_chars = None, 0
        if result.stats is not None and not result.error:
            self.tokens += result.stats.generated_tokens
            self.chars += len(result.markdown)

    # -- numbers --------------------------------------------------------------------------------

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def working(self) -> float:
        """Seconds this run has drafted and decoded (the model's loading excluded)."""
        return self.clock() - self.work_started if self.work_started is not None else 0.0

    def page_tokens(self) -> float:
        """Tokens the converting page has written so far (from its characters)."""
        per_char = self.tokens / self.chars if self.tokens and self.chars else 1 / CHARS_PER_TOKEN
        return self.page_chars * per_char

    def tokens_per_second(self) -> float | None:
        tokens = self.tokens + self.page_tokens()
        return tokens / self.working if tokens and self.working > 0 else None

    def seconds_left(self) -> float | None:
        """None until a page of this run has finished (nothing to estimate a page by)."""
        rate = self.tokens_per_second()
        if not self.done or rate is None or self.done >= self.to_convert:
            return None
        current = self.page_tokens() if self.page is not None else 0.0
        per_page = max(self.tokens / self.done, current)  # a page at least as long as the one converting
        if self.max_new_tokens:
            per_page = min(per_page, self.max_new_tokens)
        tokens_left = (self.to_convert - self.done) * per_page - current
        return max(0.0, tokens_left) / rate

    def bar_text(self) -> str:
        return f"{self.done} / {self.to_convert} pages"

    def text(self, page_note: str = "", waiting_on: str = "") -> str:
        """The progress line. It names the page decoding; ``page_note`` says what that page does
        when it is not decoding text yet (its drafter reading it, say). ``waiting_on`` (``page 2:
        drafting (OCR) · 4 s``) is said while no page decodes: the model loads, or the next page's
        drafter runs before its decode."""
        parts = []
        if self.kept:
            parts.append(f"{self.kept} kept")
        if self.loading:
            parts.append("loading the model")
        if self.page is not None and not self.loading:
            parts.append(f"page {self.page}: {page_note or f'{self.page_chars:,} chars'}")
        elif waiting_on:
            parts.append(waiting_on)
        rate = self.tokens_per_second()
        parts.append(f"{rate:.1f} tokens/s" if rate is not None else "— tokens/s")
        parts.append(format_duration(self.elapsed))
        left = self.seconds_left()
        if left is not None and left >= 1:
            parts.append(f"about {format_duration(left)} left")
        elif left is not None:
            parts.append(f"finishing page {self.page}" if self.page is not None else "finishing")
        elif self.done < self.to_convert and self.first_page is not None:
            parts.append(f"time left after page {self.first_page}")
        return " · ".join(parts)
