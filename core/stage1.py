"""Stage 1 of HSD over one ``PageJob`` (``core.page_job``): which regions are read on their crops,
their prefills and rows, what a finished row leaves, the early OCR lines read the same way, and the
drafts Stage 2 takes from all of it; ``Stage1Scheduler`` runs it beside the page row (``decode_hsd``).

A Stage 1 row is named by a tag: ``k >= 0`` the page's region ``k``, ``-1 - k`` the early OCR line
``k`` (``PageRegions.lines``), read before the page's regions come (``item``). The page's drafts are
built here, in one way (``PageDrafts.of``): every region's (``page_drafts``), the early lines'
(``line_drafts``), their texts alone (``text_drafts``) and one region's on its crop
(``region_proposer``). ``core.stages`` runs the other schedules; ``core.elements`` reads element-level
families' regions with the same prefills and proposers.
"""

from __future__ import annotations

import torch

from core import tuning
from core.drafters.layout import join_lines, smallest_holder
from core.drafters.normalize import clean_draft_text
from core.errors import HSDError
from core.events import RegionVerified, TextAppended
from core.page_job import PageDecode, PageJob, PageRegion, TextStream, empty_cache, joined_regions
from core.speculative.budget import stage1_pays
from core.speculative.decode import DecodePolicy, DecodeRow
from core.speculative.notation import Notation
from core.speculative.page_drafts import PageDrafts, TextDraft
from core.speculative.proposers import NoDrafts, Proposer
from core.targets.base import BatchPrefill, PrefillRequest
from core.targets.profiles import style_of

#: Region labels whose reading is their lines' readings joined (``read_by_lines``).
LINE_READ_LABELS = frozenset({"text", "title", "list", "caption", "footnote", "header", "footer", "page_number"})


class PageOutOfMemory(torch.OutOfMemoryError):
    """The page's own prefill ran out of memory (no region was in the batch yet)."""


# --- what Stage 1 reads ---------------------------------------------------------------------------


def item(job: PageJob, tag: int) -> PageRegion:
    """What a Stage 1 row reads: region ``tag``, or for a negative tag the early OCR line
    ``-1 - tag`` (``PageRegions.lines``)."""
    return job.regions[tag] if tag >= 0 else job.regions.lines[-1 - tag]


def todo(job: PageJob) -> list[int]:
    """Regions Stage 1 reads: every text region (hsd may skip some drafters' regions, and skips
    Stage 1 altogether on a short page whose drafts are all exact text: ``stage1_min_tokens``).
    A region the drafter found but could not read (a formula image, an empty OCR line) is
    decoded from its crop without a draft: beside the page row that costs no passes of its own."""
    cfg, items = job.config, job.regions.items
    skip = () if cfg.mode == "regions" else cfg.stage1_skip_sources
    chosen = [i for i, r in enumerate(items) if not r.is_figure and r.region.source not in skip]
    if cfg.mode == "hsd" and sum(len(r.tokens) for r in items) < cfg.stage1_min_tokens and all(
            items[i].exact for i in chosen if items[i].tokens):
        return []  # a short born-digital page: Stage 2 reads its exact drafts in a few passes
    return chosen


def reset(job: PageJob) -> None:
    """Forget what Stage 1 found (an attempt abandoned for memory must not leave its results, nor
    its counts); the next attempt's page row is handed the lines read so far again."""
    job.regions.forget_lines()
    for region in job.regions:
        rs = region.stats
        rs.verified, rs.fallback, rs.accepted_tokens, rs.forward_passes, rs.output_tokens = False, False, 0, 0, 0
        region.output = ""
    job.stats.lines_read = job.stats.regions_read_by_lines = 0


# --- rows -----------------------------------------------------------------------------------------


def prefill_crops(job: PageJob, chunk: list[int]) -> BatchPrefill:
    """The crops of Stage 1 tags ``chunk``, prefilled together (one forward pass where the family can)."""
    job.check_cancel()
    cfg, page = job.config, job.page
    requests = [PrefillRequest(crop(page.image, item(job, i).region.bbox, page.scale, cfg.region_pad_pt),
                               kind="region", label=item(job, i).region.label, region=i) for i in chunk]
    before = job.seconds.get("prefill", 0.0)
    with job.timed("prefill"):
        bp = job.target.prefill_batch(requests)
    if job.pass_cost is not None:
        job.pass_cost.add_crops(len(chunk), job.seconds["prefill"] - before)
    return bp


def region_rows(job: PageJob, chunk: list[int], bp: BatchPrefill, notation: Notation | None = None) -> list[DecodeRow]:
    """Stage 1 rows of tags ``chunk`` on their prefilled crops (``notation`` None: each row learns its own)."""
    cfg = job.config
    # In hsd mode Stage 1 only refines drafts: a region whose draft the target keeps rejecting
    # is abandoned (its raw draft still serves Stage 2). The regions baseline decodes in full.
    give_up = cfg.stage1_give_up if cfg.mode == "hsd" else 0.0
    return [DecodeRow(proposer=region_proposer(job, i, notation),
                      stop=job.stop(min(cfg.max_new_tokens, region_bound(item(job, i).tokens))),
                      length=bp.lengths[k], rope_delta=bp.rope_deltas[k],
                      root=int(bp.logits[k].argmax()), tag=i, give_up_below=give_up)
            for k, i in enumerate(chunk)]


def region_done(job: PageJob, row: DecodeRow) -> list[int] | None:
    """Record a finished Stage 1 row; returns the region's refined tokens (None: not verified)."""
    if row.stop_reason == "superseded":
        return None  # the page finished first (or a line's region came): its output is not needed
    read = item(job, row.tag)
    rs = read.stats
    rs.verified = True
    rs.accepted_tokens, rs.forward_passes = row.stats.accepted, row.stats.forward_passes
    out = row.output  # "low_acceptance": a partial refinement; Stage 2 also sees the raw draft
    if row.stop_reason == "repetition" and read.region.label != "table":
        out, rs.fallback = list(read.tokens), True
    rs.output_tokens = len(out)
    if row.tag < 0:
        job.stats.lines_read += 1
    else:  # an early line is no region of the page's: no event names it
        job.emit(RegionVerified(page=job.number, region=row.tag, stats=rs, text=job.target.decode(out)))
    return out


def read_by_lines(job: PageJob, read: dict[int, list[int]]) -> dict[int, list[int]]:
    """Regions whose every early OCR line Stage 1 has read (``read``: line tag -> tokens), each
    with its reading: its lines' readings joined as the drafter joins a paragraph's lines. A
    line belongs to the smallest region holding its centre. Only plain text is read this way:
    a table's, a formula's or a listing's markup is more than its lines say, and is read on
    its own crop. A record of several lines (``core.drafters.base.stack_lines``) counts as one.
    The regions are recorded as verified, line by line."""
    boxes = [region.region.bbox for region in job.regions]
    members: dict[int, list[int]] = {}
    for k, line in enumerate(job.regions.lines):
        holder = smallest_holder(line.region.bbox, boxes)
        if holder is not None:
            members.setdefault(holder, []).append(-1 - k)
    out = {}
    for index, tags in members.items():
        region = job.regions[index]
        if region.region.label not in LINE_READ_LABELS or not region.tokens or any(t not in read for t in tags):
            continue
        text = join_lines([item(job, t).output for t in tags])
        if not text:
            continue
        tokens = job.target.encode(text)
        region.output = text
        rs = region.stats
        rs.verified, rs.output_tokens = True, len(tokens)
        rs.accepted_tokens = sum(item(job, t).stats.accepted_tokens for t in tags)
        rs.forward_passes = max(item(job, t).stats.forward_passes for t in tags)
        job.emit(RegionVerified(page=job.number, region=index, stats=rs, text=text))
        out[index] = tokens
    job.stats.regions_read_by_lines += len(out)
    return out


# --- the drafts Stage 2 (and a region's row) speculate from --------------------------------------


def page_drafts(job: PageJob, notation: Notation) -> PageDrafts:
    """Stage 2's drafts: every region's, refined as Stage 1 reads them. The page's OCR second
    readings (``core.drafters.second_readings``) become the notation's, for every row."""
    items = job.regions.items
    notation.second_readings = second_readings(items)
    return PageDrafts.of(items, job.target, job.config.proposal, notation=notation, history=job.history,
                         style=style_of(job.target))


def line_drafts(job: PageJob, notation: Notation, read: dict[int, list[int]]) -> PageDrafts:
    """Stage 2's drafts while only the early OCR lines are there (``PageRegions.lines``): each
    line's text, and its Stage 1 reading where one is done (``read``: line tag -> tokens).
    Lines belong to no region: what is accepted from them is credited to none."""
    lines = job.regions.lines
    notation.second_readings = second_readings(lines)
    drafts = PageDrafts.of(lines, job.target, job.config.proposal, notation=notation, history=job.history,
                           style=style_of(job.target), regions=[None] * len(lines),
                           keys=[-1 - k for k in range(len(lines))])
    for tag, tokens in read.items():
        drafts.refine(tag, tokens, item(job, tag).output)
    drafts.rejoin()
    return drafts


def text_drafts(job: PageJob, notation: Notation) -> Proposer | None:
    """Proposals from the texts of the lines taken in so far (``PageRegions.line_texts``) as
    one draft of no region (None where they hold no text)."""
    text = clean_draft_text("\n".join(job.regions.line_texts))
    if not text:
        return None
    return PageDrafts.of([TextDraft(job.target.encode(text), text)], job.target, job.config.proposal,
                         notation=notation, history=job.history, style=style_of(job.target),
                         regions=[None]).proposer


def early_drafts(job: PageJob, passes: int, notation: Notation) -> Proposer | None:
    """Stage 2's proposals from the lines the drafter has read before its regions, where more
    came since the last call (``PageRegions.early_text``; None otherwise): one draft of no
    region (nothing is credited to a region). ``passes``: decoding passes run so far."""
    if job.regions.early_text(passes) is None:
        return None
    return text_drafts(job, notation)


def region_proposer(job: PageJob, tag: int, notation: Notation | None) -> Proposer:
    """The proposals of one row on its crop: the same strategies as the page's (token n-grams,
    then normalised text, where rapid-table's HTML and the model's differ in spacing; then the
    output's own n-grams, as table markup repeats), from the region's draft alone (``tag``: as
    ``item``). A crop read alone has no page opening: no style."""
    return PageDrafts.of([item(job, tag)], job.target, job.config.proposal, notation=notation,
                         history=job.history, regions=[tag if tag >= 0 else None]).proposer


def second_readings(items: list[PageRegion]) -> dict[str, list]:
    """The OCR's second readings of the words of ``items`` (``core.drafters.second_readings``),
    as the page's notation takes them (``Notation.second_readings``)."""
    return {word: found for item in items for word, found in item.region.extra.get("second_readings", {}).items()}


def region_bound(draft: list[int]) -> int:
    """Stage 1's output bound for a region: twice its draft and some slack, or a fixed bound."""
    if draft:
        return tuning.REGION_TOKENS_PER_DRAFT_TOKEN * len(draft) + tuning.REGION_TOKENS_SLACK
    return tuning.UNDRAFTED_REGION_TOKENS


def crop(image, bbox, scale: float, pad_pt: float):
    """The region's pixels: bbox (points) scaled to the rendered image, plus a margin."""
    x0, y0, x1, y1 = bbox
    box = (max(0, int((x0 - pad_pt) * scale)), max(0, int((y0 - pad_pt) * scale)),
           min(image.width, int((x1 + pad_pt) * scale + 1)), min(image.height, int((y1 + pad_pt) * scale + 1)))
    if box[2] - box[0] < 2 or box[3] - box[1] < 2:
        box = (0, 0, image.width, image.height)
    return image.crop(box)


# --- Stage 1 alone ----------------------------------------------------------------------------------


def decode_regions(job: PageJob) -> PageDecode:
    """The regions baseline: decode every text region on its crop, ``stage1_batch`` at a time, and
    join their readings in reading order."""
    target, cfg = job.target, job.config
    job.regions.wait(0)  # Stage 1 alone has nothing to decode without the regions
    chosen = todo(job)
    out: list[list[int]] = [[] for _ in job.regions]
    batch = max(1, cfg.stage1_batch)
    pos = 0
    while pos < len(chosen):
        chunk = chosen[pos:pos + batch]
        try:
            bp = prefill_crops(job, chunk)
            rows = region_rows(job, chunk, bp)
            decoder = job.decoder()
            with job.timed("verify"):
                decoder.run(rows, bp.cache, bp.valid)
            passes, bp = bp.passes, None  # this batch's KV is done: free it before the next prefills
        except torch.OutOfMemoryError:
            # Drop the failed batch's caches before retrying: held in these locals they would
            # stay allocated while the smaller batch prefills.
            bp = rows = decoder = None
            empty_cache(target.device)
            if batch == 1:
                raise HSDError("out of GPU memory even for one region at a time; "
                               "try --device cpu or a lower --dpi") from None
            batch = max(1, batch // 2)
            continue
        job.stats.prefill_passes += passes
        job.stats.stage1_passes += decoder.forward_passes
        for row in rows:
            out[row.tag] = region_done(job, row) or []
        pos += len(chunk)
    for item, tokens in zip(job.regions, out):
        item.output = target.decode(tokens)
    text, spans = joined_regions(job.regions.outputs)
    job.emit(TextAppended(page=job.number, text=text))
    return PageDecode([t for tokens in out for t in tokens], text, spans)


# --- Stage 1 beside Stage 2 (hsd) ------------------------------------------------------------------


def decode_hsd(job: PageJob) -> DecodeRow:
    """Stage 1 and Stage 2 in one batch, as the reference runs them. Out of memory: the page starts
    over with half the regions beside it, and finally with none (Stage 2 on the raw drafts, still
    lossless)."""
    batch = max(0, job.config.stage1_batch)
    while True:
        reset(job)  # an abandoned attempt's region results must not survive it
        try:
            return Stage1Scheduler(job, batch).run()
        except PageOutOfMemory:
            raise  # the page alone does not fit: fewer regions beside it cannot help
        except torch.OutOfMemoryError:
            if batch == 0:
                raise
        # Freed here, after the handler: until it ends, the traceback holds the failed attempt's
        # frames and with them its KV caches.
        empty_cache(job.target.device)
        batch //= 2


class Stage1Scheduler(DecodePolicy):
    """Stage 1 beside the page row: which regions are read on their crops, when, and how their
    readings reach Stage 2.

    The page row starts decoding at once with the raw drafts. While a background OCR drafter
    runs, the lines it has read so far are the drafts, and Stage 1 reads each line with a box on
    its crop as it would a region (``item``: negative tags). Its regions join the pass after it
    delivers: rows still reading lines stop, a text region whose lines were all read takes their
    readings joined as its own (``read_by_lines``), the others get Stage 1 rows of their own. Up
    to ``batch`` rows decode beside the page row in the same forward passes (fewer where the
    measured cost of width or of a crop prefill says they do not pay: ``core.speculative.budget``);
    more are admitted as they finish. While a region row decodes, its output so far is a Stage 2
    draft (``PageDrafts.grow``); once it is done, its output replaces the region's raw draft
    (``refine``). Stage 1 therefore costs no passes of its own, only its prefills.
    """

    def __init__(self, job: PageJob, batch: int):
        self.job, self.batch = job, batch
        self.notation = job.notation()  # what any row learns serves every row (and later pages)
        self.pending: list[int] = []      # regions (or early lines: negative tags) still to read, in order
        self.drafts: PageDrafts | None = None
        self.lines_read: dict[int, list[int]] = {}  # early line tag -> its Stage 1 reading
        self.region_rows: list[DecodeRow] = []
        self.recorded: set[int] = set()
        self.prefill_passes = 0
        self.page_row: DecodeRow | None = None
        self.decoder = None
        self.text = TextStream(job)

    def run(self) -> DecodeRow:
        job, target = self.job, self.job.target
        if job.regions.ready:
            self._drafts_arrived()
        try:
            with job.timed("prefill"):
                prefill = target.prefill_batch([PrefillRequest(job.page.image, kind="page")])
        except torch.OutOfMemoryError as exc:
            raise PageOutOfMemory(str(exc)) from None
        self.prefill_passes += prefill.passes
        self.page_row = DecodeRow(proposer=self.drafts.proposer if self.drafts else self._early_drafts() or NoDrafts(),
                                  stop=job.stop(job.config.max_new_tokens),
                                  length=prefill.lengths[0], rope_delta=prefill.rope_deltas[0],
                                  root=int(prefill.logits[0].argmax()), ends_batch=True)
        cache, valid = prefill.cache, prefill.valid
        del prefill
        self.decoder = job.decoder()
        with job.timed("verify"):
            self.decoder.run([self.page_row], cache, valid, self)
        self.text.flush(self.page_row)
        self._record(self.region_rows)
        job.stats.prefill_passes += self.prefill_passes
        job.stats.stage2_passes += self.decoder.forward_passes
        return self.page_row

    # -- DecodePolicy ---------------------------------------------------------------------------

    def admit(self, live: list[DecodeRow]):
        if self.decoder.forward_passes == 0:  # later, ``after_pass`` looks, before rows are dropped
            self._look(live)
        if not self._priced():
            return None
        busy = sum(1 for r in live if r is not self.page_row)
        # Where wider passes cost more (a CPU), only as many rows as the measured cost affords.
        slots = self.decoder.affordable_rows(self.batch)
        if not self.pending or busy > slots // 2 or busy >= slots:
            return None  # refill once half the region slots are free: fewer, fuller prefills
        chunk = self.pending[:slots - busy]
        del self.pending[:len(chunk)]
        bp = prefill_crops(self.job, chunk)
        self.prefill_passes += bp.passes
        rows = region_rows(self.job, chunk, bp, self.notation)
        self.region_rows.extend(rows)
        return rows, bp.cache, bp.valid

    def after_pass(self, live: list[DecodeRow], gained: list[int]) -> None:
        self._record(self.region_rows)  # also rows that stopped at admission (a region that reads as nothing)
        for row in live:  # Stage 1 rows exist only once there are drafts
            if row is not self.page_row and not row.done:
                self.drafts.grow(row.tag, row.output)
        self.text.push(self.page_row)
        self._look(live)

    # -- steps ----------------------------------------------------------------------------------

    def _look(self, live: list[DecodeRow]) -> None:
        """Take the regions if the drafter has delivered (speculate from them from the next pass
        on; rows reading early lines stop), else the lines it has read since the last look."""
        if self.job.regions.poll(self.decoder.forward_passes):
            for row in live:
                if row.tag is not None and row.tag < 0 and not row.done:
                    row.done, row.stop_reason = True, "superseded"
            self._drafts_arrived()
            self.page_row.proposer = self.drafts.proposer
        elif (early := self._early_drafts()) is not None:
            self.page_row.proposer = early

    def _drafts_arrived(self) -> None:
        self.drafts = page_drafts(self.job, self.notation)
        chosen = todo(self.job) if self.batch else []
        read = read_by_lines(self.job, self.lines_read) if chosen else {}
        for region, tokens in read.items():
            self.drafts.refine(region, tokens, self.job.regions[region].output)
        self.drafts.rejoin()
        self.pending[:] = [i for i in chosen if i not in read]

    def _early_drafts(self):
        """Proposals from the lines the drafter has read, where more came and its regions did not:
        the lines with boxes as drafts of their own, each read on its crop by Stage 1 (where
        Stage 1 runs), else their texts as one draft."""
        passes = self.decoder.forward_passes if self.decoder is not None else 0
        job = self.job
        if not self.batch or not tuning.EARLY_LINE_ROWS:
            return early_drafts(job, passes, self.notation)
        tags = job.regions.take_lines(passes)
        if tags is None:
            return None
        if not job.regions.lines:  # texts without boxes: nothing to crop
            return text_drafts(job, self.notation)
        self.pending += tags
        self.drafts = line_drafts(job, self.notation, self.lines_read)
        return self.drafts.proposer

    def _priced(self) -> bool:
        """Whether regions may be admitted now; drops the pending regions whose crops do not pay.

        A new engine's first page prices a pass, and a token of width (passes of different
        widths), before adding rows that widen every pass: until then ``b`` reads 0 and every
        region would look free. Where a crop prefill costs several passes (a CPU), only regions
        long enough to repay it are read; before the first crop is timed (taken as free), those
        whose tokens save more than they cost. Regions without a draft: where a token of their
        reading pays at all."""
        cost = self.decoder.cost
        if not self.pending or cost is None:
            return True
        if cost.passes < 2 or (not cost.slope_measured and cost.passes < tuning.PRICE_PASSES):
            return False
        job = self.job
        self.pending[:] = [i for i in self.pending if stage1_pays(
            len(item(job, i).tokens) if item(job, i).tokens else None, item(job, i).exact,
            cost.crop_seconds or 0.0, cost.a, cost.b)]
        return True

    def _record(self, rows: list[DecodeRow]) -> None:
        """Finished region rows become Stage 2 drafts (the joined draft rebuilt once per pass)."""
        job, refined = self.job, False
        for row in rows:
            if row is self.page_row or not row.done or row.tag in self.recorded:
                continue
            self.recorded.add(row.tag)
            out = region_done(job, row)
            if out is not None:
                read = item(job, row.tag)
                read.output = job.target.decode(out)
                if row.tag < 0 and row.stop_reason != "low_acceptance":  # a line read to its end
                    self.lines_read[row.tag] = out
                self.drafts.refine(row.tag, out, read.output)
                refined = True
        if refined:
            self.drafts.rejoin()
