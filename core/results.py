"""What the engine reports: per-region and per-page statistics, page results, progress events.

Plain dataclasses with ``to_dict`` so the CLI, the benchmark and the app share one format.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from core.drafters.base import Region

#: Region labels of pictures: no text to verify; cropped and linked on export.
FIGURE_LABELS = ("figure", "image", "picture")

#: The parts of a page's wall-clock (``PageStats.seconds``): render, draft (the drafter's own time,
#: overlapped with earlier pages' decode or this page's where drafting runs ahead or beside), the
#: target's prefills and verification passes, and the page's total: the time the decode spent on
#: the page, waiting for its render and drafts included (what drafting ahead hid is not counted).
SECONDS_PARTS = ("render", "draft", "prefill", "verify", "total")


def page_seconds(**known: float) -> dict:
    """A page's ``seconds`` record: every part of ``SECONDS_PARTS``, 0 where not given."""
    seconds = dict.fromkeys(SECONDS_PARTS, 0.0)
    seconds.update(known)
    return seconds


@dataclass
class RegionStats:
    """How the target treated one drafter region (Stage 1 in ``hsd`` / ``regions`` modes).

    drafted_tokens:  length of the region's cleaned draft in target tokens.
    accepted_tokens: draft tokens the target accepted while writing this region.
    forward_passes:  verification passes the region took part in.
    """

    label: str
    bbox: tuple[float, float, float, float]
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    forward_passes: int = 0
    output_tokens: int = 0
    page_accepted_tokens: int = 0   # Stage 2 tokens accepted from this region's refined text
    fallback: bool = False          # output degenerated; the raw draft was used instead
    verified: bool = True           # False for figures and empty regions (nothing to verify)

    @property
    def acceptance_rate(self) -> float:
        return min(1.0, self.accepted_tokens / self.drafted_tokens) if self.drafted_tokens else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bbox"] = [round(float(v), 2) for v in self.bbox]
        d["acceptance_rate"] = round(self.acceptance_rate, 4)
        return d


@dataclass
class PageStats:
    """Counters of one page. Forward passes include prefills (one per region crop and the page)."""

    mode: str = ""
    forward_passes: int = 0
    prefill_passes: int = 0
    stage1_passes: int = 0
    stage2_passes: int = 0
    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    tree_passes: int = 0            # page-level passes that verified a tree of several branches
    stop_reason: str = ""
    draft_error: str | None = None  # the drafter failed on this page; it was decoded without drafts
    passes_before_drafts: int = 0   # decoding passes the page ran before its drafts arrived (0: drafted
    #                                 ahead; the drafter ran beside the decode otherwise)
    passes_before_lines: int = 0    # ... before the first of its OCR lines arrived, read ahead of its
    #                                 regions (``passes_before_drafts`` where none did)
    lines_read: int = 0             # early OCR lines (a stack of a paragraph's lines counts once) Stage 1
    #                                 read on their crops before the regions came
    regions_read_by_lines: int = 0  # text regions that took those readings instead of a crop of their own
    seconds: dict = field(default_factory=page_seconds)

    @property
    def mean_accepted_length(self) -> float:
        """Output tokens per page-level decoding pass (1.0 for plain AR)."""
        passes = self.stage2_passes or self.stage1_passes
        return self.generated_tokens / passes if passes else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["mean_accepted_length"] = round(self.mean_accepted_length, 4)
        d["seconds"] = {k: round(v, 4) for k, v in self.seconds.items()}
        return d


@dataclass
class TextSpan:
    """Characters ``[start, end)`` of the page Markdown written from region ``region`` (or None)."""

    region: int | None
    start: int
    end: int


@dataclass
class PageResult:
    page: int                         # 1-based
    width: float                      # page size in points
    height: float
    markdown: str
    regions: list[Region]
    region_stats: list[RegionStats]
    region_outputs: list[str]         # Stage 1 text per region ("" where not verified)
    spans: list[TextSpan]
    stats: PageStats
    error: str | None = None          # set when this page failed and the rest went on
    output_tokens: list[int] = field(default_factory=list, repr=False)  # the target's ids of the output
    figure_links: dict[int, str] = field(default_factory=dict)          # region -> exported image
    page_image: object = field(default=None, repr=False, compare=False)  # rendered page, transient

    @property
    def draft_failure(self) -> str | None:
        """Why this page was decoded without drafts (its drafter failed); None if it was drafted,
        or if the page failed altogether."""
        return None if self.error else self.stats.draft_error

    def to_dict(self) -> dict:
        return {
            "page": self.page, "width": self.width, "height": self.height,
            "markdown": self.markdown,
            "regions": [dict(r.to_dict(), stats=s.to_dict(), output=o)
                        for r, s, o in zip(self.regions, self.region_stats, self.region_outputs)],
            "spans": [asdict(s) for s in self.spans],
            "stats": self.stats.to_dict(),
            "error": self.error,
            # a resumed run drafts later pages from these exact ids (re-encoding the Markdown need
            # not give them back: post-processing, or a token that is part of a character)
            "output_tokens": list(self.output_tokens),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "PageResult":
        regions = [Region.from_dict(r) for r in d["regions"]]
        stats = []
        for r in d["regions"]:
            s = dict(r.get("stats", {}))
            s.pop("acceptance_rate", None)
            s["bbox"] = tuple(s.get("bbox", r["bbox"]))
            s.setdefault("label", r["label"])
            stats.append(RegionStats(**s))
        ps = dict(d["stats"])
        ps.pop("mean_accepted_length", None)
        return cls(
            page=d["page"], width=d["width"], height=d["height"], markdown=d["markdown"],
            regions=regions, region_stats=stats, region_outputs=[r.get("output", "") for r in d["regions"]],
            spans=[TextSpan(**s) for s in d.get("spans", [])], stats=PageStats(**ps), error=d.get("error"),
            output_tokens=_token_ids(d.get("output_tokens")),
        )


def _token_ids(value) -> list[int]:
    """Saved token ids, or [] where they are missing or not a list of non-negative integers."""
    if isinstance(value, list) and all(type(t) is int and t >= 0 for t in value):
        return value
    return []
