"""The drafter protocol and the region type every drafter returns.

A drafter turns one page into regions in reading order. Each region's text is a *draft* of what the
target VLM will write for it: Markdown, tables as HTML, formulas as LaTeX where the drafter has them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from core import tuning
from core.drafters.layout import join_lines, line_stacks, union_box

if TYPE_CHECKING:
    from core.documents import Page

#: Labels a region may carry (drafters map their own vocabularies onto these).
REGION_LABELS = (
    "title", "text", "list", "table", "formula", "figure", "caption",
    "header", "footer", "footnote", "code", "page_number",
)


@dataclass
class Region:
    """One layout region of a page with its draft text.

    bbox is ``(x0, y0, x1, y1)`` in PDF points of the page (72 per inch, origin top-left), the
    coordinates of ``Page.width`` / ``Page.height``, whatever DPI the page was rendered at.
    """

    label: str
    bbox: tuple[float, float, float, float]
    text: str
    source: str
    confidence: float = 1.0
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bbox"] = [round(float(v), 2) for v in self.bbox]
        d["confidence"] = round(float(self.confidence), 4)
        if not d["extra"]:
            del d["extra"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Region":
        return cls(
            label=d["label"], bbox=tuple(d["bbox"]), text=d["text"], source=d.get("source", ""),
            confidence=float(d.get("confidence", 1.0)), extra=dict(d.get("extra", {})),
        )


class OcrLine(NamedTuple):
    """A line an OCR drafter has read before its page's regions are done (or a few consecutive
    lines of one paragraph: ``stack_lines``): its text, its box in points where the drafter
    knows it (None: the text alone), and the second readings of its words where the recogniser
    gives them (``core.drafters.second_readings``; None: none)."""

    text: str
    bbox: tuple[float, float, float, float] | None = None
    readings: dict | None = None

    @property
    def croppable(self) -> bool:
        """Whether its box is one a crop can be cut from (at least a point each way)."""
        b = self.bbox
        return b is not None and min(b[2] - b[0], b[3] - b[1]) >= 1.0


def as_ocr_lines(lines) -> list[OcrLine]:
    """``lines`` as ``OcrLine`` records (a plain text is a line without a box)."""
    return [line if isinstance(line, OcrLine) else OcrLine(str(line)) for line in lines]


def stack_lines(lines: list[OcrLine], most: int | None = None) -> list[OcrLine]:
    """``lines`` (in the order read) with each run of up to ``most`` consecutive lines of one
    paragraph (``layout.line_stacks``; default ``tuning.EARLY_LINES_STACK``) made one record: the
    lines' texts joined as a paragraph's, the union of their boxes.

    Why: Stage 1 reads each early line on its crop (``core.stage1.Stage1Scheduler``), and a
    document VLM's processor scales a small crop up to its smallest image (HunyuanOCR: 512 x 512
    pixels, about 1 000 patches), so a crop of one line costs as much to prefill as one of three."""
    most = tuning.EARLY_LINES_STACK if most is None else most
    if most <= 1 or len(lines) < 2:
        return list(lines)
    boxes = [line.bbox if line.croppable else None for line in lines]
    out = []
    for stack in line_stacks(boxes, most):
        if len(stack) == 1:
            out.append(lines[stack[0]])
            continue
        readings = {word: found for i in stack for word, found in (lines[i].readings or {}).items()}
        out.append(OcrLine(join_lines([lines[i].text for i in stack]), union_box(boxes[i] for i in stack),
                           readings or None))
    return out


@runtime_checkable
class Drafter(Protocol):
    """Anything that drafts a page: ``draft(page)`` returns regions in reading order. Every member
    below is declared by every drafter (``DrafterBase`` gives the defaults), so nothing is looked up
    by ``getattr``."""

    #: The drafter's registry name (``core.drafters.DRAFTER_NAMES``), or the name a stand-in goes by.
    name: str
    #: Whether ``draft(page, on_lines=...)`` tells ``on_lines(lines)`` the lines read so far
    #: (``OcrLine``) as they are read (OCR), before the page's regions are done.
    streams_lines: bool
    #: Whether the drafter reads pages elsewhere (a drafting process, ``core.drafters.process``)
    #: and takes ``draft(page, meanwhile=..., waiting=...)``: the calling thread is free meanwhile.
    drafts_elsewhere: bool
    #: Whether the drafter, told the page it drafts next (``expect_next(page, wanted, dropped)``,
    #: ``end_expecting()``), prepares that page while it reads this one (``core.drafters.ocr_ahead``).
    reads_ahead: bool
    #: The spec that builds the same drafter again (``core.drafters.get_drafter``): what a drafting
    #: process builds its own from. None: no spec says it (built by hand, or with an option no
    #: spec can carry); such a drafter reads its pages where it is.
    spec: "str | None"
    #: Which of its steps drafted the last page, where the drafter has several (``auto``'s
    #: fallbacks); else None.
    last_step: "str | None"

    def prepare(self, page: "Page") -> None:
        """Load the models ``page`` needs now rather than inside its drafting."""
        ...

    def choose(self, page: "Page") -> "Drafter":
        """The drafter that reads ``page``: itself, or the one it hands the page to (``auto``)."""
        ...

    def draft(self, page: "Page") -> list[Region]: ...


class DrafterBase:
    """The defaults of ``Drafter``'s capabilities, for a drafter to inherit: it reads its pages
    here, whole (no early lines), has nothing to load ahead and no spec until the registry gives
    it one (``core.drafters.get_drafter``). A drafter names itself, defines ``draft`` and overrides
    what it does otherwise."""

    name: str
    streams_lines: bool = False
    drafts_elsewhere: bool = False
    reads_ahead: bool = False
    spec: str | None = None
    last_step: str | None = None

    def prepare(self, page: "Page") -> None:
        """Nothing to load ahead: the drafter is ready when built."""

    def choose(self, page: "Page") -> "Drafter":
        return self


def prepare_drafter(drafter: Drafter, page) -> None:
    """``drafter.prepare(page)``: load what ``page`` needs (the drafters' modules call this)."""
    drafter.prepare(page)


def draft_page(drafter: Drafter, page, on_lines=None, meanwhile=None, waiting=None) -> list[Region]:
    """``drafter.draft(page)``, telling ``on_lines(lines)`` the lines it reads as it reads them
    where the drafter can (``Drafter.streams_lines``). ``meanwhile()``: work of the calling thread
    that need not wait for the drafting, run once: while the page is drafted where the drafter
    reads it elsewhere (``drafts_elsewhere``: a drafting process, which is sent the page first),
    else before the drafting. ``waiting()``: called now and then on the calling thread while a
    drafter that reads elsewhere has not answered (never where the drafter reads here)."""
    if (meanwhile is not None or waiting is not None) and drafter.drafts_elsewhere:
        return drafter.draft(page, on_lines=on_lines, meanwhile=meanwhile, waiting=waiting)
    if meanwhile is not None:
        meanwhile()
    if on_lines is not None and drafter.streams_lines:
        return drafter.draft(page, on_lines=on_lines)
    return drafter.draft(page)
