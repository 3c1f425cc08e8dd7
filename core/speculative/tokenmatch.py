"""Token re-synchronisation: find where the output currently is inside the drafts, propose what follows.

After every verification step the engine asks: "the output ends with tokens ... a b c; where do
drafts contain a b c, and what comes next there?" One hit gives a chain, several hits give a tree
(merged by ``tree.build_tree``), no hit gives nothing (plain one-token decoding).

Worked example (window 3, drafts ``D0 = [1 2 3 4 5]`` and ``D1 = [9 2 3 7]``):

    output ... 1 2 3  -> suffix (1,2,3) occurs once, in D0 ending at 3  -> chain [4, 5]
    output ... 8 2 3  -> (8,2,3) nowhere; (2,3) is ambiguous in D0 and D1 -> tree {4 5, 7}
    output ... 6 6 6  -> no n-gram of any length occurs                   -> no proposal

The window starts at ``min_ngram`` (3) and grows one token at a time, up to ``max_ngram`` (10),
while the longer suffix still matches and the hits still disagree on what follows. Where even the
``min_ngram`` suffix is absent, a 1-gram lookup of the last token gives a bounded fallback tree.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from bisect import bisect_right
from dataclasses import dataclass

from core import tuning
from core.speculative.proposal_config import ProposalConfig
from core.speculative.tree import DraftTree, build_tree, root_only


#: Where an n-gram occurs: ``(draft, after, stop)``, byte offsets in the packed buffer of the token
#: after the n-gram and of the end of its draft.
Occurrence = tuple[int, int, int]


@dataclass
class Found:
    """The occurrences of an n-gram (``places``) and, for each, what follows it there: at most
    ``length`` tokens, none past its draft's end, packed (``continuations``)."""

    places: list[Occurrence]
    continuations: list[bytes]

    def __bool__(self) -> bool:
        return bool(self.places)

    def distinct(self) -> int:
        """How many different continuations (empty ones not counted)."""
        seen = set(self.continuations)
        seen.discard(b"")
        return len(seen)


class DraftIndex:
    """Every n-gram of a set of token drafts that change while decoding, found by a byte search.

    ``drafts[d]`` is a list of token ids. ``hits(ngram)`` gives the positions right after each
    occurrence: ``(d, end)`` means ``drafts[d][end - n:end]`` is the n-gram and ``drafts[d][end:]``
    is what the draft proposes next; in draft order, then in order of position.

    The drafts are kept packed, four bytes a token, one after the other with a token no draft holds
    before, between and after them; a lookup is ``bytes.find`` over that buffer (an occurrence must
    start on a token's first byte), and a longer n-gram narrows the shorter one's occurrences by
    the token before them (``narrow``). So replacing a draft (a region's Stage 1 output arriving,
    the joined draft rebuilt) or extending one costs a copy of its bytes, not an index of its
    n-grams: on a page of 300 regions the joined draft changes nearly every pass.
    """

    def __init__(self, drafts: list[list[int]], max_ngram: int = tuning.MAX_NGRAM):
        self.drafts = [list(d) for d in drafts]
        self.max_ngram = max_ngram  # longer n-grams are not looked up (they find nothing)
        self._packed = [pack_tokens(d) for d in self.drafts]
        self._buffer: bytes | None = None  # separator, each draft's bytes and a separator; on demand
        self._starts: list[int] = []       # byte offset of each draft in the buffer

    def set_draft(self, d: int, tokens: list[int]) -> None:
        """Replace draft ``d`` (Stage 2 swaps a region's raw draft for its Stage 1 output)."""
        self.drafts[d] = list(tokens)
        self._packed[d] = pack_tokens(tokens)
        self._buffer = None

    def extend(self, d: int, tokens: list[int]) -> None:
        """Append ``tokens`` to draft ``d``."""
        self.drafts[d].extend(tokens)
        self._packed[d] += pack_tokens(tokens)
        self._buffer = None

    def __bool__(self) -> bool:
        return any(self.drafts)

    def _packed_buffer(self) -> bytes:
        if self._buffer is None:
            self._starts, pos = [], len(_SEPARATOR)
            for packed in self._packed:
                self._starts.append(pos)
                pos += len(packed) + len(_SEPARATOR)
            self._buffer = _SEPARATOR + _SEPARATOR.join(self._packed) + _SEPARATOR
        return self._buffer

    def find(self, suffix: tuple[int, ...], length: int = 0) -> Found:
        """Every occurrence of the n-gram ``suffix`` (in draft order, then in order of position)
        with its next ``length`` tokens."""
        if not suffix or len(suffix) > self.max_ngram:
            return Found([], [])
        buffer = self._packed_buffer()
        starts, pattern, places = self._starts, pack_tokens(suffix), []
        i = buffer.find(pattern)
        while i != -1:
            if i % 4:  # inside a token: not an occurrence
                i = buffer.find(pattern, i + 1)
                continue
            d = bisect_right(starts, i) - 1
            places.append((d, i + len(pattern), starts[d] + len(self._packed[d])))
            i = buffer.find(pattern, i + 4)
        return self._with_continuations(places, length)

    def _with_continuations(self, places: list[Occurrence], length: int) -> Found:
        buffer, span = self._buffer, 4 * length
        return Found(places, [buffer[after:min(stop, after + span)] for _, after, stop in places])

    def narrow(self, found: Found, suffix: tuple[int, ...], length: int) -> Found:
        """The occurrences of ``suffix`` among ``found``, those of ``suffix[1:]``: the ones preceded
        by ``suffix[0]`` (the drafts unchanged since ``found``; ``length`` as there)."""
        if len(suffix) > self.max_ngram:
            return Found([], [])
        buffer, token, back = self._buffer, pack_tokens(suffix[:1]), 4 * len(suffix)
        keep = [k for k, (_, after, _) in enumerate(found.places) if buffer[after - back:after - back + 4] == token]
        return Found([found.places[k] for k in keep], [found.continuations[k] for k in keep])

    def ranked(self, found: Found, limit: int) -> list[tuple[list[int], tuple[int, int]]]:
        """Up to ``limit`` distinct continuations of ``found``, the most frequent first (ties: the
        first found first), each with the hit ``(d, end)`` it was first found at. Compared as
        bytes: a page of leader dots finds the same 3-gram hundreds of times."""
        keys = found.continuations
        counts = Counter(keys)  # in order of first occurrence
        counts.pop(b"", None)  # an occurrence at a draft's end continues with nothing
        top = heapq.nsmallest(limit, counts.items(), key=lambda kv: -kv[1])  # = sorted(...)[:limit]
        out = []
        for key, _ in top:
            d, after, _ = found.places[keys.index(key)]
            out.append((array("I", key).tolist(), (d, (after - self._starts[d]) // 4)))
        return out

    def hits(self, suffix: tuple[int, ...]) -> list[tuple[int, int]]:
        return [(d, (after - self._starts[d]) // 4) for d, after, _ in self.find(suffix).places]

    def continuation(self, hit: tuple[int, int], length: int) -> list[int]:
        d, end = hit
        return self.drafts[d][end:end + length]


#: Around the drafts in the packed buffer: no token id is 2**32 - 1, so no n-gram spans two drafts.
_SEPARATOR = array("I", [0xFFFFFFFF]).tobytes()


def pack_tokens(tokens) -> bytes:
    """Token ids as unsigned 32-bit integers, native byte order."""
    return array("I", tokens).tobytes()


def propose(context: list[int], root: int, index: DraftIndex, cfg: ProposalConfig,
            budget: int | None = None, fallback: bool = True) -> DraftTree:
    """Propose a draft tree to follow ``context + [root]``.

    context: tokens already verified and in the cache (the output so far; prompt excluded).
    root:    the token the target chose last (not yet in the cache); the tree's node 0.
    budget:  longest continuation to propose (default ``cfg.max_chain``); the tree holds at most
             ``min(cfg.max_nodes, 2 * budget + 1)`` nodes.
    fallback: whether a 1-gram tree may be proposed when no ``min_ngram`` suffix matches.
    Returns a tree whose node 0 is ``root``; ``len(tree) == 1`` means "no proposal".
    """
    if not index:
        return root_only(root)
    budget = budget or cfg.max_chain
    seq = context[-(cfg.max_ngram - 1):] + [root]
    found = last = None  # the longest window's occurrences
    for n in range(cfg.min_ngram, min(cfg.max_ngram, len(seq)) + 1):
        suffix = tuple(seq[-n:])
        found = index.find(suffix, budget) if found is None else index.narrow(found, suffix, budget)
        if not found:
            break
        last = found
        if found.distinct() <= 1:
            break  # unambiguous: a longer window cannot help
    best = index.ranked(last, cfg.max_branches) if last is not None else []
    if not best and fallback:
        best = index.ranked(index.find((root,), min(budget, cfg.fallback_depth)), cfg.fallback_branches)
    if not best:
        return root_only(root)
    return build_tree(root, best, min(cfg.max_nodes, 2 * budget + 1))
