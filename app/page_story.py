"""One story per page: every word the window says about a page, a region or a document, derived from
the records in ``app.document_state`` and nowhere else.

The thumbnail labels and tooltips, the document list, the inspector's header, the status line of a
selected region and the summary at the end of a run and at export all come from these functions,
so two panes cannot disagree (a region the inspector calls "not verified" is not the region the
status bar says the Markdown came from). The stretch of the Markdown a click on a region selects is
the one "Convert this region again" replaces: both ask ``core.api.region_span``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.document_state import DocumentStatus, PagePhase, PageState
from app.page_view import region_rate, unverified_reason
from core.api import region_ranges, region_span, review_page

#: The page states, in words (thumbnail labels, tooltips).
STATE_LABEL = {PageState.QUEUED: "waiting", PageState.DRAFTING: "drafting", PageState.DRAFTED: "drafted",
               PageState.CONVERTING: "converting", PageState.DONE: "done", PageState.FAILED: "failed",
               PageState.CUT_AT_LIMIT: "token limit", PageState.PARTIAL: "partial", PageState.OPEN: "",
               PageState.NOT_IN_RANGE: "not in range"}
DRAFTER_KIND = {"textlayer": "text layer", "rapidocr": "OCR", "paddle": "OCR", "auto": "OCR"}


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def page_state(doc, number: int) -> PageState:
    """open, queued, not in range, drafting, drafted (drafted ahead, waiting for its decode),
    converting, done, cut at the token limit, failed or partial (cancelled while converting)."""
    record = doc.pages[number]
    result = record.result
    if result is not None:
        if result.error:
            return PageState.FAILED
        return PageState.CUT_AT_LIMIT if cut_at_limit(result) else PageState.DONE
    if record.phase == PagePhase.PARTIAL:
        return PageState.PARTIAL
    if record.phase == PagePhase.DRAFTING:
        return PageState.DRAFTING
    if record.phase == PagePhase.DRAFTED:
        return PageState.DRAFTED
    if record.phase == PagePhase.UNTOUCHED and record.drafting_since is not None:
        return PageState.DRAFTING  # the preview drafter reads it, no conversion asked for
    if record.phase == PagePhase.DECODING:
        return PageState.CONVERTING
    if not doc.page_in_range(number):
        return PageState.NOT_IN_RANGE
    return PageState.QUEUED if doc.status in (DocumentStatus.QUEUED, DocumentStatus.CONVERTING) else PageState.OPEN


def cut_at_limit(result) -> bool:
    return not result.error and result.stats is not None and result.stats.stop_reason == "max_new_tokens"


def drafting_words(record) -> str:
    """``drafting (OCR)``: what the page's drafter does."""
    kind = DRAFTER_KIND.get(record.drafter.split(":", 1)[0], "")
    return f"drafting{f' ({kind})' if kind else ''}"


def drafting_label(record, now: float | None = None) -> str:
    """``drafting (OCR) · 12 s`` while the page's drafter runs."""
    seconds = 0 if record.drafting_since is None else int((now or time.monotonic()) - record.drafting_since)
    return f"{drafting_words(record)} · {seconds} s"


def state_label(doc, number: int, now: float | None = None) -> str:
    state = page_state(doc, number)
    if state == PageState.DRAFTING:
        return drafting_label(doc.pages[number], now)
    return STATE_LABEL[state]


def page_acceptance(result) -> float | None:
    """Share of drafted tokens the model accepted on a finished page (Stage 1 where it verified a
    region, else the page pass); None if nothing was verified."""
    drafted = accepted = 0
    for stats in result.region_stats or []:
        rate = region_rate(stats, result.stats.mode if result.stats else "hsd")
        if rate is not None:
            drafted += stats.drafted_tokens
            accepted += rate * stats.drafted_tokens
    return accepted / drafted if drafted else None


def page_tooltip(doc, number: int) -> str:
    state = page_state(doc, number)
    record = doc.pages[number]
    result = record.result
    if state == PageState.FAILED:
        return f"page {number}: failed: {result.error}"
    if state in (PageState.DONE, PageState.CUT_AT_LIMIT):
        s = result.stats
        rate = page_acceptance(result)
        text = (f"page {number}: {s.generated_tokens} tokens, {s.forward_passes} passes, "
                f"draft accepted {'—' if rate is None else f'{rate:.0%}'}")
        if record.kept:
            text += " (kept from an earlier run)"
        if state == PageState.CUT_AT_LIMIT:
            text += "\ncut at the token limit: the page may be incomplete (Settings > Max tokens per page)"
        return text
    if state == PageState.PARTIAL:
        return f"page {number}: cancelled while converting; its drafts and what was verified are kept (partial)"
    if state == PageState.NOT_IN_RANGE:
        return f"page {number}: not in the page range of the conversion (Settings > Pages)"
    if state == PageState.DRAFTING:
        also = ("; its text is written, and the page is saved once its regions come (its overlay and figures "
                "need them)" if record.decoded else "; its decode has started without drafts" if record.decoding else "")
        return f"page {number}: {drafting_label(record)}: its drafter is reading the page{also}"
    if state == PageState.DRAFTED:
        took = f" in {record.draft_seconds:.1f} s" if record.draft_seconds is not None else ""
        return (f"page {number}: drafted{took} ({plural(len(record.regions), 'region')}) ahead of the model; "
                "it waits for the pages before it")
    return f"page {number}: {STATE_LABEL[state] or 'not converted'}"


def preview_line(doc, number: int) -> str:
    """The status line of a page the preview drafter reads (opened, not converted)."""
    return f"Page {number}: {drafting_label(doc.pages[number])}: reading the page to show its regions (no model needed)"


def page_line(doc, number: int) -> str:
    """The status line of a page just shown."""
    state = page_state(doc, number)
    if state in (PageState.DONE, PageState.CUT_AT_LIMIT):
        line = page_tooltip(doc, number).split("\n", 1)[0].replace(f"page {number}: ", "")
        return f"Page {number}: {line}" + (" · cut at the token limit" if state == PageState.CUT_AT_LIMIT else "")
    return page_tooltip(doc, number).replace(f"page {number}: ", f"Page {number}: ", 1)


def progress_notes(doc, decoding: int | None) -> tuple[str, str]:
    """What the progress line says of pages besides their counts: ``(page_note, waiting_on)`` for
    ``ProgressTracker.text``. ``decoding``: the page whose decode runs (None: none). Its note is its
    drafter's while that still reads it; with no page decoding, the run waits on the first page
    whose drafter runs, unless a page drafted ahead comes first (its decode starts next). A page
    drafted ahead of the decode is not named: its thumbnail says it."""
    if decoding is not None:
        return (state_label(doc, decoding) if page_state(doc, decoding) == PageState.DRAFTING else ""), ""
    return "", waiting_on(doc)


def waiting_on(doc) -> str:
    """``page 2: drafting (OCR) · 4 s`` when, no page decoding, the next page's drafter still runs."""
    ahead = sorted(n for n, r in doc.pages.items() if r.phase in (PagePhase.DRAFTING, PagePhase.DRAFTED))
    if not ahead or doc.pages[ahead[0]].phase != PagePhase.DRAFTING:
        return ""
    return f"page {ahead[0]}: {drafting_label(doc.pages[ahead[0]])}"


# -- documents ------------------------------------------------------------------------------------


def trouble(doc) -> list[str]:
    """What a finished document's "done" must not hide: pages cut at the token limit, failed pages,
    a damaged file."""
    results = list(doc.results.values())
    cut = [r.page for r in results if cut_at_limit(r)]
    failed = [r.page for r in results if r.error]
    notes = []
    if cut:
        notes.append(f"{plural(len(cut), 'page')} cut at the token limit")
    if failed:
        notes.append(f"{_pages(failed)} failed")
    if doc.damaged:
        notes.append("damaged")
    return notes


def _pages(numbers: list[int], listed: int = 5) -> str:
    """``page 2``, ``pages 2, 5`` or, past ``listed`` of them, ``7 pages``."""
    if len(numbers) > listed:
        return plural(len(numbers), "page")
    return f"page{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"


STATUS_TEXT = {DocumentStatus.QUEUED: "waiting", DocumentStatus.CONVERTING: "converting…",
               DocumentStatus.DONE: "done", DocumentStatus.CANCELLED: "cancelled", DocumentStatus.FAILED: "failed",
               DocumentStatus.OPEN: "not converted"}


def document_state_text(doc) -> str:
    """``done · 5 pages cut at the token limit``: the document's state with what it hides."""
    status = STATUS_TEXT[doc.status]
    if doc.status in (DocumentStatus.QUEUED, DocumentStatus.CONVERTING, DocumentStatus.OPEN) and not doc.results:
        # a repaired file says so from the moment it is opened, not only once converted
        return f"{status} · damaged" if doc.damaged else status
    return " · ".join([status, *trouble(doc)])


def document_line(doc) -> str:
    """The second line of the document's entry in the list: its pages and state."""
    pages = plural(doc.page_count, "page")
    if doc.in_range is not None and len(doc.in_range) != doc.page_count:
        pages = f"{len(doc.in_range)} of {pages}"
    return f"{pages} · {document_state_text(doc)}"


def document_status_line(doc) -> str:
    """The status line of a document just shown: its pages and state, and how it is damaged."""
    line = f"{doc.name}: {document_line(doc)}"
    return f"{line} ({doc.damaged})" if doc.damaged else line


def document_tooltip(doc) -> str:
    lines = [str(doc.path)]
    if doc.damaged:
        lines.append(f"damaged: {doc.damaged}")
    if doc.error:
        lines.append(doc.error)
    lines += [f"note: {n}" for n in doc.notices]
    return "\n".join(lines)


def finished_line(doc, status: DocumentStatus) -> str:
    """The status line when a run ends (``status``: how it ended)."""
    results = list(doc.results.values())
    if status == DocumentStatus.DONE:
        kept = sum(1 for r in doc.pages.values() if r.kept)
        parts = [f"{doc.name}: done", f"{plural(len(results), 'page')}"
                 + (f" ({kept} kept from an earlier run)" if kept else ""), *trouble(doc)]
        undrafted = [r.page for r in results if r.draft_failure]
        if undrafted:
            parts.append(f"{_pages(undrafted)} decoded without drafts (drafter failed)")
        if doc.notices:
            parts.append("warning: " + "; ".join(doc.notices))
        return " · ".join(parts)
    if status == DocumentStatus.CANCELLED:
        partial = sorted(n for n, r in doc.pages.items() if r.phase == PagePhase.PARTIAL)
        note = f"; {_pages(partial)} kept as partial" if partial else ""
        return (f"{doc.name}: cancelled; {plural(len(results), 'finished page')} kept{note} "
                "(converting again resumes)")
    return f"{doc.name}: failed" + (f": {doc.error}" if doc.error else "")


# -- regions --------------------------------------------------------------------------------------


@dataclass
class RegionStory:
    """What is true of one region of the shown page, for the inspector and the status line."""

    page: int
    index: int
    region: object
    stats: object = None
    rate: float | None = None           # the acceptance its colour shows; None: grey
    reason: str = ""                    # why it is not verified (rate None)
    verified_text: str = ""
    source: str = ""                    # where the verified text comes from
    ranges: list = field(default_factory=list)  # (start, end) of the Markdown its draft accounts for
    #: The stretch of the page text that is its own: selected on a click, and what "Convert this
    #: region again" replaces (``core.api.region_span``: one rule for both); None where it has none.
    main_range: tuple | None = None
    shown: bool = False                 # its page's Markdown is shown: main_range was looked for
    partial: bool = False
    final: bool = True                  # the page is finished: nothing will change

    @property
    def verified(self) -> bool:
        return self.rate is not None

    def status_line(self) -> str:
        name = f"Region {self.index + 1}"
        missing = self.shown and self.main_range is None
        if not self.verified:
            return f"{name}: not verified: {self.reason}" + ("; its text was not found in the page's Markdown"
                                                              if missing else "")
        share = f"{self.rate:.0%} of its draft accepted"
        if not self.final:
            return f"{name}: {share} on the region so far; the page was not finished"
        if missing:
            return f"{name}: {share}; its text was not found in the page's Markdown (nothing selected)"
        if self.ranges:
            return f"{name}: {share}; {plural(len(self.ranges), 'stretch')} of the Markdown came from its draft"
        return f"{name}: {share}; none of the page's Markdown came from its draft"


def region_story(record, index: int, mode: str, running: bool, page_text: str = "",
                 review=None) -> RegionStory | None:
    """The story of region ``index`` of the page ``record`` (None: no such region). ``page_text``:
    the page's Markdown as shown (its stretches are looked for where given), ``review`` its
    ``core.api.review_page`` where the caller has it (reviewed here where None); ``running``: its
    document converts now."""
    from app.draft_inspector import verified_text

    if record is None or not 0 <= index < len(record.regions):
        return None
    region = record.regions[index]
    result = record.result
    stats_list = record.region_stats or []
    stats = stats_list[index] if index < len(stats_list) else None
    story = RegionStory(record.number, index, region, stats, partial=record.phase == PagePhase.PARTIAL,
                        final=result is not None)
    story.rate = region_rate(stats, mode)
    if result is not None:
        story.verified_text, story.source = verified_text(result, index)
        if page_text:
            review = review_page(result, page_text) if review is None else review
            story.ranges = region_ranges(result, page_text, index, review)
            story.main_range, story.shown = region_span(result, page_text, index, review), True
    if story.rate is None:
        story.reason = _unverified_reason(record, region, stats, mode, running)
    elif not story.final:
        story.reason = (f"verified on the region ({stats.accepted_tokens} of {stats.drafted_tokens} draft tokens "
                        "accepted), the page was not finished")
    return story


def _unverified_reason(record, region, stats, mode: str, running: bool) -> str:
    if record.result is not None:
        return unverified_reason(region, stats, mode)
    if record.phase == PagePhase.PARTIAL:
        return "the conversion was cancelled before this region was verified"
    if running and record.phase in (PagePhase.DRAFTING, PagePhase.DECODING):
        return "the page is still converting"
    if running:
        return "the page waits its turn (these are the drafter's regions)"
    return "the page is not converted yet (these are the drafter's regions)"
