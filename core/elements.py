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
from core.page_job import PageJob, empty_cache, joined_regions
from core.events import RegionVerified, TextAppended
from core.results import FIGURE_LABELS, TextSpan
from core.speculative.decode import DecodeRow
from core.speculative.page_drafts import PageDrafts
from core.speculative.proposers import NoDrafts


def decode_elements(job: PageJob) -> tuple[str, list[int], list[TextSpan]]:
    """Read every text region of ``job``'s page on its crop; returns (Markdown, tokens, spans)."""
    target, cfg, page = job.target, job.config, job.regions
    todo = [i for i, r in enumerate(page.regions) if r.label not in FIGURE_LABELS]
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
            i, rs = row.tag, page.stats[row.tag]
            rs.verified, rs.accepted_tokens, rs.forward_passes = True, row.stats.accepted, row.stats.forward_passes
            rs.output_tokens = len(row.output)
            tokens[i] = row.output
            reasons.append(row.stop_reason)
            page.outputs[i] = target.decode(row.output)
            job.stats.drafted_tokens += row.stats.proposed
            job.stats.accepted_tokens += row.stats.accepted
            job.emit(RegionVerified(page=job.number, region=i, stats=rs, text=page.outputs[i]))
    # the outputs of the regions read, in reading order ("" for figures: they write nothing)
    markdown, spans = joined_regions([page.outputs[i] if i in tokens else "" for i in range(len(page.regions))])
    output_tokens = [t for i in todo for t in tokens.get(i, [])]
    job.stats.generated_tokens = len(output_tokens)
    # The page stopped the way its most cut-short region did (a region at the token bound first).
    job.stats.stop_reason = "max_new_tokens" if "max_new_tokens" in reasons else (reasons[-1] if reasons else "")
    job.emit(TextAppended(page=job.number, text=markdown))
    return markdown, output_tokens, spans


def _read(job: PageJob, chunk: list[int], notation, use_drafts: bool) -> tuple[list[DecodeRow], int]:
    """Prefill the crops of regions ``chunk`` and decode them to the end (with their drafts where
    ``use_drafts``); returns the finished rows and the prefill's passes."""
    target, cfg, page = job.target, job.config, job.regions
    bp = job.prefill_regions(chunk)
    rows = [DecodeRow(proposer=(PageDrafts([page.tokens[i]], [page.texts[i]], target.encode, target.decode,
                                           cfg.proposal, regions=[i], notation=notation,
                                           history=job.history).proposer
                                if use_drafts else NoDrafts()),
                      stop=job.stop(cfg.max_new_tokens), length=bp.lengths[k],
                      rope_delta=bp.rope_deltas[k], root=int(bp.logits[k].argmax()), tag=i)
            for k, i in enumerate(chunk)]
    decoder = job.decoder()
    with job.timed("verify"):
        decoder.run(rows, bp.cache, bp.valid)
    job.stats.stage1_passes += decoder.forward_passes
    return rows, bp.passes
