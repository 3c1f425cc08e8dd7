"""The exports' Markdown reader: CommonMark with tables, strikethrough and formulas.

Formulas are ``$..$``, ``$$..$$`` (mdit-py-plugins' dollarmath), ``\\(..\\)`` inline and ``\\[..\\]``
(inline, or a block of its own lines), as document models write them. Each closing delimiter is
searched once per text and remembered, so a page of openers without closers stays linear.
"""

from __future__ import annotations


def _next_close(cache: dict, src: str, key: str, close: str, start: int) -> int:
    """The first ``close`` at or after ``start``, remembered for later openers in the same text."""
    cached = cache.get(key)
    if cached is not None and cached[0] is src and (cached[1] < 0 or cached[1] >= start) and cached[2] <= start:
        return cached[1]
    found = src.find(close, start)
    cache[key] = (src, found, start)
    return found


def _bracket_inline(state, silent) -> bool:
    src, pos = state.src, state.pos
    if not (src.startswith("\\(", pos) or src.startswith("\\[", pos)):
        return False
    display = src[pos + 1] == "["
    cache = state.env.setdefault("_math_close", {})
    end = _next_close(cache, src, "]" if display else ")", "\\]" if display else "\\)", pos + 2)
    if end < 0 or not src[pos + 2:end].strip():
        return False
    if not silent:
        token = state.push("math_inline_double" if display else "math_inline", "math", 0)
        token.content = src[pos + 2:end]
        token.markup = src[pos:pos + 2]
    state.pos = end + 2
    return True


def _bracket_block(state, start_line, end_line, silent) -> bool:
    begin = state.bMarks[start_line] + state.tShift[start_line]
    if state.sCount[start_line] - state.blkIndent >= 4 or not state.src.startswith("\\[", begin):
        return False
    cache = state.env.setdefault("_math_close", {})
    close = _next_close(cache, state.src, "block", "\\]", begin + 2)
    if close < 0 or cache.get("failed") == close:
        return False
    line = start_line
    while line < end_line and state.eMarks[line] < close:
        line += 1
    if line >= end_line or state.src[close + 2:state.eMarks[line]].strip():
        cache["failed"] = close  # every later opener would end at this same closer: not a block either
        return False
    if silent:
        return True
    token = state.push("math_block", "math", 0)
    token.block = True
    token.content = state.src[begin + 2:close]
    token.map = [start_line, line + 1]
    token.markup = "\\["
    state.line = line + 1
    return True


def markdown_reader():
    """A new markdown-it parser (raw HTML read as HTML tokens: the caller decides what they become)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable(["table", "strikethrough"])
    md.use(dollarmath_plugin, allow_space=True, allow_digits=False, double_inline=True)
    md.inline.ruler.before("escape", "math_bracket", _bracket_inline)
    md.block.ruler.before("fence", "math_bracket_block", _bracket_block,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md


#: Token types that hold a formula, and whether it is shown as a display formula.
MATH_TOKENS = {"math_inline": False, "math_inline_double": True, "math_block": True, "math_block_label": True}


def math_source(token) -> str:
    """A formula token's LaTeX (the sanitiser may have written a '<' of it as an entity)."""
    return token.content.replace("&lt;", "<")
