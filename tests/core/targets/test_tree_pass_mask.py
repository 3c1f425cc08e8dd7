"""A pass's additive mask, written by numpy on a CPU: the same bits as the boolean mask's ``additive_mask``."""

import pytest
import torch

from core.speculative.tree import ancestor_masks, build_tree
from core.targets.kv import additive_mask, tree_pass_mask


def _reference(valid: torch.Tensor, among: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    B, T = valid.shape
    q = among.shape[1]
    return additive_mask(torch.cat([valid[:, None, :].expand(B, q, T), among], dim=2), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_tree_pass_mask_is_the_additive_mask_in_every_float_format(dtype):
    g = torch.Generator().manual_seed(3)
    trees = [build_tree(1, [([2, 3, 4], None), ([2, 5], None)]), build_tree(7, [([8], None)]),
             build_tree(9, [])]
    q = max(len(t) for t in trees)
    among = ancestor_masks(trees, q)
    for columns in (0, 1, 37):
        valid = torch.rand(len(trees), columns, generator=g) > 0.4
        want = _reference(valid, among, dtype)
        got = tree_pass_mask(valid, among, dtype)
        assert got.dtype == dtype and got.shape == want.shape == (3, 1, q, columns + q)
        assert torch.equal(got, want)
        assert got[0, 0, 0, columns:].tolist()[1:] == [torch.finfo(dtype).min] * (q - 1)  # a root sees no draft


def test_tree_pass_mask_of_a_wide_batch_blocks_each_row_s_holes():
    valid = torch.ones(17, 900, dtype=torch.bool)
    valid[3, 100:400] = False
    among = ancestor_masks([build_tree(1, [(list(range(2, 130)), None)])] * 17, 128)
    mask = tree_pass_mask(valid, among, torch.bfloat16)
    assert torch.equal(mask, _reference(valid, among, torch.bfloat16))
    assert (mask[3, 0, :, 100:400] == torch.finfo(torch.bfloat16).min).all() and (mask[2, 0, :, :900] == 0).all()
