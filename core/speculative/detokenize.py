"""Streaming detokenisation: the text that new tokens add, without re-decoding the whole output.

Byte-level BPE tokens can split one UTF-8 character; a piece that decodes to U+FFFD is held back
until the following tokens complete it.
"""

from __future__ import annotations


class IncrementalDetokenizer:
    def __init__(self, decode, context: int = 6):
        self._decode = decode
        self._context = context
        self._prefix = 0   # tokens[prefix:read] is the already-emitted tail, kept as context
        self._read = 0

    def push(self, tokens: list[int]) -> str:
        """``tokens`` is the whole output so far; returns the text not emitted before."""
        if len(tokens) <= self._read:
            return ""
        before = self._decode(tokens[self._prefix:self._read])
        after = self._decode(tokens[self._prefix:])
        if after.endswith("\ufffd") or not after.startswith(before):
            return ""  # incomplete character: wait for more tokens
        self._prefix = max(self._prefix, len(tokens) - self._context)
        self._read = len(tokens)
        return after[len(before):]
