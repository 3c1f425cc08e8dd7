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
                  n .. 2n-1  region i's raw draft text (a figure's: the text read inside it)
                  2n         the joined text
                  2n+1       the joined text with the figures' text in place ("" without figure text)

Proposals come from, in order: exact token n-grams, normalised-character text matching, the output's
own n-grams (tables repeat their markup), the document's earlier pages (``history``) and a bounded
1-gram fallback tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from core.speculative.history import OutputHistory
from core.speculative.matching import ProposalConfig
from core.speculative.proposers import (NextRegionProposer, OpeningProposer, OutputNgramProposer, TextProposer,
                                        TokenNgramProposer, UnionProposal)
from core.speculative.textmatch import Notation
from core.tuning import GROW_STEP

if TYPE_CHECKING:
    from core.targets.profiles.base import PageStyle


class _Slots:
    """Where each draft of ``n`` regions sits in the token and the text proposers (module docstring)."""

    def __init__(self, n: int):
        self.n = n

    # token drafts
    def region_tokens(self, region: int) -> int:
        return region

    @property
    def joined_tokens(self) -> int:
        return self.n

    def partial_tokens(self, region: int) -> int:
        return self.n + 1 + region

    def token_regions(self, ids: list[int]) -> list[int | None]:
        """Region id of every token slot, in slot order (None: the joined draft)."""
        return ids + [None] + ids

    # text drafts
    def stage1_text(self, region: int) -> int:
        return region

    def raw_text(self, region: int) -> int:
        return self.n + region

    @property
    def joined_text(self) -> int:
        return 2 * self.n

    @property
    def joined_with_figures_text(self) -> int:
        return 2 * self.n + 1

    def text_regions(self, ids: list[int]) -> list[int | None]:
        return ids + ids + [None, None]


class PageDrafts:
    def __init__(self, drafts: list[list[int]], texts: list[str], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig, regions: list[int] | None = None,
                 notation: Notation | None = None, history: OutputHistory | None = None,
                 style: "PageStyle | None" = None, figure_texts: list[str] | None = None):
        """``regions``: the page's region index of each draft (default ``0 .. n-1``), for origins.
        ``notation``: word forms learned so far, shared with the page's other rows (default: own).
        ``history``: the document's earlier pages' output (shared, read only here).
        ``style``: how the target family starts a page (``Profile.style``); None: no opening is
        proposed (a region's crop, read on its own, has no page opening).
        ``figure_texts``: text read inside figure regions (their ``texts`` are empty). The model
        leaves a figure's labels out, but where the layout took text for a figure (a standards
        page's clauses under one large box) it writes them: they are text drafts of their own
        region, and in a joined draft of their own beside the joined draft without them."""
        n = len(drafts)
        ids = list(regions) if regions is not None else list(range(n))
        self.n, self.encode, self.decode = n, encode, decode
        self.ids = ids
        self.slots = slots = _Slots(n)
        self.raw_texts = list(texts)
        self.refined: list[str | None] = [None] * n
        self.figure_texts = list(figure_texts) if figure_texts else [""] * n
        joined = self._joined()
        token_drafts = list(drafts) + [encode(joined) if joined else []] + [[] for _ in ids]
        self.tokens = TokenNgramProposer(token_drafts, cfg, regions=slots.token_regions(ids), fallback=False)
        raw = [t or f for t, f in zip(texts, self.figure_texts)]
        self.texts = TextProposer([""] * n + raw + [joined, self._joined(figures=True)], slots.text_regions(ids),
                                  encode, decode, cfg, notation=notation)
        fallback = TokenNgramProposer([], cfg, regions=slots.token_regions(ids), index=self.tokens.index)
        proposers = [self.tokens, self.texts, OutputNgramProposer(cfg)]
        if n > 1:  # a Stage 1 row reads one region: nothing follows it
            proposers.append(NextRegionProposer(self._best_by_region, encode, decode, cfg))
        if style is not None:
            proposers.insert(0, OpeningProposer(self._best_by_region, style.openings,
                                                style.heading_marks, encode, decode, cfg))
        if history:
            proposers.append(TokenNgramProposer([], cfg, regions=[None], fallback=False, index=history))
        self.proposer = UnionProposal(proposers, fallback, cfg.max_nodes)
        self._stale = False
        self._grown = [0] * n  # tokens of each region's partial output already in its draft

    def grow(self, region: int, tokens: list[int]) -> None:
        """Region ``region``'s Stage 1 row has verified ``tokens`` so far."""
        have = self._grown[region]
        if self.refined[region] is not None or len(tokens) <= have:
            return
        self.tokens.index.extend(self.slots.partial_tokens(region), tokens[have:])
        self._grown[region] = len(tokens)
        if len(tokens) // GROW_STEP > have // GROW_STEP:
            self.texts.set_text(self.slots.stage1_text(region), self.decode(tokens))

    def refine(self, region: int, tokens: list[int], text: str) -> None:
        """Region ``region``'s Stage 1 output arrived (call ``rejoin`` after a batch of these)."""
        if not tokens:
            return
        self.refined[region] = text
        self.tokens.set_draft(self.slots.region_tokens(region), tokens)
        if self._grown[region]:
            self.tokens.set_draft(self.slots.partial_tokens(region), [])
        self.texts.set_text(self.slots.stage1_text(region), text)
        self._stale = True

    def rejoin(self) -> None:
        """Rebuild the joined draft from the best text of every region (once per pass, not per region)."""
        if not self._stale:
            return
        joined = self._joined()
        self.tokens.set_draft(self.slots.joined_tokens, self.encode(joined) if joined else [])
        self.texts.set_text(self.slots.joined_text, joined)
        self.texts.set_text(self.slots.joined_with_figures_text, self._joined(figures=True))
        self._stale = False

    def _best_by_region(self) -> list[tuple[int, str]]:
        """``(region, best text)`` in reading order, as the opening and next-region proposers read it."""
        return list(zip(self.ids, self._best()))

    def _best(self) -> list[str]:
        """Every region's best text: its Stage 1 output once there, else its raw draft."""
        return [r if r else t for r, t in zip(self.refined, self.raw_texts)]

    def _joined(self, figures: bool = False) -> str:
        """The regions' best texts in reading order; with ``figures``, also the figures' text (or
        "" where there is none: the joined draft already says the rest)."""
        if figures and not any(self.figure_texts):
            return ""
        texts = [t or f for t, f in zip(self._best(), self.figure_texts)] if figures else self._best()
        return "\n\n".join(t for t in texts if t.strip())
