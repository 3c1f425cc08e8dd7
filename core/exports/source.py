"""A finished document as the exports read it: its pages from the resume folder, the user's edits,
its figures folder; or, where no resume folder is left, the Markdown file alone.

Nothing needs the input or a model: the page files carry each page's result (regions, drafts,
acceptance), checked as a resumed run checks them (``core.page_store``), and figures are linked only
where the file still holds what ``hsd`` cropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.edits import PageEdits
from core.errors import HSDError
from core.export import assemble, figure_filename, figure_link, images_dir_for, page_markdown, work_dir_for
from core.page_store import PageStore, file_sha256, read_small_file
from core.results import FIGURE_LABELS, PageResult

#: The largest Markdown file read where no resume folder holds its pages.
MAX_MARKDOWN_BYTES = 256 << 20


@dataclass
class FinishedDocument:
    """``markdown_path``: the converted file; ``results``: its pages (empty when only the Markdown
    is known); ``edits``: the user's corrections; ``settings``: what it was converted under."""

    markdown_path: Path
    results: list[PageResult] = field(default_factory=list)
    edits: PageEdits | None = None
    settings: dict = field(default_factory=dict)
    source: str = ""                 # the input's path where known
    plain_markdown: str | None = None

    @property
    def images_dir(self) -> Path:
        return images_dir_for(self.markdown_path)

    @property
    def title(self) -> str:
        return Path(self.source).name if self.source else self.markdown_path.stem

    def model_text(self, result: PageResult) -> str:
        return page_markdown(result, result.figure_links)

    def page_text(self, result: PageResult) -> str:
        """The page as exports write it: the user's edit where one applies, else the model's."""
        text = self.model_text(result)
        return self.edits.text_of(result.page, text) if self.edits is not None else text

    def edited_pages(self) -> list[int]:
        if self.edits is None:
            return []
        return [r.page for r in self.results if self.page_text(r) != self.model_text(r)]

    def markdown(self) -> str:
        if not self.results:
            return self.plain_markdown or ""
        return assemble([self.page_text(r) for r in sorted(self.results, key=lambda r: r.page)])


def _saved_pages(markdown_path: Path) -> tuple[list[PageResult], dict]:
    """The verified page files of the resume folder beside ``markdown_path`` and its settings."""
    store_dir = work_dir_for(markdown_path)
    probe = PageStore(store_dir, {})
    manifest = probe.manifest if isinstance(probe.manifest, dict) else None
    if manifest is None:
        return [], {}
    store = PageStore(store_dir, {"input": manifest.get("input"), "settings": manifest.get("settings")})
    images_dir = images_dir_for(markdown_path)
    results = []
    for path in store.page_files():
        page = int(path.name[5:-5])
        data = store.load(page)
        if data is None:
            continue
        try:
            result = PageResult.from_dict(data["result"])
            shas = {int(k): str(v) for k, v in (data.get("figure_sha256") or {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            continue
        if result.page != page or result.error:
            continue
        result.figure_links = {
            i: figure_link(images_dir.name, page, i) for i, sha in sorted(shas.items())
            if 0 <= i < len(result.regions) and result.regions[i].label in FIGURE_LABELS
            and file_sha256(images_dir / figure_filename(page, i)) == sha}
        results.append(result)
    settings = manifest.get("settings") if isinstance(manifest.get("settings"), dict) else {}
    return sorted(results, key=lambda r: r.page), settings


def open_finished(markdown_path: Path) -> FinishedDocument:
    """The finished document written to ``markdown_path`` (``HSDError``, one line, when there is none)."""
    markdown_path = Path(markdown_path)
    results, settings = _saved_pages(markdown_path)
    if results:
        return FinishedDocument(markdown_path, results, PageEdits(work_dir_for(markdown_path)), settings)
    if markdown_path.suffix.lower() != ".md":
        raise HSDError(f"{markdown_path}: hsd export reads the Markdown files hsd convert wrote (NAME.md)")
    data = read_small_file(markdown_path, MAX_MARKDOWN_BYTES)
    if data is None:
        if not markdown_path.exists():
            raise HSDError(f"{markdown_path}: no such file; name a Markdown file hsd convert wrote")
        raise HSDError(f"{markdown_path}: cannot be read as a Markdown file (not a regular file, or over "
                       f"{MAX_MARKDOWN_BYTES >> 20} MB)")
    return FinishedDocument(markdown_path, plain_markdown=data.decode("utf-8", errors="replace"))
