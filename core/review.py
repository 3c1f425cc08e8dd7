"""Where the model departed from the page's own text: the review list.

A page's drafts are the page's own words (its text layer, or what OCR read); the verified Markdown is
the model's. Aligning the two word by word shows, for every stretch of the Markdown, the region whose
draft holds it, and the places where they part:

- **invented**: Markdown words no draft holds (the model wrote them on its own);
- **skipped**: draft words the model did not write;
- **changed**: both at once, between the same agreeing words (a number misread, a word replaced).

A running head or page number the model left out is no departure (document models leave them out
by design), and formulas are not compared, neither a formula region nor a formula in the text (a
draft is never the LaTeX the model writes).

Words are compared as people read them: letters and digits (a CJK character is a word of its own),
NFKC, case folded; Markdown, HTML and LaTeX markup, punctuation and line-break hyphens are not words,
so a heading's ``#`` or a table's tags never count as a departure. A block the model wrote in
another order than the drafter read it (two columns, a caption above its figure) still agrees: what
the first alignment leaves over is aligned again, runs of ``REVIEW_MOVED_RUN_WORDS`` words or more.

Where the drafts agree with fewer than ``REVIEW_POOR_AGREEMENT`` of the model's words, the page's
review says so in one item instead of listing every difference (``PageReview.low_agreement``): either
the OCR read a poor scan badly (the list would be its mistakes) or the model left out or rewrote
much of the page (the list would be most of the page). Which of the two cannot be told from the
drafts (OCR is as sure of itself on both), so the item says both, with both shares.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from difflib import SequenceMatcher

from core import tuning
from core.results import FIGURE_LABELS

#: Regions that document models leave out by design (running heads, page numbers): the model not
#: writing them is no departure.
MARGIN_LABELS = ("header", "footer", "page_number")
#: Regions whose draft cannot say what the model should write: no drafter reads a formula as LaTeX
#: (OCR reads ``ai= Σ βij`` where the model writes ``\alpha_{i} = \sum_{j}``), so the two differ
#: wherever the model is right. Their Markdown still belongs to them (``region_spans``).
UNCOMPARED_LABELS = ("formula",)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A word: one CJK character, or a run of letters and digits (a line-break hyphen inside it joins).
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+(?:-[ \t]*\n[ \t]*[^\W_{_CJK}]+)*")
#: Markup that is not the page's words: HTML comments and tags, entities, image links, LaTeX commands.
_MARKUP = re.compile(r"<!--.*?-->|<[^<>\n]*>|&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);|!\[[^\]\n]*\]\([^)\n]*\)"
                     r"|\\[a-zA-Z]+", re.S)
#: Formulas in the Markdown: display and inline, in dollars (as Pandoc reads them: ``$5 and $10`` is
#: no formula) or in brackets.
_MATH = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]|\$(?=\S)[^$\n]*?(?<=\S)\$(?!\d)|\\\(.+?\\\)", re.S)
#: What parts a formula's letters without parting its word: sub- and superscripts, braces.
_SCRIPT_JOIN = re.compile(r"[\^_{}]+")


@dataclass(frozen=True)
class Word:
    key: str      # what is compared
    start: int    # offsets in its text
    end: int
    region: int | None = None  # the region whose draft it is (draft words only)


def words(text: str, markup: bool = True) -> list[Word]:
    """The words of ``text`` with their offsets; ``markup``: Markdown/HTML/LaTeX markup is left out."""
    if markup:
        text = _MARKUP.sub(lambda m: " " * len(m.group(0)), text)
    out: list[Word] = []
    for m in _WORD.finditer(text):
        key = unicodedata.normalize("NFKC", re.sub(r"-[ \t]*\n[ \t]*", "", m.group(0))).casefold()
        if out and _SCRIPT_JOIN.fullmatch(text, out[-1].end, m.start()):
            # ``mc^{2}`` is the ``mc2`` an OCR reads: scripts and braces join a formula's word
            out[-1] = Word(out[-1].key + key, out[-1].start, m.end())
        else:
            out.append(Word(key, m.start(), m.end()))
    return out


def draft_words(regions) -> list[Word]:
    """The page's words: every text region's draft, in the drafter's reading order."""
    out = []
    for index, region in enumerate(regions):
        if region.label in FIGURE_LABELS or not (region.text or "").strip():
            continue
        out.extend(Word(w.key, w.start, w.end, index) for w in words(region.text))
    return out


def align(model: list[Word], page: list[Word]) -> dict[int, int]:
    """Model word -> page word for the words that agree: one in-order alignment, then what it left
    over aligned again (blocks written in another order), runs of ``REVIEW_MOVED_RUN_WORDS`` or more."""
    pairs: dict[int, int] = {}
    left_model, left_page = list(range(len(model))), list(range(len(page)))
    minimum = 1
    for _ in range(4):
        if not left_model or not left_page:
            break
        matcher = SequenceMatcher(None, [model[i].key for i in left_model], [page[j].key for j in left_page],
                                  autojunk=False)
        found = False
        for a, b, size in matcher.get_matching_blocks():
            if size >= minimum:
                for k in range(size):
                    pairs[left_model[a + k]] = left_page[b + k]
                found = found or size > 0
        if not found:
            break
        taken = set(pairs.values())
        left_model = [i for i in left_model if i not in pairs]
        left_page = [j for j in left_page if j not in taken]
        minimum = tuning.REVIEW_MOVED_RUN_WORDS
    return pairs


@dataclass
class Departure:
    """One place where the model's words and the page's differ.

    ``start``/``end``: the model's words in the page Markdown (an empty range where it skipped: the
    place the page's words would go); ``page_text``: the draft's words (the region's draft text,
    ``draft_start``/``draft_end`` in it)."""

    page: int
    region: int | None
    label: str
    kind: str          # "invented", "skipped" or "changed"
    model_text: str
    page_text: str
    start: int
    end: int
    draft_start: int = 0
    draft_end: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """One line, as the review list and the report say it."""
        if self.kind == "invented":
            return f"the model wrote “{_short(self.model_text)}”, which no draft holds"
        if self.kind == "skipped":
            return f"the model left out “{_short(self.page_text)}”"
        return f"the model wrote “{_short(self.model_text)}” where the page reads “{_short(self.page_text)}”"


@dataclass
class PageReview:
    """A page's departures, and how far its drafts agree with the model at all."""

    page: int
    departures: list[Departure] = field(default_factory=list)
    model_words: int = 0
    agreeing_words: int = 0
    page_words: int = 0
    low_agreement: bool = False
    note: str = ""      # why nothing is listed (low agreement, no drafts, a failed page)
    region_spans: list[tuple[int, int, int]] = field(default_factory=list)  # (region, start, end)

    @property
    def agreement(self) -> float:
        return self.agreeing_words / self.model_words if self.model_words else 0.0

    @property
    def count(self) -> int:
        return len(self.departures)

    def to_dict(self) -> dict:
        return {"page": self.page, "agreement": round(self.agreement, 4), "model_words": self.model_words,
                "page_words": self.page_words, "low_agreement": self.low_agreement, "note": self.note,
                "departures": [d.to_dict() for d in self.departures]}


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def review_page(result, text: str | None = None) -> PageReview:
    """The departures of a converted page (``core.results.PageResult``); offsets are in ``text``,
    the page's Markdown as shown or exported (``result.markdown`` where None)."""
    text = result.markdown if text is None else text
    review = PageReview(result.page)
    if result.error:
        review.note = "the page failed: nothing to review"
        return review
    regions = list(result.regions or [])
    model = words(text)
    page = draft_words(regions)
    review.model_words, review.page_words = len(model), len(page)
    if not page:
        review.note = ("the page had no drafts to compare with" if model else "")
        return review
    pairs = align(model, page)
    review.agreeing_words = len(pairs)
    review.region_spans = _region_spans(text, model, page, pairs)
    if model and review.agreement < tuning.REVIEW_POOR_AGREEMENT:
        review.low_agreement = True
        review.note = (f"the model's text and the page's drafts agree on only {review.agreement:.0%} of the model's "
                       f"words and {len(pairs) / len(page):.0%} of the page's: the page was read poorly (a bad scan) "
                       "or the model left out or rewrote much of it; compare the page with its image")
        return review
    review.departures = _departures(result.page, text, regions, model, page, pairs)
    return review


def _gaps(model: list[Word], page: list[Word], pairs: dict[int, int]):
    """``(model run, page run)`` between consecutive agreeing words in the model's order: the model's
    words and the page's that lie between the same agreeing neighbours. Page words out of this order
    (left by a moved block) come last, each run on its own."""
    anchors = [(-1, -1), *sorted(pairs.items()), (len(model), len(page))]
    taken = set(pairs.values())
    claimed: set[int] = set()
    for (i0, j0), (i1, j1) in zip(anchors, anchors[1:]):
        model_run = list(range(i0 + 1, i1))
        page_run = [j for j in range(j0 + 1, j1) if j not in taken and j not in claimed] if j1 > j0 else []
        claimed.update(page_run)
        if model_run or page_run:
            yield model_run, page_run, i0
    rest = [j for j in range(len(page)) if j not in taken and j not in claimed]
    run: list[int] = []
    for j in rest:
        if run and j != run[-1] + 1:
            yield [], run, None
            run = []
        run.append(j)
    if run:
        yield [], run, None


def formulas_in(text: str) -> list[tuple[int, int]]:
    """Where the Markdown's formulas are: their LaTeX is compared with nothing (an OCR reads
    ``Σi`` where the model writes ``\\(\\Sigma_i\\)``, and is wrong where they differ, not the model)."""
    return [(m.start(), m.end()) for m in _MATH.finditer(text)]


def in_formula(formulas: list[tuple[int, int]], start: int, end: int, near: int = 0) -> bool:
    return any(s - near <= start and end <= e + near for s, e in formulas)


def _departures(number: int, text: str, regions, model, page, pairs) -> list[Departure]:
    by_page = {j: i for i, j in pairs.items()}
    formulas = formulas_in(text)
    out: list[Departure] = []
    for model_run, page_run, before in _gaps(model, page, pairs):
        pieces = _by_region(page, page_run)
        if model_run:
            start, end = model[model_run[0]].start, model[model_run[-1]].end
            if pieces:
                region, run = pieces.pop(0)
            else:
                region, run = _owner(text, model, page, pairs, model_run), []
            if ((region is None or regions[region].label not in UNCOMPARED_LABELS)
                    and not all(in_formula(formulas, model[i].start, model[i].end) for i in model_run)):
                out.append(_departure(number, text, regions, region, start, end, page, run))
        for region, run in pieces:
            if regions[region].label in MARGIN_LABELS + UNCOMPARED_LABELS:
                continue
            at = _place(text, model, page, by_page, run, before)
            if in_formula(formulas, at, at, near=2):  # the OCR's reading of a formula beside it
                continue
            out.append(_departure(number, text, regions, region, at, at, page, run))
    out.sort(key=lambda d: (d.start, d.end))
    return _merged(out, text, model, regions)


def _by_region(page: list[Word], run: list[int]) -> list[tuple[int, list[int]]]:
    pieces: list[tuple[int, list[int]]] = []
    for j in run:
        if pieces and pieces[-1][0] == page[j].region and j == pieces[-1][1][-1] + 1:
            pieces[-1][1].append(j)
        else:
            pieces.append((page[j].region, [j]))
    return pieces


def _owner(text: str, model, page, pairs, run: list[int]) -> int | None:
    """The region the model's own words ``run`` belong to: the agreeing word before them, unless a
    paragraph break parts them from it and not from the agreeing word after them."""
    before = next((i for i in range(run[0] - 1, -1, -1) if i in pairs), None)
    after = next((i for i in range(run[-1] + 1, len(model)) if i in pairs), None)
    if before is None and after is None:
        return None
    if before is None:
        return page[pairs[after]].region
    if after is None:
        return page[pairs[before]].region
    parted_before = "\n\n" in text[model[before].end:model[run[0]].start]
    parted_after = "\n\n" in text[model[run[-1]].end:model[after].start]
    return page[pairs[after]].region if parted_before and not parted_after else page[pairs[before]].region


def _place(text: str, model, page, by_page, run: list[int], before: int | None) -> int:
    """Where skipped page words would stand in the Markdown: after the model's word that agrees
    with the page word before them (or before the one after them)."""
    if before is not None:
        return model[before].end if before >= 0 else 0
    prior = next((by_page[j] for j in range(run[0] - 1, -1, -1) if j in by_page), None)
    if prior is not None:
        return model[prior].end
    later = next((by_page[j] for j in range(run[-1] + 1, len(page)) if j in by_page), None)
    return model[later].start if later is not None else len(text)


def _departure(number, text, regions, region, start, end, page, run) -> Departure:
    draft = regions[region].text if region is not None and run else ""
    draft_start, draft_end = (page[run[0]].start, page[run[-1]].end) if run else (0, 0)
    label = regions[region].label if region is not None else ""
    kind = "changed" if run and end > start else "skipped" if run else "invented"
    return Departure(number, region, label, kind, text[start:end], draft[draft_start:draft_end], start, end,
                     draft_start, draft_end)


def _merged(found: list[Departure], text: str, model: list[Word], regions) -> list[Departure]:
    """Departures of one region parted by at most ``REVIEW_MERGE_WORDS`` agreeing words read as one
    (``teh quick brwn`` for ``the quick brown`` is one place to look at, not two)."""
    out: list[Departure] = []
    for d in found:
        last = out[-1] if out else None
        if (last is None or d.region is None or last.region != d.region
                or (last.page_text and d.page_text and d.draft_start < last.draft_end)
                or _words_between(model, last.end, d.start) > tuning.REVIEW_MERGE_WORDS):
            out.append(d)
            continue
        held = [x for x in (last, d) if x.page_text]
        draft_start, draft_end = (held[0].draft_start, held[-1].draft_end) if held else (0, 0)
        start, end = last.start, max(last.end, d.end)
        kind = "changed" if held and end > start else "skipped" if held else "invented"
        out[-1] = Departure(last.page, last.region, last.label, kind, text[start:end],
                            regions[d.region].text[draft_start:draft_end], start, end, draft_start, draft_end)
    return out


def _words_between(model: list[Word], start: int, end: int) -> int:
    return sum(1 for w in model if w.start >= start and w.end <= end)


def _region_spans(text: str, model, page, pairs) -> list[tuple[int, int, int]]:
    """``(region, start, end)`` of the Markdown each region's draft accounts for, in order: its
    agreeing words, and the model's own words between agreeing words of one region, or where its
    draft was not written (a formula the model wrote as LaTeX in place of the OCR's reading)."""
    owner: list[int | None] = [None] * len(model)
    for i, j in pairs.items():
        owner[i] = page[j].region
    for model_run, page_run, _before in _gaps(model, page, pairs):
        if not model_run:
            continue
        pieces = _by_region(page, page_run)
        region = pieces[0][0] if pieces else _owner(text, model, page, pairs, model_run)
        for i in model_run:
            owner[i] = region
    spans: list[list] = []
    for i, w in enumerate(model):
        if owner[i] is None:
            continue
        if spans and spans[-1][0] == owner[i] and (i == 0 or owner[i - 1] == owner[i]):
            spans[-1][2] = w.end
        else:
            spans.append([owner[i], w.start, w.end])
    return [tuple(s) for s in spans]


# -- the document's list, for ``hsd convert --review`` ----------------------------------------------


def review_document(results, texts: dict[int, str] | None = None) -> list[PageReview]:
    """Every page's review, in page order; ``texts``: page -> its Markdown as exported."""
    texts = texts or {}
    return [review_page(r, texts.get(r.page)) for r in sorted(results, key=lambda r: r.page)]


def summary_line(reviews: list[PageReview]) -> str:
    """``12 places where the model departs from the page's text`` (and the pages not listed)."""
    count = sum(r.count for r in reviews)
    line = f"{count} place{'' if count == 1 else 's'} where the model departs from the page's text"
    low = [r.page for r in reviews if r.low_agreement]
    if low:
        line += f"; {len(low)} page{'' if len(low) == 1 else 's'} where model and drafts agree too little to list"
    return line


#: Marks a review file as this tool's own: replaced by a later ``--review`` without ``--overwrite``.
REVIEW_FORMAT = "hsd-review/1"
_HTML_MARK = f'<meta name="generator" content="{REVIEW_FORMAT}">'


def review_kind(path) -> str:
    """``html`` or ``json``, from the file name's extension (``HSDError`` for any other)."""
    from pathlib import Path

    from core.errors import HSDError

    suffix = Path(path).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix == ".json":
        return "json"
    raise HSDError(f"{path}: --review writes a .html or a .json file; name one of them")


def refuse_unsafe_review(path, inputs, outputs, stats=None, overwrite: bool = False) -> None:
    """``HSDError`` (one line) when ``--review PATH`` would replace an input, a Markdown output,
    ``--stats``, something that is not a regular file, or, ``overwrite`` not set, an existing
    file that is not a review this tool wrote."""
    import os
    from pathlib import Path

    from core.errors import HSDError
    from core.outputs import check_output_target

    path = Path(path)
    review_kind(path)
    real = os.path.realpath(path)
    for what, others in (("the input", inputs), ("a Markdown output", outputs), ("--stats", [stats] if stats else [])):
        if any(os.path.realpath(o) == real for o in others):
            raise HSDError(f"{path}: --review would replace {what}; choose another file")
    check_output_target(path, "--review")
    if not overwrite and os.path.lexists(path) and not _our_review(path):
        raise HSDError(f"{path} exists and was not written by hsd; pass --overwrite to replace it")


def _our_review(path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    if head.lstrip().startswith("{"):
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and data.get("format") == REVIEW_FORMAT and set(data) == {"format", "documents"}
    return _HTML_MARK in head


def review_payload(documents: list[tuple[str, list[PageReview]]]) -> dict:
    """What ``--review FILE.json`` writes: per document its summary line and pages."""
    return {"format": REVIEW_FORMAT,
            "documents": [{"file": name, "summary": summary_line(reviews), "pages": [r.to_dict() for r in reviews]}
                          for name, reviews in documents]}


def review_html(documents: list[tuple[str, list[PageReview]]]) -> str:
    """A page a person reads: every departure, the model's words beside the page's. Everything from
    the document or the model is escaped: it is data, never markup."""
    e = html.escape
    sections = []
    for name, reviews in documents:
        rows = []
        for review in reviews:
            if review.note:
                rows.append(f'<tr class="note"><td>{review.page}</td><td colspan="4">{e(review.note)}</td></tr>')
            for d in review.departures:
                region = "" if d.region is None else f"{d.region + 1} ({e(d.label)})"
                rows.append(f"<tr><td>{d.page}</td><td>{region}</td><td>{e(d.kind)}</td>"
                            f'<td class="model">{e(d.model_text)}</td><td class="page">{e(d.page_text)}</td></tr>')
        body = "\n".join(rows) or '<tr><td colspan="5">no departures</td></tr>'
        sections.append(f"<h2>{e(name)}</h2>\n<p>{e(summary_line(reviews))}</p>\n"
                        "<table><tr><th>page</th><th>region</th><th>what</th><th>the model wrote</th>"
                        f"<th>the page reads</th></tr>\n{body}\n</table>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">" + _HTML_MARK
            + "<title>Where the model departs from the page</title><style>"
            "body{font-family:sans-serif} table{border-collapse:collapse} td,th{border:1px solid #bbb;"
            "padding:4px;vertical-align:top;white-space:pre-wrap} .model{background:#fff1e6}"
            ".page{background:#e8f4ea} .note td{color:#7a5200}</style></head><body>\n"
            + "\n".join(sections) + "\n</body></html>\n")


def write_review(path, documents: list[tuple[str, list[PageReview]]]) -> None:
    """Write the review of ``documents`` (name, page reviews) to ``path``, HTML or JSON by its name."""
    from pathlib import Path

    from core.export import atomic_write_text

    text = (json.dumps(review_payload(documents), ensure_ascii=False, indent=1) if review_kind(path) == "json"
            else review_html(documents))
    atomic_write_text(Path(path), text)
