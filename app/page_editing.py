"""Edits that stay: the user's corrections of converted pages, kept in the document's work folder
(``core.edits``, beside the resume store), shown in place of the model's page, written by every
export, and guarded against a conversion that would replace them.

A re-conversion keeps an edit where the page comes back as it was (a page the resume store keeps);
where pages are converted anew (from scratch, or under other settings), the user is asked first,
and the edits of those pages go only once they said yes.
"""

from __future__ import annotations

from pathlib import Path

from app.widgets import ask_yes_no
from core.api import PageEdits


def work_markdown(window, doc) -> Path:
    """The Markdown a conversion of ``doc`` writes in its work folder (its resume store beside it)."""
    if doc.markdown_path:
        return Path(doc.markdown_path)
    from app.worker import document_cache_dir

    return document_cache_dir(window.app_settings.cache_dir(), doc.path) / f"{doc.path.stem or 'document'}.md"


def edits_of(window, doc) -> PageEdits:
    """``doc``'s edits, read from its work folder once and kept on the document (``doc.edits``)."""
    from core.api import work_dir_for

    folder = work_dir_for(work_markdown(window, doc))
    edits = getattr(doc, "edits", None)
    if edits is None or edits.path.parent != folder:
        edits = PageEdits(folder)
        doc.edits = edits
    return edits


def model_text(doc, page: int) -> str | None:
    """The model's Markdown of ``page`` as exported (None: the page is not finished)."""
    from core.api import page_markdown

    record = doc.pages.get(page)
    if record is None or record.result is None:
        return None
    return page_markdown(record.result, record.result.figure_links)


def edited_pages(window, doc) -> list[int]:
    """The pages whose shown and exported text is the user's."""
    edits = edits_of(window, doc)
    return [p for p in edits.pages() if (m := model_text(doc, p)) is not None and edits.text_of(p, m) != m]


def save_edit(window, doc, page: int, text: str) -> bool:
    """Keep ``text`` as ``page``'s Markdown (the model's own text drops the edit); False where the
    page has no result to edit."""
    model = model_text(doc, page)
    if model is None:
        return False
    edits_of(window, doc).set(page, text, model)
    return True


def revert_edit(window, doc, page: int) -> None:
    edits_of(window, doc).discard([page])


def exported_texts(window, doc) -> dict[int, str]:
    """Page -> the edited text, for the pages an export writes as the user edited them."""
    edits = edits_of(window, doc)
    return {p: edits.text_of(p, model_text(doc, p)) for p in edited_pages(window, doc)}


def pages_at_risk(window, doc, settings, fresh: bool) -> list[int]:
    """Edited pages a conversion of ``doc`` under ``settings`` converts anew: all of them from
    scratch or where the work folder holds pages of other settings; none where its pages are kept."""
    from core.api import saved_settings, work_dir_for

    pages = edits_of(window, doc).pages()
    if not pages or fresh:
        return pages
    kept_settings = saved_settings(work_dir_for(work_markdown(window, doc)))
    return [] if kept_settings == settings.output_settings() else pages


def confirm_conversion(window, doc, settings, fresh: bool) -> bool:
    """Ask before a conversion replaces edited pages; yes drops those edits, no stops it."""
    pages = pages_at_risk(window, doc, settings, fresh)
    if not pages:
        return True
    listed = ", ".join(str(p) for p in pages[:12]) + (" …" if len(pages) > 12 else "")
    plural = "s" if len(pages) > 1 else ""
    if not ask_yes_no(window, "Replace your edits?",
                      f"You edited page{plural} {listed} of {doc.name}. Converting "
                      f"{'from scratch' if fresh else 'with these settings'} writes the page{plural} anew "
                      f"and your edit{plural} will be gone.\n\nConvert anyway?"):
        return False
    edits_of(window, doc).discard(pages)
    return True


class PageEditActions:
    """The window's side of editing: the Markdown pane's edit button, saving and reverting, the mark."""

    def __init__(self, window):
        self.window = window
        self._editing: tuple | None = None  # (document, page) being edited
        view = window.markdown_view
        view.edit_button.toggled.connect(self._toggled)
        view.page_edit_saved.connect(self.saved)
        view.page_edit_reverted.connect(self.reverted)

    def _toggled(self, on: bool) -> None:
        if on:  # before the view emits its text: the page is the one shown when editing began
            self._editing = (self.window.current, self.window.current_page)

    def saved(self, text: str) -> None:
        doc, page = self._editing or (None, None)
        self._editing = None
        if doc is None or page is None:
            return
        saved = save_edit(self.window, doc, page, text)
        self._refresh_views(doc)  # first: the selected region's line would replace what is said here
        if saved:
            edited = page in edited_pages(self.window, doc)
            self.window.set_status(f"Page {page}: your edit is kept and exported" if edited else
                                   f"Page {page}: the model's text again")

    def reverted(self) -> None:
        doc, page = self.window.current, self.window.current_page
        if doc is None or page is None:
            return
        revert_edit(self.window, doc, page)
        self._refresh_views(doc)
        self.window.set_status(f"Page {page}: the model's text again")

    def _refresh_views(self, doc) -> None:
        if doc is self.window.current:
            self.window.show_text()
            # the review list and the regions' links are the page text's: an edit changes both
            self.window.inspection.refresh(self.window.conversion_mode(doc), doc is self.window.conversion.running)

    def refresh(self) -> None:
        """The edit button and mark for the page shown (called whenever the pane's text is set)."""
        doc, page = self.window.current, self.window.current_page
        view = self.window.markdown_view
        if doc is None or page is None or doc is self.window.conversion.running:
            view.set_editable(False)
            return
        edits_of(self.window, doc)
        finished = model_text(doc, page) is not None
        view.set_editable(finished, edited=finished and page in edited_pages(self.window, doc))

    def convert_page_again(self) -> None:
        """Convert the shown page again and keep the others: its saved page is dropped from the work
        folder, and the document's run takes every other page back as it was (asks first where the
        page carries an edit)."""
        from core.api import forget_page, work_dir_for

        window = self.window
        doc, page = window.current, window.current_page
        if doc is None or page is None or doc is window.conversion.running or model_text(doc, page) is None:
            return
        edits = edits_of(window, doc)
        if edits.get(page) is not None:
            if not ask_yes_no(window, "Replace your edit?",
                              f"You edited page {page} of {doc.name}. Converting it again writes it anew and "
                              "your edit will be gone.\n\nConvert it again?"):
                window.set_status(f"Page {page} not converted: your edit is kept")
                return
            edits.discard([page])
        forget_page(work_dir_for(work_markdown(window, doc)), page)
        window.convert_current()
