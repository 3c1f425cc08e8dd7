"""Batched prefill (page + region crops in one forward pass) equals single prefills, per family."""

from __future__ import annotations

import pytest
import torch

from core.targets.base import PrefillRequest
from tests.core.targets.conftest import page_image

ARCHS = ["hunyuan_vl", "qwen2_5_vl", "qwen3_vl", "paddleocr_vl", "glm_ocr"]


def _requests():
    page = page_image(["Batched prefill", "left padding", "| a | b |"])
    return [
        PrefillRequest(page, kind="page"),
        PrefillRequest(page.crop((10, 10, 200, 40)), kind="region", label="text", region=0),
        PrefillRequest(page.crop((10, 280, 270, 350)), kind="region", label="table", region=1),
    ]


@pytest.mark.parametrize("arch", ARCHS)
def test_batched_prefill_matches_single_prefills(tiny_target, arch):
    target = tiny_target(arch)
    requests = _requests()
    batch = target.prefill_batch(requests)
    singles = [target.prefill(r.image, r.kind, r.label) for r in requests]
    assert batch.passes == 1
    assert batch.lengths == [p.length for p in singles]
    assert batch.rope_deltas == [p.rope_delta for p in singles]
    T = int(batch.cache.get_seq_length())
    assert batch.valid.shape == (3, T) and batch.valid.sum(dim=1).tolist() == batch.lengths
    for b, p in enumerate(singles):
        assert int(batch.logits[b].argmax()) == int(p.logits.argmax())
        assert torch.allclose(batch.logits[b], p.logits, atol=1e-2, rtol=1e-3)
        # the row's real cache columns hold what its own prefill computed (up to rounding: the
        # vision tower's kernels see more patches at once; hsd prefills the page row alone anyway)
        layer = batch.cache.layers[0]
        keys = layer.keys[b][:, batch.valid[b]]
        assert torch.allclose(keys, p.cache.layers[0].keys[0], atol=1e-2)


def test_batched_prefill_then_decoding_matches_single(tiny_target):
    """Greedy continuation of a padded row from the batched cache equals its own greedy decoding."""
    from core.speculative.decode import DecodePolicy, DecodeRow, SpeculativeDecoder
    from core.speculative.proposers import NoDrafts
    from core.speculative.stopping import StopRule

    target = tiny_target("qwen2_5_vl")
    requests = _requests()

    def rows(lengths, deltas, logits):
        return [DecodeRow(proposer=NoDrafts(), stop=StopRule(frozenset(), 12), length=n, rope_delta=d,
                          root=int(lg.argmax())) for n, d, lg in zip(lengths, deltas, logits)]

    batch = target.prefill_batch(requests)
    together = rows(batch.lengths, batch.rope_deltas, batch.logits)
    SpeculativeDecoder(target).run(together, batch.cache, batch.valid)
    for r, row in zip(requests, together):
        p = target.prefill(r.image, r.kind, r.label)
        alone = rows([p.length], [p.rope_delta], [p.logits])
        SpeculativeDecoder(target).run(alone, p.cache, torch.ones(1, p.length, dtype=torch.bool))
        assert alone[0].output == row.output


@pytest.mark.parametrize("arch", ["hunyuan_vl", "qwen3_vl"])
def test_rows_admitted_mid_run_decode_as_they_would_alone(tiny_target, arch):
    """The page row decodes; region rows join after two passes (left-padded into the running cache
    with its holes) and a row marked ``ends_batch`` stops the rest when it finishes."""
    from core.speculative.decode import DecodePolicy, DecodeRow, SpeculativeDecoder
    from core.speculative.proposers import NoDrafts
    from core.speculative.stopping import StopRule

    target = tiny_target(arch)
    page, *crops = _requests()

    def row(n, d, lg, steps, **kw):
        return DecodeRow(proposer=NoDrafts(), stop=StopRule(frozenset(), steps), length=n, rope_delta=d,
                         root=int(lg.argmax()), **kw)

    def alone(r, steps):
        p = target.prefill(r.image, r.kind, r.label)
        x = row(p.length, p.rope_delta, p.logits, steps)
        SpeculativeDecoder(target).run([x], p.cache, torch.ones(1, p.length, dtype=torch.bool))
        return x.output

    bp = target.prefill_batch([page])
    page_row = row(bp.lengths[0], bp.rope_deltas[0], bp.logits[0], 10, ends_batch=True)
    joined, calls = [], {"n": 0}

    class JoinAfterTwoPasses(DecodePolicy):
        def admit(self, live):
            calls["n"] += 1
            if calls["n"] != 3:  # asked before the first pass, then after each: join after two passes
                return None
            cb = target.prefill_batch(crops)
            rows = [row(n, d, lg, 30) for n, d, lg in zip(cb.lengths, cb.rope_deltas, cb.logits)]
            joined.extend(rows)
            return rows, cb.cache, cb.valid

    SpeculativeDecoder(target).run([page_row], bp.cache, bp.valid, JoinAfterTwoPasses())
    assert page_row.output == alone(page, 10)
    for r, x in zip(crops, joined):
        assert x.stop_reason == "superseded"  # the page finished after 10 tokens, these had 30 to go
        assert x.output == alone(r, 30)[:len(x.output)] and len(x.output) == 7
