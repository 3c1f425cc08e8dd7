"""Turning a family's native page output into our Markdown, after decoding.

Applied to the decoded text of every mode alike (``ar``, ``hsd``, ``page``, ``regions``), so the
token streams the speculative decoder verifies stay the model's own and ``hsd`` still equals ``ar``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from core import tuning

# ------------------------------------------------------------------------------------------------
# HunyuanOCR: its official scripts drop a long output's runaway tail (the same short string ten or
# more times in a row at the very end), keeping one copy.


def trim_trailing_repeats(text: str, min_chars: int | None = None, min_count: int | None = None) -> str:
    """``text`` without a runaway tail: if it is at least ``min_chars`` long and ends with one unit
    (2 to ``len / 10`` characters, the shortest that fits) repeated ``min_count`` times or more,
    all but one copy of that unit go (defaults: ``tuning.REPEAT_MIN_CHARS``,
    ``tuning.REPEAT_MIN_COUNT``)."""
    min_chars = tuning.REPEAT_MIN_CHARS if min_chars is None else min_chars
    min_count = tuning.REPEAT_MIN_COUNT if min_count is None else min_count
    n = len(text)
    if n < min_chars:
        return text
    for unit in range(2, n // 10 + 1):
        tail = text[n - unit:]
        start = n - unit
        while start - unit >= 0 and text[start - unit:start] == tail:
            start -= unit
        copies = (n - start) // unit
        if copies >= min_count:
            return text[:start + unit]
    return text


# ------------------------------------------------------------------------------------------------
# Qwen3-VL "qwenvl markdown": Markdown inside a ```markdown fence, figures as <!-- Image (...) -->.

_FENCE = re.compile(r"^\s*```[ \t]*(?:markdown|md|html)?[ \t]*\n(.*?)(?:\n[ \t]*```[ \t]*)?\s*$", re.S | re.I)
_IMAGE_COMMENT = re.compile(r"[ \t]*<!--\s*Image\b[^>]*?-->[ \t]*\n?", re.I)


def strip_fence(text: str) -> str:
    """The content of a single code fence wrapping the whole output (an unclosed one too)."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def qwen_markdown(text: str) -> str:
    """Qwen3-VL's document Markdown as ours: no fence, no ``<!-- Image (x1,y1,x2,y2) -->`` comments."""
    body = _IMAGE_COMMENT.sub("", strip_fence(text))
    return re.sub(r"\n{3,}", "\n\n", body).strip()


# ------------------------------------------------------------------------------------------------
# Qwen2.5-VL "QwenVL HTML": one HTML element per layout block, each with a data-bbox attribute.

_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = {"p", "div", "section", "article", "header", "footer", "blockquote", "figcaption", "caption",
           "address", "pre", "aside"}
_SKIP = {"img", "head", "style", "script", "title", "meta"}


class _QwenHtml(HTMLParser):
    """Blocks to Markdown paragraphs; tables kept as HTML without layout attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.current: list[str] = []
        self.table: list[str] | None = None
        self.table_depth = 0
        self.skip_depth = 0
        self.list_stack: list[list] = []  # [kind, counter]

    # a block ends: flush what it collected
    def _flush(self, prefix: str = "") -> None:
        text = re.sub(r"[ \t]+", " ", "".join(self.current)).strip()
        self.current = []
        if text:
            self.blocks.append(prefix + text)

    def handle_starttag(self, tag, attrs):
        if self.table is not None:
            if tag == "table":
                self.table_depth += 1
            kept = [(k, v) for k, v in attrs if k in ("colspan", "rowspan")]
            self.table.append("<" + tag + "".join(f' {k}="{v}"' for k, v in kept) + ">")
            return
        if tag in _SKIP:
            if tag != "img":
                self.skip_depth += 1
            return
        if tag == "table":
            self._flush()
            self.table, self.table_depth = ["<table>"], 1
        elif tag in _HEADINGS or tag in _BLOCKS or tag == "li":
            self._flush()
        elif tag in ("ul", "ol"):
            self._flush()
            self.list_stack.append([tag, 0])
        elif tag == "br":
            self.current.append("\n")

    def handle_endtag(self, tag):
        if self.table is not None:
            self.table.append(f"</{tag}>")
            if tag == "table":
                self.table_depth -= 1
                if self.table_depth == 0:
                    self.blocks.append("".join(self.table))
                    self.table = None
            return
        if tag in _SKIP:
            if tag != "img":
                self.skip_depth = max(0, self.skip_depth - 1)
            return
        if tag in _HEADINGS:
            self._flush("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            if self.list_stack and self.list_stack[-1][0] == "ol":
                self.list_stack[-1][1] += 1
                self._flush(f"{self.list_stack[-1][1]}. ")
            else:
                self._flush("- ")
        elif tag in ("ul", "ol"):
            self._flush()
            if self.list_stack:
                self.list_stack.pop()
        elif tag in _BLOCKS:
            self._flush()

    def handle_data(self, data):
        if self.skip_depth:
            return
        if self.table is not None:
            self.table.append(data.strip())
        else:
            self.current.append(data)

    def markdown(self) -> str:
        if self.table is not None:  # an unclosed table at the end of a cut-off output
            self.blocks.append("".join(self.table))
            self.table = None
        self._flush()
        return "\n\n".join(self.blocks)


def qwen_html_to_markdown(text: str) -> str:
    """Qwen2.5-VL's "QwenVL HTML" page as our Markdown: headings as ``#``, paragraphs and list items
    as Markdown, tables as HTML without their ``data-bbox``, images dropped (figures come from the
    layout). Output that is not HTML at all passes through, unfenced."""
    body = strip_fence(text)
    if not re.search(r"<(html|body|p|h[1-6]|div|table|ul|ol)\b", body, re.I):
        return body.strip()
    parser = _QwenHtml()
    parser.feed(body)
    parser.close()
    return parser.markdown()
