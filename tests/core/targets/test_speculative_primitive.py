"""The property HSD's losslessness rests on, for every family: a multi-token masked forward over the
prefill cache gives exactly what step-by-step greedy decoding gives.

Each test builds a tiny random model of the family, loads it through ``load_target`` (the user path),
and checks one part of the primitive. A wrong-position test makes sure the checks can fail.
"""

from __future__ import annotations

import copy

import pytest
import torch

from core.targets.kv import (
    additive_mask, cache_crop, cache_length, cache_select, causal_allowed, merge_caches_left_padded,
)
from tests.core.targets.conftest import page_image

# transformers' GLM-4.6V processor calls np.array(copy=False) on a list (numpy 2 deprecation).
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

FAMILIES = ["qwen2_5_vl", "hunyuan_vl", "qwen3_vl", "paddleocr_vl", "glm_ocr"]
DRAFT_LEN = 20
TOL = dict(atol=1e-4, rtol=1e-4)

PAGE_LINES = ["# Annual Report 2024", "Revenue grew by 12 percent.", "$E = mc^2$", "| a | b |", "Table 1: results"]
OTHER_LINES = ["Section 2", "The committee approved", "the budget on 14 March."]


def chain_forward(target, tokens: list[int], start: int, cache, rope_delta: int, position_shift: int = 0):
    """Forward ``tokens`` as one causal chain at logical positions ``start...``; logits ``(q, V)``."""
    q = len(tokens)
    columns = cache_length(cache)
    mask = additive_mask(causal_allowed(torch.zeros(1, dtype=torch.long), columns, q), target.dtype)
    positions = torch.arange(start, start + q).view(1, q) + position_shift
    return target.forward(torch.tensor([tokens]), positions, mask, cache, torch.tensor([rope_delta]))[0]


def greedy(target, prefill, n: int, cache=None, first: int | None = None, start: int | None = None):
    """``n`` greedy tokens, one forward (q=1) each, on a copy of the prefill cache unless ``cache`` is given."""
    cache = copy.deepcopy(prefill.cache) if cache is None else cache
    token = int(prefill.logits.argmax()) if first is None else first
    position = prefill.length if start is None else start
    out = [token]
    while len(out) < n:
        logits = chain_forward(target, [token], position, cache, prefill.rope_delta)
        token = int(logits[-1].argmax())
        position += 1
        out.append(token)
    return out


@pytest.fixture(scope="module")
def page(tiny_target):
    """Factory: ``page(arch)`` -> (target, prefill of the page, its 40-token greedy continuation)."""
    done = {}

    def get(arch):
        if arch not in done:
            target = tiny_target(arch)
            prefill = target.prefill(page_image(PAGE_LINES))
            done[arch] = (target, prefill, greedy(target, prefill, 40))
        return done[arch]

    return get


@pytest.mark.parametrize("arch", FAMILIES)
def test_greedy_output_is_not_degenerate(page, arch):
    target, prefill, reference = page(arch)
    assert prefill.length == cache_length(prefill.cache) > 10
    assert prefill.logits.shape == (target.vocab_size,) and prefill.logits.dtype == torch.float32
    assert len(set(reference)) >= 15, f"random model collapsed into a loop: {reference}"


@pytest.mark.parametrize("arch", FAMILIES)
def test_one_pass_over_drafts_equals_stepwise_greedy(page, arch):
    target, prefill, reference = page(arch)
    cache = copy.deepcopy(prefill.cache)
    logits = chain_forward(target, reference[:DRAFT_LEN], prefill.length, cache, prefill.rope_delta)
    assert logits.shape == (DRAFT_LEN, target.vocab_size) and logits.dtype == torch.float32
    assert logits.argmax(-1).tolist() == reference[1:DRAFT_LEN + 1]
    assert cache_length(cache) == prefill.length + DRAFT_LEN


@pytest.mark.parametrize("arch", FAMILIES)
def test_wrong_position_changes_the_output(page, arch):
    """Off by one position must flip argmaxes, or the equality tests above could not catch a bug."""
    target, prefill, reference = page(arch)
    cache = copy.deepcopy(prefill.cache)
    logits = chain_forward(target, reference[:DRAFT_LEN], prefill.length, cache, prefill.rope_delta,
                           position_shift=1)
    flipped = sum(a != b for a, b in zip(logits.argmax(-1).tolist(), reference[1:DRAFT_LEN + 1]))
    assert flipped >= 2


@pytest.mark.parametrize("arch", FAMILIES)
def test_crop_after_rejection_then_continue_equals_greedy(page, arch):
    target, prefill, reference = page(arch)
    reject_at = 7
    drafts = list(reference[:DRAFT_LEN])
    drafts[reject_at] = (drafts[reject_at] + 1) % target.vocab_size
    cache = copy.deepcopy(prefill.cache)
    predicted = chain_forward(target, drafts, prefill.length, cache, prefill.rope_delta).argmax(-1).tolist()
    accepted = 1  # drafts[0] is greedy's first token, taken from the prefill logits
    while accepted < DRAFT_LEN and drafts[accepted] == predicted[accepted - 1]:
        accepted += 1
    assert accepted == reject_at
    bonus = predicted[accepted - 1]
    cache_crop(cache, prefill.length + accepted)
    continued = greedy(target, prefill, 15, cache=cache, first=bonus, start=prefill.length + accepted)
    assert drafts[:accepted] + continued == reference[:accepted + 15]


def two_branch_tree(target, prefill, reference, cache):
    """Verify root + branch A (greedy's tokens 1-3) + branch B (wrong tokens) in one pass.

    Nodes are flattened as [root, a1, a2, a3, b1, b2, b3] at depths [0, 1, 2, 3, 1, 2, 3]; each node
    sees the prompt, its ancestors and itself. Returns (tokens, logits (7, V)).
    """
    root, branch_a = reference[0], reference[1:4]
    branch_b = [(t + 17) % target.vocab_size for t in reference[1:4]]
    tokens = [root] + branch_a + branch_b
    depths = [0, 1, 2, 3, 1, 2, 3]
    parents = [-1, 0, 1, 2, 0, 4, 5]
    q, columns = len(tokens), prefill.length
    allowed = torch.zeros(1, q, columns + q, dtype=torch.bool)
    allowed[..., :columns] = True
    for node in range(q):
        ancestor = node
        while ancestor >= 0:
            allowed[0, node, columns + ancestor] = True
            ancestor = parents[ancestor]
    logits = target.forward(
        torch.tensor([tokens]), torch.tensor([depths]) + prefill.length,
        additive_mask(allowed, target.dtype), cache, torch.tensor([prefill.rope_delta]))[0]
    return tokens, logits


@pytest.mark.parametrize("arch", FAMILIES)
def test_tree_mask_branches_equal_their_chains(page, arch):
    """Root + two 3-token branches flattened with an ancestor-only mask == each branch as a chain."""
    target, prefill, reference = page(arch)
    tokens, tree_logits = two_branch_tree(target, prefill, reference, copy.deepcopy(prefill.cache))
    root, branch_a, branch_b = tokens[0], tokens[1:4], tokens[4:]
    for branch, nodes in ((branch_a, [0, 1, 2, 3]), (branch_b, [0, 4, 5, 6])):
        chain = chain_forward(target, [root] + branch, prefill.length, copy.deepcopy(prefill.cache),
                              prefill.rope_delta)
        torch.testing.assert_close(tree_logits[nodes], chain, **TOL)
    assert tree_logits[[0, 1, 2]].argmax(-1).tolist() == reference[1:4]


@pytest.mark.parametrize("arch", FAMILIES)
def test_batch_of_left_padded_caches_equals_rows_alone(page, arch):
    target, page_prefill, page_reference = page(arch)
    region_prefill = target.prefill(page_image(OTHER_LINES, size=(196, 112)), kind="region", label="table")
    assert region_prefill.length != page_prefill.length
    region_reference = greedy(target, region_prefill, 8)
    rows = [(page_prefill, page_reference[:8]), (region_prefill, region_reference)]

    merged, pad_counts = merge_caches_left_padded([copy.deepcopy(p.cache) for p, _ in rows])
    columns = cache_length(merged)
    assert pad_counts.tolist() == [columns - p.length for p, _ in rows]
    q = 8
    mask = additive_mask(causal_allowed(pad_counts, columns, q), target.dtype)
    positions = torch.stack([torch.arange(p.length, p.length + q) for p, _ in rows])
    deltas = torch.tensor([p.rope_delta for p, _ in rows])
    batched = target.forward(torch.tensor([toks for _, toks in rows]), positions, mask, merged, deltas)
    for row, (prefill, toks) in enumerate(rows):
        alone = chain_forward(target, toks, prefill.length, copy.deepcopy(prefill.cache), prefill.rope_delta)
        torch.testing.assert_close(batched[row], alone, **TOL)
        assert alone.argmax(-1).tolist()[:-1] == toks[1:]


@pytest.mark.parametrize("arch", FAMILIES)
def test_greedy_matches_transformers_generate(page, arch):
    """Our positions (logical + rope_delta) agree with the model's own incremental decoding."""
    target, _, reference = page(arch)
    inputs = target.prompt_inputs(page_image(PAGE_LINES))
    with torch.inference_mode():
        generated = target.model.generate(**inputs, max_new_tokens=12, do_sample=False, eos_token_id=None,
                                          pad_token_id=target.pad_token_id)
    new_tokens = generated[0, inputs["input_ids"].shape[1]:].tolist()
    assert new_tokens == reference[:12]


@pytest.mark.parametrize("arch", FAMILIES)
def test_tree_path_selected_from_cache_then_continue_equals_greedy(page, arch):
    """Keep the accepted tree path's cache columns (cache_select), drop the other branch, decode on."""
    target, prefill, reference = page(arch)
    cache = copy.deepcopy(prefill.cache)
    tokens, logits = two_branch_tree(target, prefill, reference, cache)
    path_nodes = [0, 1, 2, 3]  # root and branch A, all equal to greedy's tokens
    assert logits[path_nodes[:-1]].argmax(-1).tolist() == tokens[1:4]
    bonus = int(logits[path_nodes[-1]].argmax())
    keep = list(range(prefill.length)) + [prefill.length + node for node in path_nodes]
    cache_select(cache, torch.tensor([keep]))
    assert cache_length(cache) == prefill.length + 4
    continued = greedy(target, prefill, 10, cache=cache, first=bonus, start=prefill.length + 4)
    assert tokens[:4] + continued == reference[:14]


@pytest.mark.parametrize("arch", FAMILIES)
def test_rejected_branch_left_as_blocked_hole_then_continue_equals_greedy(page, arch):
    """Instead of compacting, keep the rejected branch's columns and block them in later masks."""
    target, prefill, reference = page(arch)
    cache = copy.deepcopy(prefill.cache)
    tokens, logits = two_branch_tree(target, prefill, reference, cache)
    hole = [prefill.length + node for node in (4, 5, 6)]  # branch B, rejected
    token, position, out = int(logits[3].argmax()), prefill.length + 4, []
    for _ in range(8):
        columns = cache_length(cache)
        allowed = torch.ones(1, 1, columns + 1, dtype=torch.bool)
        allowed[0, 0, hole] = False
        logits_step = target.forward(torch.tensor([[token]]), torch.tensor([[position]]),
                                     additive_mask(allowed, target.dtype), cache,
                                     torch.tensor([prefill.rope_delta]))
        out.append(token)
        token, position = int(logits_step[0, -1].argmax()), position + 1
    assert tokens[:4] + out == reference[:12]
