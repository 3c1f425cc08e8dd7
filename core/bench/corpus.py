"""Benchmark corpus: documents with a reference Markdown, split per page, aligned to drafter regions.

Layout (that of ``../shared/corpus``; any folder laid out the same way works)::

    CORPUS/pairs/NAME.pdf     the document (any page count; born-digital or scanned)
    CORPUS/pairs/NAME.md      its reference Markdown, one file for the whole document
    CORPUS/MANIFEST.tsv       optional: a ``kind`` column per ``pairs/NAME.pdf`` row

Three alignment problems, all solved on *normalised characters* (NFKC; HTML comments, HTML tags and
Markdown images masked; letters, digits and CJK kept: the corpus README's metric normalisation), so
markup, whitespace and tokenisation never decide a match:

1. ``split_reference``: the document reference -> one reference per page. The reference is cut into
   blocks at blank lines and prose blocks into sentences (a paragraph often runs across a page
   break); each unit is scored against each page's draft text (fraction of its normalised
   characters that ``rapidfuzz`` finds in the page); a dynamic programme assigns units to pages in
   order (monotone), maximising matched characters; units a silver reference moved across a page
   break (floats) then go back to the page that contains them. Single-page documents skip this.
2. ``region_spans``: a page reference -> the span each drafter region covers (for the replay target's
   Stage 1). Each region's normalised draft is located with ``partial_ratio_alignment``; the hit is
   widened to the markup around it on the same line (``## ``, ``<td>``, ``**`` ...). Regions scoring
   below ``min_score`` have no counterpart: empty span.
3. ``oracle_regions``: the drafter's regions with the reference as their text: the region spans,
   sorted by start, widened into a partition of the reference (every character of the reference is
   in exactly one oracle draft), so oracle drafts are an upper bound for any drafter with these boxes.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz import fuzz

from core import tuning
from core.drafters.base import Region
from core.results import FIGURE_LABELS

#: Masked before alignment: HTML comments, images, tags, and LaTeX command names (the reference's
#: ``$\\mathrm{TiO}_{2}$`` is the text layer's ``TiO2``; only the alignment masks them, not the metric).
#: A tag starts with a letter or a slash, so the ``<`` of ``(<97%)`` masks nothing.
_MASKED = re.compile(r"<!--.*?-->|!\[[^\]]*\]\([^)]*\)|</?[A-Za-z][^<>]*>|\\[A-Za-z]+", re.DOTALL)
#: Labels whose text no target writes (the engine skips them too).
NON_TEXT_LABELS = frozenset(FIGURE_LABELS)


# --- documents -----------------------------------------------------------------------------------


@dataclass
class CorpusDocument:
    name: str                  # file stem
    pdf: Path
    reference: str             # the whole document's reference Markdown
    kind: str                  # document kind for aggregation (see ``document_kind``)
    manifest_kind: str = ""    # the MANIFEST's free-text kind, when there is one
    problem: str = ""          # why the document cannot be benchmarked (its reference left unread)


def document_kind(stem: str, manifest_kind: str = "") -> str:
    """A short kind for aggregation: the OmniDocBench data source for ``odb_*`` pages (the MANIFEST's
    kind up to ``;``), else the file-name prefix (``docling``, ``mineru``, ...) or ``other``."""
    prefix = stem.split("_", 1)[0] if "_" in stem else "other"
    if prefix == "odb":
        source = manifest_kind.split(";", 1)[0].strip()
        if not source:  # odb_00_PPT2PDF_english -> PPT2PDF
            parts = stem.split("_")
            source = "_".join(p for p in parts[2:] if p not in ("english", "simplified", "chinese")) or "odb"
        return f"odb:{source}"
    return prefix


def _manifest_kinds(corpus: Path) -> dict[str, str]:
    path = corpus / "MANIFEST.tsv"
    if not path.is_file():
        return {}
    kinds = {}
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            name = (row.get("file") or "").strip()
            if name.startswith("pairs/"):
                kinds[Path(name).stem] = (row.get("kind") or "").strip()
    return kinds


def load_corpus(corpus: str | Path, names: list[str] | None = None) -> list[CorpusDocument]:
    """Every ``pairs/*.pdf`` with a ``.md`` beside it, sorted by name (``names``: keep only these stems
    or name prefixes). Raises ``FileNotFoundError`` when there is no ``pairs`` folder."""
    corpus = Path(corpus)
    pairs = corpus / "pairs"
    if not pairs.is_dir():
        raise FileNotFoundError(f"{corpus}: no pairs/ folder (expected pairs/NAME.pdf with NAME.md beside it)")
    kinds = _manifest_kinds(corpus)
    docs = []
    for pdf in sorted(pairs.glob("*.pdf")):
        md = pdf.with_suffix(".md")
        if not md.is_file():
            continue
        if names and not any(pdf.stem == n or pdf.stem.startswith(n) for n in names):
            continue
        mk = kinds.get(pdf.stem, "")
        size = md.stat().st_size
        if size > tuning.MAX_BENCH_REFERENCE_BYTES:  # aligning takes hundreds of times its size
            problem = (f"its reference {md.name} is {size / (1 << 20):,.1f} MiB, more than any document's "
                       f"(at most {tuning.MAX_BENCH_REFERENCE_BYTES / (1 << 20):,.0f} MiB)")
            docs.append(CorpusDocument(pdf.stem, pdf, "", document_kind(pdf.stem, mk), mk, problem))
            continue
        docs.append(CorpusDocument(pdf.stem, pdf, md.read_text(encoding="utf-8"), document_kind(pdf.stem, mk), mk))
    return docs


# --- normalised character streams ----------------------------------------------------------------


@dataclass
class NormText:
    """``raw`` with its normalised character stream ``norm`` and, per normalised char, its raw index."""

    raw: str
    norm: str
    index: list[int] = field(repr=False)

    @classmethod
    def of(cls, raw: str) -> "NormText":
        masked = _MASKED.sub(lambda m: "\0" * len(m.group(0)), raw)
        chars, index = [], []
        for i, ch in enumerate(masked):
            if ch == "\0":
                continue
            for c in unicodedata.normalize("NFKC", ch):
                if c.isalnum():
                    chars.append(c)
                    index.append(i)
        return cls(raw, "".join(chars), index)


def _kept_mask(raw: str) -> list[bool]:
    nt = NormText.of(raw)
    kept = [False] * len(raw)
    for i in nt.index:
        kept[i] = True
    return kept


# --- reference conventions ----------------------------------------------------------------------

_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_PIPE_SEP_CELL = re.compile(r"^\s*:?-{1,}:?\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _pipe_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def pipe_tables_to_html(markdown: str) -> str:
    """Markdown pipe tables -> one-line HTML tables (``<table><tr><td>...``), the convention every
    target's page prompt asks for ("tables as HTML"); the separator row is dropped. Other text is
    left as it is, and so is everything inside a code fence (a listing that prints a pipe table
    shows the pipes)."""
    lines = markdown.split("\n")
    out, i, fence = [], 0, None
    while i < len(lines):
        opener = _FENCE.match(lines[i])
        if opener and (fence is None or opener.group(1).startswith(fence)):
            fence = opener.group(1)[:3] if fence is None else None
        elif (fence is None and i + 1 < len(lines) and _PIPE_ROW.match(lines[i]) and _PIPE_ROW.match(lines[i + 1])
                and all(_PIPE_SEP_CELL.match(c) for c in _pipe_cells(lines[i + 1]))):
            rows = [lines[i]]
            i += 2
            while i < len(lines) and _PIPE_ROW.match(lines[i]):
                rows.append(lines[i])
                i += 1
            html = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in _pipe_cells(r)) + "</tr>" for r in rows)
            out.append(f"<table>{html}</table>")
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


_SPACE_RUN = re.compile(r"(?<=\S)[ \t\u00a0]{2,}(?=\S)")


def collapse_spaces(markdown: str) -> str:
    """Runs of spaces between two non-space characters become one space (leading indentation, code
    included, is kept). PDF text extraction leaves such runs in silver references (justified lines);
    a VLM does not write them, and drafts are cleaned the same way."""
    return _SPACE_RUN.sub(" ", markdown)


def prepare_reference(markdown: str, tables: str = "html", spaces: str = "collapse") -> str:
    """The reference as the replay target writes it: pipe tables as HTML and space runs collapsed
    (each step optional: ``tables="keep"``, ``spaces="keep"``)."""
    if tables == "html":
        markdown = pipe_tables_to_html(markdown)
    if spaces == "collapse":
        markdown = collapse_spaces(markdown)
    return markdown


# --- 1. document reference -> page references ----------------------------------------------------

_BLOCK_SPLIT = re.compile(r"\n[ \t]*\n")


def reference_blocks(reference: str) -> list[tuple[int, int]]:
    """``(start, end)`` raw spans of the blank-line separated blocks of ``reference``."""
    spans, pos = [], 0
    for m in _BLOCK_SPLIT.finditer(reference):
        if reference[pos:m.start()].strip():
            spans.append((pos, m.start()))
        pos = m.end()
    if reference[pos:].strip():
        spans.append((pos, len(reference)))
    return spans


def _contained(block_norm: str, page_norm: str) -> float:
    """Fraction of ``block_norm`` found (fuzzily) in ``page_norm``, in [0, 1]."""
    if not block_norm or not page_norm:
        return 0.0
    if len(block_norm) <= len(page_norm):
        return fuzz.partial_ratio(block_norm, page_norm) / 100.0
    # a block longer than the page text: the share of the block the page can account for
    return fuzz.partial_ratio(block_norm, page_norm) / 100.0 * len(page_norm) / len(block_norm)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def reference_units(reference: str, min_chars: int = 40) -> list[tuple[int, int]]:
    """``(start, end)`` spans that ``split_reference`` assigns to pages: blank-line blocks, with
    prose blocks cut further into sentences (a paragraph often runs across a page break) and
    sentences under ``min_chars`` kept with the next one. Tables, formulas, code stay whole."""
    units = []
    for start, end in reference_blocks(reference):
        block = reference[start:end]
        if block.lstrip()[:1] in ("<", "$", "|", "`"):
            units.append((start, end))
            continue
        cut = start
        for m in _SENTENCE_END.finditer(block):
            if start + m.start() - cut >= min_chars:
                units.append((cut, start + m.start()))
                cut = start + m.end()
        if end > cut:
            if units and units[-1][1] > start and end - cut < min_chars:
                units[-1] = (units[-1][0], end)  # a short tail joins its block's last sentence
            else:
                units.append((cut, end))
    return units


def split_reference(reference: str, page_texts: list[str]) -> list[str]:
    """Cut a document reference into per-page references (see the module docstring).

    ``page_texts``: each page's draft (or text-layer) text. A page no unit matches gets ``""``.
    Units (``reference_units``) are first assigned to pages monotonically (``_monotone_pages``), so a
    page's reference is normally one contiguous stretch of the document's. Silver references do not
    always keep page order: MinerU moves tables, captions and formulas next to the paragraph that
    cites them, which may sit on the next page. So a unit that one page clearly contains but its
    monotone page does not moves to that page, and a unit no page contains (a formula whose text
    layer is junk) between two units of one page goes with them. A page's units are kept in
    reference order; runs of adjacent units are cut as one stretch, runs apart are joined by a
    blank line.
    """
    n = len(page_texts)
    if n <= 1:
        return [reference.strip()] * n
    units = reference_units(reference)
    if not units:
        return [""] * n
    pages = [NormText.of(t).norm for t in page_texts]
    norms = [NormText.of(reference[s:e]).norm for s, e in units]
    contained = [[_contained(b, p) for p in pages] for b in norms]
    assign = _monotone_pages([[c * max(1, len(b)) for c in row] for b, row in zip(norms, contained)], n)
    matched = [len(b) >= _UNIT_MIN_CHARS and max(row) >= _UNIT_MATCHED for b, row in zip(norms, contained)]
    for u, row in enumerate(contained):
        if not matched[u]:
            continue
        best = max(range(n), key=row.__getitem__)
        if row[best] >= _UNIT_CLEAR and row[assign[u]] < row[best] - _UNIT_MARGIN:
            assign[u] = best
    for u in range(len(units)):  # an unmatched unit between two matched ones on one page joins them
        if not matched[u]:
            before = next((assign[v] for v in range(u - 1, -1, -1) if matched[v]), None)
            after = next((assign[v] for v in range(u + 1, len(units)) if matched[v]), None)
            if before is not None and before == after:
                assign[u] = before
    out = []
    for page in range(n):
        mine = [u for u in range(len(units)) if assign[u] == page]
        runs: list[tuple[int, int]] = []
        for u in mine:
            if runs and runs[-1][1] == u - 1:
                runs[-1] = (runs[-1][0], u)
            else:
                runs.append((u, u))
        out.append("\n\n".join(reference[units[a][0]:units[b][1]].strip() for a, b in runs))
    return out


#: A unit of at least ``_UNIT_MIN_CHARS`` normalised characters counts as found on a page from this
#: containment on (shorter ones, like "Table 4", are found everywhere); it moves off its monotone page
#: to one that contains it at least ``_UNIT_CLEAR`` and ``_UNIT_MARGIN`` better.
_UNIT_MIN_CHARS, _UNIT_MATCHED, _UNIT_CLEAR, _UNIT_MARGIN = 12, 0.5, 0.8, 0.25


def _monotone_pages(score: list[list[float]], n: int) -> list[int]:
    """Page of each unit, pages non-decreasing, maximising the summed ``score[unit][page]``."""
    NEG = float("-inf")
    best = [[NEG] * n for _ in score]
    back = [[0] * n for _ in score]
    best[0] = list(score[0])
    for u in range(1, len(score)):
        run_val, run_arg = NEG, 0
        for p in range(n):
            if best[u - 1][p] > run_val:
                run_val, run_arg = best[u - 1][p], p
            best[u][p] = run_val + score[u][p]
            back[u][p] = run_arg
    p = max(range(n), key=lambda k: best[-1][k])
    assign = [0] * len(score)
    for u in range(len(score) - 1, -1, -1):
        assign[u] = p
        p = back[u][p]
    return assign


# --- 2. page reference -> region spans -----------------------------------------------------------


def _widen(raw: str, kept: list[bool], start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` over unkept characters (markup) up to the line ends around it, then over
    whole lines of markup alone in the same block: a code fence, a table's closing rule, ``$$``.
    The crop shows them, and a reader of the crop writes them (a blank line ends the block)."""
    while start > 0 and raw[start - 1] != "\n" and not kept[start - 1]:
        start -= 1
    while end < len(raw) and raw[end] != "\n" and not kept[end]:
        end += 1
    while start > 0 and raw[start - 1] == "\n":
        line_start = raw.rfind("\n", 0, start - 1) + 1
        if not _markup_line(raw, kept, line_start, start - 1):
            break
        start = line_start
    while end < len(raw) and raw[end] == "\n":
        line_end = raw.find("\n", end + 1)
        line_end = len(raw) if line_end < 0 else line_end
        if not _markup_line(raw, kept, end + 1, line_end):
            break
        end = line_end
    return start, end


def _markup_line(raw: str, kept: list[bool], start: int, end: int) -> bool:
    """True if ``raw[start:end]`` (one line) holds markup and no kept character."""
    return bool(raw[start:end].strip()) and not any(kept[start:end])


def _locate(draft: str, ref: str, offset: int, min_score: float) -> tuple[int, int, float] | None:
    """Best fuzzy hit of ``draft`` in ``ref[offset:]``: ``(lo, hi, score)`` in ``ref`` coordinates."""
    hay = ref[offset:]
    if not hay:
        return None
    if len(draft) <= len(hay):
        al = fuzz.partial_ratio_alignment(draft, hay)
        if al is None:
            return None
        lo, hi = al.dest_start, al.dest_end
    else:  # the draft holds more than the reference left: the reference is inside it
        al = fuzz.partial_ratio_alignment(hay, draft)
        if al is None:
            return None
        lo, hi = 0, len(hay)
    if al.score < min_score or hi <= lo:
        return None
    return offset + lo, offset + hi, al.score


def region_spans(reference: str, regions: list[Region], min_score: float = 60.0,
                 min_chars: int = 2) -> list[tuple[int, int] | None]:
    """Per region, the ``(start, end)`` raw span of ``reference`` it covers, or None (no counterpart:
    a figure, a header the reference leaves out, drafter junk).

    Regions are looked for in reading order: first after the previous region's hit (short drafts
    such as a section number are ambiguous anywhere else), then, failing that, in the whole page (the
    drafter's reading order may be wrong)."""
    ref = NormText.of(reference)
    kept = _kept_mask(reference)
    out: list[tuple[int, int] | None] = []
    cursor = 0
    for region in regions:
        draft = NormText.of(region.text).norm
        if region.label in NON_TEXT_LABELS or len(draft) < min_chars or not ref.norm:
            out.append(None)
            continue
        hit = _locate(draft, ref.norm, cursor, min_score) if cursor else None
        if hit is None or hit[2] < 90.0:
            anywhere = _locate(draft, ref.norm, 0, min_score)
            if anywhere is not None and (hit is None or anywhere[2] > hit[2] + 5.0):
                hit = anywhere
        if hit is None:
            out.append(None)
            continue
        lo, hi, _ = hit
        cursor = hi
        start, end = ref.index[lo], ref.index[hi - 1] + 1
        out.append(_widen(reference, kept, start, end))
    return out


#: Labels whose crops hold page furniture, never body text: they take no unmatched stretch.
_FURNITURE = frozenset({"header", "footer", "page_number"})


def region_references(reference: str, regions: list[Region], spans=None) -> list[str]:
    """The reference text each region covers (``""`` for none): what the replay target writes for a
    region crop in Stage 1.

    A matched region covers its span. A stretch of the reference *between* two matched regions
    (or before the first / after the last) goes to the body-text regions between them in reading
    order that matched nothing: a formula whose text layer is junk, an OCR line too broken to align.
    Their crops hold that stretch, and a reader as accurate as the reference would write it there.
    Several such regions share the stretch's blank-line blocks in order. A stretch with no such
    region (content no box covers) goes to nobody.
    """
    spans = region_spans(reference, regions) if spans is None else spans
    refs = ["" if s is None else reference[s[0]:s[1]].strip() for s in spans]
    run: list[int] = []
    prev_end = 0
    for i in range(len(regions) + 1):
        if i < len(regions) and spans[i] is None:
            if regions[i].label not in NON_TEXT_LABELS and regions[i].label not in _FURNITURE:
                run.append(i)
            continue
        next_start = spans[i][0] if i < len(regions) else len(reference)
        if run and next_start > prev_end:
            blocks = [b.strip() for b in re.split(r"\n\s*\n", reference[prev_end:next_start]) if b.strip()]
            for k, r in enumerate(run):
                refs[r] = "\n\n".join(blocks[k * len(blocks) // len(run):(k + 1) * len(blocks) // len(run)])
        run = []
        if i < len(regions):
            prev_end = max(prev_end, spans[i][1])
    return refs


# --- 3. oracle drafts ----------------------------------------------------------------------------


def oracle_regions(reference: str, regions: list[Region], spans=None) -> list[Region]:
    """The drafter's regions with reference text as drafts, partitioning the reference (module
    docstring). A page with no region that matches gets one full-page region holding the reference."""
    spans = region_spans(reference, regions) if spans is None else spans
    matched = sorted((s[0], i) for i, s in enumerate(spans) if s is not None)
    texts = [""] * len(regions)
    for k, (start, i) in enumerate(matched):
        begin = 0 if k == 0 else start
        end = matched[k + 1][0] if k + 1 < len(matched) else len(reference)
        texts[i] = reference[begin:end].strip()
    if not matched:
        if not reference.strip():
            return []
        return [Region(label="text", bbox=(0.0, 0.0, 1e4, 1e4), text=reference.strip(), source="oracle")]
    return [Region(label=r.label, bbox=tuple(r.bbox), text=t, source="oracle", extra=dict(r.extra))
            for r, t in zip(regions, texts) if t or r.label in NON_TEXT_LABELS]
