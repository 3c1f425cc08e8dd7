"""Stage 2's drafts change while it decodes: refined region outputs replace raw drafts."""

import weakref

from core.speculative.proposal_config import ProposalConfig
from core.speculative.page_drafts import PageDrafts


def _codec():
    """Characters as tokens: ord / chr."""
    return (lambda s: [ord(c) for c in s]), (lambda ids: "".join(chr(i) for i in ids))


def test_refined_output_is_proposed_once_it_arrives():
    encode, decode = _codec()
    raw = ["The quick brwn fox", "jumps over the lazy dog"]
    drafts = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig())
    out = encode("The quick br")
    before = drafts.proposer.propose(out[:-1], out[-1], 16)
    assert decode(before.tokens[1:4]) == "wn "  # the raw draft's (wrong) continuation
    drafts.refine(0, encode("The quick brown fox"), "The quick brown fox")
    drafts.rejoin()
    after = drafts.proposer.propose(out[:-1], out[-1], 16)
    assert decode(after.tokens[1:4]) == "own"
    assert after.origins[1] == (0, after.origins[1][1])  # still attributed to region 0


def _first_of_two_refined():
    """``(drafts, encode, decode)``: the drafts of two regions, the first refined and rejoined."""
    encode, decode = _codec()
    raw = ["first par", "second part"]
    drafts = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig())
    drafts.refine(0, encode("first part."), "first part.")
    drafts.rejoin()
    return drafts, encode, decode


def test_joined_draft_crosses_region_boundaries_with_refined_texts():
    drafts, encode, decode = _first_of_two_refined()
    out = encode("first part.")
    tree = drafts.proposer.propose(out[:-1], out[-1], 16)
    assert decode(tree.tokens[1:9]) == "\n\nsecond"


def test_a_regions_partial_stage1_output_is_proposed_while_its_row_decodes():
    encode, decode = _codec()
    raw = ["Alpha beta gamma.", "The grains of TiO2 grow at 640 C in the furnace"]
    drafts = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig())
    partial = "The grains of $\\mathrm{TiO}_{2}$ grow"
    drafts.grow(1, encode(partial[:20]))
    drafts.grow(1, encode(partial))  # grows in steps; only the new tokens are indexed
    out = encode("The grains of $\\mathrm{T")
    tree = drafts.proposer.propose(out[:-1], out[-1], 32)
    paths = ["".join(chr(t) for t in p) for p, _ in _paths(tree)]
    assert any(p.startswith("iO}_{2}$ grow") for p in paths)
    drafts.refine(1, encode(partial + " at 640 C."), partial + " at 640 C.")
    drafts.rejoin()
    assert drafts.tokens.index.drafts[drafts.region(1).partial] == []  # the final output replaces the partial one


def _paths(tree):
    from core.speculative.proposers import _paths as paths

    return paths(tree)


def _leaf_origins(tree):
    """Per leaf, in ``_texts``'s order, the origin of its path's first node."""
    kids = tree.children()
    out = []
    for leaf in (i for i in range(1, len(tree)) if not kids[i]):
        node = leaf
        while tree.parents[node] > 0:
            node = tree.parents[node]
        out.append(tree.origins[node])
    return out


def _texts(tree, decode):
    kids = tree.children()
    out = []
    for leaf in (i for i in range(1, len(tree)) if not kids[i]):
        path, node = [], leaf
        while node > 0:
            path.append(tree.tokens[node])
            node = tree.parents[node]
        out.append(decode(path[::-1]))
    return out


def test_the_page_opening_is_proposed_in_the_familys_style():
    """A fence and a heading level no draft holds: the style's opening and marks make them proposable
    from the first pass; without a style only the drafts' own text is (one pass per token)."""
    from core.targets.profiles.base import PageStyle

    encode, decode = _codec()
    raw = ["# Warming Up", "Do you remember any little poems?"]
    style = PageStyle(openings=("```markdown\n", ""), heading_marks=("## ", "# "))
    drafts = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig(), style=style)
    tree = drafts.proposer.propose([], ord("`"), 64)
    assert "``markdown\n## Warming Up" in _texts(tree, decode)
    out = encode("```markdown\n#")
    tree = drafts.proposer.propose(out[:-1], out[-1], 64)
    texts = _texts(tree, decode)  # "## " and "# " both offered
    assert any(t.startswith("# Warming Up") for t in texts) and any(t.startswith(" Warming Up") for t in texts)
    plain = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig())
    assert len(plain.proposer.propose([], ord("`"), 64)) == 1
    # past the opening window the drafts alone speak
    long = encode("```markdown\n## Warming Up\n\nDo you remember")
    assert all("markdown" not in p for p in _texts(drafts.proposer.propose(long[:-1], long[-1], 64), decode))


def test_a_short_unmarked_first_line_is_also_proposed_as_a_heading():
    from core.targets.profiles.base import PageStyle

    encode, decode = _codec()
    raw = ["3.3.2 Plant height", "The plants grew taller where the soil was richer than elsewhere."]
    style = PageStyle(openings=("",), heading_marks=("## ", "# "))
    drafts = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig(), style=style)
    assert "# 3.3.2 Plant height" in _texts(drafts.proposer.propose([], ord("#"), 64), decode)
    assert " 3.3.2 Plant height" in _texts(drafts.proposer.propose([], ord("#"), 64), decode)
    # a paragraph is never made a heading
    assert not any(t.endswith("elsewhere.") for t in _texts(drafts.proposer.propose([], ord("#"), 64), decode))


def test_text_read_inside_a_figure_is_proposed_but_not_joined():
    # the layout took a page's clause for a figure: a model that writes it is proposed its text
    encode, decode = _codec()
    raw, figure = ["Section 7.4 joints", ""], ["", "7.4.1 Joints that carry load are sealed."]
    drafts = PageDrafts([encode(raw[0]), []], raw, encode, decode, ProposalConfig(), figure_texts=figure)
    out = encode("Section 7.4 joints\n\n7.4.1 Joints that")
    tree = drafts.proposer.propose(out[:-1], out[-1], 16)
    assert any(t.startswith(" carry load") for t in _texts(tree, decode))
    assert drafts._joined() == "Section 7.4 joints"  # a page that skips its figures is proposed nothing new


def test_past_a_misread_letter_the_page_row_goes_on_with_the_draft():
    encode, decode = _codec()
    raw = ["In der Landschaft wurde die Obrigteit zu Carrow verlesen.", "Man pruefte die Kirche."]
    drafts = PageDrafts([encode(t) for t in raw], raw, encode, decode, ProposalConfig())
    out = encode("In der Landschaft wurde die Obrigk")
    texts = _texts(drafts.proposer.propose(out[:-1], out[-1], 16), decode)
    assert any(t.startswith("eit zu Carrow") for t in texts)
    # where a draft holds the tail, the drafts propose only exact matches (the output's own
    # shorter n-grams, of no region, guess beside them)
    out = encode("In der Landschaft wurde die Obrigt")
    tree = drafts.proposer.propose(out[:-1], out[-1], 16)
    drafted = [t for t, origin in zip(_texts(tree, decode), _leaf_origins(tree)) if origin is not None]
    assert drafted and all(t.startswith("eit zu Carrow") for t in drafted)


def test_a_pages_drafts_are_freed_when_dropped_without_a_cycle_collection(no_cycle_collection):
    """The drafts hold the target's codec (and through it the target): were they kept in a cycle,
    a dropped model stayed in memory until Python's rare full collection."""
    drafts, encode, _ = _first_of_two_refined()
    out = encode("first part.")
    assert drafts.proposer.propose(out[:-1], out[-1], 16).tokens
    gone = weakref.ref(drafts)
    del drafts
    assert gone() is None
