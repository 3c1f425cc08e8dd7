"""The Markdown pane: rendered and source tabs, for the current page or the whole document.

Model output is untrusted. Its raw HTML goes through the one sanitiser (``core.sanitize``: tables and
plain formatting stay), then markdown-it-py renders the Markdown, formulas (``$..$``, ``$$..$$``,
``\\(..\\)``, ``\\[..\\]``, also inside HTML tables) are typeset (``app.math_render``), and the
resulting HTML passes a display whitelist once more. The rendered view loads local images only from
the document's work folder; remote and other resources are refused (``SafeTextBrowser``).

Model output is also unbounded. Rendering is linear, and what the view lays out is bounded: past
``PREVIEW_CHARS`` characters, ``PREVIEW_LINES`` lines, ``PREVIEW_CELLS`` table cells or ``PREVIEW_MARKS``
Markdown marks the rendered tab shows the beginning with a "truncated in preview" note, and past
``SOURCE_CHARS`` so does the source tab. Copy and export always have the whole text.
"""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import nh3
from PySide6.QtCore import QTimer, QUrl, Signal
from PySide6.QtGui import QFont, QFontDatabase, QImage, QTextCursor, QTextDocument
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QTabWidget, QTextBrowser,
                               QToolButton, QVBoxLayout, QWidget)

from app.math_render import formula_html
from core.sanitize import MODEL_TAGS, clean_model_html, numeric_span

#: What the rendered tab lays out at most (QTextBrowser's layout time grows with each of them).
PREVIEW_CHARS = 100_000
PREVIEW_LINES = 3_000
PREVIEW_CELLS = 3_000
#: ... or Markdown marks (``[ ! * _ $ ` < \``): markdown-it reads each in tens to hundreds of
#: microseconds, and formulas are typeset one by one.
PREVIEW_MARKS = 8_000
#: What the source tab holds at most.
SOURCE_CHARS = 400_000

# --- formulas ------------------------------------------------------------------------------------


def _math_content(token) -> str:
    # the sanitiser may have written a '<' of the formula as an entity (see core.sanitize)
    return token.content.replace("&lt;", "<")


def _math_inline(renderer, tokens, idx, options, env) -> str:
    return formula_html(_math_content(tokens[idx]), display=False)


def _math_block(renderer, tokens, idx, options, env) -> str:
    return formula_html(_math_content(tokens[idx]), display=True) + "\n"


#: Formulas inside raw HTML (document models write ``$\\pm$`` in table cells). Neither form can
#: contain its own opening delimiter, so every try stops at the next one: linear.
_HTML_MATH = re.compile(r"\$([^$\n<>]+)\$|\\\(((?:[^\\\n<>]|\\[^()\n])+)\\\)")
_TAG_OR_TEXT = re.compile(r"(<[^<>]*>)")


def _html_block(renderer, tokens, idx, options, env) -> str:
    """Raw HTML (already sanitised) with the formulas in its text typeset."""
    content = tokens[idx].content
    if "$" not in content and "\\(" not in content:
        return content
    parts = _TAG_OR_TEXT.split(content)
    for i in range(0, len(parts), 2):
        if "$" in parts[i] or "\\(" in parts[i]:
            parts[i] = _HTML_MATH.sub(lambda m: formula_html(html.unescape(m.group(1) or m.group(2))), parts[i])
    return "".join(parts)


def _image(renderer, tokens, idx, options, env) -> str:
    """Images with a relative path only (the exported figures); anything else shows its alt text."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    if not _relative_path(src):
        return f"[image: {html.escape(alt)}]"
    return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}" />'


def _relative_path(src: str) -> bool:
    return bool(src) and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", src) and not src.startswith(("/", "\\")) \
        and ".." not in src and "\\" not in src


# --- the display whitelist -----------------------------------------------------------------------

_ALIGN = {"left", "center", "right"}
_VALIGN = {"top", "middle", "bottom"}


def _display_attribute(tag: str, attribute: str, value: str) -> str | None:
    if attribute in ("colspan", "rowspan", "span"):
        return numeric_span(tag, attribute, value)
    if attribute in ("cellspacing", "cellpadding", "border", "start"):
        return value if value.isdigit() and len(value) < 4 else None
    if attribute == "align":
        return value if value in _ALIGN else None
    if attribute == "valign":
        return value if value in _VALIGN else None
    if attribute == "src":
        return value if _relative_path(value) else None
    if attribute == "href":
        return value if re.match(r"^(?:https?:|mailto:|#)", value, re.I) else None
    return value


_display_cleaner = nh3.Cleaner(
    tags=set(MODEL_TAGS) | {"a", "img"},
    clean_content_tags={"script", "style", "iframe", "object", "embed", "svg", "template", "noscript"},
    attributes={"td": {"colspan", "rowspan", "align", "valign", "style"},
                "th": {"colspan", "rowspan", "align", "valign", "style"},
                "table": {"cellspacing", "cellpadding", "align", "border"}, "span": {"style"}, "p": {"align"},
                "col": {"span"}, "colgroup": {"span"}, "img": {"src", "alt"}, "a": {"href"}, "ol": {"start"}},
    attribute_filter=_display_attribute, strip_comments=True, link_rel=None,
    url_schemes={"http", "https", "mailto"},
    filter_style_properties={"border-bottom", "border-top", "padding", "font-size", "font-family",
                             "text-decoration", "text-align"},
)
#: Data tables (the model's and Markdown's come without attributes) get a visible grid; the tables
#: that lay out formulas carry their own attributes and stay unruled.
_GRID_TABLE = '<table border="1" cellspacing="0" cellpadding="4">'

# --- Markdown ------------------------------------------------------------------------------------


_md = None


def _markdown():
    global _md
    if _md is None:
        from core.api import markdown_reader

        md = markdown_reader()  # the exports' parser: the preview reads formulas as they do
        md.add_render_rule("math_inline", _math_inline)
        md.add_render_rule("math_inline_double", _math_block)
        for rule in ("math_block", "math_block_label"):
            md.add_render_rule(rule, _math_block)
        md.add_render_rule("image", _image)
        md.add_render_rule("html_block", _html_block)
        _md = md
    return _md


def render_markdown(text: str) -> str:
    """Safe HTML of model Markdown: its raw HTML sanitised, formulas typeset, only relative images."""
    body = _markdown().render(clean_model_html(text))
    return _display_cleaner.clean(body).replace("<table>", _GRID_TABLE)


_CELL = re.compile(r"<t[dh]\b|\|", re.IGNORECASE)
_MARK = re.compile(r"[\[!*_$`<\\]")


def preview_end(text: str, chars: int = PREVIEW_CHARS, lines: int = PREVIEW_LINES, cells: int = PREVIEW_CELLS,
                marks: int = PREVIEW_MARKS) -> int:
    """How much of ``text`` the rendered tab lays out: all of it when within the limits, else the
    beginning up to the first limit reached, ending at a line break where there is one."""
    end = min(len(text), chars)
    pos = -1
    for _ in range(lines):
        pos = text.find("\n", pos + 1, end)
        if pos < 0:
            break
    else:
        end = pos
    for n, m in enumerate(_CELL.finditer(text, 0, end)):
        if n >= cells:
            end = m.start()
            break
    for n, m in enumerate(_MARK.finditer(text, 0, end)):
        if n >= marks:
            end = m.start()
            break
    if end < len(text):
        line_break = text.rfind("\n", 0, end)
        if line_break > end // 2:
            end = line_break
    return end


def truncation_note(shown: int, total: int, where: str) -> str:
    return (f"Truncated in preview: {where} shows the first {shown:,} of {total:,} characters. "
            "Copy and Export have all of it.")


STYLE = """
body { font-size: 11pt; }
table { border-collapse: collapse; margin: 6px 0; }
th { background: rgba(128, 128, 128, 30%); font-weight: bold; }
td, th { padding: 3px 6px; }
code { font-family: monospace; background: rgba(128, 128, 128, 18%); }
pre { font-family: monospace; background: rgba(128, 128, 128, 14%); padding: 6px; }
blockquote { color: #808080; margin-left: 12px; }
"""


class SafeTextBrowser(QTextBrowser):
    """A QTextBrowser that loads images only from ``base_dir`` (local files); everything else, remote
    URLs above all, is refused and recorded in ``blocked``."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.base_dir: Path | None = None
        self.blocked: list[str] = []
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setAcceptDrops(False)
        self.viewport().setAcceptDrops(False)
        self.document().setDefaultStyleSheet(STYLE)

    def loadResource(self, kind, url):  # noqa: N802 (Qt)
        url = QUrl(url) if not isinstance(url, QUrl) else url
        if kind == QTextDocument.ResourceType.ImageResource.value or kind == QTextDocument.ResourceType.ImageResource:
            path = self._local_path(url)
            if path is not None:
                image = QImage(str(path))
                if not image.isNull():
                    return image
        self.blocked.append(url.toString())
        return None

    def _local_path(self, url: QUrl) -> Path | None:
        if self.base_dir is None or url.scheme() not in ("", "file"):
            return None
        if url.scheme() == "file":
            candidate = Path(url.toLocalFile())
        else:
            candidate = self.base_dir / url.path()
        try:
            resolved = candidate.resolve()
            base = self.base_dir.resolve()
        except OSError:
            return None
        if base not in resolved.parents or not resolved.is_file():
            return None
        return resolved


#: How far ``map_spans`` looks for a piece: this many times the Markdown since the last piece found
#: (a '<' written as '&lt;' grows four times), ...
_MAP_GROWTH = 4
#: ... at most this many characters further than since the piece before it (pieces missed before
#: do not widen every later search without end), ...
_MAP_MISSED = 1 << 18
#: ... plus this many for figure links inserted between them.
_MAP_SLACK = 1 << 14


def map_spans(result, display: str) -> list[tuple[int | None, int, int]]:
    """Where each of ``result.spans`` lies in ``display`` (the page Markdown as exported: sanitised,
    figure links added): ``(region, start, end)`` in ``display`` offsets, in order."""
    out = []
    cursor = 0
    found_end = previous_end = 0  # Markdown offsets: the end of the last span found, of the last span
    for span in result.spans:
        piece = result.markdown[span.start:span.end]
        core = piece.strip()
        if not core:
            continue
        # Each search looks only as far as the piece can lie: sanitising removes text or writes it a few
        # times longer, and figure links are short. Searching to the end for each piece the sanitiser
        # changed took 23 s for 5,000 spans over 5 MB.
        reach = min(_MAP_GROWTH * (span.end - found_end), _MAP_GROWTH * (span.end - previous_end) + _MAP_MISSED)
        limit = cursor + reach + _MAP_SLACK
        previous_end = span.end
        pos = display.find(core, cursor, limit)
        if pos < 0:
            # sanitising changed this piece: fall back to its first line
            first = core.splitlines()[0].strip()
            pos = display.find(first, cursor, limit) if first else -1
            if pos < 0:
                continue
            core = first
        out.append((span.region, pos, pos + len(core)))
        cursor = pos + len(core)
        found_end = span.end
    return out


_LATEX_COMMAND = re.compile(r"\\[a-zA-Z]+")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")


def _letters(text: str, markdown: bool) -> tuple[str, list[int]]:
    """``text``'s ASCII letters and digits, lower case, each with its offset in ``text``: what reads
    the same in the source and in the rendered view (markup, spacing and a formula's typesetting
    differ). In Markdown, tags, entities and LaTeX commands are markup (a Greek letter renders as a
    letter the source does not spell)."""
    if markdown:
        for pattern in (_TAG_OR_TEXT, _ENTITY, _LATEX_COMMAND):
            text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    chars, where = [], []
    for i, c in enumerate(text):
        if c.isascii() and c.isalnum():
            chars.append(c.lower())
            where.append(i)
    return "".join(chars), where


def rendered_span(source: str, start: int, end: int, rendered: str) -> tuple[int, int] | None:
    """Where source characters ``[start, end)`` show in ``rendered`` (the rendered view's plain
    text), or None. Matched by their letters and digits, the whole stretch or else its longest
    beginning or end found (at least a few letters: one letter matches anywhere), at the
    occurrence nearest its place in the page."""
    needle, _ = _letters(source[start:end], True)
    if not needle:
        return None
    before = len(_letters(source[:start], True)[0])
    hay, where = _letters(rendered, False)
    shortest = min(len(needle), 6)
    lengths = sorted({len(needle), *(n for n in (48, 24, 12, 6) if shortest <= n < len(needle))}, reverse=True)
    for n in lengths:
        for piece, offset in ((needle[:n], 0), (needle[-n:], len(needle) - n)):
            hits, pos = [], hay.find(piece)
            while pos >= 0:
                hits.append(pos - offset)
                pos = hay.find(piece, pos + 1)
            if hits:
                first = min(hits, key=lambda h: abs(h - before))
                lo = max(0, first)
                hi = min(len(hay), first + len(needle)) - 1
                if hi < lo:
                    continue
                stop = where[hi] + 1
                while stop < len(rendered) and not rendered[stop].isspace() and not rendered[stop].isalnum():
                    stop += 1  # the closing punctuation goes with the text
                return where[lo], stop
    return None


def source_offset(source: str, rendered: str, position: int) -> int:
    """The page-Markdown offset that rendered ``position`` shows: as many letters and digits into
    the source as the rendered text has before it (markup and a formula's typesetting differ,
    the words do not)."""
    before = len(_letters(rendered[:position], False)[0])
    _, where = _letters(source, True)
    if not where:
        return 0
    return where[min(before, len(where) - 1)]


class MarkdownView(QWidget):
    """Rendered + source tabs; scope "page" or "document".

    ``page_selection`` (start, end) reports what the user selected, in page-Markdown offsets."""

    page_selection = Signal(int, int)
    scope_changed = Signal(str)
    #: The user finished editing the page's Markdown (the new text), or asked for the model's back.
    page_edit_saved = Signal(str)
    page_edit_reverted = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.scope_box = QComboBox()
        self.scope_box.addItem("This page", "page")
        self.scope_box.addItem("Whole document", "document")
        self.scope_box.currentIndexChanged.connect(self._scope_changed)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Show:"))
        top.addWidget(self.scope_box)
        top.addStretch(1)
        self.info = QLabel()
        self.info.setStyleSheet("color: palette(placeholder-text)")
        top.addWidget(self.info)
        # edits that stay (app.page_editing): the Source tab becomes an editor of this page's Markdown;
        # the controls sit beside the tabs, so the pane stays as narrow as it was
        edit_row = QWidget()
        edit_layout = QHBoxLayout(edit_row)
        edit_layout.setContentsMargins(0, 0, 0, 0)
        self.edited_mark = QLabel("Edited")
        self.edited_mark.setToolTip("This page shows and exports your edit, not the model's text")
        self.edited_mark.setStyleSheet("color: #8a5a00; font-weight: bold")
        self.edited_mark.hide()
        edit_layout.addWidget(self.edited_mark)
        self.edit_button = QToolButton()
        self.edit_button.setText("Edit")
        self.edit_button.setCheckable(True)
        self.edit_button.setEnabled(False)
        self.edit_button.setToolTip("Correct this page's Markdown; the edit is kept, shown and exported")
        self.edit_button.toggled.connect(self._edit_toggled)
        edit_layout.addWidget(self.edit_button)
        self.revert_button = QToolButton()
        self.revert_button.setText("Model's text")
        self.revert_button.setToolTip("Drop your edit of this page and show the model's text again")
        self.revert_button.hide()
        self.revert_button.clicked.connect(self.page_edit_reverted.emit)
        edit_layout.addWidget(self.revert_button)
        self._editing_base: str | None = None  # the page's text when editing began (None: not editing)
        self.rendered = SafeTextBrowser()
        self.source = QPlainTextEdit()
        self.source.setReadOnly(True)
        self.source.setAcceptDrops(False)
        self.source.viewport().setAcceptDrops(False)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.source.setFont(mono)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.rendered, "Rendered")
        self.tabs.addTab(self.source, "Source")
        self.tabs.setCornerWidget(edit_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        self._texts = {"page": "", "document": ""}
        self._shown = None
        self._rendered_key: tuple[str, str, int] | None = None  # scope, text, characters laid out
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(150)
        self._render_timer.timeout.connect(self._render_now)
        self._selecting = False
        self.source.selectionChanged.connect(self._source_selection)
        self.rendered.selectionChanged.connect(self._rendered_selection)
        font = QFont(self.rendered.font())
        font.setPointSize(max(font.pointSize(), 10))
        self.rendered.setFont(font)

    # -- content ----------------------------------------------------------------------------------

    @property
    def scope(self) -> str:
        return self.scope_box.currentData()

    def set_scope(self, scope: str) -> None:
        self.scope_box.setCurrentIndex(0 if scope == "page" else 1)

    def set_base_dir(self, path: Path | None) -> None:
        self.rendered.base_dir = Path(path) if path else None
        if path:
            self.rendered.document().setBaseUrl(QUrl.fromLocalFile(str(Path(path)) + "/"))

    def set_texts(self, page: str | None = None, document: str | None = None, live: bool = False) -> None:
        """Replace the page and/or document Markdown; ``live`` throttles re-rendering while streaming."""
        if page is not None:
            self._texts["page"] = page
        if document is not None:
            self._texts["document"] = document
        if self._editing_base is not None:
            return  # the editor keeps the user's text; the views catch up when editing ends
        self._refresh(live)

    # -- editing ----------------------------------------------------------------------------------

    @property
    def editing(self) -> bool:
        return self._editing_base is not None

    def set_editable(self, editable: bool, edited: bool = False) -> None:
        """Whether the shown page can be edited (a finished page), and whether it shows an edit."""
        if self.editing and not editable:
            self.edit_button.setChecked(False)
        self.edit_button.setEnabled(editable and len(self._texts["page"]) <= SOURCE_CHARS)
        self.edited_mark.setVisible(edited)
        self.revert_button.setVisible(edited and not self.editing)

    def _edit_toggled(self, on: bool) -> None:
        if on:
            self.set_scope("page")
            self._editing_base = self._texts["page"]
            self.scope_box.setEnabled(False)
            self.tabs.setCurrentWidget(self.source)
            self.source.setReadOnly(False)
            self.source.setFocus()
            self.edit_button.setText("Save")
            self.revert_button.hide()
            return
        base, self._editing_base = self._editing_base, None
        text = self.source.toPlainText()
        self.source.setReadOnly(True)
        self.scope_box.setEnabled(True)
        self.edit_button.setText("Edit")
        self._shown = None
        self._refresh(False)
        if base is not None and text != base:
            self.page_edit_saved.emit(text)

    def finish_editing(self) -> None:
        """Save an edit in progress (the page is about to change)."""
        if self.editing:
            self.edit_button.setChecked(False)

    def page_text(self) -> str:
        return self._texts["page"]

    def document_text(self) -> str:
        return self._texts["document"]

    def current_text(self) -> str:
        return self._texts[self.scope]

    def _scope_changed(self) -> None:
        self._refresh(False)
        self.scope_changed.emit(self.scope)

    def _refresh(self, live: bool) -> None:
        text = self._texts[self.scope]
        if (self.scope, text) == self._shown:
            return
        self._selecting = True
        old = self._shown[1] if self._shown and self._shown[0] == self.scope else None
        if old is not None and live and len(text) <= SOURCE_CHARS and text.startswith(old):
            cursor = self.source.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(text[len(old):])
        else:
            bar = self.source.verticalScrollBar().value()
            if len(text) > SOURCE_CHARS:
                cut = text.rfind("\n", SOURCE_CHARS // 2, SOURCE_CHARS)
                cut = cut if cut > 0 else SOURCE_CHARS
                self.source.setPlainText(f"{text[:cut]}\n\n[{truncation_note(cut, len(text), 'the Source tab')}]")
            else:
                self.source.setPlainText(text)
            self.source.verticalScrollBar().setValue(bar)
        self._selecting = False
        self._shown = (self.scope, text)
        self._show_info()
        if live:
            if not self._render_timer.isActive():
                self._render_timer.start()
        else:
            self._render_timer.stop()
            self._render_now()

    def _show_info(self) -> None:
        text = self._texts[self.scope]
        lines = text.count("\n") + 1 if text else 0
        info = f"{len(text):,} characters, {lines:,} line{'s' if lines != 1 else ''}"
        if self.preview_truncated:
            info += " \u2014 truncated in preview"
        self.info.setText(info)

    @property
    def preview_truncated(self) -> bool:
        """Whether the rendered or the source tab shows only the beginning of the text. The rendered
        copy lags the text while it streams: what counts is whether that copy was cut, not whether
        the text has grown past it since."""
        text = self._texts[self.scope]
        rendered = self._rendered_key
        return len(text) > SOURCE_CHARS or (rendered is not None and rendered[0] == self.scope
                                            and rendered[2] < len(rendered[1]))

    def _render_now(self) -> None:
        text = self._texts[self.scope]
        if self._rendered_key is not None and self._rendered_key[:2] == (self.scope, text):
            return
        started = time.perf_counter()
        end = preview_end(text)
        body = render_markdown(text[:end])
        if end < len(text):
            note = html.escape(truncation_note(end, len(text), "the Rendered tab"))
            body = f'<p style="color: #8a5a00"><b>{note}</b></p>\n{body}<p style="color: #8a5a00"><b>{note}</b></p>'
        bar = self.rendered.verticalScrollBar().value()
        self._selecting = True
        self.rendered.setHtml(body)
        self.rendered.verticalScrollBar().setValue(bar)
        self._selecting = False
        self._rendered_key = (self.scope, text, end)
        self._show_info()
        # while streaming, re-render at most about a third of the time, however long a render takes
        took_ms = (time.perf_counter() - started) * 1000
        self._render_timer.setInterval(max(150, min(5000, int(2 * took_ms))))

    # -- linking to regions -----------------------------------------------------------------------

    def show_range(self, start: int, end: int) -> None:
        """Scroll to and select page-Markdown characters ``[start, end)`` in both tabs."""
        if self.scope != "page":
            self.set_scope("page")
        self._render_timer.stop()
        self._render_now()
        self._selecting = True
        try:
            cursor = self.source.textCursor()
            cursor.setPosition(min(start, len(self._texts["page"])))
            cursor.setPosition(min(end, len(self._texts["page"])), QTextCursor.MoveMode.KeepAnchor)
            self.source.setTextCursor(cursor)
            self.source.centerCursor()
            span = rendered_span(self._texts["page"], start, end, self.rendered.document().toPlainText())
            if span is not None:
                found = QTextCursor(self.rendered.document())
                found.setPosition(span[0])
                found.setPosition(span[1], QTextCursor.MoveMode.KeepAnchor)
                self.rendered.setTextCursor(found)
                self.rendered.ensureCursorVisible()
        finally:
            self._selecting = False

    def select_nothing(self) -> None:
        """No page Markdown selected in either tab, the view left where it is."""
        self._selecting = True
        try:
            for view in (self.source, self.rendered):
                cursor = view.textCursor()
                cursor.clearSelection()
                view.setTextCursor(cursor)
        finally:
            self._selecting = False

    @property
    def updating(self) -> bool:
        """The view changes its own text, selection or place (a render, ``show_range``): a scroll
        now is not the reader's."""
        return self._selecting

    def scroll_to(self, start: int) -> None:
        """Bring page-Markdown offset ``start`` to the top of both tabs, selecting nothing (the page
        scrolled: the Markdown follows)."""
        if self.scope != "page":
            return
        text = self._texts["page"]
        start = max(0, min(start, len(text)))
        self._selecting = True
        try:
            block = self.source.document().findBlock(min(start, self.source.document().characterCount() - 1))
            if block.isValid():
                self.source.verticalScrollBar().setValue(block.firstLineNumber())
            if self._rendered_key is not None and self._rendered_key[:2] == ("page", text):
                rendered = self.rendered.document().toPlainText()
                line_end = text.find("\n", start)
                span = rendered_span(text, start, line_end if line_end > start else len(text), rendered)
                if span is not None:
                    cursor = QTextCursor(self.rendered.document())
                    cursor.setPosition(span[0])
                    bar = self.rendered.verticalScrollBar()
                    bar.setValue(bar.value() + self.rendered.cursorRect(cursor).top())
        finally:
            self._selecting = False

    def top_offset(self) -> int | None:
        """The page-Markdown offset at the top of the tab shown (None: the document is shown)."""
        if self.scope != "page":
            return None
        if self.tabs.currentWidget() is self.source:
            return self.source.cursorForPosition(self.source.viewport().rect().topLeft()).position()
        rendered = self.rendered.document().toPlainText()
        top = self.rendered.cursorForPosition(self.rendered.viewport().rect().topLeft()).position()
        return source_offset(self._texts["page"], rendered, top)

    def _source_selection(self) -> None:
        if self._selecting or self.scope != "page":
            return
        cursor = self.source.textCursor()
        self.page_selection.emit(cursor.selectionStart(), cursor.selectionEnd())

    def _rendered_selection(self) -> None:
        if self._selecting or self.scope != "page":
            return
        selected = self.rendered.textCursor().selectedText().replace("\u2029", "\n").strip()
        if len(selected) < 2:
            return
        page = self._texts["page"]
        pos = page.find(selected)
        if pos < 0:
            pos = page.find(selected.split()[0]) if selected.split() else -1
        if pos >= 0:
            self.page_selection.emit(pos, pos + len(selected))
