"""Draft inspection: a region's draft beside the text the model verified, differences marked.

The verified text is the region's Stage 1 output where Stage 1 ran (``hsd``, ``regions``), else
the page Markdown the engine attributes to the region (``PageResult.spans``). A word-level diff
(difflib) marks what the model kept from the draft (green), what it rewrote (red, struck out in the
draft; amber where it wrote new text) and what it added.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from enum import StrEnum

from PySide6.QtWidgets import QHBoxLayout, QLabel, QTextBrowser, QVBoxLayout, QWidget

from app.page_view import label_name


ACCEPTED_BG = "#c8f0d0"
REWRITTEN_BG = "#ffd0cc"
ADDED_BG = "#ffe7a8"
MARK_TEXT = "#1a1a1a"
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


@dataclass
class DraftDiff:
    draft: list[tuple[str, str]]      # (kind, text): kind "same" or "rewritten"
    verified: list[tuple[str, str]]   # (kind, text): kind "same", "rewritten" or "added"
    kept_words: int
    draft_words: int

    @property
    def kept_share(self) -> float:
        return self.kept_words / self.draft_words if self.draft_words else 0.0


def diff_words(draft: str, verified: str) -> DraftDiff:
    """Word-level alignment of a draft and the verified text (whitespace is not a difference)."""
    a = _TOKEN.findall(draft)
    b = _TOKEN.findall(verified)
    a_words = [t for t in a if not t.isspace()]
    b_words = [t for t in b if not t.isspace()]
    a_index = [i for i, t in enumerate(a) if not t.isspace()]
    b_index = [i for i, t in enumerate(b) if not t.isspace()]
    a_kind = ["same"] * len(a)
    b_kind = ["same"] * len(b)
    kept = 0
    matcher = difflib.SequenceMatcher(None, a_words, b_words, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            kept += i2 - i1
            continue
        for i in range(i1, i2):
            a_kind[a_index[i]] = "rewritten"
        for j in range(j1, j2):
            b_kind[b_index[j]] = "added" if tag == "insert" else "rewritten"
    # whitespace between two changed words belongs to the change
    for tokens, kinds in ((a, a_kind), (b, b_kind)):
        for i, t in enumerate(tokens):
            if t.isspace() and 0 < i < len(tokens) - 1 and kinds[i - 1] == kinds[i + 1] != "same":
                kinds[i] = kinds[i - 1]
    return DraftDiff(_runs(a, a_kind), _runs(b, b_kind), kept, len(a_words))


def _runs(tokens: list[str], kinds: list[str]) -> list[tuple[str, str]]:
    runs: list[tuple[str, str]] = []
    for t, k in zip(tokens, kinds):
        if runs and runs[-1][0] == k:
            runs[-1] = (k, runs[-1][1] + t)
        else:
            runs.append((k, t))
    return runs


def runs_html(runs: list[tuple[str, str]], draft_side: bool) -> str:
    out = []
    for kind, text in runs:
        body = html.escape(text).replace("\n", "<br>")
        # dark text on the light marks: readable whatever the palette's own text colour is
        if kind == "same":
            out.append(f'<span style="background:{ACCEPTED_BG}; color:{MARK_TEXT}">{body}</span>')
        elif kind == "rewritten" and draft_side:
            out.append(f'<span style="background:{REWRITTEN_BG}; color:{MARK_TEXT}; '
                       f'text-decoration: line-through">{body}</span>')
        elif kind == "rewritten":
            out.append(f'<span style="background:{ADDED_BG}; color:{MARK_TEXT}">{body}</span>')
        else:
            out.append(f'<span style="background:{ADDED_BG}; color:{MARK_TEXT}; text-decoration: underline">'
                       f'{body}</span>')
    return f'<div style="font-family: monospace; white-space: pre-wrap">{"".join(out)}</div>'


def verified_text(result, index: int) -> tuple[str, str]:
    """(text, where it comes from) of what the model made of region ``index``."""
    if index < len(result.region_outputs) and result.region_outputs[index]:
        return result.region_outputs[index], "Stage 1 output on the region crop"
    parts = [result.markdown[s.start:s.end] for s in result.spans if s.region == index]
    if parts:
        return "".join(parts), "page Markdown accepted from this draft"
    return "", "the model wrote no text for this region"


class InspectorState(StrEnum):
    """What the inspector shows: nothing, a region the model verified on a finished page (draft and
    verified text compared), or a draft nothing verified yet (shown plain, with the reason)."""

    EMPTY = "empty"
    VERIFIED = "verified"
    UNVERIFIED = "unverified"


class DraftInspector(QWidget):
    """Shows one region: header with its numbers, then draft | verified side by side."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.header = QLabel("Click a region on the page to compare its draft with the verified text.")
        self.header.setWordWrap(True)
        self.draft_label = QLabel("<b>Draft</b> (drafter)")
        self.verified_label = QLabel("<b>Verified</b> (model)")
        self.draft_view = QTextBrowser()
        self.verified_view = QTextBrowser()
        for view in (self.draft_view, self.verified_view):
            view.setOpenLinks(False)
            view.setAcceptDrops(False)
            view.viewport().setAcceptDrops(False)
        self.legend = QLabel(
            f'<span style="background:{ACCEPTED_BG}; color:{MARK_TEXT}">&nbsp;kept&nbsp;</span> '
            f'<span style="background:{REWRITTEN_BG}; color:{MARK_TEXT}; text-decoration: line-through">'
            f'&nbsp;rewritten&nbsp;</span> '
            f'<span style="background:{ADDED_BG}; color:{MARK_TEXT}">&nbsp;model\'s own text&nbsp;</span> '
            '· a draft the model did not check is shown plain, never struck through')
        self.legend.setWordWrap(True)
        legend = self.legend
        left = QVBoxLayout()
        left.addWidget(self.draft_label)
        left.addWidget(self.draft_view, 1)
        right = QVBoxLayout()
        right.addWidget(self.verified_label)
        right.addWidget(self.verified_view, 1)
        panes = QHBoxLayout()
        panes.addLayout(left, 1)
        panes.addLayout(right, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(legend)
        layout.addLayout(panes, 1)
        self.region_index: int | None = None
        self.page: int | None = None
        self.state = InspectorState.EMPTY
        self.diff: DraftDiff | None = None

    def clear(self, message: str | None = None) -> None:
        """Nothing inspected: every label back to its resting text (no stale drafter or source)."""
        self.region_index = None
        self.page = None
        self.state = InspectorState.EMPTY
        self.diff = None
        self.header.setText(message or "Click a region on the page to compare its draft with the verified text.")
        self.draft_label.setText("<b>Draft</b> (drafter)")
        self.verified_label.setText("<b>Verified</b> (model)")
        self.draft_view.clear()
        self.verified_view.clear()

    def show_story(self, story) -> None:
        """One region as ``app.page_story.region_story`` tells it: draft and verified text compared
        where the model verified it on a finished page, else the draft plain with the reason."""
        if story is None:
            self.clear()
        elif story.verified and story.final:
            self._show_verified(story)
        else:
            self._show_unverified(story)

    def _show_verified(self, story) -> None:
        from core.api import clean_draft

        region, stats = story.region, story.stats
        draft = clean_draft(region.text) if region.text else ""
        self.region_index, self.page, self.state = story.index, story.page, InspectorState.VERIFIED
        self.diff = diff_words(draft, story.verified_text)
        # Two shares, each named: the colour is the share of draft tokens the model accepted (what
        # speeds decoding up); the words kept compare the two texts shown below.
        on_region = stats.verified and stats.drafted_tokens
        numbers = (f" · colour: {story.rate:.0%} of its draft tokens accepted "
                   f"{'on the region' if on_region else 'by the page'}<br>drafted {stats.drafted_tokens} tokens")
        if stats.verified:
            numbers += (f", accepted {stats.accepted_tokens} on the region, "
                        f"{stats.forward_passes} forward passes")
        if stats.page_accepted_tokens:
            numbers += f", {stats.page_accepted_tokens} accepted on the page"
        if stats.fallback:
            numbers += " · output degenerated, raw draft used"
        kind = html.escape(label_name(region.label))
        self.header.setText(f"<b>Page {story.page}, region {story.index + 1}: {kind}</b>"
                            f"{numbers} · words compared below: {self.diff.kept_words} of {self.diff.draft_words} "
                            f"draft words kept ({self.diff.kept_share:.0%}) · verified text: "
                            f"{html.escape(story.source)}")
        self.verified_label.setText(f"<b>Verified</b> ({html.escape(story.source)})")
        self.draft_label.setText(f"<b>Draft</b> ({draft_source(region)})")
        self.draft_view.setHtml(runs_html(self.diff.draft, True) if draft else "<i>empty draft</i>")
        self.verified_view.setHtml(runs_html(self.diff.verified, False) if story.verified_text
                                   else f"<i>{html.escape(story.source)}</i>")
        _scroll_to_first_change(self.draft_view, self.diff.draft)
        _scroll_to_first_change(self.verified_view, self.diff.verified)

    def _show_unverified(self, story) -> None:
        """A draft nothing verified (yet): shown as it is, plain, with the reason, never marked rewritten."""
        from core.api import clean_draft

        region = story.region
        self.region_index, self.page, self.state, self.diff = story.index, story.page, InspectorState.UNVERIFIED, None
        draft = clean_draft(region.text) if region.text else ""
        note = " · partial: the conversion was cancelled on this page" if story.partial else ""
        stats = story.stats
        if story.verified:  # verified on its crop, the page not finished: as its colour shows
            said = (f"colour: {story.rate:.0%} of its draft tokens accepted on the region so far "
                    f"({stats.accepted_tokens} of {stats.drafted_tokens}); the page was not finished")
        else:
            said = f"not verified: {html.escape(story.reason)}"
        kind = html.escape(label_name(region.label))
        self.header.setText(f"<b>Page {story.page}, region {story.index + 1}: {kind}</b> · "
                            f"{said}{note}")
        self.draft_label.setText(f"<b>Draft</b> ({draft_source(region)})")
        self.verified_label.setText("<b>Verified</b> (nothing yet)" if not story.final else "<b>Verified</b> (none)")
        body = html.escape(draft).replace("\n", "<br>")
        self.draft_view.setHtml(f'<div style="font-family: monospace; white-space: pre-wrap">{body}</div>'
                                if draft else "<i>text not read</i>" if region.extra.get("unread") else "<i>empty draft</i>")
        text = html.escape(story.verified_text).replace("\n", "<br>")
        self.verified_view.setHtml((f"<i>Verified on the region; the page was not finished, so nothing is "
                                    "compared with the draft.</i>" if story.verified else
                                    f"<i>Not verified: {html.escape(story.reason)}.</i>") + (
            f'<p>The model wrote (not compared with the draft):</p><div style="font-family: monospace; '
            f'white-space: pre-wrap">{text}</div>' if story.verified_text else ""))


def draft_source(region) -> str:
    """Which source drafted ``region`` and, where the drafter says, why (a text layer that failed
    its check is read by OCR: ``extra["source_reason"]``), as escaped HTML."""
    reason = (getattr(region, "extra", None) or {}).get("source_reason")
    source = html.escape(region.source or "drafter")
    return f"{source}: {html.escape(reason)}" if reason else source


def _scroll_to_first_change(view: QTextBrowser, runs: list[tuple[str, str]]) -> None:
    """Bring the first rewritten or added stretch into view (with a line of context above)."""
    offset = 0
    for kind, text in runs:
        if kind != "same":
            break
        offset += len(text)
    else:
        return
    cursor = view.textCursor()
    cursor.setPosition(min(offset + 1, max(0, view.document().characterCount() - 1)))
    view.setTextCursor(cursor)
    bar = view.verticalScrollBar()
    line = view.fontMetrics().lineSpacing()
    bar.setValue(bar.value() + view.cursorRect().top() - 2 * line)
