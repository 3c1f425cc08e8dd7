"""Re-synchronisation (``core.speculative.tokenmatch``): token n-gram lookups into changing drafts."""

from core.speculative.proposal_config import ProposalConfig
from core.speculative.tokenmatch import DraftIndex, propose


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


def _every_hit(drafts, suffix):
    """What a lookup must find: every occurrence, by brute force."""
    n = len(suffix)
    return [(d, end) for d, toks in enumerate(drafts) for end in range(n, len(toks) + 1)
            if tuple(toks[end - n:end]) == tuple(suffix)]


def test_set_draft_gives_the_index_a_fresh_build_would():
    old = [[1, 2, 3, 4, 5], [9, 2, 3, 7], [2, 3, 8]]
    new = [[1, 2, 3, 4, 5], [6, 6, 2, 3, 1], [2, 3, 8]]
    index = DraftIndex(old, max_ngram=4)
    index.hits((2, 3))  # packed once before the change
    index.set_draft(1, new[1])
    fresh = DraftIndex(new, max_ngram=4)
    assert index.drafts == fresh.drafts
    assert index.hits((9, 2)) == [] and index.hits((2, 3)) == fresh.hits((2, 3)) == _every_hit(new, (2, 3))


def test_extend_finds_ngrams_across_the_seam():
    grown, whole = DraftIndex([[]], max_ngram=4), DraftIndex([[1, 2, 3, 4, 5, 6]], max_ngram=4)
    grown.extend(0, [1, 2, 3])
    assert grown.hits((3, 4)) == []
    grown.extend(0, [4, 5, 6])
    assert grown.drafts == whole.drafts
    assert grown.hits((3, 4)) == whole.hits((3, 4)) == [(0, 4)]


def test_lookups_find_every_occurrence_and_nothing_else():
    """Tokens whose bytes repeat across token edges (256 = 00 01 00 00, 1 = 01 00 00 00) must not
    match inside a token, nor across two drafts; overlapping occurrences are all found."""
    import random

    rng = random.Random(7)
    alphabet = [0, 1, 256, 65536, 16777216, 257, 2]
    drafts = [[rng.choice(alphabet) for _ in range(rng.randint(0, 40))] for _ in range(6)] + [[2, 2, 2, 2]]
    index = DraftIndex(drafts, max_ngram=5)
    for n in range(1, 6):
        for d in drafts:
            for end in range(n, len(d) + 1):
                suffix = tuple(d[end - n:end])
                assert index.hits(suffix) == _every_hit(drafts, suffix)
    assert index.hits((2, 2))[-3:] == [(6, 2), (6, 3), (6, 4)]  # overlapping
    assert index.hits((2,) * 6) == []  # longer than max_ngram: never looked up


def test_history_finds_the_latest_occurrences_overlapping_ones_too():
    from core.speculative.history import OutputHistory

    history = OutputHistory(max_ngram=4, recent=3)
    history.add_page([7, 7, 7, 7, 1, 7, 7])
    assert history.hits((7, 7)) == [(0, 3), (0, 4), (0, 7)]
    assert history.hits((1, 7, 7)) == [(0, 7)]


def test_ranked_continuations_by_frequency_and_narrowed_windows():
    """What ``propose`` reads: every occurrence's continuation (cut at its draft's end), counted,
    the most frequent first and ties in the order found, as a plain walk over the hits gives."""
    import random

    rng = random.Random(3)
    drafts = [[rng.choice([1, 2, 3, 256]) for _ in range(rng.randint(0, 30))] for _ in range(8)]
    index = DraftIndex(drafts, max_ngram=4)
    for suffix in [(1,), (2, 3), (1, 2), (256, 1, 2), (3, 3, 3)]:
        for length in (1, 3, 8):
            seen = {}
            for hit in _every_hit(drafts, suffix):
                cont = index.continuation(hit, length)
                if cont:
                    seen.setdefault(tuple(cont), [0, cont, hit])[0] += 1
            want = [(c, h) for _, c, h in sorted(seen.values(), key=lambda v: -v[0])][:4]
            assert index.ranked(index.find(suffix, length), 4) == want
            if len(suffix) > 1:  # a longer window narrows a shorter one's occurrences
                assert index.narrow(index.find(suffix[1:], length), suffix, length) == index.find(suffix, length)
