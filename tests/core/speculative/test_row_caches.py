"""The eager rows' pass mask: numpy's write on a CPU is the additive mask ``tree_pass_mask`` writes."""

import pytest
import torch

from core.speculative.row_caches import pass_mask
from core.speculative.tree import ancestor_masks, build_tree
from core.targets.kv import tree_pass_mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_pass_mask_is_tree_pass_mask_in_every_float_format(dtype):
    g = torch.Generator().manual_seed(3)
    trees = [build_tree(1, [([2, 3, 4], None), ([2, 5], None)]), build_tree(7, [([8], None)]),
             build_tree(9, [])]
    q = max(len(t) for t in trees)
    among = ancestor_masks(trees, q)
    for columns in (0, 1, 37):
        valid = torch.rand(len(trees), columns, generator=g) > 0.4
        want = tree_pass_mask(valid, among, dtype)
        got = pass_mask(valid, among, dtype)
        assert got.dtype == dtype and got.shape == want.shape == (3, 1, q, columns + q)
        assert torch.equal(got, want)
        assert got[0, 0, 0, columns:].tolist()[1:] == [torch.finfo(dtype).min] * (q - 1)  # a root sees no draft


def test_pass_mask_of_a_wide_batch_blocks_each_row_s_holes():
    valid = torch.ones(17, 900, dtype=torch.bool)
    valid[3, 100:400] = False
    among = ancestor_masks([build_tree(1, [(list(range(2, 130)), None)])] * 17, 128)
    mask = pass_mask(valid, among, torch.bfloat16)
    assert torch.equal(mask, tree_pass_mask(valid, among, torch.bfloat16))
    assert (mask[3, 0, :, 100:400] == torch.finfo(torch.bfloat16).min).all() and (mask[2, 0, :, :900] == 0).all()
