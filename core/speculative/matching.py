"""Re-synchronisation: find where the output currently is inside the drafts, propose what follows.

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

from dataclasses import dataclass

from core.speculative.tree import DraftTree, build_tree, root_only
from core import tuning


@dataclass
class ProposalConfig:
    """How proposals are made; the defaults and what each means are in ``core.tuning``."""

    min_ngram: int = tuning.MIN_NGRAM
    max_ngram: int = tuning.MAX_NGRAM
    max_chain: int = tuning.MAX_CHAIN
    min_budget: int = tuning.MIN_BUDGET
    max_budget: int = tuning.MAX_BUDGET    # max_nodes caps a chain at max_nodes - 1
    max_nodes: int = tuning.MAX_NODES
    max_branches: int = tuning.MAX_BRANCHES
    fallback_depth: int = tuning.FALLBACK_DEPTH
    fallback_branches: int = tuning.FALLBACK_BRANCHES
    cost_aware: bool = True    # shorten proposals where measured pass cost grows with width (CPU)


class DraftIndex:
    """An n-gram index over a set of token drafts that change while decoding.

    ``drafts[d]`` is a list of token ids; the index maps every n-gram (n <= max_ngram) to the
    positions right after its occurrences: ``(d, end)`` means ``drafts[d][end - n:end]`` is the
    n-gram and ``drafts[d][end:]`` is what the draft proposes next. Each draft has its own table, so
    replacing one (a region's Stage 1 output arriving) re-indexes that draft only.
    """

    def __init__(self, drafts: list[list[int]], max_ngram: int = tuning.MAX_NGRAM):
        self.drafts = [list(d) for d in drafts]
        self.max_ngram = max_ngram
        self._tables: list[dict[tuple[int, ...], list[int]]] = [{} for _ in self.drafts]
        for d in range(len(self.drafts)):
            self._add(d, 0)

    def _add(self, d: int, start: int) -> None:
        """Index the n-grams of draft ``d`` that end after position ``start``."""
        toks, table = self.drafts[d], self._tables[d]
        for end in range(start + 1, len(toks) + 1):
            for n in range(1, min(self.max_ngram, end) + 1):
                key = tuple(toks[end - n:end])
                ends = table.get(key)
                if ends is None:
                    table[key] = [end]
                else:
                    ends.append(end)

    def set_draft(self, d: int, tokens: list[int]) -> None:
        """Replace draft ``d`` (Stage 2 swaps a region's raw draft for its Stage 1 output)."""
        self.drafts[d] = list(tokens)
        self._tables[d] = {}
        self._add(d, 0)

    def extend(self, d: int, tokens: list[int]) -> None:
        """Append ``tokens`` to draft ``d``, indexing only the n-grams that end in them."""
        start = len(self.drafts[d])
        self.drafts[d].extend(tokens)
        self._add(d, start)

    def __bool__(self) -> bool:
        return any(self.drafts)

    def hits(self, suffix: tuple[int, ...]) -> list[tuple[int, int]]:
        return [(d, end) for d, table in enumerate(self._tables) for end in table.get(suffix, ())]

    def continuation(self, hit: tuple[int, int], length: int) -> list[int]:
        d, end = hit
        return self.drafts[d][end:end + length]


def _distinct_continuations(
    index: DraftIndex, hits: list[tuple[int, int]], length: int, limit: int
) -> list[tuple[list[int], tuple[int, int]]]:
    """Continuations of ``hits`` without duplicates (same tokens), most frequent first."""
    seen: dict[tuple[int, ...], list] = {}
    for hit in hits:
        cont = index.continuation(hit, length)
        if not cont:
            continue
        key = tuple(cont)
        if key in seen:
            seen[key][0] += 1
        else:
            seen[key] = [1, cont, hit]
    ranked = sorted(seen.values(), key=lambda v: -v[0])
    return [(cont, hit) for _, cont, hit in ranked[:limit]]


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
    best: list[tuple[list[int], tuple[int, int]]] = []
    for n in range(cfg.min_ngram, min(cfg.max_ngram, len(seq)) + 1):
        hits = index.hits(tuple(seq[-n:]))
        if not hits:
            break
        best = _distinct_continuations(index, hits, budget, cfg.max_branches)
        if len(best) <= 1:
            break  # unambiguous: a longer window cannot help
    if not best and fallback:
        hits = index.hits((root,))
        best = _distinct_continuations(index, hits, min(budget, cfg.fallback_depth), cfg.fallback_branches)
    if not best:
        return root_only(root)
    return build_tree(root, best, min(cfg.max_nodes, 2 * budget + 1))
