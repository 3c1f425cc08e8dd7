"""Convert one region of a converted page again: its crop read anew by the model, the page's
Markdown given the new reading in the region's place, kept as the user's edit of the page.

The crop is read with the family's own request for a region where the family has one (the model
cards' element prompts of PaddleOCR-VL and GLM-OCR, HunyuanOCR's text, table and formula
prompts), else with its page request (Qwen2.5-VL's "QwenVL HTML", Qwen3-VL's "qwenvl markdown":
their model cards ask for no single region), so that the reading is written as the family writes
a page and becomes Markdown the same way (``Profile.postprocess``). It is decoded as every crop is
(``core.stage1``): the region's draft verified on the crop, so that at ``tau = 1`` the reading is
the target's greedy output for that crop and request (``ar`` reads it without drafts).

Where the reading goes: the stretch of the page's Markdown that is the region's own
(``region_span``), the one the app selects when the region is clicked, so that what the user sees
selected is what a reading replaces. The page's drafts are aligned with the Markdown
(``core.review``) to find the words each region's draft accounts for (the engine's own spans where
the alignment finds none: a formula); the region's stretch is the blocks (between blank lines)
those words make most of, else the lines, else their longest run inside a line they share with
another region. A block's Markdown mark (a heading's ``#``, a list's bullet, a quote) and
display-math delimiters stay where the reading has none. A region with no such stretch is not
placed: the page is left as it was, and ``RegionPlacement.note`` says so in one line.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core.errors import HSDError

__all__ = ["RegionAgain", "RegionAgainRequest", "RegionPlacement", "RegionReading", "convert_region_again",
           "place_reading", "read_region", "read_region_again", "region_ranges", "region_request", "region_span"]


@dataclass(frozen=True)
class RegionReading:
    """A region's crop read again: ``text`` the reading as Markdown (sanitised), ``request`` the
    prompt it was read with, and what its draft did (tokens drafted and accepted, passes)."""

    page: int
    region: int
    label: str
    text: str
    request: str
    tokens: list[int] = field(default_factory=list, repr=False)
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    forward_passes: int = 0
    stop_reason: str = ""


@dataclass(frozen=True)
class RegionPlacement:
    """The page's Markdown with a reading in its region's place (``text``; None: the region's
    stretch was not found, nothing changes), the stretch it replaced, and one line for the user."""

    text: str | None
    span: tuple[int, int] | None
    note: str

    @property
    def placed(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class RegionAgainRequest:
    """What ``convert_region_again`` reads: region ``region`` (0-based, as in ``result.regions``)
    of page ``result.page`` of ``input``; ``page_text`` the page's Markdown as shown and exported
    (the user's edit where one applies; None: the model's, ``core.export.page_markdown``)."""

    input: Path
    result: object          # the page's core.results.PageResult
    region: int
    page_text: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class RegionAgain:
    reading: RegionReading
    placement: RegionPlacement
    kept: bool = False      # the new page text was saved as the page's edit


# -- which request a crop is read with -----------------------------------------------------------


def _own_region_prompts(profile) -> bool:
    """The family asks for regions in words of its own (its profile sets them), not our defaults."""
    if profile.element_level:
        return True
    defaults = {f.name: f.default for f in dataclasses.fields(type(profile))}
    return any(getattr(profile, name) != defaults.get(name) for name in ("text_prompt", "table_prompt",
                                                                        "formula_prompt"))


def region_request(profile, label: str) -> tuple[str, str]:
    """``(kind, prompt)`` a region of ``label`` is read again with: ``("region", ...)`` where the
    family has its own region requests, else ``("page", its page prompt)`` on the crop."""
    if profile is None:
        return "page", ""
    if _own_region_prompts(profile):
        return "region", profile.region_prompt(label)
    return "page", profile.page_prompt


# -- reading the crop ------------------------------------------------------------------------------


def read_region(engine, image, result, index: int,
                should_cancel: Callable[[], bool] | None = None) -> RegionReading:
    """Read region ``index`` of the converted page ``result`` again on its crop of ``image`` (the
    page rendered at any scale), with ``engine``'s target and mode: its draft verified (``ar``:
    none), so that at ``tau = 1`` the reading is the target's greedy output on the crop."""
    from core.drafters.background import DraftJob
    from core.page_job import PageImage, PageJob, PageRegions
    from core.results import FIGURE_LABELS
    from core.sanitize import sanitize_model_markdown
    from core.speculative.decode import DecodeRow
    from core.speculative.notation import Notation
    from core.speculative.page_drafts import PageDrafts
    from core.speculative.proposers import NoDrafts
    from core.stage1 import crop
    from core.targets.base import PrefillRequest
    from core.targets.profiles import style_of

    regions = list(result.regions or [])
    if not 0 <= index < len(regions):
        raise HSDError(f"page {result.page} has no region {index + 1}")
    region = regions[index]
    if region.label in FIGURE_LABELS:
        raise HSDError(f"region {index + 1} of page {result.page} is a {region.label}: it has no text to read")
    target, cfg = engine.target, engine.config
    job = PageJob(cfg, target, PageImage(image, image.width / result.width, result.page),
                  PageRegions(DraftJob.finished(regions), target.encode), should_cancel=should_cancel)
    job.regions.wait(0)
    item = job.regions[index]
    kind, prompt = region_request(target.profile, region.label)
    job.check_cancel()
    request = PrefillRequest(crop(image, region.bbox, job.page.scale, cfg.region_pad_pt), kind=kind,
                             label=region.label, region=index)
    with job.timed("prefill"):
        bp = target.prefill_batch([request])
    if cfg.mode == "ar":
        proposer = NoDrafts()
    else:  # read as a page, the reading may open as the family's pages do (a fence)
        proposer = PageDrafts.of([item], target, cfg.proposal, notation=Notation(),
                                 style=style_of(target) if kind == "page" else None, regions=[index]).proposer
    row = DecodeRow(proposer=proposer, stop=job.stop(cfg.max_new_tokens), length=bp.lengths[0],
                    rope_delta=bp.rope_deltas[0], root=int(bp.logits[0].argmax()), tag=index)
    decoder = job.decoder()
    with job.timed("verify"):
        decoder.run([row], bp.cache, bp.valid)
    text = target.decode(row.output)
    if target.profile is not None:
        text = target.profile.postprocess(text)
    return RegionReading(page=result.page, region=index, label=region.label,
                         text=sanitize_model_markdown(text).strip(), request=prompt or kind,
                         tokens=list(row.output), drafted_tokens=len(item.tokens),
                         accepted_tokens=row.stats.accepted, forward_passes=bp.passes + decoder.forward_passes,
                         stop_reason=row.stop_reason)


def read_region_again(engine, path, result, index: int, password: str | None = None,
                      should_cancel: Callable[[], bool] | None = None) -> RegionReading:
    """``read_region`` on page ``result.page`` of the document ``path``, rendered as a conversion
    with ``engine``'s settings renders it (its dpi, pages turned upright where ``rotate`` says)."""
    from core.documents import open_document

    cfg = engine.config
    with open_document(path, password=password, rotate=cfg.rotate) as document:
        page = document.page(result.page - 1)
        if abs(page.width - result.width) > 1 or abs(page.height - result.height) > 1:
            raise HSDError(f"page {result.page} of {Path(path).name} is not the page that was converted "
                           "(its size changed): convert the page again")
        image = page.render(cfg.dpi)
    return read_region(engine, image, result, index, should_cancel)


# -- where the reading goes ------------------------------------------------------------------------

_BLOCK = re.compile(r"\S(?:.|\n(?![ \t]*\n))*")
_LINE = re.compile(r"[^\n]*\S[^\n]*")
#: A Markdown block's opening mark: a heading's, a list item's, a quote's.
_MARK = re.compile(r"(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+|\d{1,9}[.)][ \t]+)+")
_DISPLAY_MATH = (("$$", "$$"), ("\\[", "\\]"))
#: Punctuation that clings to a word (a sentence's full stop, a quote, a bracket): part of its stretch.
_CLINGS = re.compile(r"[^\w\s]")
_CLINGS_AFTER = re.compile(r"[^\w\s]*")


def region_ranges(result, text: str, index: int, review=None) -> list[tuple[int, int]]:
    """``(start, end)`` in ``text`` of the Markdown region ``index``'s draft accounts for: its words
    aligned with the Markdown (``review``: ``core.review.review_page(result, text)``, computed where
    None), less what the engine's spans give a region the alignment finds no word of; else, where
    it has none, the engine's spans of it (``_engine_ranges``)."""
    from core.review import review_page

    review = review_page(result, text) if review is None else review
    found = [(s, e) for r, s, e in review.region_spans if r == index]
    if not found:
        return _engine_ranges(result, text, index)
    aligned = {r for r, _s, _e in review.region_spans}
    others = {span.region for span in result.spans or []} - aligned - {index, None}
    for other in sorted(others):  # a formula's LaTeX the alignment gave the paragraph above it
        for cut_start, cut_end in _engine_ranges(result, text, other):
            found = [piece for s, e in found
                     for piece in ((s, min(e, cut_start)), (max(s, cut_end), e)) if piece[1] > piece[0]]
    return found


def _engine_ranges(result, text: str, index: int) -> list[tuple[int, int]]:
    """Where ``text`` holds the engine's spans of region ``index``: each at the same copy of its text
    as in the model's Markdown, where ``text`` holds as many copies (an edit that added or removed
    one leaves it unknown)."""
    found = []
    for span in result.spans or []:
        raw = result.markdown[span.start:span.end]
        piece = raw.strip()
        if span.region != index or not piece:
            continue
        model, shown = _copies(result.markdown, piece), _copies(text, piece)
        at = span.start + len(raw) - len(raw.lstrip())
        if at in model and len(shown) == len(model):
            found.append((shown[model.index(at)], shown[model.index(at)] + len(piece)))
    return found


def _copies(text: str, piece: str) -> list[int]:
    """Where every copy of ``piece`` starts in ``text``."""
    out, at = [], text.find(piece)
    while at >= 0:
        out.append(at)
        at = text.find(piece, at + 1)
    return out


def _owned(pattern: re.Pattern, text: str, ranges: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The run of ``pattern``'s pieces of ``text`` (blocks or lines) around the one ``ranges`` cover
    most, each of them covered at least half; None where not even that one is."""
    pieces = [(m.start(), m.start() + len(m.group(0).rstrip())) for m in pattern.finditer(text)]
    covered = [sum(max(0, min(e, re_) - max(s, rs)) for rs, re_ in ranges) for s, e in pieces]
    if not pieces or max(covered) == 0:
        return None
    mostly = [2 * c >= e - s for (s, e), c in zip(pieces, covered)]
    best = max(range(len(pieces)), key=lambda i: covered[i])
    if not mostly[best]:
        return None
    first = last = best
    while first > 0 and mostly[first - 1]:
        first -= 1
    while last + 1 < len(pieces) and mostly[last + 1]:
        last += 1
    return pieces[first][0], pieces[last][1]


def _clinging(text: str, start: int, end: int) -> tuple[int, int]:
    """``start``/``end`` moved over the punctuation that clings to the words there."""
    while start > 0 and _CLINGS.match(text[start - 1]):
        start -= 1
    return start, _CLINGS_AFTER.match(text, end).end()


def _without_others(text: str, owned: tuple[int, int], ranges, others) -> tuple[int, int]:
    """``owned`` less the words of other regions (``others``) that stand before the region's first
    range in it or after its last: a heading's mark stays, another region's sentence goes."""
    start, end = owned
    mine = [(s, e) for s, e in ranges if s < end and e > start]
    first, last = min(s for s, _e in mine), max(e for _s, e in mine)
    if any(s < first and e > start for s, e in others):
        start = _clinging(text, first, first)[0]
    if any(e > last and s < end for s, e in others):
        end = _clinging(text, last, last)[1]
    return start, end


def _words_within(result, text: str, index: int, ranges: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The region's longest range, with the punctuation that clings to its words, where it holds at
    least half as many words as the region's draft: two regions the model wrote as one line or
    paragraph. A word of its draft that stands in another region's text is no stretch of its own."""
    from core.review import words

    start, end = max(ranges, key=lambda r: r[1] - r[0])
    regions = result.regions or []
    draft = regions[index].text if 0 <= index < len(regions) else ""
    if 2 * len(words(text[start:end])) < len(words(draft or "")):
        return None
    return _clinging(text, start, end)


def region_span(result, text: str, index: int, review=None) -> tuple[int, int] | None:
    """The stretch of ``text`` (page ``result``'s Markdown as shown) that is region ``index``'s own:
    what a click on the region selects in the app and what ``place_reading`` replaces, so that the
    user sees beforehand what a reading would replace. None where it has no such stretch.

    From the ranges its draft accounts for (``region_ranges``; ``review`` as there): the blocks
    (between blank lines) they make most of, else the lines, less another region's words at either
    end; else, where they make most of no line, their longest range with its punctuation (two
    regions the model wrote as one paragraph).

    - Blocks and lines, not the ranges themselves: the words the model writes itself go to the
      draft before them, so a region's ranges run on into the next block's first words, and a
      word accepted from its draft elsewhere leaves a stray range further down; the first and last
      range together would cover other regions' paragraphs and stop mid-sentence.
    - Another region's words at the start or end of those blocks are left out (two regions the model
      wrote as one paragraph: the one that wrote most of it does not take the other's words).
    - Lines before ranges where a page has no blank lines: a whole line keeps its heading's or
      bullet's mark with it (a reading is fitted to the mark, ``fitted``), where a range would start
      after the mark and leave it doubled.
    - A range inside a longer line only where it holds at least half its draft's words: a click
      shows the region's words inside the paragraph it shares, but a stray word is nothing to
      select, and replacing it would put a whole reading into another region's text.
    - The engine's spans where the alignment finds no word of the region (a formula's LaTeX shares
      none with its draft): at the same copy as in the model's Markdown, so text that occurs twice
      goes to the region that wrote each copy; a copy an edit added or removed makes it unknown.
    """
    from core.review import review_page

    review = review_page(result, text) if review is None else review
    ranges = region_ranges(result, text, index, review)
    if not ranges:
        return None
    owned = _owned(_BLOCK, text, ranges) or _owned(_LINE, text, ranges)
    if owned is None:
        return _words_within(result, text, index, ranges)
    return _without_others(text, owned, ranges, [(s, e) for r, s, e in review.region_spans if r != index])


def fitted(old: str, reading: str) -> str:
    """``reading`` in the form of the Markdown it replaces: the old block's opening mark where the
    reading has none, its display-math delimiters where the reading is bare."""
    stripped = reading.strip()
    for opening, closing in _DISPLAY_MATH:
        if old.startswith(opening) and old.endswith(closing) and not any(
                stripped.startswith(o) for o, _ in _DISPLAY_MATH) and not stripped.startswith("$"):
            return f"{opening}{stripped}{closing}" if "\n" not in old else f"{opening}\n{stripped}\n{closing}"
    mark = _MARK.match(old)
    if mark and not _MARK.match(stripped):
        return mark.group(0) + stripped
    return stripped


def place_reading(result, text: str, reading: RegionReading) -> RegionPlacement:
    """``text`` (page ``result``'s Markdown as shown) with ``reading`` in its region's stretch."""
    where = f"Page {reading.page}, region {reading.region + 1}"
    if not reading.text.strip():
        return RegionPlacement(None, None, f"{where}: the model read nothing on the region; the page is unchanged")
    span = region_span(result, text, reading.region)
    if span is None:
        return RegionPlacement(None, None, f"{where}: its text was not found in the page's Markdown; "
                                           "the page is unchanged (edit the page to place it)")
    start, end = span
    new = text[:start] + fitted(text[start:end], reading.text) + text[end:]
    cut = " (cut at the token limit: a higher limit reads it whole)" if (
        reading.stop_reason == "max_new_tokens") else ""
    if new == text:
        return RegionPlacement(text, span, f"{where}: read again, the same text{cut}")
    return RegionPlacement(new, span, f"{where}: read again and replaced; the page is marked as edited{cut}")


# -- the whole step ----------------------------------------------------------------------------------


def convert_region_again(request: RegionAgainRequest, engine, edits=None,
                         should_cancel: Callable[[], bool] | None = None) -> RegionAgain:
    """Read ``request``'s region again and put the reading in its place in the page's Markdown;
    with ``edits`` (the output's ``core.edits.PageEdits``) the new page is kept as the page's edit
    (shown, exported and reviewed in place of the model's page; dropped to undo it)."""
    from core.export import page_markdown

    result = request.result
    if result.error:
        raise HSDError(f"page {result.page} failed to convert: convert the page again first")
    model = page_markdown(result, result.figure_links)
    text = request.page_text if request.page_text is not None else (
        edits.text_of(result.page, model) if edits is not None else model)
    reading = read_region_again(engine, request.input, result, request.region, request.password, should_cancel)
    placement = place_reading(result, text, reading)
    kept = False
    if edits is not None and placement.placed and placement.text != text:
        edits.set(result.page, placement.text, model)
        kept = True
    return RegionAgain(reading, placement, kept)
