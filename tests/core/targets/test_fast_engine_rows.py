"""Stage 1's batched rows on the fast engine's static cache: a slot per row, each with its own
length and rope delta, rows admitted into free slots mid-decode, finished rows freeing theirs.
Lossless on every family, whatever the drafts, and with no pass handed to the eager engine.

Uncompiled (``FastPasses(compiled=False)``), as the lossless matrix of ``test_fast_engine.py``: the
slots, the per-row writes, moves and masks are what can lose a token. The compiled
engine's Stage 1 rows are checked by the one compiled test of ``test_fast_engine.py``.
"""

from __future__ import annotations

import random

import pytest
import torch

from core import tuning
from core.speculative.proposal_config import ProposalConfig
from core.speculative.tree import DraftTree
from core.targets.fast_pass import FastPasses
from core.targets.static_kv import StaticPageCache
from tests.core.lined_page import lined_page_image
from tests.core.targets.test_fast_engine import ARCHS, MAX_NEW, WIDTHS, _regions, _run

KINDS = ("good", "partly-wrong", "useless")
UNPRICED = ProposalConfig(cost_aware=False)  # regions join at once, not once the CPU's passes are priced


@pytest.fixture
def on_fast_engine(monkeypatch):
    """``on_fast_engine(target, capacity)``: the target decodes on an uncompiled fast engine for this
    test; returns it and the list every eager pass (``Target.forward``) is recorded in."""

    def install(target, capacity: int = 4096):
        fast = FastPasses(target, capacity, WIDTHS, compiled=False)
        monkeypatch.setitem(vars(target), "fast_passes", fast)
        eager = []
        forward = target.forward
        # In the instance's own dict, so the teardown removes it: a restored bound method would stay
        # on the session's shared target and hide every later patch of ``Target.forward``.
        monkeypatch.setitem(vars(target), "forward", lambda *a, **k: eager.append(a[0].shape) or forward(*a, **k))
        taken = []
        take = fast.cache.take
        monkeypatch.setattr(fast.cache, "take", lambda count: taken.append(count) or take(count), raising=False)
        return fast, eager, taken

    return install


@pytest.mark.parametrize("arch", ARCHS)
def test_stage_1_rows_batched_and_admitted_mid_decode_are_lossless_on_the_static_cache(arch, tiny_target,
                                                                                       on_fast_engine):
    """Page-level families: Stage 1's regions decode beside the page, two at a time, admitted as
    slots free up. Element-level families: the page's regions are read four at a time."""
    target = tiny_target(arch)
    image = lined_page_image()
    element_level = target.profile.element_level
    batch = 4 if element_level else 2
    ar = _run(target, image, "ar", _regions(target, [], "useless"), stage1_batch=batch)
    assert len(set(ar.output_tokens)) > 30, "degenerate model: a lossless test would prove nothing"
    references = {kind: _run(target, image, "ar", _regions(target, ar.output_tokens, kind), stage1_batch=batch)
                  for kind in KINDS} if element_level else dict.fromkeys(KINDS, ar)
    fast, eager, taken = on_fast_engine(target)
    for kind in KINDS:
        regions = _regions(target, ar.output_tokens, kind)
        result = _run(target, image, "hsd", regions, stage1_batch=batch, proposal=UNPRICED)
        assert result.output_tokens == references[kind].output_tokens, kind
        assert result.markdown == references[kind].markdown, kind
    assert eager == []  # every pass ran on the static cache, several rows at once included
    assert fast.batched_passes > 0 and fast.shapes <= set(WIDTHS)
    if not element_level:  # more rows came than the slots the page and two regions hold: slots were reused
        assert sum(taken) > fast.cache.rows == 3
    assert not any(fast.cache.taken)  # every page gave its slots back


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl"])
def test_stage_1_alone_reads_each_region_as_the_eager_engine_does(arch, tiny_target, on_fast_engine):
    """The regions baseline (Stage 1's output is the page's): four crops of different prompt
    lengths and rope deltas in one batch, each row's reading the eager engine's."""
    target = tiny_target(arch)
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    references = {kind: _run(target, image, "regions", _regions(target, ar.output_tokens, kind), stage1_batch=4)
                  for kind in KINDS}
    fast, eager, _ = on_fast_engine(target)
    for kind in KINDS:
        result = _run(target, image, "regions", _regions(target, ar.output_tokens, kind), stage1_batch=4)
        assert result.region_outputs == references[kind].region_outputs, kind
        assert result.output_tokens == references[kind].output_tokens, kind
    assert eager == [] and fast.batched_passes > 0


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "hunyuan_vl"])
def test_rows_reaching_the_static_caches_end_go_on_eagerly(arch, tiny_target, on_fast_engine):
    target = tiny_target(arch)
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    prompt = target.prefill(image).length
    regions = _regions(target, ar.output_tokens, "partly-wrong")
    # Room for the page's first trees beside the regions, not for the page's end.
    fast, eager, _ = on_fast_engine(target, capacity=prompt + MAX_NEW + 50)
    result = _run(target, image, "hsd", regions, stage1_batch=2, proposal=UNPRICED)
    assert result.output_tokens == ar.output_tokens
    assert fast.batched_passes > 0 and eager  # several rows on the static cache, then eagerly to the end
    assert not any(fast.cache.taken)


@pytest.mark.parametrize("room", ["enough", "short"])
def test_slots_grow_only_within_the_memory_the_device_can_give(room, tiny_target, on_fast_engine, monkeypatch):
    """The page and two regions need three slots, the engine holds one: where the device can give
    the three slots' buffers they grow and every pass stays static; where it is a byte short the
    regions and the page go on with the eager engine, and the output is still the target's own."""
    target = tiny_target("qwen2_5_vl")
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    regions = _regions(target, ar.output_tokens, "partly-wrong")
    fast, eager, _ = on_fast_engine(target)
    assert fast.cache.rows == 1
    share = tuning.FAST_SLOT_MEMORY_SHARE
    needed = fast.cache.bytes_for(3)
    free = int(needed / share) + 1 if room == "enough" else int(needed / share) - 1
    asked = []
    monkeypatch.setattr(fast.cache, "free_bytes", lambda: asked.append(free) or free)
    result = _run(target, image, "hsd", regions, stage1_batch=2, proposal=UNPRICED)
    assert result.output_tokens == ar.output_tokens and result.markdown == ar.markdown
    assert asked  # the growth was weighed against the device's memory
    if room == "enough":
        assert eager == [] and fast.cache.rows >= 3 and fast.batched_passes > 0
    else:
        assert eager and fast.cache.rows < 3  # never grown past what the device can give
        assert fast.cache.bytes_for(fast.cache.rows) <= share * free
    assert not any(fast.cache.taken)


def test_growth_is_weighed_in_bytes_of_the_grown_buffers_and_free_slots_need_none():
    cache = StaticPageCache(layers=3, kv_heads=2, head_dim=4, capacity=32, max_width=8, dtype=torch.float32,
                            device="cpu", rows=2, free_bytes=lambda: 0)
    held = sum(b.numel() * b.element_size() for b in cache.keys + cache.values + [cache.mask, cache.packed])
    assert cache.bytes_for(2) == held
    assert cache.can_take(2)  # free slots: nothing to allocate, whatever the device has left
    cache.take(1)
    assert not cache.can_take(2)
    cache.free_bytes = lambda: int(cache.bytes_for(3) / tuning.FAST_SLOT_MEMORY_SHARE)
    assert cache.can_take(2) and not cache.can_take(3)


def test_the_free_memory_of_the_cpu_is_its_available_ram():
    import psutil

    from core.targets.static_kv import device_free_bytes

    free = device_free_bytes("cpu")
    assert 0 < free <= psutil.virtual_memory().total


# --- a batched pass --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def thin(tmp_path_factory):
    from tools.bench.engine_cost import thin_target

    return thin_target("qwen2_5_vl", layers=2, folder=str(tmp_path_factory.mktemp("thin")))


def _tree(size: int, rng: random.Random) -> DraftTree:
    """A root with two branches: a node's parent is the one before it, or the root."""
    parents = [-1] + [rng.choice([0, i - 1]) for i in range(1, size)]
    depths = [0] * size
    for i in range(1, size):
        depths[i] = depths[parents[i]] + 1
    return DraftTree([rng.randrange(2, 4096) for _ in range(size)], parents, depths, [None] * size)


def _filled(fast: FastPasses, lengths: list[int], seed: int) -> None:
    """Slots of ``lengths`` cached tokens, each slot's columns different."""
    cache = fast.cache
    cache.release(list(range(cache.rows)))
    cache.take(len(lengths))
    generator = torch.Generator().manual_seed(seed)
    for buffer in cache.keys + cache.values:
        buffer.copy_(torch.randn(buffer.shape, generator=generator))
    for row, n in enumerate(lengths):
        cache.mask[row, ..., :n] = 0
        cache.lengths[row] = n


def test_a_pass_of_several_rows_gives_each_row_its_own_pass(thin):
    """Rows of different lengths, trees and rope deltas, a free slot among them (a pad row), in one
    pass: each row's logits those of its pass alone, and each row keeps its own accepted path."""
    rng = random.Random(1)
    batched = FastPasses(thin, 400, (1, 16), compiled=False)
    alone = FastPasses(thin, 400, (1, 16), compiled=False)
    lengths, deltas = [120, 0, 37], [3, 0, -5]
    _filled(batched, lengths, seed=0)
    batched.cache.release([1])  # slot 1 free: the pass runs it as a pad row
    trees = {0: _tree(11, rng), 2: _tree(5, rng)}
    out = batched.forward_rows([2, 0], [trees[2], trees[0]], [deltas[2], deltas[0]], greedy=False)
    assert out.shape[:2] == (2, 11)
    for b, row in enumerate([2, 0]):
        _filled(alone, [lengths[row]], seed=0)
        for buffer, source in zip(alone.cache.keys + alone.cache.values, batched.cache.keys + batched.cache.values):
            buffer[0, :, :lengths[row]] = source[row, :, :lengths[row]]
        expected = alone.forward(trees[row], deltas[row], greedy=False)
        size = len(trees[row])
        torch.testing.assert_close(out[b, :size], expected[0], rtol=1e-4, atol=1e-4)
    batched.accept_rows([2, 0], [[0, 2], [0, 1, 3]])
    assert batched.cache.lengths == [123, 0, 39]
    for row, path in ((0, [0, 1, 3]), (2, [0, 2])):
        n = lengths[row]
        assert bool((batched.cache.mask[row, ..., :n + len(path)] == 0).all())
        assert bool((batched.cache.mask[row, ..., n + len(path):] == batched.cache.blocked).all())
    assert bool((batched.cache.mask[1] == batched.cache.blocked).all())  # the pad row's block blocked again


# --- the slots -------------------------------------------------------------------------------------


def _numbered(rows: int) -> StaticPageCache:
    cache = StaticPageCache(layers=2, kv_heads=1, head_dim=2, capacity=32, max_width=8, dtype=torch.float32,
                            device="cpu", rows=rows)
    for buffer in cache.keys + cache.values:  # each column holds its number plus 100 times its row's
        buffer.copy_(torch.arange(32, dtype=torch.float32)[None, None, :, None] + 100 * torch.arange(rows)[:, None, None, None])
    return cache


def test_each_row_keeps_its_own_accepted_path_and_leaves_no_hole():
    cache = _numbered(2)
    cache.take(2)
    cache.lengths[:] = [10, 4]
    cache.mask[0, ..., :10] = cache.mask[1, ..., :4] = 0
    cache.written[:] = [8, 8]
    buffers = [b.data_ptr() for b in cache.keys + cache.values]
    cache.accept_rows([0, 1], [[0, 2, 5], [0, 1]])  # row 1: a chain, in place already
    assert cache.lengths == [13, 6]
    assert cache.keys[1][0, 0, :13, 0].tolist() == list(range(10)) + [10, 12, 15]
    assert cache.values[0][1, 0, :6, 1].tolist() == [100 + i for i in range(6)]
    assert [b.data_ptr() for b in cache.keys + cache.values] == buffers  # in place, never replaced
    assert bool((cache.mask[0, ..., :13] == 0).all()) and bool((cache.mask[1, ..., :6] == 0).all())
    assert bool((cache.mask[1, ..., 6:] == cache.blocked).all())


def test_slots_are_taken_lowest_first_freed_and_grown_with_their_rows_kept():
    cache = _numbered(2)
    assert cache.take(2) == [0, 1]
    cache.lengths[:] = [5, 3]
    cache.mask[:, ..., :5] = 0
    cache.release([0])
    assert not cache.taken[0] and cache.lengths[0] == 0 and bool((cache.mask[0] == cache.blocked).all())
    assert cache.take(3) == [0, 2, 3]  # the freed slot first, then the buffers grow by two
    assert cache.rows == 4 and cache.keys[0].shape[0] == 4 and cache.mask.shape[0] == 4
    assert cache.lengths[1] == 3 and cache.keys[1][1, 0, :3, 0].tolist() == [100, 101, 102]  # a row in use moves along


def test_rows_loaded_from_a_left_padded_prefill_and_handed_back_left_padded():
    from transformers import DynamicCache

    keys = torch.arange(2 * 6, dtype=torch.float32).view(2, 1, 6, 1).expand(2, 1, 6, 2).contiguous()
    prefill = DynamicCache(ddp_cache_data=[(keys, keys + 0.5), (keys, keys + 0.5)])
    valid = torch.tensor([[False, False, True, True, True, True], [True] * 6])
    cache = _numbered(1)
    slots = cache.take(2)
    for b, slot in enumerate(slots):
        cache.load(slot, prefill, b, valid[b].nonzero().view(-1))
    assert cache.lengths == [4, 6]
    assert cache.keys[0][0, 0, :4, 0].tolist() == [2, 3, 4, 5]
    assert bool((cache.mask[0, ..., :4] == 0).all()) and bool((cache.mask[0, ..., 4:] == cache.blocked).all())
    dynamic, back = cache.to_dynamic([1, 0])
    assert back.tolist() == [[True] * 6, [False, False, True, True, True, True]]
    assert dynamic.layers[0].keys[1, 0, 2:, 0].tolist() == [2, 3, 4, 5]
    assert dynamic.layers[1].values[0, 0, :, 0].tolist() == [6.5 + i for i in range(6)]
