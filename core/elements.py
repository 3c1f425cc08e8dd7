"""Element-level families (``Profile.element_level``: PaddleOCR-VL, GLM-OCR): a page is its layout's
text regions, each read on its own crop with its label's task prompt, joined in reading order.

That is how their authors parse a document (layout, then one prompt per element), so it is also
their ``ar`` reference: ``ar`` reads each crop greedily, and ``hsd`` (likewise ``page`` and
``regions``) verifies the region's draft on the same crop with the same prompt, which at
``tau = 1`` gives ``ar``'s output. Each region may write up to ``max_new_tokens`` whatever its draft,
so every mode stops alike. A page without text regions reads as empty: the whole page is never sent
with an element prompt.
"""

from __future__ import annotations

import torch

from core.errors import HSDError
from core.events import RegionVerified, TextAppended
from core.page_job import PageDecode, PageJob, empty_cache, joined_regions
from core.stage1 import prefill_crops, region_proposer
from core.speculative.decode import DecodeRow
from core.speculative.proposers import NoDrafts


def decode_elements(job: PageJob) -> PageDecode:
    """Read every text region of ``job``'s page on its crop, joined in reading order."""
    target, cfg, page = job.target, job.config, job.regions
    page.wait(0)  # the layout decides what is read
    todo = [i for i, r in enumerate(page) if not r.is_figure]
    use_drafts = cfg.mode != "ar"
    notation = job.notation() if use_drafts else None
    tokens: dict[int, list[int]] = {}
    reasons: list[str] = []
    batch, pos = max(1, cfg.stage1_batch), 0
    while pos < len(todo):
        chunk = todo[pos:pos + batch]
        try:
            rows, passes = _read(job, chunk, notation, use_drafts)
        except torch.OutOfMemoryError:
            empty_cache(target.device)
            if batch == 1:
                raise HSDError("out of GPU memory even for one region at a time; "
                               "try --device cpu or a lower --dpi") from None
            batch //= 2
            continue
        pos += len(chunk)
        job.stats.prefill_passes += passes
        for row in rows:
            item = page[row.tag]
            rs = item.stats
            rs.verified, rs.accepted_tokens, rs.forward_passes = True, row.stats.accepted, row.stats.forward_passes
            rs.output_tokens = len(row.output)
            tokens[row.tag] = row.output
            reasons.append(row.stop_reason)
            item.output = target.decode(row.output)
            job.stats.drafted_tokens += row.stats.proposed
            job.stats.accepted_tokens += row.stats.accepted
            job.emit(RegionVerified(page=job.number, region=row.tag, stats=rs, text=item.output))
    # the outputs of the regions read, in reading order ("" for figures: they write nothing)
    text, spans = joined_regions(page.outputs)
    # The page stopped the way its most cut-short region did (a region at the token bound first).
    job.stats.stop_reason = "max_new_tokens" if "max_new_tokens" in reasons else (reasons[-1] if reasons else "")
    job.emit(TextAppended(page=job.number, text=text))
    return PageDecode([t for i in todo for t in tokens.get(i, [])], text, spans)


def _read(job: PageJob, chunk: list[int], notation, use_drafts: bool) -> tuple[list[DecodeRow], int]:
    """Prefill the crops of regions ``chunk`` and decode them to the end (with their drafts where
    ``use_drafts``); returns the finished rows and the prefill's passes."""
    cfg = job.config
    bp = prefill_crops(job, chunk)
    rows = [DecodeRow(proposer=region_proposer(job, i, notation) if use_drafts else NoDrafts(),
                      stop=job.stop(cfg.max_new_tokens), length=bp.lengths[k],
                      rope_delta=bp.rope_deltas[k], root=int(bp.logits[k].argmax()), tag=i)
            for k, i in enumerate(chunk)]
    decoder = job.decoder()
    with job.timed("verify"):
        decoder.run(rows, bp.cache, bp.valid)
    job.stats.stage1_passes += decoder.forward_passes
    return rows, bp.passes
