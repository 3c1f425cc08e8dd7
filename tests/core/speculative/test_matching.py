import torch

from core.speculative.matching import DraftIndex, ProposalConfig, propose
from core.speculative.tree import build_tree
from core.speculative.verify import verify_tree


def test_unique_ngram_gives_chain():
    index = DraftIndex([[1, 2, 3, 4, 5], [9, 2, 3, 7]])
    tree = propose([1, 2], 3, index, ProposalConfig())
    assert tree.is_chain
    assert tree.tokens == [3, 4, 5]
    assert tree.origins[1] == (0, 3)


def test_ambiguous_suffix_gives_tree_with_both_continuations():
    index = DraftIndex([[1, 2, 3, 4, 5], [9, 2, 3, 7]])
    tree = propose([8, 2], 3, index, ProposalConfig())
    assert not tree.is_chain
    assert sorted(tree.tokens[1:]) == [4, 5, 7]
    kids = tree.children()
    assert sorted(tree.tokens[k] for k in kids[0]) == [4, 7]


def test_window_grows_to_disambiguate():
    # (2, 3) is ambiguous, (1, 2, 3) is not: the proposal follows draft 0 only.
    index = DraftIndex([[1, 2, 3, 4], [5, 2, 3, 6]])
    cfg = ProposalConfig(min_ngram=2)
    tree = propose([1, 2], 3, index, cfg)
    assert tree.tokens == [3, 4]


def test_no_match_gives_root_only():
    index = DraftIndex([[1, 2, 3]])
    tree = propose([7, 7], 6, index, ProposalConfig())
    assert tree.tokens == [6]


def test_one_gram_fallback_is_bounded():
    drafts = [[5] + list(range(100, 140)), [5] + list(range(200, 240))]
    cfg = ProposalConfig(fallback_depth=15)
    tree = propose([77, 78], 5, DraftIndex(drafts), cfg)
    assert max(tree.depths) == 15
    assert len(tree) == 1 + 2 * 15


def test_tree_respects_node_limit():
    conts = [([i, i + 1, i + 2], (0, 0)) for i in range(0, 300, 3)]
    tree = build_tree(0, conts, max_nodes=20)
    assert len(tree) == 20
    assert all(p < i for i, p in enumerate(tree.parents))


def test_ancestor_mask():
    tree = build_tree(4, [([5, 6, 7], None), ([5, 8], None)])
    assert tree.tokens == [4, 5, 6, 7, 8]
    m = tree.ancestor_mask()
    assert m[3].tolist() == [True, True, True, True, False]
    assert m[4].tolist() == [True, True, False, False, True]


def _logits_choosing(choices, vocab=16):
    out = torch.full((len(choices), vocab), -5.0)
    for i, c in enumerate(choices):
        out[i, c] = 5.0
    return out


def test_verify_accepts_matching_branch_and_returns_bonus():
    tree = build_tree(4, [([5, 6, 7], None), ([5, 8], None)])  # nodes 4,5,6,7,8
    # target wants: after 4 -> 5, after 5 -> 8, after 8 -> 9
    logits = _logits_choosing([5, 8, 0, 0, 9])
    acc = verify_tree(tree, logits)
    assert acc.path == [0, 1, 4]
    assert acc.bonus == 9
    assert acc.accepted_drafts == 2


def test_verify_rejects_everything():
    tree = build_tree(4, [([5, 6], None)])
    acc = verify_tree(tree, _logits_choosing([3, 0, 0]))
    assert acc.path == [0] and acc.bonus == 3


def test_relaxed_rule_accepts_close_second_but_not_in_math():
    tree = build_tree(4, [([5], None)])
    logits = torch.full((2, 16), -10.0)
    logits[0, 3] = 1.0
    logits[0, 5] = 0.9  # log p(5) - log p(3) = -0.1 >= log 0.75
    logits[1, 7] = 1.0
    assert verify_tree(tree, logits, tau=1.0).path == [0]
    assert verify_tree(tree, logits, tau=0.75).path == [0, 1]
    assert verify_tree(tree, logits, tau=0.75, relax_allowed=lambda toks: False).path == [0]


def test_relaxed_rule_never_accepts_a_token_past_the_logits_width():
    tree = build_tree(4, [([40], None), ([5], None)])  # 40: an id the 16-wide head has no logit for
    logits = torch.full((3, 16), -10.0)
    logits[0, 3] = 1.0
    logits[0, 5] = 0.9
    assert verify_tree(tree, logits, tau=0.75).path == [0, 2]
    only_wide = build_tree(4, [([40], None)])
    assert verify_tree(only_wide, logits[:2], tau=0.75).path == [0]


def test_inside_math():
    from core.speculative.mathmode import inside_math

    assert inside_math("The value $x + ")
    assert not inside_math("The value $x$ is")
    assert inside_math("$$\n\\frac{a}{")
    assert not inside_math("costs \\$5 and")
    assert inside_math("where \\(a")
    assert not inside_math("\\[ a \\] then")
    assert inside_math("\\begin{equation} x")


def test_incremental_detokenizer_matches_full_decode():
    from core.speculative.detokenize import IncrementalDetokenizer

    pieces = {1: "Hel", 2: "lo", 3: " wor", 4: "ld", 5: "\n"}
    decode = lambda ids: "".join(pieces[i] for i in ids)
    det = IncrementalDetokenizer(decode, context=2)
    out, toks = "", []
    for t in [1, 2, 3, 4, 5, 1]:
        toks.append(t)
        out += det.push(toks)
    assert out == decode(toks)


def test_set_draft_gives_the_index_a_fresh_build_would():
    old = [[1, 2, 3, 4, 5], [9, 2, 3, 7], [2, 3, 8]]
    new = [[1, 2, 3, 4, 5], [6, 6, 2, 3, 1], [2, 3, 8]]
    index = DraftIndex(old, max_ngram=4)
    index.set_draft(1, new[1])
    fresh = DraftIndex(new, max_ngram=4)
    assert index.drafts == fresh.drafts
    assert index._tables == fresh._tables
    assert index.hits((9, 2)) == [] and index.hits((2, 3)) == fresh.hits((2, 3))


def test_extend_indexes_the_new_ngrams_only_once():
    from core.speculative.matching import DraftIndex

    grown, whole = DraftIndex([[]], max_ngram=4), DraftIndex([[1, 2, 3, 4, 5, 6]], max_ngram=4)
    grown.extend(0, [1, 2, 3])
    grown.extend(0, [4, 5, 6])
    assert grown.drafts == whole.drafts
    assert grown._tables == whole._tables
