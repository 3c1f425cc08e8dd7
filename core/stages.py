"""Stage 2 alone over one ``PageJob`` (see ``core.page_job``), and the page row's record.

* ``decode_page``      Stage 2 alone: the page row with the drafter's raw drafts (or none: plain AR).
* ``page_row_decode``  a finished page row (``decode_page``'s, or ``core.stage1.decode_hsd``'s, both
                       stages interleaved) as the page's ``PageDecode`` record: the output ids, their
                       text, which region each stretch came from; each region credited with the
                       tokens the page row accepted from its draft.

The engine runs the schedule of a page's mode (``core.engine.schedule``): ``ar`` and ``page`` here,
``hsd`` and ``regions`` in ``core.stage1``, element-level families in ``core.elements``. Each
schedule is a ``DecodePolicy`` of ``core.speculative.decode``: it admits rows into the decoder's
batch and reacts after every pass; its counters go to ``job.stats``.
"""

from __future__ import annotations

import torch

from core.page_job import PageDecode, PageJob, TextStream
from core.results import TextSpan
from core.speculative.decode import DecodePolicy, DecodeRow
from core.speculative.proposers import NoDrafts
from core.stage1 import early_drafts, page_drafts

__all__ = ["decode_page", "page_row_decode"]


def page_row_decode(job: PageJob, row: DecodeRow) -> PageDecode:
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


# --- Stage 2 alone --------------------------------------------------------------------------------


class _PageAlone(DecodePolicy):
    """The page row alone; its drafts replace ``NoDrafts`` once the drafter delivers (the lines it
    has read, until its regions come)."""

    def __init__(self, job: PageJob, drafted: bool):
        self.job, self.drafted = job, drafted
        self.text = TextStream(job)
        self.passes = 0

    def proposer(self):
        if not self.drafted:
            return NoDrafts()
        if self.job.regions.ready:
            return page_drafts(self.job, self.job.notation()).proposer
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
            return page_drafts(self.job, self.job.notation()).proposer
        return early_drafts(self.job, self.passes, self.job.notation())


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
    policy.text.flush(row)
    job.stats.stage2_passes += decoder.forward_passes
    return row
