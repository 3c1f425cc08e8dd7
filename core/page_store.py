"""The resume folder of one output (``.NAME.md.hsd/``): a manifest and one JSON file per finished page.

Nothing in it is trusted. A page file carries its page number, the digest of the input and
settings it was converted under, the SHA-256 of each figure it cropped and a checksum of all of
that; ``load`` hands a page back only when every one of them matches (anything else is converted
again). The manifest records which input and settings the folder belongs to and the SHA-256 of
the Markdown last written, which is how a re-run recognises its own file (and any other as not
its own). The folder is created at the first write, so a run that fails before any page is
finished leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

FORMAT = 2
MANIFEST = "manifest.json"
_FIGURE_NAME = re.compile(r"page-(\d{4,})-figure-(\d{2,})\.png")


def digest(value) -> str:
    """SHA-256 of a JSON value in one canonical spelling (sorted keys, ASCII)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def page_file_checksum(data: dict) -> str:
    """The checksum a page file carries: the digest of every field but ``checksum`` itself."""
    return digest({k: v for k, v in data.items() if k != "checksum"})


def file_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes, or None if it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def is_figure_name(name: str) -> bool:
    return _FIGURE_NAME.fullmatch(name) is not None


class PageStore:
    """The page files and manifest in ``folder``, for the input and settings in ``key``."""

    def __init__(self, folder: Path, key: dict):
        self.folder = Path(folder)
        self.key = key
        self.key_digest = digest(key)
        self.manifest = self._read(self.folder / MANIFEST)

    @property
    def current(self) -> bool:
        """The folder belongs to this input and these settings (its pages may be reused)."""
        m = self.manifest
        return isinstance(m, dict) and m.get("input") == self.key.get("input") \
            and m.get("settings") == self.key.get("settings")

    def page_path(self, page: int) -> Path:
        return self.folder / f"page-{page:04d}.json"

    def page_files(self) -> list[Path]:
        try:
            return sorted(self.folder.glob("page-*.json")) if self.folder.is_dir() else []
        except OSError:
            return []

    def load(self, page: int) -> dict | None:
        """The page file of ``page`` if it verifies (checksum, page number, input and settings),
        else None. The figures it names are checked by the caller, which knows where they are."""
        data = self._read(self.page_path(page))
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

    def owned_figures(self) -> dict[str, set[str]]:
        """Figure file name -> SHA-256s this tool wrote under it, from every intact page file
        (whatever its settings): the figures a re-run may replace."""
        owned: dict[str, set[str]] = {}
        for path in self.page_files():
            data = self._read(path)
            if not isinstance(data, dict) or data.get("checksum") != page_file_checksum(data):
                continue
            page = data.get("page")
            for region, sha in (data.get("figure_sha256") or {}).items():
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
        write_text(self.folder / MANIFEST, json.dumps(self.manifest, indent=1, sort_keys=True))

    def clear(self) -> dict[str, set[str]]:
        """Remove every page file; returns the figures they owned (``owned_figures``), for the
        caller to remove those it finds unchanged."""
        owned = self.owned_figures()
        for path in self.page_files():
            path.unlink(missing_ok=True)
        return owned

    def remove_partials(self) -> None:
        for stale in self.folder.glob(".*.partial"):  # left by a run killed mid-write
            stale.unlink(missing_ok=True)

    @staticmethod
    def _read(path: Path):
        try:
            return json.loads(Path(path).read_text("utf-8"))
        except (OSError, ValueError):
            return None


def remove_owned_figures(images_dir: Path, owned: dict[str, set[str]]) -> None:
    """Delete the figures in ``owned`` that still hold what this tool wrote (a replaced one stays)."""
    for name in owned:
        path = Path(images_dir) / name
        if file_sha256(path) in owned.get(name, ()):
            try:
                os.unlink(path)
            except OSError:
                pass
