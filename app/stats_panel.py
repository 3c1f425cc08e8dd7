"""The statistics panel: per page tokens, forward passes, mean accepted length, speed-up, time.

The speed-up is estimated from pass counts: plain decoding needs one forward pass per output token
plus one prefill, so ``(tokens + 1) / forward passes`` is what speculation saved in passes (the
benchmark measures wall-clock speed-ups against real AR runs).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

STOP_NOTES = {"max_new_tokens": "token limit", "repetition": "stopped repeating"}
COLUMNS = ("Page", "Tokens", "Passes", "Mean acc.", "Speed-up*", "Time (s)", "Status")
TIPS = ("", "output tokens", "forward passes (prefills included)", "mean accepted length: output tokens "
        "per decoding pass", "estimated from passes: (tokens + 1) / forward passes", "wall-clock seconds", "")


def estimated_speedup(stats) -> float:
    return (stats.generated_tokens + 1) / stats.forward_passes if stats.forward_passes else 0.0


def page_row(result) -> list[str]:
    s = result.stats
    if result.error:
        return [str(result.page), "", "", "", "", "", f"failed: {result.error}"]
    status = "ok" if not s.draft_error else f"drafter failed: {s.draft_error}"
    if s.stop_reason == "max_new_tokens":  # the page may be cut short: a warning, never "ok"
        status = "warning: token limit, may be cut short" + ("" if not s.draft_error else f"; {status}")
    elif s.stop_reason in STOP_NOTES:
        status += f", {STOP_NOTES[s.stop_reason]}"
    return [str(result.page), str(s.generated_tokens), str(s.forward_passes), f"{s.mean_accepted_length:.2f}",
            f"{estimated_speedup(s):.2f}×", f"{s.seconds.get('total', 0.0):.2f}", status]


class StatsPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.summary = QLabel("No pages converted yet.")
        self.summary.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for col, tip in enumerate(TIPS):
            if tip:
                self.table.horizontalHeaderItem(col).setToolTip(tip)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        self.results = []

    def set_results(self, results) -> None:
        from core.api import document_totals

        self.results = sorted(results, key=lambda r: r.page)
        self.table.setRowCount(len(self.results))
        for row, result in enumerate(self.results):
            for col, text in enumerate(page_row(result)):
                item = QTableWidgetItem(text)
                if col < len(COLUMNS) - 1:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                elif text.startswith(("warning", "failed")):
                    item.setForeground(QColor(176, 96, 0) if text.startswith("warning") else QColor(190, 30, 30))
                self.table.setItem(row, col, item)
        if not self.results:
            self.summary.setText("No pages converted yet.")
            return
        t = document_totals(self.results)
        tokens, passes = t["generated_tokens"], t["forward_passes"]
        speed = (tokens + len(self.results)) / passes if passes else 0.0
        failed = f" · failed pages: {', '.join(map(str, t['failed_pages']))}" if t["failed_pages"] else ""
        self.summary.setText(
            f"<b>{t['pages']} page{'' if t['pages'] == 1 else 's'}</b> · {tokens:,} tokens · {passes:,} forward passes · mean accepted "
            f"length {t['mean_accepted_length']:.2f} · est. speed-up {speed:.2f}× · "
            f"{t['seconds'].get('total', 0.0):.1f} s{failed}")
