"""Proposers: where a row's draft trees come from. One small class per strategy, one method:

    propose(output, root, budget) -> DraftTree

``output`` is the row's verified tokens, ``root`` the target's latest token (node 0 of the tree),
``budget`` the longest continuation worth proposing now (the decoder adapts it to acceptance).
Tree origins are ``(region, position)``: which drafter region a proposed token came from.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Protocol

from core.speculative.proposal_config import ProposalConfig
from core.speculative.tokenmatch import DraftIndex, propose
from core.speculative.normalized import NormalizedText
from core.speculative.notation import Notation
from core.speculative.textmatch import TextMatcher, is_cjk, min_window
from core.speculative.tree import DraftTree, build_tree, root_only
from core.tuning import (NEXT_LINE_STARTED, NEXT_OPENING_CHARS, NEXT_REGIONS, NEXT_STARTED, OPENING_REGIONS,
                         OPENING_TOKENS, OPENING_WINDOW, REPEAT_UNIT_TOKENS, TEXT_CHARS_PER_TOKEN, TEXT_MIN_CHARS,
                         TEXT_TAIL_TOKENS, UNION_HEAD)


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


class OutputTail:
    """A row's output as the text proposers read it, decoded and normalised once per pass for all
    of them: the text of its last ``tail_tokens`` tokens and the root (``text``, ``normalized``),
    and on demand the whole output's normalised characters (``written``). Each answer is kept
    until the output grows or the root changes."""

    def __init__(self, decode: Callable[[list[int]], str], tail_tokens: int = TEXT_TAIL_TOKENS):
        self.decode, self.tail_tokens = decode, tail_tokens
        self._key: tuple[int, int] | None = None
        self._text: str | None = None
        self._normalized: NormalizedText | None = None
        self._written: str | None = None

    def _at(self, output: list[int], root: int) -> None:
        if self._key != (len(output), root):
            self._key = (len(output), root)
            self._text = self._normalized = self._written = None

    def text(self, output: list[int], root: int) -> str:
        self._at(output, root)
        if self._text is None:
            self._text = self.decode(output[-self.tail_tokens:] + [root])
        return self._text

    def normalized(self, output: list[int], root: int) -> NormalizedText:
        self._at(output, root)
        if self._normalized is None:
            self._normalized = NormalizedText.of(self.text(output, root))
        return self._normalized

    def written(self, output: list[int], root: int) -> str:
        """The normalised characters of the whole output and the root."""
        self._at(output, root)
        if self._written is None:
            self._written = NormalizedText.of(self.decode(output + [root])).norm
        return self._written


class TextProposer:
    """Normalised-character matching into raw text drafts (page level); see ``textmatch``.
    ``tail``: the row's ``OutputTail``, shared with its other text proposers (default: its own)."""

    def __init__(self, texts: list[str], regions: list[int], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig, tail_tokens: int = TEXT_TAIL_TOKENS,
                 notation: Notation | None = None, tail: OutputTail | None = None):
        self.matcher = TextMatcher(texts, notation=notation)
        self.regions = regions
        self.encode, self.decode = encode, decode
        self.cfg = cfg
        self.tail = tail if tail is not None else OutputTail(decode, tail_tokens)
        # (output length, root) of the latest pass it had continuations for (``MisreadProposer``)
        self.found: tuple[int, int] | None = None

    def set_text(self, d: int, text: str) -> None:
        self.matcher.set_text(d, text)

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        tree = self._propose(self.matcher.continuations, output, root, budget)
        self.found = (len(output), root) if len(tree) > 1 else None
        return tree

    def propose_past_misreading(self, output: list[int], root: int, budget: int) -> DraftTree:
        """``propose`` where the output has just left the drafts: from after what they misread
        (where the tail is the whole output, also a misread opening of a draft)."""
        whole = len(output) < self.tail.tail_tokens
        return self._propose(functools.partial(self.matcher.continuations_past_misreading, whole=whole),
                             output, root, budget)

    def _propose(self, continuations, output: list[int], root: int, budget: int) -> DraftTree:
        if not self.matcher:
            return root_only(root)
        tail = self.tail.text(output, root)
        conts = []
        # the tree holds max_nodes nodes: a continuation's tokens past max_nodes - 1 are never
        # verified, so the text they would come from is not rewritten and encoded either
        budget = min(budget, self.cfg.max_nodes - 1)
        for text, d, pos in continuations(tail, max_chars_out=TEXT_CHARS_PER_TOKEN * budget,
                                          normalized=self.tail.normalized(output, root)):
            tokens = self.encode(text)[:budget]
            if tokens:
                conts.append((tokens, (self.regions[d], pos)))
            if len(conts) >= self.cfg.max_branches:
                break
        if not conts:
            return root_only(root)
        tree = build_tree(root, conts, min(self.cfg.max_nodes, 2 * budget + 1), fork_head=UNION_HEAD)
        # all tokens of a continuation share its region; positions are not tracked at text level
        tree.origins = [None if o is None or o[0] is None else (o[0], 0) for o in tree.origins]
        return tree


class MisreadProposer:
    """A text proposer's continuations past a misread character (``TextMatcher._past_misreading``):
    asked after the text proposer in the same pass, only where it found nothing, so that it never
    takes the place of an exact match; beside the other proposers' (the output's own n-grams may
    know the markup around the misread word)."""

    def __init__(self, texts: TextProposer):
        self.texts = texts

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        if self.texts.found == (len(output), root):
            return root_only(root)
        return self.texts.propose_past_misreading(output, root, budget)


class OpeningProposer:
    """The page's first tokens, written the way the target family starts a page.

    Before the output holds enough characters for the text matcher, nothing else knows where the
    page starts or how: a family that opens with a fence (```` ```markdown ````) or marks its first
    title ``## `` where the drafter wrote ``# `` costs a pass per token until the text matches.
    Candidates: each of the style's openings followed by one of the first regions' texts (a
    heading's mark replaced by each of the style's heading marks, a short unmarked line also with
    each mark); those the output so far starts
    are proposed, heads first. ``texts`` gives the regions' best texts in reading order, read at
    each call (Stage 1 refines them)."""

    def __init__(self, texts: Callable[[], list[tuple[int, str]]], openings: tuple[str, ...],
                 heading_marks: tuple[str, ...], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig):
        self.texts, self.openings, self.heading_marks = texts, openings, heading_marks
        self.encode, self.decode, self.cfg = encode, decode, cfg

    def candidates(self) -> list[tuple[str, int]]:
        """``(text, region)`` a page may start with, the likeliest first."""
        out: list[tuple[str, int]] = []
        firsts = [(r, t) for r, t in self.texts() if t.strip()][:OPENING_REGIONS]
        for region, text in firsts:
            body = _HEADING.sub("", text, count=1)
            if body != text:
                variants = [m + body for m in self.heading_marks]
            elif _TITLE_LIKE.fullmatch(text):  # a one-line region the model may still make a heading
                variants = [text] + [m + text for m in self.heading_marks]
            else:
                variants = [text]
            out += [(o + v, region) for o in self.openings for v in variants]
        return out

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        if len(output) >= OPENING_WINDOW:
            return root_only(root)
        written = self.decode(output + [root])
        limit = min(budget, OPENING_TOKENS)
        conts = []
        for text, region in self.candidates():
            if len(text) > len(written) and text.startswith(written):
                tokens = self.encode(text[len(written):])[:limit]
                if tokens:  # region None: text of no region (a page's early lines)
                    conts.append((tokens, (region, 0) if region is not None else None))
                if len(conts) >= self.cfg.max_branches:
                    break  # the likeliest first: the drafts' own proposals keep room in the union
        return heads_first(root, conts, self.cfg.max_nodes, budget)


def heads_first(root: int, conts: list[tuple[list[int], tuple[int, int] | None]], max_nodes: int,
                budget: int) -> DraftTree:
    """One tree of candidate continuations, every candidate's first ``UNION_HEAD`` tokens placed
    before any is extended (a small tree still holds every candidate's start); root only for none."""
    if not conts:
        return root_only(root)
    heads = [(c[:UNION_HEAD], o) for c, o in conts]
    return build_tree(root, heads + conts, min(max_nodes, 2 * budget + 1))


#: A drafter's heading mark at the start of a region's text.
_HEADING = re.compile(r"^#{1,6} ")
#: One short line: a page's first such region is often its title, drafted without a mark.
_TITLE_LIKE = re.compile(r"[^\n]{1,80}")


class NextRegionProposer:
    """Where the output has just finished a region, the openings of regions it has not written yet.

    The joined draft crosses a region boundary in the layout's reading order only. Where the model
    reads in another order (the columns of a newspaper, a caption before the text beside it, a side
    note), the text matcher finds the next region only after several of its characters, a pass
    each. Here the output's characters ending a region's text are the signal: the openings of the
    regions after it in reading order, then those before it, that the output does not hold yet
    (their first characters are not in it) are proposed, the region's closing punctuation and a
    paragraph break first where the output has not written them. The pass that ends a region often
    also writes the next one's first characters (its bonus token): up to ``STARTED`` of them may
    follow the region's end, and only regions that open with them are proposed, from there on.

    Worked example: regions ``["Left column ends here.", "Right column text", "Caption 1"]``, the
    model wrote the caption after the left column. Output ``"... ends here."``: the tail ends
    region 0; regions 1 and 2 are unwritten, so ``"\n\nRight column text"`` and ``"\n\nCaption 1"``
    are both verified in the next pass. Output ``"... ends here.\n\nCa"``: ``"ption 1"`` is proposed.
    Early OCR lines (drafts of no region, before the regions come) are lines, not paragraphs: a
    line that ended may go on in the next line of its paragraph, joined by a space (``line_join``),
    and the pass that ended it may have written a whole word of the next (``NEXT_LINE_STARTED``):
    ``"... the suitability for"`` + the line ``"land application ..."`` proposes
    ``" land application ..."`` beside ``"\n\nland application ..."``.
    ``texts`` gives the regions' best texts in reading order, read at each call (Stage 1 refines them)."""

    OPENING_CHARS = NEXT_OPENING_CHARS
    STARTED = NEXT_STARTED
    LINE_STARTED = NEXT_LINE_STARTED

    def __init__(self, texts: Callable[[], list[tuple[int, str]]], encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str], cfg: ProposalConfig, tail: OutputTail | None = None):
        self.texts, self.encode, self.decode, self.cfg = texts, encode, decode, cfg
        self.tail = tail if tail is not None else OutputTail(decode)
        self._norm: dict[str, NormalizedText] = {}
        self._texts: list | None = None  # the list ``texts`` gave last, and from it:
        self._regions: list[tuple[int, NormalizedText]] = []  # its non-blank regions, normalised
        self._endings: dict[int, dict[str, int]] = {}  # k -> last k characters -> first such region

    def _normalized(self, text: str) -> NormalizedText:
        n = self._norm.get(text)
        if n is None:
            n = self._norm[text] = NormalizedText.of(text)
        return n

    def _current(self) -> list[tuple[int, NormalizedText]]:
        """The regions, normalised, rebuilt only when ``texts`` gives another list (a region's
        Stage 1 output arrived): a page of 300 regions is not walked every pass."""
        texts = self.texts()
        if texts is not self._texts:
            self._texts = texts
            self._regions = [(r, self._normalized(t)) for r, t in texts if t.strip()]
            self._endings = {}
        return self._regions

    def _ending_with(self, key: str) -> int | None:
        """The first region (in reading order) whose normalised text ends with ``key``."""
        k = len(key)
        if not k:
            return 0 if self._regions else None
        endings = self._endings.get(k)
        if endings is None:
            endings = self._endings[k] = {}
            for i, (_, n) in enumerate(self._regions):
                if len(n.norm) >= k:
                    endings.setdefault(n.norm[-k:], i)
        return endings.get(key)

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        tail_raw = self.tail.text(output, root)
        tail = self.tail.normalized(output, root)
        regions = self._current()
        for started in self._started(root):
            body = tail.norm[:len(tail.norm) - started]
            k = min_window(body, TEXT_MIN_CHARS)
            if len(body) < k:
                break
            key = body[-k:]
            ended = self._ending_with(key)
            if ended is not None and (started <= self.STARTED or regions[ended][0] is None):
                conts = self._openings(output, root, tail_raw, tail, regions, ended, started, budget)
                if conts:
                    return heads_first(root, conts, self.cfg.max_nodes, budget)
        return root_only(root)

    def _started(self, root: int) -> list[int]:
        """How many normalised characters of the next region the output may hold already: up to
        ``STARTED``, or all of the root's (the ending pass's bonus token: a word of the next line)."""
        word = len(NormalizedText.of(self.decode([root])).norm)
        return list(range(self.STARTED + 1)) + ([word] if self.STARTED < word <= self.LINE_STARTED else [])

    def _openings(self, output, root, tail_raw, tail, regions, ended, started, budget):
        """Continuations into the regions not yet written, after region ``ended`` and ``started``
        normalised characters of the next one."""
        written_sep = tail_raw[tail.raw_end[-1]:]
        if started:
            head = tail.norm[-started:]
            lead = ""
        else:
            closed = regions[ended][1]
            closing = closed.raw[closed.raw_end[-1]:].strip()
            mark = written_sep.strip()
            if mark and not closing.startswith(mark):
                return []  # the output went on with markup of its own
            head = ""
            lead = closing[len(mark):] + ("" if "\n" in written_sep else "\n\n")
        written = self.tail.written(output, root)
        if started:
            written = written[:-started]
        # An early OCR line (region None) that ended may go on in the next line of its paragraph:
        # the model then joins them with a space (none between CJK characters), not a break.
        line_ended = not started and regions[ended][0] is None and "\n" not in written_sep
        limit = min(budget, OPENING_TOKENS)
        conts = []
        for region, norm in regions[ended + 1:] + regions[:ended][::-1]:
            if norm.norm[:self.OPENING_CHARS] in written or not norm.norm.startswith(head):
                continue  # written already (or its opening is common text: nothing to gain)
            text = norm.raw if not started else norm.raw[norm.raw_end[started - 1]:]
            if started and written_sep:
                if not text.startswith(written_sep):
                    continue
                text = text[len(written_sep):]
            leads = [lead]
            if line_ended and region is None:
                leads.insert(0, closing[len(mark):] + line_join(written, written_sep, text))
            for opening in leads:
                tokens = self.encode(opening + text)[:limit]
                if tokens:
                    conts.append((tokens, (region, 0) if region is not None else None))  # None: an early line
            if len(conts) >= NEXT_REGIONS:
                break
        return conts


def line_join(written: str, written_sep: str, text: str) -> str:
    """What joins a line of a paragraph to the next: a space, or nothing where one is written
    already or where CJK characters meet (``"...的" + "方法"``)."""
    if written_sep.endswith(" ") or not written or not text:
        return ""
    return "" if is_cjk(written[-1]) or is_cjk(text[0]) else " "


class OutputIndex:
    """Where each n-gram of a row's output (up to ``longest`` tokens) last ended, grown with it;
    one index serves the row's output n-gram proposers of every order."""

    def __init__(self, longest: int):
        self.longest = longest
        self._latest: dict[tuple[int, ...], int] = {}
        self._indexed = 0  # output positions indexed

    def grown(self, output: list[int]) -> dict[tuple[int, ...], int]:
        """The index with the n-grams ending at each position of ``output`` not indexed yet (the
        n-gram looked up ends at the root, past the output: every hit has a continuation)."""
        latest = self._latest
        for end in range(self._indexed + 1, len(output) + 1):
            for n in range(1, min(self.longest, end) + 1):
                latest[tuple(output[end - n:end])] = end
        self._indexed = max(self._indexed, len(output))
        return latest


class OutputNgramProposer:
    """Prompt-lookup on the row's own output: tables and lists repeat their markup
    (``</td><td>``, ``\n- ``) long before any draft says so. The index grows with the output.
    Where the latest hit runs up to the output's end, the stretch from it is a unit being repeated
    and is proposed repeated to the budget: output ``<tr><td></td><td></td>``, root ``<td>`` (the
    n-gram ``</td><td>`` last ended one cell back) proposes ``</td><td></td><td>...``.

    ``orders``: the n-gram lengths looked up, longest first; the first found is proposed, at most
    ``length`` tokens of it (default: the budget). Shorter n-grams guess at markup the output has
    not written after these tokens yet (a cell's ``</td>`` after a number no cell held, a
    formula's ``}`` after a new exponent); a page proposes them last, a few tokens long
    (``OUTPUT_GUESS_ORDERS``).

    Origins are None: these tokens come from the model's own text, not from a region."""

    UNIT = REPEAT_UNIT_TOKENS

    def __init__(self, cfg: ProposalConfig, orders: tuple[int, ...] | None = None, length: int | None = None,
                 index: "OutputIndex | None" = None):
        self.cfg = cfg
        self.orders = orders or (cfg.min_ngram,)
        self.length = length
        self.index = index if index is not None else OutputIndex(max(self.orders))

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        latest = self.index.grown(output)
        length = min(budget, self.length or budget)
        for n in self.orders:
            seq = (output[-(n - 1):] if n > 1 else []) + [root]
            end = latest.get(tuple(seq)) if len(seq) == n else None
            if end is None:
                continue
            cont = output[end:end + length]
            if len(cont) < length and len(output) - end < self.UNIT:
                # The hit is the latest repetition of a short unit the output is still repeating (a
                # row of empty cells, ``<td></td>\n``): past the output's end, the unit goes on. (A
                # long stretch repeated, a table row, is the row's markup with other cell text.)
                unit = output[end:] + [root]
                cont = (unit * (length // len(unit) + 1))[:length]
            if cont:
                return build_tree(root, [(cont, None)], min(self.cfg.max_nodes, length + 1))
        return root_only(root)


class UnionProposal:
    """Ask every proposer and verify all their continuations in one tree (the first proposer's
    first): where the draft knows the content and the output's own n-grams know the markup
    (``68.3 $ \\pm $ 19.7</td>``), whichever runs true is accepted in the same pass."""

    def __init__(self, proposers: list[Proposer], max_nodes: int):
        self.proposers, self.max_nodes = proposers, max_nodes

    #: Tokens of every continuation's head placed before any continuation is extended further.
    HEAD = UNION_HEAD

    def propose(self, output: list[int], root: int, budget: int) -> DraftTree:
        trees = [t for t in (p.propose(output, root, budget) for p in self.proposers) if len(t) > 1]
        if not trees:
            return root_only(root)
        if len(trees) == 1:
            return trees[0]
        # Proposers in turn, every continuation but the first only its first tokens past its fork
        # before any is extended (``fork_head``): when the node budget is small (drafts have been
        # failing), a long wrong continuation from the first proposer must not crowd out the later
        # proposers' (the earlier pages' box rules behind an OCR draft's garbled line).
        paths = [_paths(t) for t in trees]
        turns = [p[i] for i in range(max(map(len, paths))) for p in paths if i < len(p)]
        return build_tree(root, turns, min(self.max_nodes, 2 * budget + 1), fork_head=self.HEAD)


def _paths(tree: DraftTree) -> list[tuple[list[int], tuple[int, int] | None]]:
    """Root-to-leaf continuations of ``tree`` (root excluded), each with its first node's origin."""
    parents, tokens = tree.parents, tree.tokens
    if parents[-1] == len(parents) - 2 and tree.is_chain:  # most proposals: one continuation, no walk
        return [(tokens[1:], tree.origins[1])]
    inner = set(parents)  # nodes with a child
    out = []
    for leaf in range(1, len(tree)):
        if leaf in inner:
            continue
        path, node = [], leaf
        while node > 0:
            path.append(node)
            node = parents[node]
        path.reverse()
        out.append(([tokens[i] for i in path], tree.origins[path[0]]))
    return out
