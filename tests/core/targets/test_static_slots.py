"""The fast engine's row slots and memory: sized at load by what the device can give (one slot, or
the eager engine with a warning, where that is all there is room for), and shrunk between decodes
once recent decodes left grown slots unused, the output the eager engine's throughout.

The device's free memory is injected (``static_kv.device_free_bytes``, ``StaticPageCache.free_bytes``):
the figures decide, not the machine the tests run on. Only the tests named so compile.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from core import tuning
from core.errors import HSDWarning
from core.notices import warnings_to
from core.speculative.proposal_config import ProposalConfig
from core.targets import static_kv
from core.targets.fast_pass import FastPasses, install_fast_engine
from core.targets.static_kv import SlotsDoNotFit, StaticPageCache, slot_bytes
from tests.core.lined_page import lined_page_image
from tests.core.targets.test_fast_engine import WIDTHS, _regions, _run

UNPRICED = ProposalConfig(cost_aware=False)  # regions join at once, not once the CPU's passes are priced
WINDOW = tuning.FAST_SLOT_SHRINK_DECODES


def _held(cache: StaticPageCache) -> int:
    """Bytes the cache's buffers hold now."""
    return sum(b.numel() * b.element_size() for b in cache.keys + cache.values + [cache.mask, cache.packed])


def _cache(rows: int = 1) -> StaticPageCache:
    return StaticPageCache(layers=2, kv_heads=1, head_dim=2, capacity=32, max_width=8, dtype=torch.float32,
                           device="cpu", rows=rows, free_bytes=lambda: 1 << 40)


def _slot_bytes(model, capacity: int, max_width: int, dtype: torch.dtype) -> int:
    """Bytes of one slot of ``model``'s cache, by ``slot_bytes`` of its text configuration."""
    text = model.config.get_text_config()
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return slot_bytes((text.num_hidden_layers, text.num_key_value_heads, head_dim), capacity, max_width, dtype)


def _decode(cache: StaticPageCache, count: int) -> list[int]:
    """A decode that held ``count`` slots and gave them back."""
    slots = cache.take(count)
    cache.release(slots)
    cache.decode_ended()
    return slots


# --- shrinking -------------------------------------------------------------------------------------


def test_grown_slots_shrink_after_decodes_that_left_them_unused_and_not_before():
    cache = _cache(rows=1)
    _decode(cache, 4)
    assert cache.rows == 4
    for _ in range(WINDOW - 1):
        _decode(cache, 2)
        assert cache.rows == 4  # not yet: a few decodes with fewer rows may be followed by many again
    _decode(cache, 1)
    assert cache.rows == 2  # the most the last decodes held, not fewer
    assert _held(cache) == cache.bytes_for(2)  # the other slots' buffers are gone
    assert cache.keys[0].shape[0] == cache.mask.shape[0] == 2 and len(cache.taken) == len(cache.lengths) == 2
    for _ in range(WINDOW):
        _decode(cache, 1)
    assert cache.rows == 1


def test_a_decode_that_needed_the_slots_keeps_them():
    cache = _cache(rows=1)
    _decode(cache, 3)
    for i in range(3 * WINDOW):
        _decode(cache, 3 if i % WINDOW == WINDOW - 1 else 1)  # many rows again before every shrink was due
        assert cache.rows == 3


def test_the_slots_never_shrink_below_those_at_load_nor_a_slot_still_taken():
    cache = _cache(rows=2)
    _decode(cache, 5)
    held = cache.take(4)  # a decode beside the ones ending (its rows keep their slots)
    cache.lengths[3] = 3
    cache.keys[0][3, 0, :3, 0] = torch.tensor([7.0, 8.0, 9.0])
    cache.mask[3, ..., :3] = 0
    cache.release(held[:3])
    for _ in range(WINDOW):
        _decode(cache, 1)
    assert cache.rows == 4 and cache.taken == [False, False, False, True]
    assert cache.keys[0][3, 0, :3, 0].tolist() == [7.0, 8.0, 9.0]  # its row moved along
    assert bool((cache.mask[3, ..., :3] == 0).all()) and bool((cache.mask[3, ..., 3:] == cache.blocked).all())
    cache.release([3])
    cache.decode_ended()  # that decode's end
    for _ in range(WINDOW):
        _decode(cache, 1)
    assert cache.rows == 2  # the slots at load: a compiled pass's graphs were made for them


def test_a_shrunk_cache_grows_again_and_its_slots_are_clean():
    cache = _cache(rows=1)
    _decode(cache, 3)
    for _ in range(WINDOW):
        _decode(cache, 1)
    assert cache.rows == 1
    assert cache.take(3) == [0, 1, 2] and cache.rows == 3
    assert cache.lengths == [0, 0, 0] and bool((cache.mask == cache.blocked).all())


def test_a_shrink_gives_the_memory_back_to_the_device_and_nothing_else_does(monkeypatch):
    given_back = []
    monkeypatch.setattr(static_kv, "give_back_cached_memory", given_back.append)
    cache = _cache(rows=1)
    _decode(cache, 3)  # grown
    for _ in range(WINDOW - 1):
        _decode(cache, 1)
    assert given_back == []  # grown and kept: nothing freed
    _decode(cache, 1)
    assert cache.rows == 1 and given_back == ["cpu"]  # shrunk: once, with the cache's device


@pytest.mark.parametrize(("device", "empties"), [("cuda", 1), ("cuda:1", 1), (torch.device("cuda", 0), 1),
                                                 ("cpu", 0), ("mps", 0)])
def test_only_cuda_has_its_allocators_freed_blocks_emptied(device, empties, monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append(1))
    static_kv.give_back_cached_memory(device)
    assert len(calls) == empties


# --- sizing at load --------------------------------------------------------------------------------


def test_the_slots_at_load_are_what_fits_and_fewer_than_asked_never_grow(tiny_target):
    model = tiny_target("qwen2_5_vl").model
    each = _slot_bytes(model, 512, 16, torch.float32)
    share = tuning.FAST_SLOT_MEMORY_SHARE

    def sized(free: int) -> StaticPageCache:
        return StaticPageCache.for_model(model, 512, 16, torch.float32, "cpu", rows=2, free_bytes=lambda: free)

    both = sized(int(2 * each / share) + 1)
    assert both.rows == 2 and both.bytes_for(1) == each and _held(both) == 2 * each and both.most_rows is None
    one = sized(int(2 * each / share) - 1)
    assert one.rows == 1 and one.most_rows == 1
    one.free_bytes = lambda: 1 << 50
    assert one.can_take(1) and not one.can_take(2)  # the device had no room for a second: never grown
    with pytest.raises(SlotsDoNotFit, match="eager engine"):
        sized(int(each / share) - 1)


def test_a_model_whose_cache_does_not_fit_decodes_eagerly_with_one_notice(tiny_target_dir, tiny_target,
                                                                         monkeypatch):
    from core.targets.loader import load_target

    monkeypatch.setattr(static_kv, "device_free_bytes", lambda device: 1 << 20)  # 1 MiB: not one row
    notices = []
    with warnings_to(notices.append):
        target = load_target(str(tiny_target_dir("qwen2_5_vl")), device="cpu", engine="fast")
    assert target.fast_passes is None
    assert len(notices) == 1 and "\n" not in notices[0] and "eager engine" in notices[0], notices
    image = lined_page_image()
    expected = _run(tiny_target("qwen2_5_vl"), image, "ar", [])
    assert _run(target, image, "ar", []).output_tokens == expected.output_tokens


def test_installing_where_no_slot_fits_warns_and_leaves_the_target_eager(tiny_target, monkeypatch):
    target = tiny_target("qwen2_5_vl")
    monkeypatch.setitem(vars(target), "fast_passes", None)
    monkeypatch.setattr(static_kv, "device_free_bytes", lambda device: 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert install_fast_engine(target, compiled=False, capacity=512, widths=WIDTHS) is None
    assert [w.category for w in caught] == [HSDWarning]
    assert vars(target)["fast_passes"] is None


# --- pages -----------------------------------------------------------------------------------------


@pytest.fixture
def fast_engine(monkeypatch):
    """``fast_engine(target, **kw)``: the target decodes on a fast engine for this test; returns it
    and the list every eager pass (``Target.forward``) is recorded in."""

    def install(target, capacity: int = 4096, compiled: bool = False, **kw):
        fast = FastPasses(target, capacity, kw.pop("widths", WIDTHS), compiled=compiled, **kw)
        monkeypatch.setitem(vars(target), "fast_passes", fast)
        eager = []
        forward = target.forward
        monkeypatch.setitem(vars(target), "forward", lambda *a, **k: eager.append(a[0].shape) or forward(*a, **k))
        return fast, eager

    return install


def test_pages_after_a_page_of_many_rows_give_its_slots_back_and_stay_lossless(tiny_target, fast_engine):
    """A page with Stage 1's regions beside it grows the slots; the plain pages after it give them
    back once enough of them decoded in fewer; a second such page grows them again. Every page is
    the eager engine's, and no pass left the static cache."""
    target = tiny_target("qwen2_5_vl")
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    regions = _regions(target, ar.output_tokens, "partly-wrong")
    fast, eager = fast_engine(target)
    assert fast.cache.rows == 1
    for _ in range(2):
        rows = _run(target, image, "hsd", regions, stage1_batch=2, proposal=UNPRICED)
        assert rows.output_tokens == ar.output_tokens and rows.markdown == ar.markdown
        grown = fast.cache.rows
        assert grown >= 3 and fast.batched_passes > 0
        sizes = []
        for _ in range(WINDOW):
            page = _run(target, image, "ar", [])
            assert page.output_tokens == ar.output_tokens and page.markdown == ar.markdown
            sizes.append(fast.cache.rows)
        assert sizes == [grown] * (WINDOW - 1) + [1]  # a plain page is one decode of one row
        assert _held(fast.cache) == fast.cache.bytes_for(1)
    assert eager == [] and not any(fast.cache.taken)


# --- compiled --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compiled_slots_shrink_and_grow_again_without_a_new_graph(tiny_target, fast_engine):
    """Compiled: a page of Stage 1's rows grows the slots past the two at load, plain pages shrink
    them back to two, and the next such page grows them again: every pass runs a graph compiled at
    load, and the output is the eager engine's."""
    from torch._dynamo.utils import counters

    target = tiny_target("qwen2_5_vl")
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    regions = _regions(target, ar.output_tokens, "partly-wrong")
    fast, eager = fast_engine(target, 2048, compiled=True, widths=(1, 16))
    assert fast.warm_up() > 0 and fast.cache.rows == 2
    graphs = counters["stats"]["unique_graphs"]
    proposal = ProposalConfig(max_chain=8, max_budget=8, max_nodes=16, cost_aware=False)
    for _ in range(2):
        rows = _run(target, image, "hsd", regions, stage1_batch=3, proposal=proposal)
        assert rows.output_tokens == ar.output_tokens
        assert fast.cache.rows >= 3 and fast.batched_passes > 0
        for _ in range(WINDOW):
            assert _run(target, image, "ar", [], proposal=proposal).output_tokens == ar.output_tokens
        assert fast.cache.rows == 2
        assert _run(target, image, "ar", [], proposal=proposal).output_tokens == ar.output_tokens  # shrunk buffers
        assert counters["stats"]["unique_graphs"] == graphs  # shrunk and grown: the graphs of load
    assert eager == []


@pytest.mark.slow
def test_compiled_with_room_for_one_slot_decodes_rows_eagerly_and_compiles_nothing_more(tiny_target, fast_engine,
                                                                                         monkeypatch):
    """Room for one slot at load: the warm-up compiles one row's graphs only, Stage 1's rows go on
    with the eager engine, and the page is still the eager engine's."""
    from torch._dynamo.utils import counters

    target = tiny_target("qwen2_5_vl")
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    regions = _regions(target, ar.output_tokens, "partly-wrong")
    each = _slot_bytes(target.model, 2048, 16, target.dtype)
    monkeypatch.setattr(static_kv, "device_free_bytes", lambda device: int(1.5 * each / tuning.FAST_SLOT_MEMORY_SHARE))
    fast, eager = fast_engine(target, 2048, compiled=True, widths=(1, 16))
    assert fast.cache.rows == 1
    assert fast.warm_up() > 0
    graphs = counters["stats"]["unique_graphs"]
    proposal = ProposalConfig(max_chain=8, max_budget=8, max_nodes=16, cost_aware=False)
    rows = _run(target, image, "hsd", regions, stage1_batch=3, proposal=proposal)
    assert rows.output_tokens == ar.output_tokens
    assert fast.cache.rows == 1 and fast.batched_passes == 0 and eager  # several rows: the eager engine's
    assert _run(target, image, "ar", [], proposal=proposal).output_tokens == ar.output_tokens
    assert counters["stats"]["unique_graphs"] == graphs


def test_a_run_tells_that_the_fast_engine_did_not_fit_as_a_notice_after_loading(tiny_target_dir, tmp_path,
                                                                               monkeypatch):
    import pymupdf

    from core.drafters.base import DrafterBase
    from core.engine import Engine, EngineConfig
    from core.events import DocumentDone, ModelLoaded, Notice
    from core.run import ConversionRequest, convert_document

    class NoRegions(DrafterBase):
        name = "rapidocr"

        def draft(self, page):
            return []

    doc = pymupdf.open()
    doc.new_page(width=300, height=200)
    pdf = tmp_path / "doc.pdf"
    doc.save(pdf)
    monkeypatch.setattr(static_kv, "device_free_bytes", lambda device: 0)
    config = EngineConfig(model=str(tiny_target_dir("qwen2_5_vl")), device="cpu", engine="fast", mode="ar",
                          max_new_tokens=8, dpi=36, drafter="rapidocr")
    engine = Engine(config, drafter=NoRegions())
    events = list(convert_document(ConversionRequest(pdf, tmp_path / "doc.md", config), engine))
    loaded = next(i for i, e in enumerate(events) if isinstance(e, ModelLoaded))
    assert isinstance(events[loaded + 1], Notice) and "eager engine" in events[loaded + 1].message
    assert events[loaded + 1].page is None
    assert engine.loaded_target.fast_passes is None and isinstance(events[-1], DocumentDone)
