"""Generated pages whose text layer is broken, each beside the same page with a sound one.

    python -m tools.bench.broken_layers --out brokenset      # seed 29, 14 pages of each class

writes ``brokenset/broken/pairs/CLASS_KIND_NNN.pdf`` and ``brokenset/sound/pairs/KIND_NNN.pdf`` (the
generated scan set's born-digital page, ``tools.bench.scan_set``), each with the page's reference
Markdown (the generator's own: the real text). The class is the file name up to ``_``, so
``hsd bench brokenset/broken`` reports each class as a kind.

The classes are what produces a broken text layer in real PDFs:

* ``shifted``: the page as typeset, its fonts' ToUnicode maps off by one (each glyph code mapped to
  the character of the code before it): the page shows "Dolma: an Open Corpus", the text layer says
  "Cnkl`9 `m Nodm Bnqotr". Subset fonts whose map was written one entry out of step do this.
* ``substituted``: the same fonts with their letters' maps permuted (a font that names its glyphs
  by number, matched to the wrong characters): the text layer is a substitution cipher of the page.
* ``scrambled``: the page as an image with an invisible text layer whose glyph runs are drawn out of
  order: two lines' pieces interleaved on one baseline, a line's pieces shuffled, or every glyph
  drawn twice, mostly without the spaces (a writer that positions each run and never emits a space).
* ``poorocr``: the page scanned (``scan_set.scanned``) with an invisible OCR layer whose lines carry
  the usual OCR confusions (``rn``/``m``, ``l``/``1``, ``e``/``c``, lost and merged words) at a rate
  drawn per page: an old book digitised with a poor OCR engine.

A control, ``cleanocr`` (``--classes cleanocr``), is the scan with an exact invisible OCR layer: a
sound layer over an image, which the check (``core.drafters.textlayer_check``) must pass.

Everything follows from the seed; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import pymupdf

from tools.bench import scan_set

CLASSES = ("shifted", "substituted", "scrambled", "poorocr")
#: A control that is not broken: the scan with an exact invisible OCR layer (the check must pass it).
CONTROLS = ("cleanocr",)
#: Latin-script kinds of the scan set (the classes above break a Latin alphabet's map).
KINDS = ("article1", "article2", "article3", "report", "slide", "gazette", "newspaper")
PAGES_PER_KIND = 2

_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
_LOWER = "abcdefghijklmnopqrstuvwxyz"


# --- fonts whose ToUnicode map is wrong ----------------------------------------------------------


def _cmap_entries(cmap: str) -> dict[int, str]:
    """code -> text of a ToUnicode CMap's ``bfchar`` and ``bfrange`` entries (single UTF-16 units)."""
    out: dict[int, str] = {}
    for body in re.findall(r"beginbfchar(.*?)endbfchar", cmap, re.S):
        for code, dst in re.findall(r"<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>", body):
            out[int(code, 16)] = bytes.fromhex(dst).decode("utf-16-be", "replace")
    for body in re.findall(r"beginbfrange(.*?)endbfrange", cmap, re.S):
        for lo, hi, dst in re.findall(r"<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>", body):
            start = int(dst, 16)
            for k, code in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                out[code] = chr(start + k)
    return out


def _cmap_text(entries: dict[int, str]) -> str:
    """A ToUnicode CMap (two-byte codes) that maps ``entries``."""
    items = sorted(entries.items())
    sections = []
    for k in range(0, len(items), 100):
        chunk = items[k:k + 100]
        lines = "\n".join(f"<{code:04x}> <{text.encode('utf-16-be').hex()}>" for code, text in chunk)
        sections.append(f"{len(chunk)} beginbfchar\n{lines}\nendbfchar")
    return ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo <</Registry(Adobe)/Ordering(UCS)/Supplement 0>> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<0000> <FFFF>\n"
            "endcodespacerange\n" + "\n".join(sections) + "\nendcmap\nCMapName currentdict /CMap defineresource pop\n"
            "end\nend\n")


def shifted_map(entries: dict[int, str]) -> dict[int, str]:
    """Each code mapped to the text of the code before it (spaces keep theirs)."""
    codes = sorted(entries)
    out = dict(entries)
    for before, code in zip(codes, codes[1:]):
        if not entries[code].isspace() and not entries[before].isspace():
            out[code] = entries[before]
    return out


def substituted_map(entries: dict[int, str], rng: random.Random) -> dict[int, str]:
    """The letters a-z permuted (capitals as their small letters)."""
    shuffled = list(_LOWER)
    rng.shuffle(shuffled)
    swap = dict(zip(_LOWER, shuffled))
    swap.update({a.upper(): b.upper() for a, b in zip(_LOWER, shuffled)})
    return {code: swap.get(text, text) for code, text in entries.items()}


def with_wrong_maps(pdf: bytes, remap) -> bytes:
    """``pdf`` with every font's ToUnicode map replaced by ``remap(entries)``: the page looks the
    same, its text layer reads otherwise."""
    with pymupdf.open("pdf", pdf) as doc:
        for xref, *_ in doc[0].get_fonts():
            kind, value = doc.xref_get_key(xref, "ToUnicode")
            if kind != "xref":
                continue
            stream = int(value.split()[0])
            entries = _cmap_entries(doc.xref_stream(stream).decode("latin-1"))
            doc.update_stream(stream, _cmap_text(remap(entries)).encode("latin-1"))
        return doc.tobytes(garbage=3, deflate=True, no_new_id=True)


# --- an image with an invisible text layer -------------------------------------------------------


def text_lines(pdf: bytes) -> list[tuple[tuple[float, float], float, str, int]]:
    """The page's lines as (origin, font size, text, block number), in the text layer's order."""
    out = []
    with pymupdf.open("pdf", pdf) as doc:
        for number, block in enumerate(doc[0].get_text("dict", flags=_FLAGS)["blocks"]):
            for line in block.get("lines", []):
                spans = [s for s in line["spans"] if s["text"].strip()]
                if spans and abs(line["dir"][1]) < 0.2:
                    text = "".join(s["text"] for s in line["spans"]).strip()
                    out.append((tuple(spans[0]["origin"]), spans[0]["size"], text, number))
    return out


def _pieces(text: str, rng: random.Random, keep_spaces: bool) -> list[str]:
    """``text`` cut into runs of 2-7 characters (spaces dropped unless ``keep_spaces``)."""
    if not keep_spaces:
        text = text.replace(" ", "")
    out, i = [], 0
    while i < len(text):
        k = rng.randint(2, 7)
        out.append(text[i:i + k])
        i += k
    return out


def scrambled_lines(lines, rng: random.Random) -> list[tuple[tuple[float, float], float, str]]:
    """The lines as an out-of-order writer leaves them, one way per block: two lines' runs
    interleaved on the first line's baseline, a line's runs shuffled, or every glyph twice."""
    out = []
    modes = {}
    i = 0
    while i < len(lines):
        origin, size, text, block = lines[i]
        mode = modes.setdefault(block, rng.choice(("interleave", "interleave", "shuffle", "double")))
        keep_spaces = rng.random() < 0.3
        if mode == "interleave" and i + 1 < len(lines) and lines[i + 1][3] == block:
            a, b = _pieces(text, rng, keep_spaces), _pieces(lines[i + 1][2], rng, keep_spaces)
            mixed = [p for pair in zip(a, b) for p in pair] + a[len(b):] + b[len(a):]
            out.append((origin, size, "".join(mixed)))
            i += 2
            continue
        if mode == "double":
            out.append((origin, size, "".join(c + c if not c.isspace() else c for c in text)))
        else:
            pieces = _pieces(text, rng, keep_spaces)
            for k in range(0, len(pieces) - 1, 2):
                if rng.random() < 0.6:
                    pieces[k], pieces[k + 1] = pieces[k + 1], pieces[k]
            out.append((origin, size, "".join(pieces)))
        i += 1
    return out


#: What an OCR engine reads for a glyph (or two) it is unsure of.
_CONFUSIONS = {"rn": "m", "m": "rn", "l": "1", "i": "l", "e": "c", "c": "e", "o": "0", "h": "b", "n": "u",
               "u": "n", "a": "o", "t": "f", "f": "t", "S": "5", "B": "8", "I": "l", "cl": "d", "d": "cl",
               "v": "y", "s": "x", "g": "q", "y": "v", "E": "F", "O": "Q"}


def ocr_noise(text: str, rate: float, rng: random.Random) -> str:
    """``text`` as a poor OCR engine reads it: confusions, lost letters and spaces at ``rate``."""
    out, i = [], 0
    while i < len(text):
        if rng.random() < rate:
            two = text[i:i + 2]
            if two in _CONFUSIONS:
                out.append(_CONFUSIONS[two])
                i += 2
                continue
            c = text[i]
            roll = rng.random()
            if c in _CONFUSIONS and roll < 0.6:
                out.append(_CONFUSIONS[c])
            elif roll < 0.8:
                pass  # lost (a space lost merges two words)
            else:
                out.append(rng.choice(".,'-~^") + c)
            i += 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def image_with_layer(page_pdf: bytes, lines, dpi: int | None = None) -> bytes:
    """A page that shows ``page_pdf`` as one image (rendered at ``dpi``; None: ``page_pdf`` is
    already an image-only page, kept) with ``lines`` as its invisible text layer."""
    with pymupdf.open("pdf", page_pdf) as src:
        rect = src[0].rect
        if dpi is not None:
            pix = src[0].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            with pymupdf.open() as out:
                page = out.new_page(width=rect.width, height=rect.height)
                page.insert_image(page.rect, stream=pix.tobytes("jpeg", jpg_quality=80))
                _write_invisible(page, lines)
                return out.tobytes(garbage=3, deflate=True, no_new_id=True)
        _write_invisible(src[0], lines)
        return src.tobytes(garbage=3, deflate=True, no_new_id=True)


def _write_invisible(page, lines) -> None:
    for origin, size, text in lines:
        if text.strip():
            page.insert_text(origin, text, fontsize=size, fontname="helv", render_mode=3)


# --- the set --------------------------------------------------------------------------------------


def make_broken_page(cls: str, kind: str, index: int, seed: int = scan_set.DEFAULT_SEED) -> tuple[bytes, bytes, str]:
    """(broken PDF, the same page born-digital, reference Markdown) of one page of class ``cls``."""
    born, scan, _layout, reference = scan_set.make_page(kind, index, seed)
    rng = random.Random(f"{seed}:{cls}:{kind}:{index}")
    if cls == "shifted":
        broken = with_wrong_maps(born, shifted_map)
    elif cls == "substituted":
        broken = with_wrong_maps(born, lambda entries: substituted_map(entries, rng))
    elif cls == "scrambled":
        broken = image_with_layer(born, scrambled_lines(text_lines(born), rng), dpi=200)
    elif cls in ("poorocr", "cleanocr"):
        rate = rng.uniform(0.08, 0.25) if cls == "poorocr" else 0.0
        lines = [(origin, size, ocr_noise(text, rate, rng)) for origin, size, text, _ in text_lines(born)]
        broken = image_with_layer(scan, lines)
    else:
        raise ValueError(f"unknown class {cls!r}; choose one of: {', '.join(CLASSES + CONTROLS)}")
    return broken, born, reference


def make_broken_set(out: Path, seed: int = scan_set.DEFAULT_SEED, per_kind: int = PAGES_PER_KIND,
                    classes: tuple[str, ...] = CLASSES, kinds: tuple[str, ...] = KINDS, log=None) -> list[str]:
    """Write the set into ``out`` (module docstring); returns the broken pages' names."""
    out = Path(out)
    for sub in ("broken/pairs", "sound/pairs"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    names = []
    for cls in classes:
        for kind in kinds:
            for i in range(per_kind):
                twin = scan_set.page_name(kind, i)
                broken, born, reference = make_broken_page(cls, kind, i, seed)
                name = f"{cls}_{twin}"
                (out / "broken" / "pairs" / f"{name}.pdf").write_bytes(broken)
                (out / "broken" / "pairs" / f"{name}.md").write_text(reference, encoding="utf-8")
                (out / "sound" / "pairs" / f"{twin}.pdf").write_bytes(born)
                (out / "sound" / "pairs" / f"{twin}.md").write_text(reference, encoding="utf-8")
                names.append(name)
        if log:
            log(f"{cls}: {len(kinds) * per_kind} pages")
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write generated pages with broken text layers and their sound twins")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=scan_set.DEFAULT_SEED)
    parser.add_argument("--per-kind", type=int, default=PAGES_PER_KIND)
    parser.add_argument("--classes", default=",".join(CLASSES))
    args = parser.parse_args(argv)
    names = make_broken_set(Path(args.out), args.seed, args.per_kind, tuple(args.classes.split(",")), log=print)
    print(f"wrote {len(names)} pages to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
