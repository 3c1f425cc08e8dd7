"""The eager rows' cache (``core.speculative.row_caches.EagerRows``): when its holes are squeezed out."""

import torch
from transformers import DynamicCache

from core.speculative.row_caches import EagerRows


def _rows(valid: list[list[bool]], ratio: float = 0.25) -> EagerRows:
    """Eager rows over a one-layer cache whose column ``t`` of row ``b`` holds ``100 * b + t``."""
    B, T = len(valid), len(valid[0])
    keys = (100 * torch.arange(B).view(B, 1, 1, 1) + torch.arange(T).view(1, 1, T, 1)).float()
    cache = DynamicCache()
    cache.update(keys.clone(), keys.clone(), 0)
    return EagerRows(None, cache, torch.tensor(valid), ratio)


def test_a_short_rows_left_padding_is_no_reason_to_compact():
    # the page row (10 tokens) beside a region's crop (2): 40 % of the cells are padding, none removable
    rows = _rows([[True] * 10, [False] * 8 + [True] * 2])
    keys = rows.cache.layers[0].keys
    rows.tidy()
    assert rows.valid.shape == (2, 10)
    assert rows.cache.layers[0].keys is keys  # not gathered again


def test_holes_that_widen_every_row_are_squeezed_out_keeping_each_rows_order():
    # rejected nodes at columns 4-6 of both rows: 3 of 10 columns removable (> 25 %)
    page = [True] * 4 + [False] * 3 + [True] * 3
    crop = [False] * 4 + [False] * 3 + [True] * 3
    rows = _rows([page, crop])
    rows.tidy()
    assert rows.valid.tolist() == [[True] * 7, [False] * 4 + [True] * 3]
    keys = rows.cache.layers[0].keys[:, 0, :, 0]
    assert keys[0].tolist() == [0, 1, 2, 3, 7, 8, 9]
    assert keys[1, 4:].tolist() == [107, 108, 109]


def test_a_few_holes_stay_until_they_are_worth_a_gather():
    rows = _rows([[True] * 4 + [False] * 2 + [True] * 4])  # 2 of 10 columns removable
    keys = rows.cache.layers[0].keys
    rows.tidy()
    assert rows.valid.shape == (1, 10) and rows.cache.layers[0].keys is keys


def test_a_pass_trims_the_columns_past_the_last_node_any_row_kept():
    """After a pass of width 4, row 0 keeping nodes 0 and 1 and row 1 its root alone, the pass's last
    two columns hold no row's token: they leave the cache (what ``valid`` says, read or not)."""
    rows = _rows([[True] * 3, [False, True, True]])
    rows._q = 4
    B, H, T, D = rows.cache.layers[0].keys.shape
    layer = rows.cache.layers[0]
    layer.keys = torch.cat([layer.keys, torch.zeros(B, H, 4, D)], dim=2)
    layer.values = torch.cat([layer.values, torch.zeros(B, H, 4, D)], dim=2)
    rows.accept(0, [0, 1])
    rows.accept(1, [0])
    rows.end_pass()
    rows.keep([0, 1])
    assert rows.valid.tolist() == [[True] * 5, [False, True, True, True, False]]
    assert rows.cache.layers[0].keys.shape[2] == 5
    rows.keep([1])  # no pass since: read from ``valid`` (row 0 still holds column 4 when it is read)
    assert rows.valid.tolist() == [[False, True, True, True, False]]


def test_the_rows_lengths_that_decide_a_compaction_follow_valid_through_passes_drops_and_newcomers():
    """``tidy`` weighs the holes by each row's length kept beside ``valid``, never read from it."""
    rows = _rows([[True] * 3, [False, True, True]], ratio=0.1)

    def one_pass(paths: list[list[int]], q: int = 4) -> None:
        rows._q = q
        for layer in rows.cache.layers:
            B, H, T, D = layer.keys.shape
            layer.keys = torch.cat([layer.keys, torch.zeros(B, H, q, D)], dim=2)
            layer.values = torch.cat([layer.values, torch.zeros(B, H, q, D)], dim=2)
        for b, path in enumerate(paths):
            rows.accept(b, path)
        rows.end_pass()

    one_pass([[0, 2], [0]])
    rows.keep([0, 1])
    assert rows._lengths == rows.valid.sum(dim=1).tolist() == [5, 3]
    newcomer = DynamicCache()
    newcomer.update(torch.zeros(1, 1, 2, 1), torch.zeros(1, 1, 2, 1), 0)
    rows.join([], newcomer, torch.tensor([[True, True]]))
    one_pass([[0, 1, 3], [0], [0, 1]])
    rows.keep([0, 2])
    assert rows._lengths == rows.valid.sum(dim=1).tolist() == [8, 4]
    rows.tidy()  # 2 of 10 columns are holes (rejected nodes): more than 10 %, squeezed out
    assert rows._lengths == rows.valid.sum(dim=1).tolist() and rows.valid.shape[1] == 8
