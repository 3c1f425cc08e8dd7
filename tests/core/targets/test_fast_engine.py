"""The fast engine (a static cache, fixed pass widths, compiled passes) gives the eager engine's
greedy output token for token, on every family, whatever the drafts.

The lossless matrix runs the static cache and the widths uncompiled (``FastPasses(compiled=False)``):
the cache's writes, moves and mask are what can lose a token, and compiling each family would take
minutes. One test compiles (one family, two widths) and checks that a page compiles nothing more.
"""

from __future__ import annotations

import random

import pytest
import torch

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.base import Region
from core.engine import Engine, EngineConfig
from core.speculative.proposal_config import ProposalConfig
from core.targets.fast_pass import FastPasses, fast_passes_of
from core.targets.static_kv import StaticPageCache
from tests.core.lined_page import lined_page_image

ARCHS = ["qwen2_5_vl", "hunyuan_vl", "qwen3_vl", "paddleocr_vl", "glm_ocr"]
MAX_NEW = 120
PAGE_W, PAGE_H = 300.0, 390.0
WIDTHS = (1, 16, 64, 128)


def _run(target, image, mode, regions, **kw):
    engine = Engine(EngineConfig(mode=mode, max_new_tokens=MAX_NEW, **kw), target=target)
    return engine.convert_image(image, regions, PAGE_W, PAGE_H)


def _regions(target, tokens: list[int], kind: str) -> list[Region]:
    """Four regions down the page whose drafts are ``tokens`` in four parts: ``good`` as they are,
    ``partly-wrong`` with one token in seven replaced, ``useless`` unrelated text."""
    rng = random.Random(3)
    step = max(1, -(-len(tokens) // 4))
    chunks = [tokens[i * step:(i + 1) * step] for i in range(4)]
    if kind == "partly-wrong":
        vocab = len(target.tokenizer) - 64
        chunks = [[rng.randrange(vocab) if rng.random() < 0.15 else t for t in c] for c in chunks]
    texts = [target.decode(c) for c in chunks]
    if kind == "useless":
        texts = ["Quarterly revenue grew by 12 percent."] * 4
    return [Region("text", (10, 10 + 90 * i, 290, 90 + 90 * i), text, "test") for i, text in enumerate(texts)]


def _reference(target, image, regions):
    """Eager ar's output: of the page (page-level families), of the same regions' crops (element-level
    families, which read a page region by region, one region a batch so the fast engine takes each)."""
    if target.profile.element_level:
        return _run(target, image, "ar", regions, stage1_batch=1)
    return _run(target, image, "ar", [])


@pytest.fixture
def with_fast_engine(monkeypatch):
    """``with_fast_engine(target, capacity)``: the target decodes on an uncompiled fast engine for
    this test (the session's targets are shared)."""

    def install(target, capacity: int = 4096, widths=WIDTHS, full_length: bool = False):
        fast = FastPasses(target, capacity, widths, compiled=False, full_length=full_length)
        monkeypatch.setitem(vars(target), "fast_passes", fast)
        return fast

    return install


@pytest.mark.parametrize("arch", ARCHS)
def test_fast_engine_is_lossless_with_good_partly_wrong_and_useless_drafts(arch, tiny_target, with_fast_engine):
    target = tiny_target(arch)
    image = lined_page_image()
    element_level = target.profile.element_level
    kw = {"stage1_batch": 1} if element_level else {}
    ar = _reference(target, image, _regions(target, [], "useless"))
    assert len(set(ar.output_tokens)) > 30, "degenerate model: a lossless test would prove nothing"
    references = {kind: _reference(target, image, _regions(target, ar.output_tokens, kind))
                  for kind in ("good", "partly-wrong", "useless")} if element_level else {}
    fast = with_fast_engine(target)
    if not element_level:
        assert _run(target, image, "ar", []).output_tokens == ar.output_tokens
        assert fast.shapes == {1}
    for kind in ("good", "partly-wrong", "useless"):
        regions = _regions(target, ar.output_tokens, kind)
        expected = references.get(kind, ar)
        result = _run(target, image, "page", regions, **kw)
        assert result.output_tokens == expected.output_tokens, kind
        assert result.markdown == expected.markdown, kind
    assert len(fast.shapes) > 1 and fast.shapes <= set(WIDTHS)  # trees padded to the fixed widths


@pytest.mark.parametrize("arch", ARCHS[:3])
def test_hsd_stage_1_rows_take_the_page_to_the_eager_engine_losslessly(arch, tiny_target, with_fast_engine):
    target = tiny_target(arch)
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    with_fast_engine(target)
    for kind in ("good", "partly-wrong"):
        assert _run(target, image, "hsd", _regions(target, ar.output_tokens, kind)).output_tokens == ar.output_tokens


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "hunyuan_vl"])
def test_a_page_reaching_the_static_caches_end_goes_on_eagerly(arch, tiny_target, with_fast_engine):
    target = tiny_target(arch)
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    prompt = target.prefill(image).length
    regions = _regions(target, ar.output_tokens, "partly-wrong")
    for room in (MAX_NEW // 2, 130, 129):  # mid-page; the widest width's last fit and first miss
        fast = with_fast_engine(target, capacity=prompt + room)
        assert _run(target, image, "page", regions).output_tokens == ar.output_tokens, room
        assert fast.cache.length <= fast.cache.capacity


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "hunyuan_vl"])
def test_passes_over_the_whole_buffer_see_only_the_cached_tokens(arch, tiny_target, with_fast_engine):
    """A CUDA-graph pass attends over every column of the buffer: what an earlier page or a rejected
    node left there must stay blocked."""
    target = tiny_target(arch)
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    with_fast_engine(target, capacity=1024, full_length=True)
    for kind in ("partly-wrong", "good"):
        assert _run(target, image, "page", _regions(target, ar.output_tokens, kind)).output_tokens == ar.output_tokens


def test_a_resumed_document_on_the_fast_engine_drafts_as_an_uninterrupted_one(tiny_target, with_fast_engine):
    from core.results import PageResult

    target = tiny_target("qwen2_5_vl")
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    with_fast_engine(target)
    config = EngineConfig(mode="hsd", max_new_tokens=MAX_NEW, proposal=ProposalConfig(cost_aware=False))
    earlier = Engine(config, target=target)
    earlier.start_document("/docs/report.pdf")
    first = earlier.convert_image(image, [], PAGE_W, PAGE_H, 1)
    uninterrupted = earlier.convert_image(image, [], PAGE_W, PAGE_H, 2)
    resumed = Engine(config, target=target)
    resumed.remember_pages("/docs/report.pdf", [PageResult.from_dict(first.to_dict())])
    second = resumed.convert_image(image, [], PAGE_W, PAGE_H, 2)
    assert first.output_tokens == uninterrupted.output_tokens == second.output_tokens == ar.output_tokens
    assert second.stats.forward_passes == uninterrupted.stats.forward_passes < first.stats.forward_passes


# --- the static cache itself ---------------------------------------------------------------------


def _numbered_cache(length: int) -> StaticPageCache:
    cache = StaticPageCache(layers=2, kv_heads=1, head_dim=2, capacity=32, max_width=8, dtype=torch.float32,
                            device="cpu")
    for buffer in cache.keys + cache.values:
        buffer[..., :, :] = torch.arange(32, dtype=torch.float32)[:, None]  # each column holds its number
    cache.length = length
    cache.mask[..., :length] = 0
    return cache


def test_accept_moves_only_the_accepted_path_and_leaves_no_hole():
    cache = _numbered_cache(10)
    buffers = [b.data_ptr() for b in cache.keys + cache.values]
    cache.accept([0, 2, 5])  # a tree written at columns 10..17: root, then nodes 2 and 5
    assert cache.length == 13
    assert cache.keys[1][0, 0, :13, 0].tolist() == list(range(10)) + [10, 12, 15]
    assert cache.values[0][0, 0, 10:13, 1].tolist() == [10, 12, 15]
    assert [b.data_ptr() for b in cache.keys + cache.values] == buffers  # written in place, never replaced
    assert bool((cache.mask[..., :13] == 0).all())


def test_a_passs_mask_is_the_cached_columns_and_the_trees_block():
    cache = _numbered_cache(5)
    block = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)  # root with two children
    mask = cache.pass_mask(block)
    assert mask.shape == (1, 1, 3, 8)
    assert bool((mask[0, 0, :, :5] == 0).all())
    assert ((mask[0, 0, :, 5:] == 0) == block).all()
    packed = cache.pass_mask(block, packed=True)  # the same mask, its rows one after another
    assert packed.is_contiguous() and torch.equal(packed, mask)
    # After the root and its second child were accepted, the next pass sees them and nothing else.
    cache.accept([0, 2])
    mask = cache.pass_mask(torch.ones(1, 1, dtype=torch.bool))
    assert mask.shape == (1, 1, 1, 8) and bool((mask == 0).all())


def test_the_eager_cache_it_hands_on_holds_exactly_the_cached_tokens():
    cache = _numbered_cache(7)
    dynamic, valid = cache.to_dynamic()
    assert valid.shape == (1, 7) and bool(valid.all())
    assert dynamic.layers[1].keys[0, 0, :, 0].tolist() == list(range(7))


def test_targets_without_a_fast_engine_decode_eagerly(tiny_target):
    assert fast_passes_of(tiny_target("qwen2_5_vl")) is None
    assert fast_passes_of(ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))) is None


# --- compiled ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compiled_passes_are_lossless_and_compile_nothing_after_warm_up(tiny_target, monkeypatch):
    """One compile serves a page's single row, a page read again, and Stage 1's batched rows (the
    slots growing from two to three): every shape was compiled at load."""
    from torch._dynamo.utils import counters

    target = tiny_target("qwen2_5_vl")
    image = lined_page_image()
    ar = _run(target, image, "ar", [])
    fast = FastPasses(target, 2048, (1, 16), compiled=True)
    monkeypatch.setitem(vars(target), "fast_passes", fast)
    assert fast.warm_up() > 0
    graphs = counters["stats"]["unique_graphs"]
    short = ProposalConfig(max_chain=8, max_budget=8, max_nodes=16)
    result = _run(target, image, "page", _regions(target, ar.output_tokens, "partly-wrong"), proposal=short)
    assert result.output_tokens == ar.output_tokens
    assert _run(target, image, "ar", []).output_tokens == ar.output_tokens
    assert fast.shapes == {1, 16}
    assert counters["stats"]["unique_graphs"] == graphs  # two pages at every cached length: no new graph
    unpriced = ProposalConfig(max_chain=8, max_budget=8, max_nodes=16, cost_aware=False)
    rows = _run(target, image, "hsd", _regions(target, ar.output_tokens, "partly-wrong"), stage1_batch=3,
                proposal=unpriced)
    assert rows.output_tokens == ar.output_tokens
    assert fast.batched_passes > 0
    assert counters["stats"]["unique_graphs"] == graphs  # one row and several: compiled at load


def _chain_of(size: int, rng: random.Random):
    from core.speculative.tree import DraftTree

    return DraftTree([rng.randrange(2, 4096) for _ in range(size)], list(range(-1, size - 1)), list(range(size)),
                     [None] * size)


@pytest.mark.slow
def test_a_compiled_pass_writes_the_static_cache_in_place(tmp_path):
    """The compiled pass writes each layer's new keys and values into its buffer where they go: no
    kernel of its graph runs over a whole slot of a buffer (a graph that copied each buffer out and
    back, every slot's every column at every layer, cost a 24-layer CPU pass half its time)."""
    import re

    from torch._inductor.utils import run_and_get_code

    from tools.bench.engine_cost import thin_target

    target = thin_target("hunyuan_vl", layers=2, folder=str(tmp_path))
    fast, expected = (FastPasses(target, 4096, (16,), compiled=compiled) for compiled in (True, False))
    for engine in (fast, expected):
        engine.cache.length = 100
        engine.cache.mask[..., :100] = 0
    rng = random.Random(0)
    tree = _chain_of(12, rng)
    ids, graphs = run_and_get_code(fast.forward, tree, 0, True)  # compiles
    assert ids.tolist() == expected.forward(tree, 0, greedy=True).tolist()
    _, kv_heads, capacity, head_dim = fast.cache.keys[0].shape
    slot = kv_heads * capacity * head_dim  # elements of one slot of one buffer
    assert graphs and not any(re.search(rf"<static_cast<int64_t>\({slot}L", code) for code in graphs)
    assert not any("assert_size_stride(" in code for code in graphs)  # no size checks of every weight a call
    assert torch._inductor.config.size_asserts  # the options were the pass's own, not the compiler's settings
    for ours, theirs in zip(fast.cache.keys + fast.cache.values, expected.cache.keys + expected.cache.values):
        assert torch.allclose(ours[0, :, 100:112], theirs[0, :, 100:112], atol=1e-5)


def test_the_compile_options_keep_the_guards_on_a_passs_inputs_and_cuda_graphs_where_full_length():
    from core.targets.fast_pass import compile_options

    for full_length in (False, True):
        options = compile_options(full_length)
        assert options["size_asserts"] is False
        assert options["guard_filter_fn"] is torch.compiler.skip_guard_on_all_nn_modules_unsafe
        assert options.get("triton.cudagraphs", False) is full_length  # reduce-overhead's CUDA graphs


# --- choosing the engine -------------------------------------------------------------------------


def test_the_engine_is_chosen_by_name_and_an_unknown_one_is_refused(tiny_target_dir):
    import argparse

    from core import tuning
    from core.commands.arguments import add_engine_argument
    from core.errors import HSDError, ModelLoadError
    from core.targets.loader import load_target

    parser = argparse.ArgumentParser()
    add_engine_argument(parser)
    assert parser.parse_args([]).engine == tuning.DEFAULT_ENGINE
    assert parser.parse_args(["--engine", "fast"]).engine == "fast"
    with pytest.raises(SystemExit):
        parser.parse_args(["--engine", "turbo"])
    assert EngineConfig(engine="fast").engine == "fast"
    with pytest.raises(HSDError, match="engine"):
        EngineConfig(engine="turbo")
    with pytest.raises(ModelLoadError, match="engine"):
        load_target(str(tiny_target_dir("qwen2_5_vl")), device="cpu", engine="turbo")

