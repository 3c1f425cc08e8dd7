"""The fast engine runs a page in a handful of shapes and compiles each once: its layers as one
compiled region, its widths fixed, its cached length dynamic. Only the test named so compiles."""

from __future__ import annotations

import random

import pytest
import torch

from core import tuning
from core.speculative.tree import DraftTree
from core.targets.fast_pass import DecoderLayerRegion, FastPasses
from tools.bench.engine_cost import page_shapes, thin_target

ISSUE_SHAPES = 6  # what a page of 2,000 tokens may compile at most


@pytest.fixture(scope="module")
def thin(tmp_path_factory):
    return thin_target("hunyuan_vl", layers=2, folder=str(tmp_path_factory.mktemp("thin")))


def _chain(size: int, rng: random.Random) -> DraftTree:
    return DraftTree([rng.randrange(2, 4096) for _ in range(size)], list(range(-1, size - 1)), list(range(size)),
                     [None] * size)


def test_a_page_of_2000_tokens_runs_at_most_the_fixed_widths(thin):
    fast = FastPasses(thin, 2200, tuning.FAST_PASS_WIDTHS, compiled=False)
    passes, _ = page_shapes(fast, 2000)
    assert passes > len(tuning.FAST_PASS_WIDTHS)  # trees of many sizes, not one per width
    assert fast.shapes <= set(tuning.FAST_PASS_WIDTHS)
    assert len(tuning.FAST_PASS_WIDTHS) <= ISSUE_SHAPES
    assert tuning.FAST_PASS_WIDTHS[-1] >= tuning.MAX_NODES  # every tree fits one width


def test_the_layer_regions_give_the_layers_output_and_leave_the_eager_model_as_it_was(thin):
    plain = FastPasses(thin, 600, (1, 16), compiled=False)
    regions = FastPasses(thin, 600, (1, 16), compiled=False)
    regions._regions = torch.nn.ModuleList(DecoderLayerRegion(layer) for layer in regions._text.layers)
    layers = regions._text.layers
    rng = random.Random(0)
    for fast in (plain, regions):
        for buffer in fast.cache.keys + fast.cache.values:
            buffer.copy_(torch.arange(buffer.numel(), dtype=buffer.dtype).view_as(buffer).sin())
        fast.cache.mask[..., :300] = 0
        fast.cache.length = 300
    for size in (1, 9, 16):
        tree = _chain(size, rng)
        expected = plain.forward(tree, 0, greedy=False)
        assert torch.equal(regions.forward(tree, 0, greedy=False), expected)
        assert regions._text.layers is layers  # swapped in for the pass only
        assert thin.model.config.get_text_config()._attn_implementation == "sdpa"  # the eager engine's, back
        plain.accept([0])
        regions.accept([0])


@pytest.mark.slow
def test_compiling_makes_at_most_six_graphs_and_a_2000_token_page_compiles_none(thin):
    from torch._dynamo.utils import counters

    before = counters["stats"]["unique_graphs"]
    fast = FastPasses(thin, 2200, tuning.FAST_PASS_WIDTHS, compiled=True)
    assert fast.warm_up() > 0
    at_load = counters["stats"]["unique_graphs"] - before
    assert 1 <= at_load <= ISSUE_SHAPES
    passes, graphs = page_shapes(fast, 2000)
    assert graphs == 0, f"a page of {passes} passes compiled {graphs} more graphs"
    assert fast.shapes <= set(tuning.FAST_PASS_WIDTHS)
