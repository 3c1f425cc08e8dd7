"""The stages of HSD as decode schedules over one ``PageJob`` (see ``core.page_job``).

* ``decode_hsd``       Stage 2 decodes the page from the first pass on; beside it, in the same
                       batched passes, ``Stage1Scheduler`` runs region rows on their crops and turns
                       each finished region into a Stage 2 draft (the paper's two stages, interleaved).
* ``decode_page``      Stage 2 alone: the page row with the drafter's raw drafts (or none: plain AR).
* ``decode_regions``   Stage 1 alone: every text region read on its crop (the region-parallel baseline).

``decode(job)`` runs the schedule of the job's mode and returns one ``PageDecode`` record (the
output ids, their text, which region each stretch came from), its counters in ``job.stats``.
Each schedule is a ``DecodePolicy`` of ``core.speculative.decode``: it admits rows into the
decoder's batch and reacts after every pass.
"""

from __future__ import annotations

import torch

from core import tuning
from core.errors import HSDError
from core.events import TextAppended
from core.page_job import PageDecode, PageJob, empty_cache, joined_regions
from core.results import TextSpan
from core.speculative.budget import stage1_pays
from core.speculative.decode import DecodePolicy, DecodeRow
from core.speculative.detokenize import IncrementalDetokenizer
from core.speculative.page_drafts import PageDrafts
from core.speculative.proposers import NoDrafts
from core.targets.base import PrefillRequest
from core.tuning import PRICE_PASSES


def decode(job: PageJob) -> PageDecode:
    """Decode ``job``'s page with the schedule of its mode (``ar`` and ``page``: the page row alone;
    ``hsd``: both stages; ``regions``: Stage 1 alone)."""
    mode = job.config.mode
    if mode == "regions":
        return decode_regions(job)
    row = decode_hsd(job) if mode == "hsd" else decode_page(job, drafted=mode == "page")
    return _page_row_decode(job, row)


def _page_row_decode(job: PageJob, row: DecodeRow) -> PageDecode:
    """The page row's output as a ``PageDecode``; each region is credited with the tokens Stage 2
    accepted from its draft."""
    stats = job.stats
    stats.tree_passes = row.stats.tree_passes
    stats.drafted_tokens, stats.accepted_tokens = row.stats.proposed, row.stats.accepted
    stats.stop_reason = row.stop_reason
    for region, count in _origin_counts(row).items():
        job.regions[region].stats.page_accepted_tokens += count
    return PageDecode(list(row.output), job.target.decode(row.output), _spans(row, job.target))


def _origin_counts(row: DecodeRow) -> dict[int, int]:
    """Output tokens accepted from each draft (region index -> count)."""
    counts: dict[int, int] = {}
    for o in row.origins:
        if o is not None:
            counts[o[0]] = counts.get(o[0], 0) + 1
    return counts


def _spans(row: DecodeRow, target) -> list[TextSpan]:
    """Character spans of the output attributed to the draft (region) they were accepted from.

    Tokens the target wrote itself inherit the attribution of the token before them."""
    owners: list[int | None] = []
    current = None
    for o in row.origins[: len(row.output)]:
        if o is not None:
            current = o[0]
        owners.append(current)
    spans: list[TextSpan] = []
    start_tok = 0
    start_char = 0
    for i in range(1, len(owners) + 1):
        if i == len(owners) or owners[i] != owners[start_tok]:
            end_char = len(target.decode(row.output[:i]))
            if end_char > start_char:
                spans.append(TextSpan(region=owners[start_tok], start=start_char, end=end_char))
            start_tok, start_char = i, end_char
    return spans


class PageOutOfMemory(torch.OutOfMemoryError):
    """The page's own prefill ran out of memory (no region was in the batch yet)."""


class _TextStream:
    """The page row's new text as ``TextAppended`` events, pass by pass."""

    def __init__(self, job: PageJob):
        self.job = job
        self.detok = IncrementalDetokenizer(job.target.decode)

    def push(self, row: DecodeRow) -> None:
        text = self.detok.push(row.output)
        if text:
            self.job.emit(TextAppended(page=self.job.number, text=text))


# --- Stage 2 alone --------------------------------------------------------------------------------


class _PageAlone(DecodePolicy):
    """The page row alone; its drafts replace ``NoDrafts`` once the drafter delivers (the lines it
    has read, until its regions come)."""

    def __init__(self, job: PageJob, drafted: bool):
        self.job, self.drafted = job, drafted
        self.text = _TextStream(job)
        self.passes = 0

    def proposer(self):
        if not self.drafted:
            return NoDrafts()
        if self.job.regions.ready:
            return self.job.page_drafts(self.job.notation()).proposer
        return self._new_drafts() or NoDrafts()

    def after_pass(self, live, gained) -> None:
        self.passes += 1
        drafts = self._new_drafts() if self.drafted else None
        if drafts is not None:
            live[0].proposer = drafts
        self.text.push(live[0])

    def _new_drafts(self):
        """The page's drafts if the drafter has just delivered, its early lines' if more came."""
        if self.job.regions.poll(self.passes):
            return self.job.page_drafts(self.job.notation()).proposer
        return self.job.early_drafts(self.passes, self.job.notation())


def decode_page(job: PageJob, drafted: bool) -> DecodeRow:
    """Decode the page alone, verifying the trees its drafts offer (``drafted`` False: plain AR)."""
    target = job.target
    policy = _PageAlone(job, drafted)
    with job.timed("prefill"):
        prefill = target.prefill(job.page.image, kind="page")
    job.stats.prefill_passes += 1
    row = DecodeRow(proposer=policy.proposer(), stop=job.stop(job.config.max_new_tokens),
                    length=prefill.length, rope_delta=prefill.rope_delta, root=int(prefill.logits.argmax()))
    decoder = job.decoder()
    valid = torch.ones(1, prefill.length, dtype=torch.bool, device=target.device)
    with job.timed("verify"):
        decoder.run([row], prefill.cache, valid, policy)
    job.stats.stage2_passes += decoder.forward_passes
    return row


# --- Stage 1 alone --------------------------------------------------------------------------------


def decode_regions(job: PageJob) -> PageDecode:
    """The regions baseline: decode every text region on its crop, ``stage1_batch`` at a time, and
    join their readings in reading order."""
    target, cfg = job.target, job.config
    job.regions.wait(0)  # Stage 1 alone has nothing to decode without the regions
    todo = job.stage1_todo()
    out: list[list[int]] = [[] for _ in job.regions]
    batch = max(1, cfg.stage1_batch)
    pos = 0
    while pos < len(todo):
        chunk = todo[pos:pos + batch]
        try:
            bp = job.prefill_regions(chunk)
            rows = job.region_rows(chunk, bp)
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
            out[row.tag] = job.region_done(row) or []
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
        job.regions.reset_stage1()  # an abandoned attempt's region results must not survive it
        job.stats.lines_read = job.stats.regions_read_by_lines = 0  # nor its count of them
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
    its crop as it would a region (``PageJob.item``: negative tags). Its regions join the pass
    after it delivers: rows still reading lines stop, a text region whose lines were all read
    takes their readings joined as its own (``PageJob.read_by_lines``), the others get Stage 1
    rows of their own. Up to ``batch`` rows decode beside the page row in the same forward passes (fewer
    where the measured cost of width or of a crop prefill says they do not pay:
    ``core.speculative.budget``); more are admitted as they finish. While a region row decodes,
    its output so far is a Stage 2 draft (``PageDrafts.grow``); once it is done, its output
    replaces the region's raw draft (``refine``). Stage 1 therefore costs no passes of its own,
    only its prefills.
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
        self.text = _TextStream(job)

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
        bp = self.job.prefill_regions(chunk)
        self.prefill_passes += bp.passes
        rows = self.job.region_rows(chunk, bp, self.notation)
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
        self.drafts = self.job.page_drafts(self.notation)
        todo = self.job.stage1_todo() if self.batch else []
        read = self.job.read_by_lines(self.lines_read) if todo else {}
        for region, tokens in read.items():
            self.drafts.refine(region, tokens, self.job.regions[region].output)
        self.drafts.rejoin()
        self.pending[:] = [i for i in todo if i not in read]

    def _early_drafts(self):
        """Proposals from the lines the drafter has read, where more came and its regions did not:
        the lines with boxes as drafts of their own, each read on its crop by Stage 1 (where
        Stage 1 runs), else their texts as one draft."""
        passes = self.decoder.forward_passes if self.decoder is not None else 0
        job = self.job
        if not self.batch or not tuning.EARLY_LINE_ROWS:
            return job.early_drafts(passes, self.notation)
        tags = job.regions.take_lines(passes)
        if tags is None:
            return None
        if not job.regions.lines:  # texts without boxes: nothing to crop
            return job.text_drafts(self.notation)
        self.pending += tags
        self.drafts = job.line_drafts(self.notation, self.lines_read)
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
        if cost.passes < 2 or (not cost.slope_measured and cost.passes < PRICE_PASSES):
            return False
        item = self.job.item
        self.pending[:] = [i for i in self.pending if stage1_pays(
            len(item(i).tokens) if item(i).tokens else None, item(i).exact, cost.crop_seconds or 0.0, cost.a, cost.b)]
        return True

    def _record(self, rows: list[DecodeRow]) -> None:
        """Finished region rows become Stage 2 drafts (the joined draft rebuilt once per pass)."""
        job, refined = self.job, False
        for row in rows:
            if row is self.page_row or not row.done or row.tag in self.recorded:
                continue
            self.recorded.add(row.tag)
            out = job.region_done(row)
            if out is not None:
                item = job.item(row.tag)
                item.output = job.target.decode(out)
                if row.tag < 0 and row.stop_reason != "low_acceptance":  # a line read to its end
                    self.lines_read[row.tag] = out
                self.drafts.refine(row.tag, out, item.output)
                refined = True
        if refined:
            self.drafts.rejoin()
