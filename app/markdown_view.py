"""The Markdown pane: rendered and source tabs, for the current page or the whole document.

Model output is untrusted. Rendering uses markdown-it-py with raw HTML disabled (tags show as text),
except HTML tables, which document models emit: those are rebuilt from a whitelist (table structure,
colspan/rowspan, a few inline tags; every text node escaped). Formulas (``$..$``, ``$$..$$``,
``\\(..\\)``, ``\\[..\\]``) are shown as readable Unicode. The rendered view loads local images only
from the session's folder; remote and other resources are refused (``SafeTextBrowser``).
"""

from __future__ import annotations

import html
import re
import secrets
from html.parser import HTMLParser
from pathlib import Path

from PySide6.QtCore import QTimer, QUrl, Signal
from PySide6.QtGui import QFont, QFontDatabase, QImage, QTextCursor, QTextDocument
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QTabWidget, QTextBrowser,
                               QVBoxLayout, QWidget)

# --- formulas ------------------------------------------------------------------------------------

_GREEK = {name: chr(code) for name, code in {
    "alpha": 0x3B1, "beta": 0x3B2, "gamma": 0x3B3, "delta": 0x3B4, "epsilon": 0x3B5, "varepsilon": 0x3B5,
    "zeta": 0x3B6, "eta": 0x3B7, "theta": 0x3B8, "vartheta": 0x3D1, "iota": 0x3B9, "kappa": 0x3BA,
    "lambda": 0x3BB, "mu": 0x3BC, "nu": 0x3BD, "xi": 0x3BE, "pi": 0x3C0, "rho": 0x3C1, "sigma": 0x3C3,
    "tau": 0x3C4, "upsilon": 0x3C5, "phi": 0x3C6, "varphi": 0x3C6, "chi": 0x3C7, "psi": 0x3C8,
    "omega": 0x3C9, "Gamma": 0x393, "Delta": 0x394, "Theta": 0x398, "Lambda": 0x39B, "Xi": 0x39E,
    "Pi": 0x3A0, "Sigma": 0x3A3, "Phi": 0x3A6, "Psi": 0x3A8, "Omega": 0x3A9}.items()}
_SYMBOLS = {
    "times": "×", "cdot": "·", "div": "÷", "pm": "±", "mp": "∓", "leq": "≤", "le": "≤", "geq": "≥",
    "ge": "≥", "neq": "≠", "ne": "≠", "approx": "≈", "sim": "∼", "equiv": "≡", "propto": "∝",
    "infty": "∞", "partial": "∂", "nabla": "∇", "sum": "∑", "prod": "∏", "int": "∫", "oint": "∮",
    "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩", "forall": "∀",
    "exists": "∃", "rightarrow": "→", "to": "→", "leftarrow": "←", "Rightarrow": "⇒", "Leftarrow": "⇐",
    "leftrightarrow": "↔", "Leftrightarrow": "⇔", "mapsto": "↦", "ldots": "…", "cdots": "⋯", "dots": "…",
    "circ": "∘", "degree": "°", "prime": "′", "langle": "⟨", "rangle": "⟩", "neg": "¬", "wedge": "∧",
    "vee": "∨", "emptyset": "∅", "hbar": "ℏ", "ell": "ℓ", "quad": "  ", "qquad": "    ", ",": " ",
    ";": " ", "!": "", " ": " ", "%": "%", "$": "$", "{": "{", "}": "}", "_": "_", "&": "&", "#": "#",
}
_SUP = str.maketrans("0123456789+-=()niab", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵃᵇ")
_SUB = str.maketrans("0123456789+-=()aeiox", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑᵢₒₓ")
_ARG = r"\{((?:[^{}]|\{[^{}]*\})*)\}"


def _script(text: str, table: dict, mark: str) -> str:
    """Unicode super/subscript when every character has one, else ``^(...)`` / ``_(...)``."""
    if text and all(ord(ch) in table for ch in text):
        return text.translate(table)
    return f"{mark}({text})" if len(text) > 1 else f"{mark}{text}"


def latex_to_unicode(tex: str) -> str:
    """A readable rendering of simple LaTeX: Greek letters, operators, fractions, roots, scripts."""
    s = tex.strip()
    s = re.sub(r"\\(left|right|big|Big|bigg|Bigg)\b\s*", "", s)
    s = re.sub(r"\\(?:mathrm|mathbf|mathit|mathsf|mathcal|mathbb|text|textbf|textit|operatorname|boldsymbol)\s*" + _ARG,
               r"\1", s)
    for _ in range(3):  # nested fractions and roots
        s = re.sub(r"\\[dt]?frac\s*" + _ARG + r"\s*" + _ARG,
                   lambda m: f"{_group(m.group(1))}/{_group(m.group(2))}", s)
        s = re.sub(r"\\sqrt\s*" + _ARG, lambda m: f"√{_group(m.group(1))}", s)
    s = re.sub(r"\\([A-Za-z]+|[,;! %${}_&#])",
               lambda m: _GREEK.get(m.group(1)) or _SYMBOLS.get(m.group(1), m.group(0)), s)
    s = re.sub(r"\^" + _ARG, lambda m: _script(m.group(1), _SUP, "^"), s)
    s = re.sub(r"\^(\S)", lambda m: _script(m.group(1), _SUP, "^"), s)
    s = re.sub(r"_" + _ARG, lambda m: _script(m.group(1), _SUB, "_"), s)
    s = re.sub(r"_(\S)", lambda m: _script(m.group(1), _SUB, "_"), s)
    s = s.replace("{", "").replace("}", "")
    return re.sub(r"[ \t]+", " ", s).strip()


def _group(text: str) -> str:
    text = text.strip()
    return text if re.fullmatch(r"[\w.]+|\\?[A-Za-z]+", text) else f"({text})"


def _math_inline(renderer, tokens, idx, options, env) -> str:
    return f'<span style="font-family: serif; font-style: italic">{html.escape(latex_to_unicode(tokens[idx].content))}</span>'


def _math_block(renderer, tokens, idx, options, env) -> str:
    return (f'<p align="center" style="font-family: serif; font-style: italic; font-size: large">'
            f"{html.escape(latex_to_unicode(tokens[idx].content))}</p>\n")


def _table_open(renderer, tokens, idx, options, env) -> str:
    return '<table border="1" cellspacing="0" cellpadding="4">\n'


def _image(renderer, tokens, idx, options, env) -> str:
    """Images with a relative path only (the exported figures); anything else shows its alt text."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    if not src or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", src) or src.startswith(("/", "\\")) or ".." in src:
        return f"[image: {html.escape(alt)}]"
    return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}" />'


# --- HTML tables from the model ------------------------------------------------------------------

_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)
_ALLOWED_TAGS = {"table", "thead", "tbody", "tfoot", "tr", "td", "th", "br", "b", "strong", "i", "em",
                 "sup", "sub", "caption"}
_VOID = {"br"}
_INLINE_MATH = re.compile(r"\$([^$\n]+)\$|\\\((.+?)\\\)")


class _TableSanitizer(HTMLParser):
    """Rebuilds an HTML table keeping only whitelisted tags and numeric colspan/rowspan."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in _ALLOWED_TAGS:
            return
        kept = ""
        for name, value in attrs:
            if name in ("colspan", "rowspan") and value and value.isdigit() and 0 < int(value) < 100:
                kept += f' {name}="{int(value)}"'
        if tag == "table":
            kept += ' border="1" cellspacing="0" cellpadding="4"'
        self.out.append(f"<{tag}{kept}>")
        if tag not in _VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in _ALLOWED_TAGS and tag not in _VOID and tag in self.open:
            while self.open:
                top = self.open.pop()
                self.out.append(f"</{top}>")
                if top == tag:
                    break

    def handle_data(self, data):
        pos = 0
        for m in _INLINE_MATH.finditer(data):
            self.out.append(html.escape(data[pos:m.start()]))
            self.out.append(f"<i>{html.escape(latex_to_unicode(m.group(1) or m.group(2)))}</i>")
            pos = m.end()
        self.out.append(html.escape(data[pos:]))

    def result(self) -> str:
        self.close()
        return "".join(self.out) + "".join(f"</{t}>" for t in reversed(self.open))


def sanitize_table(table_html: str) -> str:
    parser = _TableSanitizer()
    parser.feed(table_html)
    return parser.result()


# --- Markdown ------------------------------------------------------------------------------------

_md = None


def _markdown():
    global _md
    if _md is None:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.dollarmath import dollarmath_plugin
        from mdit_py_plugins.texmath import texmath_plugin

        md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
        md.use(dollarmath_plugin, allow_space=True, allow_digits=False, double_inline=True)
        md.use(texmath_plugin, delimiters="brackets")
        for rule in ("math_inline", "eq"):
            md.add_render_rule(rule, _math_inline)
        md.add_render_rule("math_inline_double", _math_block)
        for rule in ("math_block", "math_block_label", "math_block_eqno", "eqn"):
            md.add_render_rule(rule, _math_block)
        md.add_render_rule("table_open", _table_open)
        md.add_render_rule("image", _image)
        _md = md
    return _md


def render_markdown(text: str) -> str:
    """Safe HTML of model Markdown: no raw HTML except rebuilt tables, formulas as Unicode."""
    nonce = secrets.token_hex(6)
    tables: dict[str, str] = {}

    def stash(m):
        key = f"HSDTABLE{nonce}X{len(tables)}"
        tables[key] = sanitize_table(m.group(0))
        return f"\n\n{key}\n\n"

    body = _markdown().render(_TABLE.sub(stash, text))
    for key, table in tables.items():
        body = body.replace(f"<p>{key}</p>", table).replace(key, table)
    return body


STYLE = """
body { font-size: 11pt; }
table { border-collapse: collapse; margin: 6px 0; }
th { background: #eef1f5; font-weight: bold; }
td, th { padding: 3px 6px; }
code { font-family: monospace; background: #f3f3f3; }
pre { font-family: monospace; background: #f6f6f6; padding: 6px; }
blockquote { color: #555; margin-left: 12px; }
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


def map_spans(result, display: str) -> list[tuple[int | None, int, int]]:
    """Where each of ``result.spans`` lies in ``display`` (the page Markdown as exported: sanitised,
    figure links added): ``(region, start, end)`` in ``display`` offsets, in order."""
    out = []
    cursor = 0
    for span in result.spans:
        piece = result.markdown[span.start:span.end]
        core = piece.strip()
        if not core:
            continue
        pos = display.find(core, cursor)
        if pos < 0:
            # sanitising changed this piece: fall back to its first line
            first = core.splitlines()[0].strip()
            pos = display.find(first, cursor) if first else -1
            if pos < 0:
                continue
            core = first
        out.append((span.region, pos, pos + len(core)))
        cursor = pos + len(core)
    return out


def plain_words(markdown: str, limit: int = 48) -> str:
    """The first words of a Markdown piece as they read when rendered (for finding it there)."""
    text = re.sub(r"<[^>]*>", " ", markdown)
    text = re.sub(r"[#*_`>|\[\]()!$\\~-]+", " ", text)
    words = text.split()
    out = ""
    for w in words:
        if len(out) + len(w) + 1 > limit:
            break
        out = f"{out} {w}" if out else w
    return out


class MarkdownView(QWidget):
    """Rendered + source tabs; scope "page" or "document".

    ``page_selection`` (start, end) reports what the user selected, in page-Markdown offsets."""

    page_selection = Signal(int, int)
    scope_changed = Signal(str)

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
        self.info.setStyleSheet("color: #666")
        top.addWidget(self.info)
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
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        self._texts = {"page": "", "document": ""}
        self._shown = None
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
        self._refresh(live)

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
        if old is not None and text.startswith(old) and live:
            cursor = self.source.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(text[len(old):])
        else:
            bar = self.source.verticalScrollBar().value()
            self.source.setPlainText(text)
            self.source.verticalScrollBar().setValue(bar)
        self._selecting = False
        self._shown = (self.scope, text)
        lines = text.count("\n") + 1 if text else 0
        self.info.setText(f"{len(text):,} characters, {lines:,} line{'s' if lines != 1 else ''}")
        if live:
            if not self._render_timer.isActive():
                self._render_timer.start()
        else:
            self._render_timer.stop()
            self._render_now()

    def _render_now(self) -> None:
        bar = self.rendered.verticalScrollBar().value()
        self._selecting = True
        self.rendered.setHtml(render_markdown(self._texts[self.scope]))
        self._selecting = False
        self.rendered.verticalScrollBar().setValue(bar)

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
            needle = plain_words(self._texts["page"][start:end])
            if needle:
                found = self.rendered.document().find(needle)
                if found.isNull() and " " in needle:
                    found = self.rendered.document().find(needle.split(" ")[0])
                if not found.isNull():
                    self.rendered.setTextCursor(found)
                    self.rendered.ensureCursorVisible()
        finally:
            self._selecting = False

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
