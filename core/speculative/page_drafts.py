"""Stage 2's drafts for one page, refined while Stage 1 runs.

Stage 2 starts at once with the drafter's raw region texts. While Stage 1 decodes a region, the
region's output so far is a draft too (``grow``): the page row often reaches a long region while its
Stage 1 row is still on it, and can then take the verified part at once. Whenever Stage 1 finishes a
region, that region's verified output replaces its raw draft as a token draft (the region crop's
reading is what the page-level model most likely writes) and joins the text drafts; the raw text stays
available to the text matcher, so a region whose Stage 1 output went astray still lends its raw draft.

Each region has one record (``RegionDraft``) naming its drafts: its token draft (raw tokens, then its
Stage 1 output), its Stage 1 output so far while its row decodes, its Stage 1 text (so far or final)
and its raw text (a figure's: the text read inside it). The page adds a joined token draft and two
joined text drafts: every region's best text in reading order ("...end.\\n\\nNext...": the page
output crosses region boundaries in tokens no single draft has), and the same with the figures'
text in place ("" without figure text).

Proposals come from, all in one tree each pass, in order: exact token n-grams (where none matches,
a bounded tree of what follows the root in the drafts), normalised-character text matching, the
output's own n-grams (tables repeat their markup), the regions not yet written where a region ends,
the document's earlier pages (``history``), the drafts past a misread letter where the text matching
had nothing, and the output's shorter n-grams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from core.speculative.history import OutputHistory
from core.speculative.proposal_config import ProposalConfig
from core.speculative.proposers import (MisreadProposer, NextRegionProposer, OpeningProposer, OutputNgramProposer,
                                        OutputTail, TextProposer, TokenNgramProposer, UnionProposal)
from core.speculative.notation import Notation
from core.tuning import GROW_STEP, OUTPUT_GUESS_ORDERS, OUTPUT_GUESS_TOKENS

if TYPE_CHECKING:
    from core.targets.profiles.base import PageStyle


@dataclass
class RegionDraft:
    """One region of the page as Stage 2 drafts it.

    region:       the page's index of the region (tree origins name it; None: no region's).
    key:          how the page's stages name it (``grow``, ``refine``): its region index, or for an
                  early OCR line, which belongs to no region yet, the line's own tag.
    raw_text:     the drafter's cleaned text ("" for a figure); figure_text: text read inside a figure.
    refined:      its Stage 1 output's text once that arrived (None before).
    grown:        tokens of its Stage 1 output so far already in its ``partial`` draft.
    tokens, partial:      its token drafts' numbers (the raw tokens, then the Stage 1 output; the
                          Stage 1 output so far).
    stage1_text, raw_text_draft:  its text drafts' numbers.
    """

    region: int | None
    raw_text: str
    figure_text: str
    key: int | None = None
    tokens: int = -1
    partial: int = -1
    stage1_text: int = -1
    raw_text_draft: int = -1
    refined: str | None = None
    grown: int = 0

    @property
    def best(self) -> str:
        """Its Stage 1 output once there, else its raw draft."""
        return self.refined if self.refined else self.raw_text


class DraftSource(Protocol):
    """What a page's drafts are made of, one per region or line (``core.page_job.PageRegion``,
    ``TextDraft``): its token draft, its cleaned text, the text read inside it where it is a
    figure, and another reading of it ("" for none)."""

    tokens: list[int]
    text: str
    figure_text: str
    second_text: str


@dataclass(frozen=True)
class TextDraft:
    """A draft that is a text and nothing else (the early lines' texts joined, say)."""

    tokens: list[int]
    text: str
    figure_text: str = ""
    second_text: str = ""


class Codec(Protocol):
    """Text to the target's tokens and back (a target is one)."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


class _Numbered:
    """The drafts of one proposer, numbered in the order they are added, each with its region
    (None: the page's joined drafts, which belong to no region)."""

    def __init__(self):
        self.contents: list = []
        self.regions: list[int | None] = []

    def add(self, content, region: int | None) -> int:
        self.contents.append(content)
        self.regions.append(region)
        return len(self.contents) - 1


class PageDrafts:
    def __init__(self, drafts: list[list[int]], texts: list[str], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig, regions: list[int] | None = None,
                 notation: Notation | None = None, history: OutputHistory | None = None,
                 style: "PageStyle | None" = None, figure_texts: list[str] | None = None,
                 keys: list[int] | None = None, second_texts: list[str] | None = None):
        """``drafts`` / ``texts``: each region's token draft and cleaned text, in reading order.
        ``regions``: the page's region index of each draft (default ``0 .. n-1``), for origins.
        ``notation``: word forms learned so far, shared with the page's other rows (default: own).
        ``history``: the document's earlier pages' output (shared, read only here).
        ``style``: how the target family starts a page (``Profile.style``); None: no opening is
        proposed (a region's crop, read on its own, has no page opening).
        ``figure_texts``: text read inside figure regions (their ``texts`` are empty). The model
        leaves a figure's labels out, but where the layout took text for a figure (a standards
        page's clauses under one large box) it writes them: they are text drafts of their own
        region, and in a joined draft of their own beside the joined draft without them.
        ``keys``: how ``grow`` and ``refine`` name each draft (default: its region index).
        ``second_texts``: another reading of each region ("" for none: OCR of the crop beside a
        text layer the check doubted, ``core.drafters.textlayer_check``), a token and a text draft
        of its region beside its own."""
        ids = list(regions) if regions is not None else list(range(len(drafts)))
        figures = list(figure_texts) if figure_texts else [""] * len(drafts)
        self.encode, self.decode = encode, decode
        names = list(keys) if keys is not None else ids
        self.records = [RegionDraft(i, text, figure, key) for i, text, figure, key in zip(ids, texts, figures, names)]
        self._by_key = {r.key: r for r in self.records}
        self._best_by_region = BestByRegion(self.records)
        tokens, text = _Numbered(), _Numbered()
        for r, draft in zip(self.records, drafts):
            r.tokens = tokens.add(list(draft), r.region)
        joined = self._joined()
        self._joined_tokens = tokens.add(encode(joined) if joined else [], None)
        for r in self.records:
            r.partial = tokens.add([], r.region)
        for r in self.records:
            r.stage1_text = text.add("", r.region)
        for r in self.records:
            r.raw_text_draft = text.add(r.raw_text or r.figure_text, r.region)
        self._joined_text = text.add(joined, None)
        self._joined_figures_text = text.add(self._joined(figures=True), None)
        for r, second in zip(self.records, second_texts or ()):
            if second:
                tokens.add(encode(second), r.region)
                text.add(second, r.region)

        tail = OutputTail(decode)  # the output's tail, decoded once a pass for every text proposer
        # the drafts' exact n-grams, or where none matches the root's 1-gram tree, in every pass:
        # beside a text match that runs wrong, the drafts' next word after the model's token
        self.tokens = TokenNgramProposer(tokens.contents, cfg, regions=tokens.regions)
        self.texts = TextProposer(text.contents, text.regions, encode, decode, cfg, notation=notation, tail=tail)
        output_ngrams = OutputNgramProposer(cfg)
        proposers = [self.tokens, self.texts, output_ngrams]
        if len(self.records) > 1:  # a Stage 1 row reads one region: nothing follows it
            proposers.append(NextRegionProposer(self._best_by_region, encode, decode, cfg, tail=tail))
        if style is not None:
            proposers.insert(0, OpeningProposer(self._best_by_region, style.openings,
                                                style.heading_marks, encode, decode, cfg))
        if history:
            proposers.append(TokenNgramProposer([], cfg, regions=[None], fallback=False, index=history))
        proposers.append(MisreadProposer(self.texts))
        proposers.append(OutputNgramProposer(cfg, OUTPUT_GUESS_ORDERS, OUTPUT_GUESS_TOKENS, index=output_ngrams.index))
        self.proposer = UnionProposal(proposers, cfg.max_nodes)
        self._stale = False

    @classmethod
    def of(cls, sources: Sequence[DraftSource], codec: Codec, cfg: ProposalConfig, *,
           notation: Notation | None = None, history: OutputHistory | None = None, style: "PageStyle | None" = None,
           regions: list[int | None] | None = None, keys: list[int] | None = None) -> "PageDrafts":
        """The drafts of ``sources`` (in reading order), in the target's tokens (``codec``): the one
        way the stages build them, for a page's regions, its early lines, their texts or one
        region's crop. The other arguments: as ``PageDrafts``."""
        return cls([s.tokens for s in sources], [s.text for s in sources], codec.encode, codec.decode, cfg,
                   regions=regions, notation=notation, history=history, style=style,
                   figure_texts=[s.figure_text for s in sources], keys=keys,
                   second_texts=[s.second_text for s in sources])

    def region(self, key: int) -> RegionDraft:
        """The record of the draft named ``key`` (a region index unless ``keys`` said otherwise)."""
        return self._by_key[key]

    def grow(self, key: int, tokens: list[int]) -> None:
        """The Stage 1 row of draft ``key`` has verified ``tokens`` so far."""
        r = self._by_key[key]
        have = r.grown
        if r.refined is not None or len(tokens) <= have:
            return
        self.tokens.index.extend(r.partial, tokens[have:])
        r.grown = len(tokens)
        if len(tokens) // GROW_STEP > have // GROW_STEP:
            self.texts.set_text(r.stage1_text, self.decode(tokens))

    def refine(self, key: int, tokens: list[int], text: str) -> None:
        """The Stage 1 output of draft ``key`` arrived (call ``rejoin`` after a batch of these)."""
        if not tokens:
            return
        r = self._by_key[key]
        r.refined = text
        self._best_by_region.forget()
        self.tokens.set_draft(r.tokens, tokens)
        if r.grown:
            self.tokens.set_draft(r.partial, [])
        self.texts.set_text(r.stage1_text, text)
        self._stale = True

    def rejoin(self) -> None:
        """Rebuild the joined drafts from the best text of every region (once per pass, not per region)."""
        if not self._stale:
            return
        joined = self._joined()
        self.tokens.set_draft(self._joined_tokens, self.encode(joined) if joined else [])
        self.texts.set_text(self._joined_text, joined)
        self.texts.set_text(self._joined_figures_text, self._joined(figures=True))
        self._stale = False

    def _joined(self, figures: bool = False) -> str:
        """The regions' best texts in reading order; with ``figures``, also the figures' text (or
        "" where there is none: the joined draft already says the rest)."""
        if figures and not any(r.figure_text for r in self.records):
            return ""
        texts = [r.best or r.figure_text for r in self.records] if figures else [r.best for r in self.records]
        return "\n\n".join(t for t in texts if t.strip())


class BestByRegion:
    """``(region, best text)`` of each draft in reading order, as the opening and next-region
    proposers read it: one list until a region is refined (they rebuild what they derive from it
    only then). An object of its own that the proposers hold: a method of ``PageDrafts`` there made
    a reference cycle through the drafts' proposer, which kept each page's drafts, and through
    them the target, alive until Python's rare full collection."""

    def __init__(self, records: list):
        self.records = records
        self._list: list[tuple[int, str]] | None = None

    def __call__(self) -> list[tuple[int, str]]:
        if self._list is None:
            self._list = [(r.region, r.best) for r in self.records]
        return self._list

    def forget(self) -> None:
        """A region was refined: the next call reads the best texts again."""
        self._list = None
