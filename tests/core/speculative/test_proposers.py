"""Proposers (``core.speculative.proposers``): where a row's draft trees come from."""

from core.speculative.proposal_config import ProposalConfig
from core.speculative.proposers import (NoDrafts, OutputNgramProposer, TextProposer, TokenNgramProposer,
                                        UnionProposal)
from core.speculative.tree import build_tree

CFG = ProposalConfig()
WORDS = ["", "the", " model", " reads", " every", " page", ".", " It", " writes"]


def _encode(text: str) -> list[int]:
    out, rest = [], text
    while rest:
        for i in sorted(range(1, len(WORDS)), key=lambda i: -len(WORDS[i])):
            if rest.startswith(WORDS[i]):
                out.append(i)
                rest = rest[len(WORDS[i]):]
                break
        else:
            raise ValueError(rest)
    return out


def _decode(ids) -> str:
    return "".join(WORDS[i] for i in ids)


def test_no_drafts_proposes_the_root_alone():
    assert NoDrafts().propose([1, 2], 3, 16).tokens == [3]


def test_token_ngrams_carry_the_page_region_of_each_draft():
    p = TokenNgramProposer([[9, 9, 9], [1, 2, 3, 4, 5]], CFG, regions=[7, 12])
    tree = p.propose([1], 2, 8)
    assert tree.tokens == [2, 3, 4, 5] and tree.origins[1:] == [(12, 2), (12, 3), (12, 4)]
    p.set_draft(1, [])
    assert len(p.propose([1], 2, 8)) == 1


def test_output_ngrams_repeat_the_rows_own_markup():
    p = OutputNgramProposer(CFG)
    out = [5, 6, 7, 8, 5, 6]
    tree = p.propose(out, 7, 3)
    assert tree.tokens == [7, 8, 5, 6] and all(o is None for o in tree.origins)
    assert len(p.propose([1, 2], 3, 3)) == 1


def test_shorter_output_ngrams_guess_a_few_tokens_where_the_three_gram_is_new():
    # " page ." was written after " every"; the root " page" now follows " reads" (a new 3-gram)
    main = OutputNgramProposer(CFG)
    guess = OutputNgramProposer(CFG, orders=(2, 1), length=2, index=main.index)
    out = [1, 2, 4, 5, 6, 7, 3]                 # the model every page . It reads
    assert len(main.propose(out, 5, 8)) == 1
    assert guess.propose(out, 5, 8).tokens == [5, 6, 7]  # what followed " page" last, 2 tokens
    guess = OutputNgramProposer(CFG, orders=(2, 1), length=2)
    out = [5, 6, 7, 2, 6, 3, 4, 5]              # page . It model . reads every page
    assert guess.propose(out, 6, 8).tokens == [6, 7, 2]   # " page ." last went on " It", a lone "." " reads"


def test_the_misread_proposer_is_asked_only_where_the_text_drafts_had_nothing():
    from core.speculative.proposers import MisreadProposer

    letters = lambda s: [ord(c) for c in s]  # noqa: E731
    spell = lambda ids: "".join(map(chr, ids))  # noqa: E731
    texts = TextProposer(["die Obrigteit zu Carrow verlesen"], [0], letters, spell, CFG)
    misread = MisreadProposer(texts)
    out = letters("die Obrigk")
    assert len(texts.propose(out[:-1], out[-1], 16)) == 1
    assert spell(misread.propose(out[:-1], out[-1], 16).tokens[1:]).startswith("eit zu")
    out = letters("die Obrigt")
    assert len(texts.propose(out[:-1], out[-1], 16)) > 1
    assert len(misread.propose(out[:-1], out[-1], 16)) == 1


def test_text_drafts_are_matched_on_normalised_characters():
    p = TextProposer(["The model reads every page. It writes"], [4], _encode, _decode, CFG)
    tree = p.propose(_encode("the model"), _encode(" reads")[0], 8)
    assert _decode(tree.tokens[1:]).startswith(" every page")
    assert tree.origins[1][0] == 4


class _Fixed:
    def __init__(self, cont, origin):
        self.cont, self.origin = cont, origin

    def propose(self, output, root, budget):
        return build_tree(root, [(self.cont[:budget], self.origin)])


def test_union_places_every_proposers_head_before_extending_any():
    """With a small node budget a long first continuation must not crowd out the second's head."""
    long_wrong = _Fixed(list(range(10, 40)), (0, 0))
    right = _Fixed([50, 51, 52, 53, 54, 55], (1, 0))
    union = UnionProposal([long_wrong, right], max_nodes=128)
    tree = union.propose([], 1, 4)  # budget 4: at most 9 nodes
    assert len(tree) <= 9
    assert [50, 51, 52, 53] == [tree.tokens[i] for i in range(len(tree)) if tree.tokens[i] >= 50][:4]
    assert union.propose([], 1, 4).tokens[:1] == [1]


def _openings_after(texts: list[str], written: str, lines: bool = False,
                    root: str | None = None) -> set[str] | None:
    """What ``NextRegionProposer`` proposes over regions ``texts`` (``lines``: early OCR lines,
    drafts of no region) after the output ``written`` (characters as tokens; ``root``: its last
    token, a word as one token); None where it proposes nothing."""
    from core.speculative.proposers import NextRegionProposer, _paths
    encode = lambda s: [ord(c) for c in s]  # noqa: E731
    words = {0x10000 + i: w for i, w in enumerate([root] if root else [])}
    decode = lambda ids: "".join(words.get(i) or chr(i) for i in ids)  # noqa: E731
    p = NextRegionProposer(lambda: [(None if lines else i, t) for i, t in enumerate(texts)], encode, decode,
                           ProposalConfig())
    out = encode(written) + ([0x10000] if root else [])
    tree = p.propose(out[:-1], out[-1], 32)
    return {decode(c) for c, _ in _paths(tree)} if len(tree) > 1 else None


def test_at_a_regions_end_the_unwritten_regions_openings_are_proposed():
    # the model wrote the caption (region 2) right after the left column (region 0)
    texts = ["The left column ends here.", "Right column text", "Figure 1: a caption"]
    conts = _openings_after(texts, "The left column ends here")
    assert ".\n\nRight column text" in conts and ".\n\nFigure 1: a caption" in conts
    # once the caption is written, only the right column is left to propose
    written = "The left column ends here.\n\nFigure 1: a caption\n\nMore of the left column ends here."
    assert _openings_after(texts, written) == {"\n\nRight column text"}
    assert _openings_after(texts, "The left column") is None  # mid-region, nothing


def test_the_next_regions_first_characters_already_written_narrow_the_openings():
    texts = ["The left column ends here.", "Right column text", "Caption 1"]
    assert _openings_after(texts, "The left column ends here.\n\nCa") == {"ption 1"}


def test_an_early_line_goes_on_in_the_next_line_of_its_paragraph_after_a_space():
    # lines as the recogniser read them, across two columns; the model's paragraph runs on
    lines = ["the suitability for", "left column words", "land application requires"]
    conts = _openings_after(lines, "So, the suitability for", lines=True)
    assert " land application requires" in conts and " left column words" in conts
    assert any(c.startswith("\n\nland") for c in conts)  # or it ends its paragraph
    # regions are paragraphs: only a paragraph break between them
    assert " land application requires" not in _openings_after(lines, "So, the suitability for")
    # CJK lines join without a space
    assert "继续写下去" in _openings_after(["这是第一行的结尾", "继续写下去"], "这是第一行的结尾", lines=True)


def test_the_word_that_ended_a_line_and_began_the_next_narrows_the_openings():
    # the pass that ended the line also wrote " land" (one token): the line is found ended
    # behind it, and the rest of the line that opens with it is proposed
    lines = ["the suitability for", "land application requires", "left column words"]
    assert _openings_after(lines, "So, the suitability for", lines=True, root=" land") == {" application requires"}
    # a whole word past a region's end is not looked behind: regions are not lines
    assert _openings_after(lines, "So, the suitability for", root=" land") is None


def test_a_short_unit_the_output_repeats_is_proposed_repeated_past_its_end():
    # "<td></td>" as tokens 1 2 3 4: the latest hit of the 2-gram ends one cell back
    p = OutputNgramProposer(ProposalConfig(min_ngram=2))
    out = [9, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3]
    tree = p.propose(out, 4, 10)
    assert tree.tokens[1:] == [1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
    # a long stretch is not repeated: only what the output holds after the hit is proposed
    long_unit = list(range(20, 40))
    out = [9] + long_unit + long_unit[:-1]
    tree = OutputNgramProposer(ProposalConfig(min_ngram=2)).propose(out, long_unit[-1], 64)
    assert tree.tokens[1:] == long_unit[:-1]



def test_a_text_proposal_past_what_a_tree_holds_is_the_tree_it_holds():
    """A budget beyond ``max_nodes - 1`` tokens proposes the tree a budget of ``max_nodes - 1``
    does: the tree holds no more, and the draft's text past it is not read."""
    draft = "the model reads" + " every page. It writes" * 200
    encoded: list[int] = []

    def encode(text: str) -> list[int]:
        encoded.append(len(text))
        return [ord(c) for c in text]

    def decode(ids) -> str:
        return "".join(map(chr, ids))

    p = TextProposer([draft], [4], encode, decode, CFG)
    output = encode("the model reads every page. It writes every page")
    encoded.clear()
    wide = p.propose(output, ord("."), 256)
    assert encoded and max(encoded) <= 8 * (CFG.max_nodes - 1)
    assert wide.tokens == p.propose(output, ord("."), CFG.max_nodes - 1).tokens
    assert len(wide) == CFG.max_nodes and decode(wide.tokens[1:]).startswith(" It writes every page.")
