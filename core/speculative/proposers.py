"""Proposers: where a row's draft trees come from. One small class per strategy, one method:

    propose(output, root, budget) -> DraftTree

``output`` is the row's verified tokens, ``root`` the target's latest token (node 0 of the tree),
``budget`` the longest continuation worth proposing now (the decoder adapts it to acceptance).
Tree origins are ``(region, position)``: which drafter region a proposed token came from.
"""

from __future__ import annotations

from typing import Callable, Protocol

from core.speculative.matching import DraftIndex, ProposalConfig, propose
from core.speculative.textmatch import TextMatcher
from core.speculative.tree import DraftTree, build_tree, root_only


class Proposer(Protocol):
    def propose(self, output: list[int], root: int, budget: int) -> DraftTree: ...


class NoDrafts:
    """Plain one-token decoding (the AR baseline)."""

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        return root_only(root)


class TokenNgramProposer:
    """Exact token n-gram lookup into token drafts (Stage 1: the region's own draft)."""

    def __init__(self, drafts: list[list[int]], cfg: ProposalConfig, regions: list[int] | None = None,
                 fallback: bool = True, index: DraftIndex | None = None):
        self.index = index if index is not None else DraftIndex(drafts, cfg.max_ngram)
        self.cfg = cfg
        self.regions = regions
        self.fallback = fallback

    def set_draft(self, d: int, tokens: list[int]) -> None:
        self.index.set_draft(d, tokens)

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        tree = propose(output, root, self.index, self.cfg, budget, self.fallback)
        if self.regions is not None:
            tree.origins = [None if o is None or self.regions[o[0]] is None else (self.regions[o[0]], o[1])
                            for o in tree.origins]
        return tree


class TextProposer:
    """Normalised-character matching into raw text drafts (page level); see ``textmatch``."""

    def __init__(self, texts: list[str], regions: list[int], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig, tail_tokens: int = 24):
        self.matcher = TextMatcher(texts)
        self.regions = regions
        self.encode, self.decode = encode, decode
        self.cfg = cfg
        self.tail_tokens = tail_tokens

    def set_text(self, d: int, text: str) -> None:
        self.matcher.set_text(d, text)

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        if not self.matcher:
            return root_only(root)
        tail = self.decode(output[-self.tail_tokens:] + [root])
        conts = []
        for text, d, pos in self.matcher.continuations(tail, max_chars_out=8 * budget):
            tokens = self.encode(text)[:budget]
            if tokens:
                conts.append((tokens, (self.regions[d], pos)))
            if len(conts) >= self.cfg.max_branches:
                break
        if not conts:
            return root_only(root)
        tree = build_tree(root, conts, min(self.cfg.max_nodes, 2 * budget + 1))
        # all tokens of a continuation share its region; positions are not tracked at text level
        tree.origins = [None if o is None or o[0] is None else (o[0], 0) for o in tree.origins]
        return tree


class OutputNgramProposer:
    """Prompt-lookup on the row's own output: tables and lists repeat their markup
    (``</td><td>``, ``\n- ``) long before any draft says so. The index grows with the output.

    Origins are None: these tokens come from the model's own text, not from a region."""

    def __init__(self, cfg: ProposalConfig):
        self.cfg = cfg
        self._index: dict[tuple[int, ...], int] = {}  # n-gram -> latest end position
        self._indexed = 0

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        n = self.cfg.min_ngram
        # index n-grams that end before the current suffix, so a hit always has a continuation
        while self._indexed + n <= len(output):
            end = self._indexed + n
            self._index[tuple(output[end - n:end])] = end
            self._indexed += 1
        seq = output[-(n - 1):] + [root] if n > 1 else [root]
        end = self._index.get(tuple(seq)) if len(seq) == n else None
        if end is None:
            return root_only(root)
        cont = output[end:end + budget]
        if not cont:
            return root_only(root)
        tree = build_tree(root, [(cont, None)], min(self.cfg.max_nodes, budget + 1))
        return tree


class FirstProposal:
    """Ask proposers in order; the first non-empty tree wins (exact token matches before text
    matches before the 1-gram fallback)."""

    def __init__(self, proposers: list[Proposer]):
        self.proposers = proposers

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        for p in self.proposers:
            tree = p.propose(output, root, budget)
            if len(tree) > 1:
                return tree
        return root_only(root)
