"""``IncrementalDetokenizer``: streamed text equals the whole decode, and a split UTF-8 character
waits for the token that completes it."""

from __future__ import annotations

from core.speculative.detokenize import IncrementalDetokenizer

#: A byte-level "tokenizer": each token is one byte of UTF-8.
TEXT = "Größe: 5 µm — ok"
TOKENS = list(TEXT.encode("utf-8"))


def decode(tokens):
    return bytes(tokens).decode("utf-8", errors="replace")


def test_pieces_join_to_the_whole_text_and_never_show_half_a_character():
    detok = IncrementalDetokenizer(decode, context=3)
    pieces = [detok.push(TOKENS[:n]) for n in range(1, len(TOKENS) + 1)]
    assert "".join(pieces) == TEXT
    assert not any("\ufffd" in p for p in pieces)
    assert pieces[TOKENS.index(0xC3)] == ""  # the first byte of ö alone: held back


def test_nothing_new_is_nothing_and_chunks_work_too():
    detok = IncrementalDetokenizer(decode)
    assert detok.push(TOKENS[:4]) == TEXT[:3] + ""  # "Grö" needs 4 bytes: G, r, two of ö
    assert detok.push(TOKENS[:4]) == ""
    assert detok.push(TOKENS) == TEXT[3:]
