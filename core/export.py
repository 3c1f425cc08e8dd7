"""Markdown export: figures, atomic writes and per-page resume.

Model output is untrusted data: it never names a file. Figure images are cropped from the page
by the engine's region boxes and written under names we choose; Markdown image links that the
model itself wrote are reduced to their alt text, so a link can only point at an exported file.

A conversion keeps one JSON file per finished page in a resume folder beside the output
(``.NAME.md.hsd/``, see ``core.page_store``); running the same command again (same input, same
settings) reuses the pages that verify, so a cancelled, killed or crashed run loses at most the
page in flight. Every file is written to a temporary name and renamed into place, so no reader
ever sees half a file.

Names: the figures folder is ``NAME_images/`` (control characters and bytes that are not UTF-8
replaced, a short hash added then, so it stays unique) and figure links are percent-encoded, so
a document named ``a (1) <img ...>.pdf`` links its figures as plain Markdown that resolves.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import unicodedata
from pathlib import Path
from urllib.parse import quote

from core.errors import HSDError
from core.page_store import (PageStore, file_sha256, is_figure_name, make_room, page_file_checksum,  # noqa: F401
                             remove_owned_figures, remove_partials)
from core.results import FIGURE_LABELS, PageResult
from core.sanitize import sanitize_model_markdown


# --- atomic writes -------------------------------------------------------------------------------


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and an atomic rename.

    The temporary name is short whatever ``path`` is called (it must fit wherever ``path`` fits),
    and an ``OSError`` names ``path``, never the temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hsd-", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private (0600); a result file should not be
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it: put it straight back (once, at import,
    os.umask(mask)      # before any worker thread creates files)
    return mask


_UMASK = _read_umask()


def atomic_write_text(path: Path, text: str) -> None:
    # Lone surrogates (file names that are not UTF-8, broken text layers) cannot be UTF-8 encoded:
    # they are written as \udcXX escapes, which is also what JSON reads back as the same string.
    atomic_write_bytes(path, text.encode("utf-8", errors="backslashreplace"))


# --- figures -------------------------------------------------------------------------------------


def figure_filename(page: int, region: int) -> str:
    return f"page-{page:04d}-figure-{region + 1:02d}.png"


def figure_crops(result: PageResult, page_image) -> dict[int, bytes]:
    """Every figure region of ``result`` cropped from the rendered page: region -> PNG bytes."""
    import io

    crops: dict[int, bytes] = {}
    scale = page_image.width / result.width if result.width else 1.0
    for i, region in enumerate(result.regions):
        if region.label not in FIGURE_LABELS:
            continue
        x0, y0, x1, y1 = (v * scale for v in region.bbox)
        box = (max(0, int(x0)), max(0, int(y0)), min(page_image.width, int(x1 + 1)),
               min(page_image.height, int(y1 + 1)))
        if box[2] - box[0] < 4 or box[3] - box[1] < 4:
            continue
        buf = io.BytesIO()
        page_image.crop(box).save(buf, format="PNG")
        crops[i] = buf.getvalue()
    return crops


# --- names ---------------------------------------------------------------------------------------

#: The longest file name (in bytes) most file systems take.
NAME_MAX = 255


def fit_name(base: str, suffix: str = "", limit: int = NAME_MAX) -> str:
    """``base + suffix``, with ``base`` shortened and a hash of it added when that would pass
    ``limit`` bytes (two long names that share a start still get different results)."""
    if len(os.fsencode(base + suffix)) <= limit:
        return base + suffix
    tag = "-" + hashlib.sha1(os.fsencode(base)).hexdigest()[:8]
    cut = base
    while cut and len(os.fsencode(cut + tag + suffix)) > limit:
        cut = cut[:-1]
    return cut + tag + suffix


def _linkable(name: str) -> str:
    """``name`` without control characters or undecodable bytes (a short hash added if any were
    replaced, so two names never become one)."""
    safe = "".join("_" if unicodedata.category(ch) in ("Cc", "Cs") else ch for ch in name)
    if safe == name:
        return name
    return safe + "-" + hashlib.sha1(os.fsencode(name)).hexdigest()[:8]


def images_dir_for(markdown_path: Path) -> Path:
    """Where the figures of ``markdown_path`` go: ``NAME_images/`` beside it."""
    markdown_path = Path(markdown_path)
    return markdown_path.with_name(fit_name(_linkable(markdown_path.stem or "document"), "_images"))


def work_dir_for(markdown_path: Path) -> Path:
    """The resume folder of ``markdown_path``: ``.NAME.md.hsd/`` beside it."""
    markdown_path = Path(markdown_path)
    return markdown_path.with_name(fit_name("." + markdown_path.name, ".hsd"))


def figure_link(images_dir_name: str, page: int, region: int) -> str:
    """The Markdown link of a figure, relative to the Markdown file, percent-encoded: it never
    breaks the link syntax, never reads as HTML and resolves to the file."""
    return quote(images_dir_name, safe="") + "/" + figure_filename(page, region)


#: A figure's anchor: the last ``FIGURE_ANCHOR_CHARS`` normalised characters of the text before it,
#: text with fewer than ``FIGURE_ANCHOR_MIN_CHARS`` passed over (the OCR drafter reads that much of a
#: page whose decode ended: ``core.drafters.rapidocr.figure_lines``).
FIGURE_ANCHOR_CHARS, FIGURE_ANCHOR_MIN_CHARS = 16, 4


def _figure_anchor(markdown: str, result: PageResult, figure: int) -> int:
    """Where in ``markdown`` figure region ``figure`` goes: after the line that ends the nearest
    earlier text region (found by its last normalised characters), else at the start.

    Depends only on the Markdown and the regions, never on the decoding mode, so equal output gives
    equal placement."""
    from core.drafters.normalize import normalize_for_match  # rapidfuzz: not for the CLI's first checks

    for j in range(figure - 1, -1, -1):
        region = result.regions[j]
        if region.label in FIGURE_LABELS:
            continue
        key = normalize_for_match(region.text)[-FIGURE_ANCHOR_CHARS:]
        if len(key) < FIGURE_ANCHOR_MIN_CHARS:
            continue
        norm_chars, raw_pos = [], []
        for k, ch in enumerate(markdown):
            if ch.isalnum():
                norm_chars.append(ch)
                raw_pos.append(k)
        hit = "".join(norm_chars).rfind(key)
        if hit < 0:
            continue
        end = raw_pos[hit + len(key) - 1] + 1
        newline = markdown.find("\n", end)
        return len(markdown) if newline < 0 else newline
    return 0


def page_markdown(result: PageResult, figure_links: dict[int, str] | None = None) -> str:
    """The page's Markdown, sanitised, with links to its exported figures inserted."""
    text = sanitize_model_markdown(result.markdown)
    inserts = []
    for region, link in (figure_links or {}).items():
        inserts.append((_figure_anchor(text, result, region), region, link))
    for pos, region, link in sorted(inserts, reverse=True):
        snippet = f"\n\n![Figure {region + 1}]({link})\n\n"
        text = text[:pos] + snippet + text[pos:]
    return text.strip("\n")


def assemble(pages: list[str]) -> str:
    """The document: pages in order, separated by a blank line."""
    return "\n\n".join(p for p in pages if p.strip()) + "\n"


# --- resumable document output -------------------------------------------------------------------


def _identity(st: os.stat_result) -> tuple:
    """What changes when a file's content may have: its size, modification time and inode."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def input_fingerprint(path: Path) -> tuple[str, tuple]:
    """``(fingerprint, identity)`` of an input: the SHA-256 of all of its bytes and its size, and
    the size, modification time and inode it had while they were read (``input_changed`` compares
    against it, cheaply, before each page is saved). ``HSDError`` if it keeps changing."""
    for _ in range(3):
        before = _identity(os.stat(path))
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        if _identity(os.stat(path)) == before:
            h.update(str(before[2]).encode())
            return h.hexdigest(), before
    raise HSDError(f"{path}: the file keeps changing while it is read; convert it once it is complete")


def input_changed(path: Path, identity: tuple) -> bool:
    """The input at ``path`` no longer has the size, modification time or inode of ``identity``."""
    try:
        return _identity(os.stat(path)) != identity
    except OSError:
        return True


def refuse_symlinked_folders(markdown_path: Path) -> None:
    """``HSDError`` when the figures folder or resume folder of ``markdown_path`` is a symbolic
    link: hsd writes and deletes files in them, and would do it wherever the link points."""
    md = Path(markdown_path)
    for folder, what in ((images_dir_for(md), "figures folder"), (work_dir_for(md), "resume folder")):
        if folder.is_symlink():
            raise HSDError(f"{folder}: the {what} of {md.name} is a symbolic link; hsd never writes through "
                           "one (remove the link or choose another -o)")


def foreign_files(markdown_path: Path) -> list[Path]:
    """Existing files an output to ``markdown_path`` would replace that this tool did not write (or
    that were changed since): the Markdown unless its resume folder's manifest knows its content,
    figure files no intact page file or figure record accounts for, and files where the figures
    or resume folder would go. Anything that is not a regular file (a FIFO, socket, device or
    symbolic link) is never this tool's."""
    md = Path(markdown_path)
    images_dir, work_dir = images_dir_for(md), work_dir_for(md)
    store = PageStore(work_dir, {})
    found = []
    if os.path.lexists(md) and file_sha256(md) not in store.markdown_digests():
        found.append(md)
    for folder in (images_dir, work_dir):
        if os.path.lexists(folder) and not folder.is_dir():
            found.append(folder)
    if images_dir.is_dir() and not images_dir.is_symlink():
        owned = store.owned_figures()
        for path in sorted(images_dir.iterdir()):
            if is_figure_name(path.name) and file_sha256(path) not in owned.get(path.name, ()):
                found.append(path)
    return found


class DocumentOutput:
    """The output of one document: ``NAME.md``, ``NAME_images/`` and the resume folder ``.NAME.md.hsd/``.

    settings: what changes the output (model, mode, tau, drafter, dpi, max_new_tokens...); pages
    saved under other settings or another input are not reused. Nothing is written until the first
    page is saved. ``overwrite=False``: a figure file this tool did not write is never replaced
    (``HSDError`` naming it); the command line checks all of them up front (``foreign_files``).
    The figures and resume folders are never followed through a symbolic link (``HSDError``).
    A page is saved only while the input is the file it was fingerprinted as: one that changed
    during the run (``input_changed``) stops it with ``HSDError``, so no page rendered from a
    different file is ever kept under this fingerprint.
    """

    def __init__(self, input_path: Path, markdown_path: Path, settings: dict, resume: bool = True,
                 overwrite: bool = True):
        self.input_path = Path(input_path)
        self.markdown_path = Path(markdown_path)
        self.images_dir = images_dir_for(self.markdown_path)
        self.work_dir = work_dir_for(self.markdown_path)
        refuse_symlinked_folders(self.markdown_path)
        fingerprint, self._input_identity = input_fingerprint(self.input_path)
        self.key = {"input": fingerprint, "settings": settings}
        self.resume = resume
        self.overwrite = overwrite
        self.store = PageStore(self.work_dir, self.key)
        self._prepared = False
        self._saved_now: set[int] = set()
        self._owned: dict[str, set[str]] | None = None

    # --- reading back ---

    def finished(self, page: int) -> PageResult | None:
        """The saved result of ``page`` (1-based) if it was finished without error and its page
        file and figures verify; None otherwise (the page is converted again)."""
        if not (self.resume or page in self._saved_now) or not self.store.current:
            return None
        result = self._verified(page)
        return None if result is None or result.error else result

    def rejected_pages(self, pages) -> list[int]:
        """Pages of ``pages`` (1-based) whose saved file exists but does not verify: copied from
        another page or document, written under other settings, edited or damaged (also every
        saved page when the manifest itself is damaged)."""
        if not self.resume:
            return []
        if not self.store.current:
            if not self.store.manifest_damaged:
                return []  # another input or other settings: redone as a matter of course
            return [p for p in pages if os.path.lexists(self.store.page_path(p))]
        return [p for p in pages if os.path.lexists(self.store.page_path(p)) and self._verified(p) is None]

    def _verified(self, page: int) -> PageResult | None:
        data = self.store.load(page)
        if data is None:
            return None
        try:
            result = PageResult.from_dict(data["result"])
            shas = {int(k): str(v) for k, v in (data.get("figure_sha256") or {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None
        if result.page != page:
            return None
        for region, sha in shas.items():
            if not 0 <= region < len(result.regions) or result.regions[region].label not in FIGURE_LABELS:
                return None
            if file_sha256(self.images_dir / figure_filename(page, region)) != sha:
                return None  # a figure missing or replaced: crop it again
        # links are ours, rebuilt from the region numbers: the page file never names a file
        result.figure_links = {i: figure_link(self.images_dir.name, page, i) for i in sorted(shas)}
        return result

    # --- what a run would replace ---

    def foreign_files(self) -> list[Path]:
        return foreign_files(self.markdown_path)

    def _may_replace(self, path: Path) -> None:
        if self.overwrite:
            return
        if self._owned is None:
            self._owned = self.store.owned_figures()
        if file_sha256(path) not in self._owned.get(path.name, ()):
            raise HSDError(f"{path} exists and was not written by hsd; pass --overwrite to replace it")

    # --- writing ---

    def _prepare(self) -> None:
        """At the first write: the resume folder, emptied of pages that cannot be reused."""
        if self._prepared:
            return
        refuse_symlinked_folders(self.markdown_path)
        if os.path.lexists(self.work_dir) and not self.work_dir.is_dir():
            if not self.overwrite:
                raise HSDError(f"{self.work_dir} exists and was not written by hsd; pass --overwrite to replace it")
            os.unlink(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.store.remove_partials()
        if self.images_dir.is_dir():
            remove_partials(self.images_dir)
        if not self.resume or not self.store.current:
            self._owned = self.store.owned_figures() if not self.overwrite else None
            remove_owned_figures(self.images_dir, self.store.clear())
            self.store.write_manifest(self.store.markdown_digests(), atomic_write_text)
        self._prepared = True

    def check_input(self) -> None:
        """``HSDError`` when the input is no longer the file this output was fingerprinted from."""
        if input_changed(self.input_path, self._input_identity):
            raise HSDError(f"{self.input_path}: the file changed while it was being converted; the pages "
                           "finished before the change are kept for that version: run the same command again "
                           "to convert the file as it is now")

    def save_page(self, result: PageResult, page_image=None) -> None:
        """Save a finished page: its figures (recorded first, then written), then its page file."""
        self.check_input()
        self._prepare()
        crops = figure_crops(result, page_image) if page_image is not None else {}
        paths = {i: self.images_dir / figure_filename(result.page, i) for i in crops}
        for path in paths.values():
            if os.path.lexists(path):
                self._may_replace(path)
        shas = {i: hashlib.sha256(data).hexdigest() for i, data in crops.items()}
        if crops:
            self.store.record_figures(result.page, {str(k): v for k, v in shas.items()}, atomic_write_text)
            for i, data in crops.items():
                atomic_write_bytes(paths[i], data)
        links = {i: figure_link(self.images_dir.name, result.page, i) for i in sorted(shas)}
        result.figure_links = links
        payload = self.store.page_payload(result.page, result.to_dict(), {str(k): v for k, v in links.items()},
                                          {str(k): v for k, v in shas.items()})
        make_room(self.store.page_path(result.page))
        atomic_write_text(self.store.page_path(result.page), json.dumps(payload, ensure_ascii=False))
        if crops:
            self.store.drop_figure_record(result.page)
        self._saved_now.add(result.page)

    def write_markdown(self, results: list[PageResult], texts: dict[int, str] | None = None) -> Path:
        """Write the Markdown (every page through ``page_markdown``, reused or new; ``texts``: page ->
        the text to write instead, the user's edits). The manifest learns its checksum first, so a
        file left by a run killed mid-way is still known as ours."""
        texts = texts or {}
        pages = [texts[r.page] if r.page in texts else page_markdown(r, r.figure_links) for r in results]
        data = assemble(pages).encode("utf-8", errors="backslashreplace")
        self._prepare()
        sha = hashlib.sha256(data).hexdigest()
        known = self.store.markdown_digests()
        self.store.write_manifest([sha] + [d for d in known if d != sha][:1], atomic_write_text)
        atomic_write_bytes(self.markdown_path, data)
        self.store.write_manifest([sha], atomic_write_text)
        return self.markdown_path
