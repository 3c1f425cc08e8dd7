"""The user's corrections of converted pages, kept beside the resume store.

An edit replaces one page's Markdown. It is stored in the output's resume folder (``.NAME.md.hsd/
edits.json``, see ``core.page_store``), so it survives closing and re-opening the document, and it
names the SHA-256 of the model's page Markdown it was made on: an edit applies while the page's
result is still that one (a page kept by a resumed run is), and is *stale* once the page was
converted again into something else. Exports write the edited text (``text_of``).

The file is read as hostile data, as every store file is: a small regular file, never through a
link, of the expected shape; anything else counts as no edits.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from core.page_store import make_room, read_json

EDITS_FILE = "edits.json"
FORMAT = "hsd-edits/1"
#: An edited page longer than this is refused (a page's Markdown is a few KB).
MAX_EDIT_CHARS = 4 << 20


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="backslashreplace")).hexdigest()


@dataclass(frozen=True)
class PageEdit:
    page: int
    markdown: str          # the page as the user wrote it
    model_sha256: str      # the model's page Markdown it replaces

    def applies_to(self, model_markdown: str) -> bool:
        """The edit was made on this model output (not stale)."""
        return self.model_sha256 == text_sha256(model_markdown)


class PageEdits:
    """The edits of one output, in ``work_dir`` (the output's resume folder)."""

    def __init__(self, work_dir: Path):
        self.path = Path(work_dir) / EDITS_FILE
        self.edits: dict[int, PageEdit] = self._read()

    def _read(self) -> dict[int, PageEdit]:
        data = read_json(self.path)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("pages"), dict):
            return {}
        found = {}
        for key, value in data["pages"].items():
            if not (isinstance(key, str) and key.isdigit() and isinstance(value, dict)):
                continue
            text, sha = value.get("markdown"), value.get("model_sha256")
            if isinstance(text, str) and isinstance(sha, str) and len(text) <= MAX_EDIT_CHARS:
                found[int(key)] = PageEdit(int(key), text, sha)
        return found

    def __bool__(self) -> bool:
        return bool(self.edits)

    def pages(self) -> list[int]:
        return sorted(self.edits)

    def get(self, page: int) -> PageEdit | None:
        return self.edits.get(page)

    def text_of(self, page: int, model_markdown: str) -> str:
        """What page ``page`` reads: the user's edit where one applies to ``model_markdown``, else that."""
        edit = self.edits.get(page)
        return edit.markdown if edit is not None and edit.applies_to(model_markdown) else model_markdown

    def stale(self, models: dict[int, str]) -> list[int]:
        """Edited pages whose model Markdown (``models``: page -> text) is no longer the one edited."""
        return [p for p, e in sorted(self.edits.items()) if p in models and not e.applies_to(models[p])]

    def set(self, page: int, markdown: str, model_markdown: str) -> None:
        """Keep ``markdown`` as page ``page``'s text; the same text as the model's drops the edit."""
        if len(markdown) > MAX_EDIT_CHARS:
            raise ValueError(f"page {page}: an edit of {len(markdown):,} characters is more than a page holds")
        if markdown == model_markdown:
            self.edits.pop(page, None)
        else:
            self.edits[page] = PageEdit(page, markdown, text_sha256(model_markdown))
        self.save()

    def discard(self, pages=None) -> None:
        """Drop the edits of ``pages`` (all where None)."""
        for page in list(self.edits) if pages is None else list(pages):
            self.edits.pop(page, None)
        self.save()

    def save(self) -> None:
        from core.export import atomic_write_text

        if not self.edits:
            if self.path.is_file() and not self.path.is_symlink():
                self.path.unlink(missing_ok=True)
            return
        payload = {"format": FORMAT, "pages": {str(p): {"markdown": e.markdown, "model_sha256": e.model_sha256}
                                               for p, e in sorted(self.edits.items())}}
        make_room(self.path)
        atomic_write_text(self.path, json.dumps(payload, ensure_ascii=False, indent=1))
