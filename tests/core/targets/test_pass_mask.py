"""The fast engine's packed pass mask (what a CPU's pass reads) is the buffer's own mask of that pass,
column for column, over passes of several rows of different lengths, pad rows and a slot given back
and taken again: it is written from the rows' lengths, not copied out of the buffer."""

from __future__ import annotations

import random

import torch

from core.targets.static_kv import StaticPageCache


def _cache(rows: int) -> StaticPageCache:
    return StaticPageCache(layers=2, kv_heads=1, head_dim=2, capacity=64, max_width=8, dtype=torch.float32,
                           device="cpu", rows=rows, free_bytes=lambda: 1 << 40)


def _block(width: int, rng: random.Random) -> torch.Tensor:
    """An ancestor mask: each node sees itself and some earlier nodes."""
    block = torch.eye(width, dtype=torch.bool)
    for i in range(width):
        for j in range(i):
            block[i, j] = rng.random() < 0.5
    return block


def test_the_packed_mask_is_the_buffers_mask_of_the_pass_over_rows_of_different_lengths():
    rng = random.Random(0)
    cache = _cache(rows=3)
    slots = cache.take(3)
    for step in range(12):
        width = rng.choice([1, 3, 8])
        top = rng.choice([1, 2, 3])
        blocks = torch.stack([_block(width, rng) for _ in range(top)])
        packed = cache.pass_mask(blocks, packed=True).clone()
        view = cache.pass_mask(blocks, packed=False)
        assert packed.shape == view.shape
        assert packed.is_contiguous()
        assert torch.equal(packed, view), f"pass {step}"
        rows = [row for row in range(top) if rng.random() < 0.8] or [0]
        pads = [row for row in range(top) if row not in rows]
        paths = [sorted(rng.sample(range(1, width), rng.randrange(0, width))) if width > 1 else [] for _ in rows]
        cache.accept_rows(rows + pads, [[0] + path for path in paths] + [[] for _ in pads])
        if step == 6:  # a slot given back and taken again starts over, as a new page's row does
            cache.release([slots[1]])
            cache.take(1)
    assert max(cache.lengths) > 10 and len(set(cache.lengths)) > 1
