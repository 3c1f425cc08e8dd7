"""The resume folder of one output (``.NAME.md.hsd/``): a manifest and one JSON file per finished page.

Nothing in it is trusted. A page file carries its page number, the digest of the input and
settings it was converted under, the SHA-256 of each figure it cropped and a checksum of all of
that; ``load`` hands a page back only when every one of them matches (anything else is converted
again). The manifest records which input and settings the folder belongs to and the SHA-256 of
the Markdown last written, which is how a re-run recognises its own file (and any other as not
its own). The folder is created at the first write, so a run that fails before any page is
finished leaves nothing behind.

Figures are recorded before they are written (``record_figures``: a small file per page naming the
SHA-256 of each figure about to be written, dropped once the page file holds them), so a run
stopped between a figure and its page file, by a kill, a full disk or a lack of inodes, leaves
only figures the next run knows as its own.

The user's corrections of pages live in the same folder (``edits.json``, ``core.edits``): clearing
the pages of other settings leaves them, and each names the model output it replaced.

Every file here is read as data that may be hostile: only a regular file (never through a
symbolic link, never a FIFO or device, which could block or never end) of at most
``MAX_FILE_BYTES`` is read, and JSON nested too deeply for the parser counts as damaged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path

FORMAT = 2
MANIFEST = "manifest.json"
#: Larger store files are not ours: a page's result is a few KB to a few MB.
MAX_FILE_BYTES = 64 << 20
_FIGURE_NAME = re.compile(r"page-(\d{4,})-figure-(\d{2,})\.png")
_PAGE_NAME = re.compile(r"page-(\d{4,})\.json")
_FIGURE_RECORD_NAME = re.compile(r"figures-(\d{4,})\.json")


def digest(value) -> str:
    """SHA-256 of a JSON value in one canonical spelling (sorted keys, ASCII)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def page_file_checksum(data: dict) -> str:
    """The checksum a page file carries: the digest of every field but ``checksum`` itself."""
    return digest({k: v for k, v in data.items() if k != "checksum"})


def _open_regular(path: Path) -> int | None:
    """A read-only descriptor of ``path`` if it is a regular file reached without following a
    symbolic link, else None (a FIFO is opened non-blocking, then refused by its type)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def read_small_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not through a link) of at most ``limit``
    bytes, else None."""
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def read_json(path: Path, limit: int = MAX_FILE_BYTES):
    """The JSON value in ``path`` (as ``read_small_file`` allows), or None if it cannot be read."""
    data = read_small_file(path, limit)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes (never through a symbolic link), or None if it is no
    such file or cannot be read."""
    fd = _open_regular(path)
    if fd is None:
        return None
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def is_figure_name(name: str) -> bool:
    return _FIGURE_NAME.fullmatch(name) is not None


def make_room(path: Path) -> None:
    """Remove what stands at ``path`` in a folder of ours when it is not a regular file (a folder,
    a FIFO...), so that a file can be renamed into its place; a symbolic link is removed itself,
    never followed."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    elif not stat.S_ISREG(mode):
        os.unlink(path)


class PageStore:
    """The page files and manifest in ``folder``, for the input and settings in ``key``."""

    def __init__(self, folder: Path, key: dict):
        self.folder = Path(folder)
        self.key = key
        self.key_digest = digest(key)
        self.manifest = read_json(self.folder / MANIFEST)

    @property
    def current(self) -> bool:
        """The folder belongs to this input and these settings (its pages may be reused)."""
        m = self.manifest
        return isinstance(m, dict) and m.get("input") == self.key.get("input") \
            and m.get("settings") == self.key.get("settings")

    @property
    def manifest_damaged(self) -> bool:
        """Something stands where the manifest goes but it is no manifest (not a small regular
        file, not JSON, not the expected shape)."""
        m = self.manifest
        ok = isinstance(m, dict) and isinstance(m.get("markdown_sha256", []), list)
        return not ok and os.path.lexists(self.folder / MANIFEST)

    def page_path(self, page: int) -> Path:
        return self.folder / f"page-{page:04d}.json"

    def figure_record_path(self, page: int) -> Path:
        return self.folder / f"figures-{page:04d}.json"

    def _entries(self, name: re.Pattern) -> list[Path]:
        try:
            names = os.listdir(self.folder) if self.folder.is_dir() and not self.folder.is_symlink() else []
        except OSError:
            return []
        return sorted(self.folder / n for n in names if name.fullmatch(n))

    def page_files(self) -> list[Path]:
        return self._entries(_PAGE_NAME)

    def load(self, page: int) -> dict | None:
        """The page file of ``page`` if it verifies (checksum, page number, input and settings),
        else None. The figures it names are checked by the caller, which knows where they are."""
        data = read_json(self.page_path(page))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        if data.get("checksum") != page_file_checksum(data):
            return None
        if data.get("page") != page or data.get("settings") != self.key_digest:
            return None
        return data

    def page_payload(self, page: int, result: dict, figures: dict[str, str], figure_sha256: dict[str, str]) -> dict:
        payload = {"format": FORMAT, "page": page, "settings": self.key_digest, "result": result,
                   "figures": figures, "figure_sha256": figure_sha256}
        payload["checksum"] = page_file_checksum(payload)
        return payload

    def record_figures(self, page: int, figure_sha256: dict[str, str], write_text) -> None:
        """Before the figures of ``page`` are written: their SHA-256s, so that they are known as
        ours whatever stops the run before the page file is written."""
        record = {"format": FORMAT, "page": page, "figure_sha256": figure_sha256}
        record["checksum"] = page_file_checksum(record)
        path = self.figure_record_path(page)
        make_room(path)
        write_text(path, json.dumps(record, sort_keys=True))

    def drop_figure_record(self, page: int) -> None:
        """After the page file is written (it names the same figures)."""
        self.figure_record_path(page).unlink(missing_ok=True)

    def owned_figures(self) -> dict[str, set[str]]:
        """Figure file name -> SHA-256s this tool wrote under it, from every intact page file and
        figure record (whatever their settings): the figures a re-run may replace."""
        owned: dict[str, set[str]] = {}
        for path in self.page_files() + self._entries(_FIGURE_RECORD_NAME):
            data = read_json(path)
            if not isinstance(data, dict) or data.get("checksum") != page_file_checksum(data):
                continue
            page = data.get("page")
            shas = data.get("figure_sha256")
            for region, sha in (shas.items() if isinstance(shas, dict) else ()):
                if isinstance(page, int) and str(region).isdigit():
                    name = f"page-{page:04d}-figure-{int(region) + 1:02d}.png"
                    owned.setdefault(name, set()).add(str(sha))
        return owned

    def markdown_digests(self) -> list[str]:
        m = self.manifest
        found = m.get("markdown_sha256") if isinstance(m, dict) else None
        return [str(d) for d in found] if isinstance(found, list) else []

    def write_manifest(self, markdown_sha256: list[str], write_text) -> None:
        self.manifest = {"format": FORMAT, "input": self.key.get("input"), "settings": self.key.get("settings"),
                         "markdown_sha256": markdown_sha256}
        make_room(self.folder / MANIFEST)
        write_text(self.folder / MANIFEST, json.dumps(self.manifest, indent=1, sort_keys=True))

    def clear(self) -> dict[str, set[str]]:
        """Remove every page file and figure record; returns the figures they owned
        (``owned_figures``), for the caller to remove those it finds unchanged."""
        owned = self.owned_figures()
        for path in self.page_files() + self._entries(_FIGURE_RECORD_NAME):
            make_room(path)
            path.unlink(missing_ok=True)
        return owned

    def remove_partials(self) -> None:
        remove_partials(self.folder, ".*.partial")


def remove_partials(folder: Path, pattern: str = ".hsd-*.partial") -> None:
    """Delete the temporary files a run killed mid-write left in ``folder`` (``atomic_write_bytes``
    names them ``.hsd-*.partial``; the resume folder, all ours, loses every ``.*.partial``)."""
    for stale in Path(folder).glob(pattern):
        make_room(stale)
        stale.unlink(missing_ok=True)


def remove_owned_figures(images_dir: Path, owned: dict[str, set[str]]) -> None:
    """Delete the figures in ``owned`` that still hold what this tool wrote (a replaced one stays)."""
    for name in owned:
        path = Path(images_dir) / name
        if file_sha256(path) in owned.get(name, ()):
            try:
                os.unlink(path)
            except OSError:
                pass


def saved_settings(folder: Path):
    """The settings the pages in resume folder ``folder`` were converted under (None: no manifest)."""
    manifest = read_json(Path(folder) / MANIFEST)
    return manifest.get("settings") if isinstance(manifest, dict) else None


def forget_page(folder: Path, page: int) -> bool:
    """Drop the saved page file of ``page`` from resume folder ``folder``, so that the next run converts
    that page again and keeps the others; True if there was one. Its figures stay until that run
    replaces them (``DocumentOutput`` replaces only files it wrote)."""
    path = PageStore(folder, {}).page_path(page)
    if not os.path.lexists(path):
        return False
    make_room(path)
    path.unlink(missing_ok=True)
    return True
