"""Markdown export: figures, atomic writes and per-page resume.

Model output is untrusted data: it never names a file. Figure images are cropped from the page
by the engine's region boxes and written under names we choose; Markdown image links that the
model itself wrote are reduced to their alt text, so a link can only point at an exported file.

A conversion keeps one JSON file per finished page in a work folder beside the output
(``.NAME.hsd/``); running the same command again (same input, same settings) skips those pages,
so a cancelled, killed or crashed run loses at most the page in flight. Every file is written to
a temporary name and renamed into place, so no reader ever sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from core.drafters.normalize import normalize_for_match
from core.results import FIGURE_LABELS, PageResult
from core.sanitize import sanitize_model_markdown


# --- atomic writes -------------------------------------------------------------------------------


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private (0600); a result file should not be
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
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


def save_figures(result: PageResult, page_image, images_dir: Path) -> dict[int, str]:
    """Crop every figure region of ``result`` from the rendered page; returns region -> file name."""
    names: dict[int, str] = {}
    scale = page_image.width / result.width if result.width else 1.0
    for i, region in enumerate(result.regions):
        if region.label not in FIGURE_LABELS:
            continue
        x0, y0, x1, y1 = (v * scale for v in region.bbox)
        box = (max(0, int(x0)), max(0, int(y0)), min(page_image.width, int(x1 + 1)),
               min(page_image.height, int(y1 + 1)))
        if box[2] - box[0] < 4 or box[3] - box[1] < 4:
            continue
        import io

        buf = io.BytesIO()
        page_image.crop(box).save(buf, format="PNG")
        name = figure_filename(result.page, i)
        atomic_write_bytes(Path(images_dir) / name, buf.getvalue())
        names[i] = name
    return names


def _figure_anchor(markdown: str, result: PageResult, figure: int) -> int:
    """Where in ``markdown`` figure region ``figure`` goes: after the line that ends the nearest
    earlier text region (found by its last normalised characters), else at the start.

    Depends only on the Markdown and the regions, never on the decoding mode, so equal output gives
    equal placement."""
    for j in range(figure - 1, -1, -1):
        region = result.regions[j]
        if region.label in FIGURE_LABELS:
            continue
        key = normalize_for_match(region.text)[-16:]
        if len(key) < 4:
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


def file_fingerprint(path: Path) -> str:
    """SHA-256 of the file's content (first 64 MiB and size), to tell the same input apart."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        remaining = 64 << 20
        while remaining > 0:
            chunk = f.read(min(1 << 20, remaining))
            if not chunk:
                break
            h.update(chunk)
            remaining -= len(chunk)
    h.update(str(os.path.getsize(path)).encode())
    return h.hexdigest()


class DocumentOutput:
    """The output of one document: ``NAME.md``, ``NAME_images/`` and a resume folder ``.NAME.hsd/``.

    settings: what changes the output (model, mode, tau, drafter, dpi, max_new_tokens...); pages
    saved under other settings or another input are not reused.
    """

    def __init__(self, input_path: Path, markdown_path: Path, settings: dict, resume: bool = True):
        self.input_path = Path(input_path)
        self.markdown_path = Path(markdown_path)
        self.images_dir = self.markdown_path.with_name(self.markdown_path.stem + "_images")
        self.work_dir = self.markdown_path.with_name(f".{self.markdown_path.name}.hsd")
        self.key = {"input": file_fingerprint(self.input_path), "settings": settings}
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.work_dir.glob(".*.partial"):  # left by a run killed mid-write
            stale.unlink(missing_ok=True)
        manifest = self.work_dir / "manifest.json"
        previous = None
        if manifest.exists():
            try:
                previous = json.loads(manifest.read_text("utf-8"))
            except (OSError, ValueError):
                previous = None
        if not resume or previous != self.key:
            for old in self.work_dir.glob("page-*.json"):
                old.unlink()
            atomic_write_text(manifest, json.dumps(self.key, indent=1, sort_keys=True))

    def _page_file(self, page: int) -> Path:
        return self.work_dir / f"page-{page:04d}.json"

    def finished(self, page: int) -> PageResult | None:
        """The saved result of ``page`` (1-based) if a previous run finished it without error."""
        path = self._page_file(page)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text("utf-8"))
            result = PageResult.from_dict(data["result"])
            result.figure_links = {int(k): v for k, v in data.get("figures", {}).items()}
            return None if result.error else result
        except (OSError, ValueError, KeyError, TypeError):
            return None  # unreadable leftovers are redone, never trusted

    def save_page(self, result: PageResult, page_image=None) -> None:
        links = save_figures(result, page_image, self.images_dir) if page_image is not None else {}
        rel = {i: f"{self.images_dir.name}/{name}" for i, name in links.items()}
        result.figure_links = rel
        payload = {"result": result.to_dict(), "figures": {str(k): v for k, v in rel.items()}}
        atomic_write_text(self._page_file(result.page), json.dumps(payload, ensure_ascii=False))

    def write_markdown(self, results: list[PageResult]) -> Path:
        pages = [page_markdown(r, r.figure_links) for r in results]
        atomic_write_text(self.markdown_path, assemble(pages))
        return self.markdown_path
