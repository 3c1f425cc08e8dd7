"""A text layer checked before it is trusted, region by region.

A PDF's text layer is what its fonts' ToUnicode maps and its writer's glyph order make of the page,
not what the page shows: a map written one entry out of step gives "Sgd qduhdv" for "The review",
a writer that positions each glyph run gives runs out of order, an old book carries a poor OCR
engine's reading. Such a layer drafted as it stands costs more passes than no draft at all. Each
region the text layer drafted is checked here against what the page's text layer says about it
(the spans inside its box) and against what text in a human language looks like:

* **encoding**: private-use code points, U+FFFD, ``(cid:N)``, control characters; an alphabet that
  reads as words once shifted by one to three letters (a map out of step); letters outside every
  script the rest of the page writes in;
* **order**: glyph runs that overlap each other on one baseline, every glyph twice ("TThhee"),
  words run together into one long string;
* **reading as words**: the mean cost, in bits, of each pair of adjacent letters under a small
  letter-pair model (``letter_pair_cost``). Text in English, German, French, Spanish, Italian,
  Dutch, Portuguese, Polish, Czech or Swedish costs 3.5-4.4 bits a pair; a substituted or shifted
  alphabet 5-7; runs out of order or a poor OCR layer in between;
* **visibility**: text drawn invisible (render mode 3, or white where nothing dark lies under it)
  that no image lies under (hidden text; over an image it is an OCR layer, judged by the rest), and
  text outside the displayed page (MuPDF's extraction already keeps only the glyphs inside it; a
  span whose middle lies outside still fails its region).

``check_regions`` gives each region a ``Verdict``: ``sound`` (drafted by the text layer),
``broken`` (drafted by OCR of its crop) or ``unsure`` (the text layer's draft and OCR's both go in:
the OCR text as ``extra["second_draft"]``, which the decode takes as a second draft of the region).
Where the page's text as a whole fails, the page is drafted by OCR as a whole (its own layout
rather than boxes drawn around text that is not there). ``CheckedTextLayer`` is the text layer
drafter with the check and the OCR it calls on (``auto``'s drafter for pages with a text layer).

The letter-pair model (``_PAIR_BITS``) is 27 x 27 costs (a-z and the word boundary, accents folded,
-log2 of the probability rounded to whole bits, at most 15): the mean of ten languages' letter-pair
probabilities, each estimated with add-half smoothing from generic text (``letter_pair_table``:
the Python documentation's English, and the messages of a Linux system's gettext catalogs in the
nine other languages, 0.9-2.2 M characters each). Letters outside a-z after folding are left out of
the cost (CJK, Cyrillic and Greek text is judged by the other tests).

Worked example: "Sgd qduhdv dwsdmcdc sg‘s sgd" (the ToUnicode map one entry out of step) costs 6.5
bits a pair, and 3.7 once every letter moves one on ("The review extended that the"): in a region
of 24 pairs or more, ``broken``, "alphabet shifted by +1". "The review extended that the
statistical samples" costs 3.6 and "Die Verwaltung des Bezirks hat den Bericht geprüft" 3.8:
``sound``.

    verdicts = check_regions(page, regions)      # one Verdict per region, same order
    regions = CheckedTextLayer(ocr=...).draft(page)
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

import pymupdf

from core import tuning
from core.drafters.base import DrafterBase, Region

SOUND, UNSURE, BROKEN = "sound", "unsure", "broken"

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SYMBOLS = "^" + _LETTERS  # "^": the word boundary
#: -log2 P(second | first) for every pair of ``_SYMBOLS``, row by row, one hex digit each
#: (``letter_pair_table``; module docstring).
_PAIR_BITS = (
    "f4544456647555454854455688626555a76767635376934466787643789399935a38739f4674b9b5a43b693bb2374"
    "5a838c5845ccd86338872a8939779637e568588b7626755666867645386833477869634897458a2aa59928c4654d"
    "ab8b338972a663b957447c4563a8b9a33b992bb83aa6873ad6854b8f6b3564546599664534685448598a64279628"
    "9949687637c958489da82377839764b768636c554487d7a33896377739748638ba5558ac6832599299b3c985634d"
    "9675aab7b23954364739789649aa4357ac6828555666878654365a34555599643a6738774d849735c36549ac7935"
    "9997bab6bb4a97988971a5bab3376528693a775638a655578c66249493886495688458843588d6723a8928953b77"
    "8738f465588b5834556466846644375b343977896429892aab3ca89739e67979cb693298739853a869648d65a6b8"
    "9592574847983c886a63b9827a966813658597968764553d644597b98327772987388876488887596c56"
)
_PAIR = {(a, b): int(_PAIR_BITS[i * 27 + j], 16) for i, a in enumerate(_SYMBOLS) for j, b in enumerate(_SYMBOLS)}

_WORD = re.compile(r"[^\W\d_]+")
_TAG = re.compile(r"<[^>]*>")
_CID = re.compile(r"\(cid:\d+\)")
_BAD_CHAR = re.compile(r"[\ue000-\uf8ff\U000f0000-\U0010ffff\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: A letter beside a digit or a sign inside a word, as OCR leaves them ("1ndex", "h^ad", "Haddad,uren").
_MANGLED = re.compile(r"[^\W\d_][^\w\s'’-]|[^\w\s'’-][^\W\d_]|[^\W\d_]\d|\d[^\W\d_]")
#: ... but not in capitals and digits (H2O, COVID-19), addresses, or dotted names (core.tuning).
_CODE_LIKE = re.compile(r"[A-Z0-9-]+|\S+@\S+|\w+://\S+|\w+(\.\w+)+|\d+[a-z]{1,2}")
_EDGE = ".,;:!?()[]{}\"'“”‘’«»*"
#: Labels whose text is not running language (a listing, a page number, a figure's labels).
_NOT_PROSE = ("code", "page_number", "figure", "formula")


@dataclass
class Verdict:
    """What the check says of one region: ``state`` (sound, unsure, broken) and why."""

    state: str
    reason: str = ""

    @property
    def trusted(self) -> bool:
        return self.state == SOUND


# --- the letter-pair model -----------------------------------------------------------------------


def fold(text: str) -> str:
    """``text`` in small letters without accents ("Straße" -> "strasse", "été" -> "ete")."""
    text = unicodedata.normalize("NFKD", text.replace("ß", "ss").replace("ẞ", "SS"))
    return "".join(c for c in text if not unicodedata.combining(c)).lower()


def letter_pairs(text: str) -> list[tuple[str, str]]:
    """The adjacent letter pairs of ``text``'s words (word boundaries included) whose letters are
    a-z once folded; words of one letter and words with other letters are left out."""
    pairs = []
    for word in _WORD.findall(text):
        word = fold(word)
        if len(word) < 2 or any(c not in _LETTERS for c in word):
            continue
        padded = "^" + word + "^"
        pairs.extend(zip(padded, padded[1:]))
    return pairs


def letter_pair_cost(text: str) -> tuple[float | None, int]:
    """(mean bits of ``text``'s letter pairs under the model, number of pairs); None without pairs."""
    pairs = letter_pairs(text)
    if not pairs:
        return None, 0
    return sum(_PAIR[p] for p in pairs) / len(pairs), len(pairs)


def letter_pair_table(texts_by_language: dict[str, str]) -> str:
    """The model's table (``_PAIR_BITS``) from generic text of each language: each language's
    letter-pair probabilities with add-half smoothing, their mean, -log2 rounded, at most 15."""
    import math

    tables = []
    for text in texts_by_language.values():
        counts = Counter(letter_pairs(text))
        table = {}
        for a in _SYMBOLS:
            total = sum(counts[a, b] for b in _SYMBOLS) + 0.5 * len(_SYMBOLS)
            for b in _SYMBOLS:
                table[a, b] = (counts[a, b] + 0.5) / total
        tables.append(table)
    return "".join("%x" % min(15, round(-math.log2(sum(t[a, b] for t in tables) / len(tables))))
                   for a in _SYMBOLS for b in _SYMBOLS)


def _shift_letters(text: str, k: int) -> str:
    out = []
    for c in text:
        low = c.lower()
        if low in _LETTERS:
            moved = _LETTERS[(_LETTERS.index(low) + k) % 26]
            out.append(moved.upper() if c != low else moved)
        else:
            out.append(c)
    return "".join(out)


def alphabet_shift(text: str, cost: float | None = None) -> int | None:
    """The shift (-3..3 letters) that makes ``text`` read as words, or None: a shift that lowers
    its letter-pair cost by ``tuning.TEXT_CHECK_SHIFT_GAIN`` bits or more, to below
    ``tuning.TEXT_CHECK_UNSURE_COST``. A map one entry out of step moves most letters by one."""
    if cost is None:
        cost = letter_pair_cost(text)[0]
    if cost is None:
        return None
    best, best_cost = None, cost
    for k in (1, -1, 2, -2, 3, -3):
        moved = letter_pair_cost(_shift_letters(text, k))[0]
        if moved is not None and moved < best_cost:
            best, best_cost = k, moved
    if best is not None and best_cost <= cost - tuning.TEXT_CHECK_SHIFT_GAIN \
            and best_cost < tuning.TEXT_CHECK_UNSURE_COST:
        return best
    return None


# --- what the text says --------------------------------------------------------------------------


def _script(c: str) -> str:
    """A coarse script of letter ``c``: latin (a-z once folded), latin-ext (other Latin letters,
    mojibake's usual), cjk, cyrillic, greek, other."""
    o = ord(c)
    if o < 0x80 or (0xc0 <= o <= 0x17f and fold(c).isascii()):
        return "latin"
    if 0x0370 <= o <= 0x03ff:
        return "greek"
    if 0x0400 <= o <= 0x052f:
        return "cyrillic"
    if 0x2e80 <= o <= 0x9fff or 0xac00 <= o <= 0xd7af or 0xf900 <= o <= 0xfaff or 0x3040 <= o <= 0x30ff:
        return "cjk"
    if o <= 0x024f:
        return "latin-ext"
    return "other"


@dataclass
class TextSigns:
    """What a region's text says about its text layer (``text_signs``)."""

    chars: int = 0            # characters other than spaces
    bad: int = 0              # private-use, U+FFFD, controls; each ``(cid:N)`` counts as one
    cost: float | None = None  # ``letter_pair_cost``
    pairs: int = 0
    doubled: float = 0.0      # share of letter pairs inside words that repeat a letter
    glued: float = 0.0        # share of letters in words of ``tuning.TEXT_CHECK_GLUED_LETTERS`` or more
    mangled: float = 0.0      # share of words with a digit or a sign between letters ("1ndex", "h^ad")
    scripts: Counter = None   # letters per ``_script``


def text_signs(text: str) -> TextSigns:
    """``TextSigns`` of a region's draft text (HTML tags left out)."""
    text = _TAG.sub(" ", text)
    cids = len(_CID.findall(text))
    text = _CID.sub("\ufffd", text)
    chars = sum(1 for c in text if not c.isspace())
    signs = TextSigns(chars=chars, bad=len(_BAD_CHAR.findall(text)) if chars else 0)
    signs.bad = max(signs.bad, cids)
    signs.cost, signs.pairs = letter_pair_cost(text)
    words = _WORD.findall(text)
    inner = same = letters = long_letters = 0
    scripts: Counter = Counter()
    for word in words:
        letters += len(word)
        if len(word) >= tuning.TEXT_CHECK_GLUED_LETTERS:
            long_letters += len(word)
        low = word.lower()
        inner += len(low) - 1
        same += sum(1 for a, b in zip(low, low[1:]) if a == b)
        for c in word:
            scripts[_script(c)] += 1
    signs.doubled = same / inner if inner else 0.0
    signs.glued = long_letters / letters if letters else 0.0
    signs.scripts = scripts
    tokens = [t.strip(_EDGE) for t in text.split()]
    tokens = [t for t in tokens if len(t) >= 2 and any(c.isalpha() for c in t)]
    if tokens:
        signs.mangled = sum(1 for t in tokens if _MANGLED.search(t) and not _CODE_LIKE.fullmatch(t)) / len(tokens)
    return signs


# --- what the page's spans say -------------------------------------------------------------------


@dataclass
class Span:
    """One span of the text layer, its box in the page's displayed space."""

    bbox: tuple[float, float, float, float]
    chars: int
    hidden: bool      # drawn invisible, or white over nothing dark, and no image under it
    over_image: bool  # an image lies under it (an OCR layer over a scan)
    off_page: bool    # outside the displayed page
    line: int         # the text layer's line it belongs to
    text: str = ""


def page_spans(page) -> list[Span]:
    """The page's text spans (``Span``), boxes turned as the drafters' regions are."""
    fitz_page = page.fitz_page if hasattr(page, "fitz_page") else page
    data = fitz_page.get_text("dict", flags=pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP)
    images = [tuple(info["bbox"]) for info in fitz_page.get_image_info()]
    shown = tuple(fitz_page.rect)
    matrix = fitz_page.rotation_matrix
    turn = getattr(page, "turn", 0)
    if turn:
        matrix = matrix * page.turn_matrix
    coarse = None  # the page at ``_COARSE_DPI``, rendered where a span is white
    spans, line_number = [], 0
    for block in data["blocks"]:
        for line in block.get("lines", []):
            line_number += 1
            for s in line["spans"]:
                chars = sum(1 for c in s["text"] if not c.isspace())
                if not chars:
                    continue
                x0, y0, x1, y1 = s["bbox"]
                cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                over_image = any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in images)
                invisible = s.get("alpha", 255) == 0
                if not invisible and all((s["color"] >> k) & 0xFF >= 0xF0 for k in (0, 8, 16)):
                    if coarse is None:
                        coarse = fitz_page.get_pixmap(dpi=_COARSE_DPI, colorspace=pymupdf.csGRAY, alpha=False)
                    invisible = _on_white(coarse, fitz_page.rect, s["bbox"])
                off = not (shown[0] <= cx <= shown[2] and shown[1] <= cy <= shown[3])
                box = tuple(pymupdf.Rect(s["bbox"]) * matrix) if (fitz_page.rotation or turn) else (x0, y0, x1, y1)
                spans.append(Span(box, chars, invisible and not over_image, over_image, off, line_number,
                                  s["text"].strip()))
    return spans


_COARSE_DPI = 24


def _on_white(pix, page_rect, bbox) -> bool:
    """Whether white text in ``bbox`` lies on white: in a coarse render of the page (``pix``, the
    text drawn too) its box is all but white. Asked only of white spans, which are rare."""
    scale = pix.width / max(page_rect.width, 1e-6)
    x0 = max(0, int((bbox[0] - page_rect.x0) * scale))
    x1 = min(pix.width, int((bbox[2] - page_rect.x0) * scale) + 1)
    y0 = max(0, int((bbox[1] - page_rect.y0) * scale))
    y1 = min(pix.height, int((bbox[3] - page_rect.y0) * scale) + 1)
    if x1 <= x0 or y1 <= y0:
        return False
    samples, stride = pix.samples, pix.stride
    values = [samples[y * stride + x] for y in range(y0, y1) for x in range(x0, x1)]
    return sum(values) / len(values) >= 240


def _overlapping_chars(spans: list[Span]) -> int:
    """Characters of spans that lie over a span of another line on the same baseline: glyph runs
    drawn on top of each other (two lines' runs interleaved by their writer). The same text drawn
    twice (a shadow, a bold made by drawing again) is left to the drafter."""
    by_middle = sorted(spans, key=lambda s: s.bbox[1] + s.bbox[3])
    over: set[int] = set()
    for i, a in enumerate(by_middle):
        ha = a.bbox[3] - a.bbox[1]
        for b in by_middle[i + 1:]:
            hb = b.bbox[3] - b.bbox[1]
            height = min(ha, hb)
            if (b.bbox[1] + b.bbox[3]) - (a.bbox[1] + a.bbox[3]) >= max(ha, hb):
                break  # sorted by middle: no later span shares a's baseline
            if b.line == a.line or b.text == a.text:
                continue
            w = min(a.bbox[2], b.bbox[2]) - max(a.bbox[0], b.bbox[0])
            h = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
            if w > 0.5 * min(a.bbox[2] - a.bbox[0], b.bbox[2] - b.bbox[0]) and h > 0.5 * height \
                    and abs(a.bbox[1] + a.bbox[3] - b.bbox[1] - b.bbox[3]) < 0.5 * height:
                over.add(id(a))
                over.add(id(b))
    return sum(s.chars for s in spans if id(s) in over)


def _inside(span: Span, bbox) -> bool:
    x = (span.bbox[0] + span.bbox[2]) / 2
    y = (span.bbox[1] + span.bbox[3]) / 2
    return bbox[0] - 1 <= x <= bbox[2] + 1 and bbox[1] - 1 <= y <= bbox[3] + 1


# --- verdicts --------------------------------------------------------------------------------------


def judge_text(signs: TextSigns, label: str = "text", ocr_layer: bool = False,
               page_scripts: Counter | None = None, text: str = "") -> Verdict:
    """The verdict on a region from its text's signs alone. ``ocr_layer``: its text is an
    invisible layer over an image (a reading of pixels: judged stricter). ``page_scripts``: the
    letters per script of the rest of the page. ``text``: the region's text (for the shift test)."""
    if signs.chars and signs.bad >= max(1, tuning.TEXT_CHECK_BAD_CHAR_SHARE * signs.chars):
        return Verdict(BROKEN, "glyphs without a Unicode map (private-use, U+FFFD, cid)")
    letters = sum(signs.scripts.values()) if signs.scripts else 0
    if page_scripts and letters >= tuning.TEXT_CHECK_MIN_PAIRS:
        script, count = signs.scripts.most_common(1)[0]
        elsewhere = sum(page_scripts.values())
        if count >= 0.5 * letters and elsewhere >= 2 * tuning.TEXT_CHECK_MIN_PAIRS \
                and page_scripts[script] < tuning.TEXT_CHECK_FOREIGN_SCRIPT_SHARE * elsewhere:
            return Verdict(UNSURE if script in ("latin", "cjk") else BROKEN,
                           f"{script} letters where the rest of the page has almost none")
    if label in _NOT_PROSE or signs.pairs < tuning.TEXT_CHECK_MIN_PAIRS:
        return Verdict(SOUND)
    if signs.doubled >= tuning.TEXT_CHECK_DOUBLED_SHARE:
        return Verdict(BROKEN, f"glyphs drawn twice ({signs.doubled:.0%} of letter pairs doubled)")
    cost = signs.cost
    if cost >= tuning.TEXT_CHECK_UNSURE_COST and text:
        k = alphabet_shift(text, cost)
        if k is not None:
            return Verdict(BROKEN, f"alphabet shifted by {k:+d} (a font's Unicode map out of step)")
    if cost >= tuning.TEXT_CHECK_BROKEN_COST:
        return Verdict(BROKEN, f"does not read as words ({cost:.1f} bits a letter pair)")
    if signs.glued >= tuning.TEXT_CHECK_GLUED_SHARE:
        return Verdict(BROKEN, f"words run together ({signs.glued:.0%} of letters in long runs)")
    if ocr_layer and signs.mangled >= tuning.TEXT_CHECK_OCR_LAYER_MANGLED_BROKEN:
        return Verdict(BROKEN, f"a poor OCR layer ({signs.mangled:.0%} of words mangled)")
    if ocr_layer and signs.mangled >= tuning.TEXT_CHECK_OCR_LAYER_MANGLED:
        return Verdict(UNSURE, f"an OCR layer with mangled words ({signs.mangled:.0%})")
    unsure = tuning.TEXT_CHECK_OCR_LAYER_COST if ocr_layer else tuning.TEXT_CHECK_UNSURE_COST
    if cost >= unsure:
        return Verdict(UNSURE, f"reads poorly as words ({cost:.1f} bits a letter pair)")
    return Verdict(SOUND)


def check_regions(page, regions: list[Region], spans: list[Span] | None = None) -> list[Verdict]:
    """One ``Verdict`` per region of ``regions`` (the text layer's drafts of ``page``), in order."""
    spans = page_spans(page) if spans is None else spans
    signs = [text_signs(r.text) for r in regions]
    total = Counter()
    for s in signs:
        total.update(s.scripts)
    verdicts = []
    for region, own in zip(regions, signs):
        inside = [s for s in spans if _inside(s, region.bbox)]
        chars = sum(s.chars for s in inside)
        if chars:
            if sum(s.chars for s in inside if s.hidden) >= tuning.TEXT_CHECK_HIDDEN_SHARE * chars:
                verdicts.append(Verdict(BROKEN, "invisible text (render mode 3 or white on white)"))
                continue
            if sum(s.chars for s in inside if s.off_page) >= tuning.TEXT_CHECK_HIDDEN_SHARE * chars:
                verdicts.append(Verdict(BROKEN, "text outside the displayed page"))
                continue
            overlapping = _overlapping_chars(inside) if len(inside) > 1 else 0
            if overlapping >= tuning.TEXT_CHECK_OVERLAP_SHARE * chars:
                verdicts.append(Verdict(BROKEN, "glyph runs drawn over each other (out of order)"))
                continue
        ocr_layer = bool(inside) and sum(s.chars for s in inside if s.over_image) >= 0.5 * chars
        verdicts.append(judge_text(own, region.label, ocr_layer, total - own.scripts, region.text))
    return verdicts


def page_verdict(regions: list[Region], verdicts: list[Verdict], ocr_layer: bool = False) -> Verdict:
    """The page as a whole: broken where regions holding at least ``tuning.TEXT_CHECK_PAGE_SHARE``
    of its characters are broken (their reason, the most common one), else sound. ``ocr_layer``:
    the page's text lies over an image (a scan's OCR layer, a reading of the pixels by some OCR):
    broken where regions holding ``tuning.TEXT_CHECK_OCR_LAYER_PAGE_SHARE`` of it are broken or
    doubted, as our own OCR of the whole page reads it with a layout made for it."""
    sizes = [len(r.text) for r in regions]
    total = sum(sizes) or 1
    broken = [(v.reason, n) for v, n in zip(verdicts, sizes) if v.state == BROKEN]
    doubted = [(v.reason, n) for v, n in zip(verdicts, sizes) if v.state != SOUND]
    if ocr_layer and sum(n for _, n in doubted) >= tuning.TEXT_CHECK_OCR_LAYER_PAGE_SHARE * total:
        broken = doubted
    if broken and sum(n for _, n in broken) >= min(tuning.TEXT_CHECK_PAGE_SHARE, tuning.TEXT_CHECK_OCR_LAYER_PAGE_SHARE
                                                   if ocr_layer else 1.0) * total:
        reasons = Counter()
        for reason, n in broken:
            reasons[reason.split(" (")[0]] += n
        return Verdict(BROKEN, reasons.most_common(1)[0][0])
    return Verdict(SOUND)


# --- the drafter ----------------------------------------------------------------------------------

TEXT_LAYER_REASON = "text layer: passed the check"


class CheckedTextLayer(DrafterBase):
    """The text layer's drafts, checked (``check_regions``): a broken region is drafted by OCR of
    its crop, an unsure one keeps its draft and gets OCR's as ``extra["second_draft"]``; a page
    whose text layer fails as a whole is drafted by OCR. ``ocr``: a callable that gives the OCR
    drafter (``RapidOCRDrafter``), called only where a region needs it. Every region says which
    source drafted it and why (``source``, ``extra["source_reason"]``)."""

    name = "textlayer"

    def __init__(self, ocr, text_layer=None):
        if text_layer is None:
            from core.drafters.textlayer import TextLayerDrafter
            text_layer = TextLayerDrafter()
        self.text_layer = text_layer
        self._ocr = ocr

    def draft(self, page) -> list[Region]:
        regions = self.text_layer.draft(page)
        if not regions:
            return regions
        spans = page_spans(page)
        verdicts = check_regions(page, regions, spans)
        whole = page_verdict(regions, verdicts, ocr_layer=sum(s.chars for s in spans if s.over_image)
                             >= 0.5 * sum(s.chars for s in spans))
        if whole.state == BROKEN:
            ocr_regions = self._ocr().draft(page)
            for region in ocr_regions:
                _said(region, f"OCR: the page's text layer fails ({whole.reason})")
            return ocr_regions
        failing = sum(len(r.text) for r, v in zip(regions, verdicts) if v.state != SOUND)
        if failing >= tuning.TEXT_CHECK_PAGE_SHARE * sum(len(r.text) for r in regions):
            # most of the page's text layer is in doubt: its regions that passed get OCR's draft too
            verdicts = [Verdict(UNSURE, "most of the page's text layer fails") if v.state == SOUND
                        and r.label not in _NOT_PROSE else v for r, v in zip(regions, verdicts)]
        need = [r for r, v in zip(regions, verdicts) if v.state != SOUND]
        texts = self._ocr_texts(page, need) if need else {}
        out = []
        for region, verdict in zip(regions, verdicts):
            if verdict.state == SOUND:
                out.append(_said(region, TEXT_LAYER_REASON))
                continue
            text = texts.get(id(region), "")
            if verdict.state == BROKEN and text:
                region.text, region.source = text, "rapidocr"
                out.append(_said(region, f"OCR of the crop: text layer fails ({verdict.reason})"))
            elif verdict.state == BROKEN:  # OCR reads nothing there: the text layer's draft stays
                out.append(_said(region, f"text layer kept: it fails ({verdict.reason}) and OCR reads nothing there"))
            else:
                if text and text != region.text:
                    region.extra = {**region.extra, "second_draft": text}
                out.append(_said(region, f"text layer, OCR of the crop beside it: unsure ({verdict.reason})"))
        return out

    def _ocr_texts(self, page, regions: list[Region]) -> dict[int, str]:
        """OCR's text of each of ``regions`` (by ``id``): read on each one's crop, or where
        ``tuning.TEXT_CHECK_PAGE_OCR_REGIONS`` or more need it, on the page once, each region
        taking the lines whose middle lies in its box."""
        import numpy as np

        ocr = self._ocr()
        pad = tuning.TEXT_CHECK_CROP_PAD
        if len(regions) >= tuning.TEXT_CHECK_PAGE_OCR_REGIONS:
            image = page.render(dpi=ocr.ocr_dpi(page))
            lines, _ = ocr.ocr_lines(np.asarray(image), page.last_render_scale)
            out = {}
            for region in regions:
                x0, y0, x1, y1 = region.bbox
                inside = [ln for ln in lines if x0 - pad <= (ln.bbox[0] + ln.bbox[2]) / 2 <= x1 + pad
                          and y0 - pad <= (ln.bbox[1] + ln.bbox[3]) / 2 <= y1 + pad]
                out[id(region)] = _lines_text(inside, region, ocr.name, page.width, page.height)
            return out
        out = {}
        for region in regions:
            try:
                image = page.render_region(region.bbox, dpi=ocr.ocr_dpi(page), pad_pt=pad)
            except ValueError:
                continue
            scale = page.last_render_scale
            lines, _ = ocr.ocr_lines(np.asarray(image), scale)
            out[id(region)] = _lines_text(lines, region, ocr.name, image.width / scale, image.height / scale)
        return out


def _lines_text(lines, region: Region, source: str, width: float, height: float) -> str:
    """OCR ``lines`` of one region as its draft: laid out as the OCR drafter lays out a page's,
    a heading keeping the text layer's level."""
    from core.drafters.regions import lines_to_regions

    if not lines:
        return ""
    texts = [r.text for r in lines_to_regions(lines, [], width, height, source=source,
                                               size_tolerance=tuning.OCR_SIZE_TOLERANCE)]
    text = "\n\n".join(t for t in texts if t)
    if region.label == "title":
        marks = re.match(r"#+ ", region.text)
        text = (marks.group(0) if marks else "") + re.sub(r"^#+ ", "", text).replace("\n\n", " ")
    return text


def _said(region: Region, reason: str) -> Region:
    region.extra = {**region.extra, "source_reason": reason}
    return region
