"""Re-synchronisation (``core.speculative.matching``): n-gram lookups into changing drafts."""

from core.speculative.matching import DraftIndex, ProposalConfig, propose


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
