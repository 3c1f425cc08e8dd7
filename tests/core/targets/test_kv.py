"""Cache surgery on hand-made caches: every column's content is known, so placement is checked exactly."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from core.targets.kv import (
    additive_mask, cache_crop, cache_length, cache_select, causal_allowed, merge_caches_left_padded,
)

LAYERS, HEADS, DIM = 2, 2, 4


def numbered_cache(batch: int, length: int, offset: float = 0.0) -> DynamicCache:
    """Keys hold ``offset + 1000*row + column`` (values the negation) in every layer, head and channel."""
    columns = torch.arange(length, dtype=torch.float32).view(1, 1, length, 1)
    rows = torch.arange(batch, dtype=torch.float32).view(batch, 1, 1, 1) * 1000
    keys = (offset + rows + columns).expand(batch, HEADS, length, DIM).contiguous()
    return DynamicCache(ddp_cache_data=[(keys.clone(), -keys.clone()) for _ in range(LAYERS)])


def column_ids(cache: DynamicCache, layer: int = 0) -> torch.Tensor:
    """``(B, T)`` the numbers stored in each row's columns (checked identical across heads/channels)."""
    keys, values = cache.layers[layer].keys, cache.layers[layer].values
    assert torch.equal(keys, -values)
    assert torch.equal(keys, keys[:, :1, :, :1].expand_as(keys))
    return keys[:, 0, :, 0]


def test_length_and_crop():
    cache = numbered_cache(2, 10)
    assert cache_length(cache) == 10
    cache_crop(cache, 6)
    assert cache_length(cache) == 6
    assert column_ids(cache)[1].tolist() == [1000 + i for i in range(6)]
    cache_crop(cache, 6)  # no-op
    with pytest.raises(ValueError):
        cache_crop(cache, 7)


def test_select_gathers_per_row_in_every_layer():
    cache = numbered_cache(2, 8)
    index = torch.tensor([[0, 1, 2, 5, 7], [0, 3, 4, 4, 6]])
    assert cache_select(cache, index) is cache
    assert cache_length(cache) == 5
    for layer in range(LAYERS):
        assert column_ids(cache, layer).tolist() == [[0, 1, 2, 5, 7], [1000, 1003, 1004, 1004, 1006]]


def test_select_rejects_wrong_batch():
    with pytest.raises(ValueError):
        cache_select(numbered_cache(2, 4), torch.tensor([[0, 1]]))


def test_merge_left_pads_and_keeps_inputs():
    short, long = numbered_cache(1, 3, offset=100), numbered_cache(2, 5, offset=500)
    merged, pad_counts = merge_caches_left_padded([short, long])
    assert pad_counts.tolist() == [2, 0, 0]
    assert cache_length(merged) == 5
    for layer in range(LAYERS):
        ids = column_ids(merged, layer)
        assert ids[0].tolist() == [0, 0, 100, 101, 102]
        assert ids[1].tolist() == [500 + i for i in range(5)]
        assert ids[2].tolist() == [1500 + i for i in range(5)]
    assert cache_length(short) == 3 and column_ids(short).tolist() == [[100, 101, 102]]
    # The merged cache is an ordinary DynamicCache: it grows and crops like one.
    cache_crop(merged, 4)
    assert cache_length(merged) == 4


def test_causal_allowed_blocks_padding_and_future():
    allowed = causal_allowed(torch.tensor([2, 0]), cache_columns=3, q=2)
    assert allowed.shape == (2, 2, 5)
    assert allowed[0].tolist() == [[False, False, True, True, False], [False, False, True, True, True]]
    assert allowed[1].tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_additive_mask_values():
    allowed = torch.tensor([[[True, False]]])
    mask = additive_mask(allowed, torch.bfloat16)
    assert mask.shape == (1, 1, 1, 2) and mask.dtype == torch.bfloat16
    assert mask[0, 0, 0, 0] == 0 and mask[0, 0, 0, 1] == torch.finfo(torch.bfloat16).min


def test_concat_rows_left_pads_the_narrower_batch():
    from core.targets.kv import concat_rows

    a = numbered_cache(batch=2, length=3)
    b = numbered_cache(batch=1, length=5, offset=0.5)
    va = torch.tensor([[True, True, True], [False, True, True]])
    vb = torch.ones(1, 5, dtype=torch.bool)
    cache, valid = concat_rows(a, va, b, vb)
    assert valid.tolist() == [[False, False, True, True, True], [False, False, False, True, True],
                              [True] * 5]
    for layer in range(LAYERS):
        assert column_ids(cache, layer).tolist() == [
            [0, 0, 0, 1, 2], [0, 0, 1000, 1001, 1002], [0.5, 1.5, 2.5, 3.5, 4.5]]


def test_tree_pass_mask_is_the_additive_mask_of_cache_and_trees():
    from core.speculative.tree import ancestor_masks, build_tree
    from core.targets.kv import additive_mask, tree_pass_mask

    valid = torch.tensor([[True, False, True, True], [False, True, True, False]])
    tree = build_tree(4, [([5, 6], None), ([5, 8, 9], None)])
    trees = [ancestor_masks([tree], len(tree))[0], torch.ones(1, 1, dtype=torch.bool)]
    q = 5
    among = torch.eye(q, dtype=torch.bool).repeat(2, 1, 1)
    among[0] = trees[0]
    among[1, :1, :1] = trees[1]
    allowed = torch.cat([valid[:, None, :].expand(2, q, 4), among], dim=2)
    for dtype in (torch.float32, torch.bfloat16):
        assert torch.equal(tree_pass_mask(valid, among, dtype), additive_mask(allowed, dtype))
