"""Make a benchmark corpus from Markdown documents: ``pairs/NAME.pdf`` with its reference ``NAME.md``.

``hsd bench`` reads any folder in ``../shared/corpus``'s layout. This module writes such a folder from
Markdown the engine was never tuned on, so the benchmark's targets can be checked beyond the corpus
they were reached on. For each source:

* ``born_NAME.pdf``: the Markdown typeset by PyMuPDF's Story (HTML and CSS, A4), so the text layer
  holds the reference's words in a layout none of our drafters has seen;
* ``scan_NAME.pdf`` (``scans=True``): the same pages as an image-only PDF (rendered at ``scan_dpi``,
  JPEG), which only OCR can draft.

The reference is what a document reader should write for the typeset pages: headings, paragraphs,
lists, code blocks and pipe tables as in the source; links keep their text; images, raw HTML and
rules are dropped, because they are not typeset. Code lines are wrapped at ``CODE_WIDTH`` characters
in both, because a ``<pre>`` line wider than the page is clipped. A source may be a ``.md`` file or a
wheel's ``METADATA`` (its long description); long sources are cut at a block boundary after
``max_chars`` characters of reference.

    python -m tools.bench.make_corpus .../site-packages/tabulate-*.dist-info/METADATA README.md --scans --out c

then ``hsd bench c``. The generated scan set is ``python -m tools.bench.scan_set``.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from core.commands.arguments import whole_number
from core.errors import HSDError, one_line

#: Characters per code line before it wraps (A4 at 9 pt monospace holds about 85).
CODE_WIDTH = 80
PAGE_CSS = """
body { font-family: sans-serif; font-size: 10pt; line-height: 1.3; }
h1 { font-size: 18pt; } h2 { font-size: 15pt; } h3 { font-size: 12pt; } h4, h5, h6 { font-size: 10pt; }
pre, code { font-family: monospace; font-size: 9pt; }
td, th { padding: 2pt 6pt; text-align: left; }
"""
_MARGIN = 56.0  # points


class CorpusSourceError(HSDError):
    """A source that cannot become a corpus document (unreadable, not Markdown, nothing typeset)."""


@dataclass
class MarkdownDocument:
    """One source, ready to typeset: ``html`` for Story and ``reference`` for the benchmark."""
    name: str
    html: str
    reference: str


# --- reading sources ---------------------------------------------------------------------------


def source_markdown(path: Path) -> str:
    """The Markdown of ``path``: a ``.md`` file's text, or the long description of a ``METADATA``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusSourceError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    if text.startswith("Metadata-Version:"):
        header, _, body = text.partition("\n\n")
        kind = re.search(r"^Description-Content-Type:\s*(\S+)", header, re.MULTILINE)
        if kind and "markdown" not in kind.group(1):
            raise CorpusSourceError(f"{path}: its description is {kind.group(1)}, not Markdown")
        text = body
    if not text.strip():
        raise CorpusSourceError(f"{path}: no Markdown in it")
    return text


def source_name(path: Path) -> str:
    """A file-name stem without underscores (the benchmark reads the kind up to the first ``_``):
    ``tabulate-0.10.0.dist-info/METADATA`` -> ``tabulate``, ``docs/User_Guide.md`` -> ``User-Guide``."""
    stem = path.parent.name.split("-")[0] if path.name == "METADATA" else path.stem
    return re.sub(r"[^A-Za-z0-9]+", "-", stem).strip("-") or "document"


# --- Markdown -> (HTML, reference) -----------------------------------------------------------------


def _parser():
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        raise CorpusSourceError("making a corpus needs markdown-it-py (pip install 'hsd-studio[app]')") from None
    # html=True only so raw HTML arrives as html_* tokens, which are then dropped (never rendered).
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _typeset_tokens(tokens: list) -> list:
    """Drop what is not typeset (raw HTML, images, rules) and wrap code lines at ``CODE_WIDTH``."""
    kept = []
    for tok in tokens:
        if tok.type in ("html_block", "hr"):
            continue
        if tok.type in ("fence", "code_block"):
            tok.content = "".join(_wrap_code_line(line) for line in tok.content.splitlines(keepends=True))
        if tok.children:
            tok.children = [c for c in tok.children if c.type not in ("html_inline", "image")]
        kept.append(tok)
    return kept


def _wrap_code_line(line: str) -> str:
    body = line.rstrip("\n")
    if len(body) <= CODE_WIDTH:
        return line
    return "\n".join(textwrap.wrap(body, CODE_WIDTH, drop_whitespace=False, break_on_hyphens=False)) + "\n"


def _inline_markdown(children) -> str:
    """Inline tokens as Markdown: emphasis and code marks kept, links as their text, and a pair of
    marks left around nothing (bold around a dropped image) removed."""
    marks = {"strong_open": "**", "strong_close": "**", "em_open": "*", "em_close": "*",
             "s_open": "~~", "s_close": "~~"}
    out: list[str] = []
    for child in children or []:
        if child.type == "text":
            out.append(child.content)
        elif child.type == "code_inline":
            out.append(f"`{child.content}`")
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" " if child.type == "softbreak" else "\n")
        elif child.type.endswith("_close") and child.type in marks and out and out[-1] == ("open", child.type):
            out.pop()
        elif child.type in marks:
            out.append(("open", child.type.replace("_open", "_close")) if child.type.endswith("_open")
                       else marks[child.type])
        # link_open / link_close: the link's text alone
    text = "".join(marks[item[1]] if isinstance(item, tuple) else item for item in out)
    return re.sub(r" {2,}", " ", text).strip()  # a dropped image leaves its spaces


def reference_markdown(tokens: list) -> str:
    """The reference a reader should write for typeset ``tokens`` (markdown-it block tokens).

    Walks the block tokens once, keeping a stack of open lists for item prefixes (``- ``, ``3. ``,
    two spaces per nesting level) and collecting table rows into a pipe table."""
    blocks: list[str] = []
    in_list: list[bool] = []  # per block: it follows an item of the same list
    lists: list[list] = []  # [ordered, next number]
    prefix = ""
    table: list[list[str]] | None = None
    heading = 0
    last_was_item = False
    for tok in tokens:
        kind = tok.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([kind == "ordered_list_open", int(tok.attrs.get("start", 1) or 1)])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            prefix = ""
            last_was_item = last_was_item and bool(lists)
        elif kind == "list_item_open":
            ordered, number = lists[-1]
            prefix = "  " * (len(lists) - 1) + (f"{number}. " if ordered else "- ")
            lists[-1][1] += 1
        elif kind == "heading_open":
            heading = int(tok.tag[1])
        elif kind == "table_open":
            table = []
        elif kind == "tr_open" and table is not None:
            table.append([])
        elif kind == "inline" and table is not None:
            table[-1].append(_inline_markdown(tok.children).replace("|", "\\|"))
        elif kind == "table_close" and table:
            header, *rows = table
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            blocks.append("\n".join(lines))
            in_list.append(False)
            table, last_was_item = None, False
        elif kind in ("fence", "code_block"):
            if tok.content.strip():
                blocks.append(f"```\n{tok.content.rstrip()}\n```")
                in_list.append(False)
                last_was_item = False
        elif kind == "inline":
            text = _inline_markdown(tok.children)
            if text:
                if heading:
                    text = "#" * heading + " " + text
                in_list.append(bool(lists) and last_was_item)
                last_was_item = bool(lists)
                blocks.append(prefix + text)
            prefix = "  " * len(lists) if prefix else ""  # a list item's later paragraphs
            heading = 0
    # A list's items are one block, one line each (a reader writes a tight list).
    text = blocks[0] if blocks else ""
    for block, tight in zip(blocks[1:], in_list[1:]):
        text += ("\n" if tight else "\n\n") + block
    return text + "\n"


def markdown_document(name: str, markdown: str, max_chars: int = 12000) -> MarkdownDocument:
    """Typeset-ready HTML and the reference for ``markdown``, cut after ``max_chars`` of reference."""
    md = _parser()
    tokens = _typeset_tokens(md.parse(markdown))
    kept, size = [], 0
    for group in _top_level_blocks(tokens):  # each block's reference stands alone: sizes add up
        kept += group
        size += len(reference_markdown(group)) + 1
        if size >= max_chars:
            break
    reference = reference_markdown(kept)
    if not reference.strip():
        raise CorpusSourceError(f"{name}: nothing in it would be typeset")
    return MarkdownDocument(name, md.renderer.render(kept, md.options, {}), reference)


def _top_level_blocks(tokens: list) -> list[list]:
    """``tokens`` grouped into top-level blocks (an opening token through its closing one)."""
    groups, depth = [], 0
    for tok in tokens:
        if depth == 0:
            groups.append([])
        groups[-1].append(tok)
        depth += tok.nesting
    return groups


# --- writing PDFs ------------------------------------------------------------------------------


def typeset_pdf(html: str, path: Path) -> int:
    """Typeset ``html`` on A4 pages into ``path``; returns the page count."""
    import pymupdf

    story = pymupdf.Story(html=html, user_css=PAGE_CSS)
    page = pymupdf.paper_rect("a4")
    where = page + (_MARGIN, _MARGIN, -_MARGIN, -_MARGIN)
    writer = pymupdf.DocumentWriter(str(path))
    pages, more = 0, True
    while more:
        device = writer.begin_page(page)
        more, _ = story.place(where)
        story.draw(device)
        writer.end_page()
        pages += 1
    writer.close()
    return pages


def unextractable_characters(reference: str, pdf: Path) -> set[str]:
    """Characters of ``reference`` that the typeset ``pdf``'s text layer does not give back.

    Story falls back to fonts without a Unicode map for some symbols (heavy box drawing, say); their
    glyphs extract as U+FFFD or NUL, so neither a drafter nor a reader could write them. The caller
    replaces them by ``?`` in the source and typesets again."""
    import pymupdf

    with pymupdf.open(str(pdf)) as doc:
        text = "".join(page.get_text() for page in doc)
    present = set(text)
    return {c for c in set(reference) if ord(c) > 127 and not c.isspace() and c not in present}


def scanned_pdf(source: Path, path: Path, dpi: int = 150) -> None:
    """An image-only copy of ``source``: each page rendered in grey at ``dpi`` and stored as JPEG."""
    import pymupdf

    with pymupdf.open(str(source)) as doc, pymupdf.open() as out:
        for page in doc:
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            new = out.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, stream=pixmap.tobytes("jpeg", jpg_quality=85))
        out.save(str(path), garbage=3, deflate=True)


def make_corpus(sources: list[Path], out: Path, scans: bool = False, max_chars: int = 12000,
                scan_dpi: int = 150) -> list[str]:
    """Write ``out/pairs/`` (a PDF and its reference per source, and a scan of each when ``scans``),
    ``out/MANIFEST.tsv`` (file, kind, source) and ``out/README.md``; returns the file stems written.
    Raises ``CorpusSourceError`` for an unusable source before anything is written."""
    documents = []
    for source in sources:
        markdown = source_markdown(source)
        doc = markdown_document(source_name(source), markdown, max_chars)
        if any(d.name == doc.name for d, _, _ in documents):
            raise CorpusSourceError(f"{source}: another source is also named {doc.name!r}")
        documents.append((doc, markdown, source))
    pairs = out / "pairs"
    pairs.mkdir(parents=True, exist_ok=True)
    manifest = ["file\tkind\tsource"]
    stems = []
    for doc, markdown, source in documents:
        born = pairs / f"born_{doc.name}.pdf"
        pages = typeset_pdf(doc.html, born)
        lost = unextractable_characters(doc.reference, born)
        if lost:  # typeset with a font that maps them to no character: the page would not show them
            doc = markdown_document(doc.name, markdown.translate({ord(c): "?" for c in lost}), max_chars)
            pages = typeset_pdf(doc.html, born)
        written = [(born, f"typeset from Markdown, {pages} pages")]
        if scans:
            scan = pairs / f"scan_{doc.name}.pdf"
            scanned_pdf(born, scan, scan_dpi)
            written.append((scan, f"image-only, {scan_dpi} dpi, {pages} pages"))
        for pdf, kind in written:
            pdf.with_suffix(".md").write_text(doc.reference, encoding="utf-8")
            manifest.append(f"pairs/{pdf.name}\t{kind}\t{source}")
            stems.append(pdf.stem)
    (out / "MANIFEST.tsv").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    (out / "README.md").write_text(
        "# Generated corpus\n\nMade by `python -m tools.bench.make_corpus` from the sources in MANIFEST.tsv: "
        "`born_*` are typeset from the Markdown, `scan_*` are image-only copies. Each `.md` is the reference "
        "for its PDF.\n",
        encoding="utf-8")
    return stems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.make_corpus",
        description="Typeset each Markdown SOURCE (a .md file or a wheel's METADATA) as a PDF, write the "
        "reference Markdown beside it, and optionally an image-only scan of it, in the layout 'hsd bench' "
        "reads (OUT/pairs/NAME.pdf + NAME.md): documents the engine was never tuned on.")
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="Markdown files or METADATA files")
    parser.add_argument("--out", required=True, help="corpus folder to write (pairs/ is created in it)")
    parser.add_argument("--scans", action="store_true", help="also write an image-only copy of each PDF (scan_NAME)")
    parser.add_argument("--scan-dpi", type=whole_number(72, 400, "the scan resolution"), default=150,
                        help="resolution of the scans (default 150)")
    parser.add_argument("--max-chars", type=whole_number(200, 1_000_000, "--max-chars"), default=12000,
                        help="cut each source after this many characters of reference, at a block boundary "
                        "(default 12000)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        stems = make_corpus([Path(s) for s in args.sources], out, scans=args.scans, max_chars=args.max_chars,
                            scan_dpi=args.scan_dpi)
    except HSDError as exc:
        print(f"make_corpus: error: {one_line(exc)}", file=sys.stderr)
        return 2
    print(f"wrote {len(stems)} documents to {out / 'pairs'}; run: hsd bench {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
