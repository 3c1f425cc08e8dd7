"""Stage 2's drafts for one page, refined while Stage 1 runs.

Stage 2 starts at once with the drafter's raw region texts. While Stage 1 decodes a region, the
region's output so far is a draft too (``grow``): the page row often reaches a long region while its
Stage 1 row is still on it, and can then take the verified part at once. Whenever Stage 1 finishes a
region, that region's verified output replaces its raw draft as a token draft (the region crop's
reading is what the page-level model most likely writes) and joins the text drafts; the raw text stays
available to the text matcher, so a region whose Stage 1 output went astray still lends its raw draft.

Draft slots, ``n`` regions:

    token drafts  0 .. n-1   region i: its Stage 1 output once there, else its raw draft tokens
                  n          every region's best text joined in reading order ("...end.\\n\\nNext...":
                             the page output crosses region boundaries in tokens no single draft has)
                  n+1 .. 2n  region i's Stage 1 output so far, while its row decodes
    text drafts   0 .. n-1   region i's Stage 1 output, so far or final (empty until it starts)
                  n .. 2n-1  region i's raw draft text
                  2n         the joined text

Proposals come from, in order: exact token n-grams, normalised-character text matching, the output's
own n-grams (tables repeat their markup), the document's earlier pages (``history``) and a bounded
1-gram fallback tree.
"""

from __future__ import annotations

from typing import Callable

from core.speculative.history import OutputHistory
from core.speculative.matching import ProposalConfig
from core.speculative.proposers import OutputNgramProposer, TextProposer, TokenNgramProposer, UnionProposal
from core.speculative.textmatch import Notation


class PageDrafts:
    def __init__(self, drafts: list[list[int]], texts: list[str], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig, regions: list[int] | None = None,
                 notation: Notation | None = None, history: OutputHistory | None = None):
        """``regions``: the page's region index of each draft (default ``0 .. n-1``), for origins.
        ``notation``: word forms learned so far, shared with the page's other rows (default: own).
        ``history``: the document's earlier pages' output (shared, read only here)."""
        n = len(drafts)
        ids = list(regions) if regions is not None else list(range(n))
        self.n, self.encode = n, encode
        self.raw_texts = list(texts)
        self.refined: list[str | None] = [None] * n
        joined = self._joined()
        self.tokens = TokenNgramProposer(list(drafts) + [encode(joined) if joined else []] + [[] for _ in ids],
                                         cfg, regions=ids + [None] + ids, fallback=False)
        self.texts = TextProposer([""] * n + list(texts) + [joined], ids * 2 + [None], encode, decode, cfg,
                                  notation=notation)
        fallback = TokenNgramProposer([], cfg, regions=ids + [None] + ids, index=self.tokens.index)
        proposers = [self.tokens, self.texts, OutputNgramProposer(cfg)]
        if history:
            proposers.append(TokenNgramProposer([], cfg, regions=[None], fallback=False, index=history))
        self.proposer = UnionProposal(proposers, fallback, cfg.max_nodes)
        self._stale = False
        self._grown = [0] * n  # tokens of each region's partial output already in its draft
        self.decode = decode

    #: A partial output joins the text drafts in steps of this many tokens (each update re-reads it).
    GROW_STEP = 8

    def grow(self, region: int, tokens: list[int]) -> None:
        """Region ``region``'s Stage 1 row has verified ``tokens`` so far."""
        have = self._grown[region]
        if self.refined[region] is not None or len(tokens) <= have:
            return
        self.tokens.index.extend(self.n + 1 + region, tokens[have:])
        self._grown[region] = len(tokens)
        if len(tokens) // self.GROW_STEP > have // self.GROW_STEP:
            self.texts.set_text(region, self.decode(tokens))

    def refine(self, region: int, tokens: list[int], text: str) -> None:
        """Region ``region``'s Stage 1 output arrived (call ``rejoin`` after a batch of these)."""
        if not tokens:
            return
        self.refined[region] = text
        self.tokens.set_draft(region, tokens)
        if self._grown[region]:
            self.tokens.set_draft(self.n + 1 + region, [])
        self.texts.set_text(region, text)
        self._stale = True

    def rejoin(self) -> None:
        """Rebuild the joined draft from the best text of every region (once per pass, not per region)."""
        if not self._stale:
            return
        joined = self._joined()
        self.tokens.set_draft(self.n, self.encode(joined) if joined else [])
        self.texts.set_text(2 * self.n, joined)
        self._stale = False

    def _joined(self) -> str:
        best = [r if r else t for r, t in zip(self.refined, self.raw_texts)]
        return "\n\n".join(t for t in best if t.strip())
