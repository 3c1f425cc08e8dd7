from core.speculative.proposers import NoDrafts, TextProposer, TokenNgramProposer
from core.speculative.proposal_config import ProposalConfig
from core.speculative.textmatch import NormalizedText, TextMatcher


def test_normalized_text_maps_back_to_raw():
    t = NormalizedText.of("Ａb, c-1")
    assert t.norm == "Abc1"
    assert [t.raw[i] for i in t.raw_index] == ["Ａ", "b", "c", "1"]


def test_continuation_absorbs_whitespace_and_markup_differences():
    m = TextMatcher(["The  quick brown fox jumps over the lazy dog."])
    # output wrote the same words with different spacing and emphasis
    (text, d, _), = m.continuations("**The quick brown fox** ")
    assert d == 0 and text.startswith("jumps over")


def test_continuation_mid_word():
    m = TextMatcher(["Hierarchical speculative decoding"])
    (text, _, _), = m.continuations("Hierarchical specul")
    assert text.startswith("ative decoding")


def test_separator_is_not_repeated():
    m = TextMatcher(["Totals: 12.5, then more"])
    (text, _, _), = m.continuations("Totals: 12.5, ")
    assert text.startswith("then more")


def test_window_grows_until_hits_agree():
    m = TextMatcher(["alpha beta gamma one", "zeta beta gamma two"], min_chars=6)
    conts = m.continuations("alpha beta gamma ")
    assert [c[0].strip()[:3] for c in conts] == ["one"]


def test_too_short_tail_gives_nothing():
    assert TextMatcher(["abc def"]).continuations("ab") == []


def _toy_codec():
    vocab = {}

    def encode(text):
        return [vocab.setdefault(w, len(vocab) + 10) for w in text.split(" ") if w]

    def decode(ids):
        inv = {v: k for k, v in vocab.items()}
        return " ".join(inv.get(i, "?") for i in ids)

    return encode, decode


def test_text_matching_places_a_context_the_token_index_cannot():
    encode, decode = _toy_codec()
    cfg = ProposalConfig()
    draft = "one two three four five six seven"
    toks = encode(draft)
    exact = TokenNgramProposer([toks], cfg, fallback=False)
    text = TextProposer([draft], [0], encode, decode, cfg)

    def first(output, root, budget):  # the exact tokens' tree where there is one, else the text matcher's
        tree = exact.propose(output, root, budget)
        return tree if len(tree) > 1 else text.propose(output, root, budget)

    tree = first(toks[:2], toks[2], budget=8)
    assert tree.tokens == toks[2:]
    # a context the token index cannot place but the text matcher can
    other = encode("zz yy")
    tree = first(other + encode("one two"), encode("three")[0], budget=3)
    assert tree.tokens[1:] == encode("four five six")
    assert NoDrafts().propose([1, 2], 3, 8).tokens == [3]


def test_output_ngram_proposer_repeats_own_markup():
    from core.speculative.proposers import OutputNgramProposer

    p = OutputNgramProposer(ProposalConfig(min_ngram=3))
    row = [1, 2, 3, 4, 5, 6, 7, 1, 2]
    tree = p.propose(row, 3, budget=3)
    assert tree.tokens == [3, 4, 5, 6]
    assert tree.origins[1:] == [None, None, None]
    assert p.propose([9, 9], 8, budget=3).tokens == [8]


def test_markup_letters_are_not_content():
    t = NormalizedText.of("<td>68.3 $ \\pm $ 19.7</td>")
    assert t.norm == "683197"


def test_separators_are_proposed_the_way_the_output_writes_them():
    m = TextMatcher(["NAP 68.3 ± 19.7 and ACY 61.5 ± 5.6 and ACE 65.3 ± 14.4"])
    (text, d, _), = m.continuations("NAP 68.3 $ \\pm $ 19.7")
    # the matched window showed the output writing " $ \pm $ " where the draft has " ± "
    assert text.startswith(" and ACY 61.5 $ \\pm $ 5.6 and ACE 65.3 $ \\pm $ 14.4")
    # agreeing windows take a learned rewrite back
    m.continuations("NAP 68.3 ± 19.7")
    (text, _, _), = m.continuations("NAP 68.3 ± 19.7 and")
    assert " 61.5 ± 5.6" in text


def test_a_separator_holding_markup_is_rewritten_whole():
    # mineru_research_report p2: the draft's cells end "%</td><td>", the output's "\%</td><td>";
    # the rewrite learned between two cells must apply to every later cell boundary
    m = TextMatcher(["<tr><td>YOY</td><td>4.5%</td><td>110.0%</td><td>135.1%</td><td>37.2%</td></tr>"])
    (text, _, _), = m.continuations("<tr><td>YOY</td><td>4.5\\%</td><td>110.0")
    assert text.startswith("\\%</td><td>135.1\\%</td><td>37.2")


def test_latex_letter_commands_match_the_drafts_letters():
    # the output writes the draft's "45 μm size" as "$45 \\mu \\mathrm{m}$ size": \\mu is the
    # letter μ, so the stream stays "45μmsize" on both sides and the match goes on
    m = TextMatcher(["grains of 45 μm size were milled for 8 h"])
    conts = m.continuations("grains of $45 \\mu \\mathrm{m}$ size")
    assert conts and all(text.startswith(" were milled") for text, _, _ in conts)
    assert NormalizedText.of("$\\alpha=90^{\\circ}$ and \\Omega").norm == "α90andΩ"
    # a command's letters are never a separator: nothing learned makes "=" read "alpha="
    m = TextMatcher(["with α=90° and β=60° in the die"])
    m.continuations("with $\\alpha=90^{\\circ}$ and $\\beta")
    assert all("alpha" not in v and "beta" not in v for v in m.rewrites.values())


def test_no_rewrite_between_adjacent_characters():
    m = TextMatcher(["with TiO2 powder and TiO2 particles"])
    m.continuations("with $\\mathrm{TiO}_{2}$ powder")
    assert "" not in m.rewrites  # the draft's "TiO2" has no separator to rewrite


def test_words_are_proposed_the_way_the_output_wrote_them_before():
    m = TextMatcher(["with 2 wt%TiO2 and 8 wt%TiO2 particles, then TiO2 powder of TiO2 grains"])
    m.continuations("with $2 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ and $8")
    assert m.words["wt%TiO2"] == "\\mathrm{wt} \\% \\mathrm{TiO}_{2}$"
    conts = [c[0] for c in m.continuations("with $2 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ and $8")]
    # the rendered continuation first, the raw draft's beside it (the output may write it plainly)
    assert conts[0].startswith(" \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ particles,")
    assert any(c.startswith(" wt") and "TiO2 particles" in c for c in conts[1:])


def test_a_word_the_output_writes_plainly_again_is_forgotten():
    m = TextMatcher(["the TiO2 powder, the TiO2 grains and the TiO2 particles of TiO2 here"])
    m.continuations("the $\\mathrm{TiO}_{2}$ powder,")
    assert "TiO2" in m.words
    m.continuations("the $\\mathrm{TiO}_{2}$ powder, the TiO2 grains and")
    assert "TiO2" not in m.words


def test_a_rendering_never_changes_the_words_letters():
    m = TextMatcher(["density rho air of the sample in water here"])
    m.continuations("density $\\rho_{\\text {air }}$ of the sample")
    assert "air" not in m.words  # "\\text {air }" adds no letters, but keep any form honest:
    assert all(NormalizedText.of(k).norm == NormalizedText.of(v).norm for k, v in m.words.items())


def test_after_a_formula_the_drafts_space_is_still_proposed():
    m = TextMatcher(["turning the samples 90° in each consecutive deformation"])
    (text, _, _), = m.continuations("turning the samples $90^{\\circ}$")
    assert text.startswith(" in each")


def test_an_inline_formula_is_closed_where_the_drafts_prose_goes_on():
    m = TextMatcher(["the constraints of (10) must have vanishing Poisson bracket with H. Using the brackets"])
    conts = [c[0] for c in m.continuations("must have vanishing Poisson bracket with \\( H")]
    assert conts[0].startswith(" \\). Using the brackets")  # before the draft's first prose word
    assert ". Using the brackets" in conts  # the draft as it is beside it
    # just opened, spaced inside as the page's formulas were: the draft's word, then the closing
    opened = "the constraints of \\( (10) \\) must have vanishing Poisson bracket with \\("
    assert [c[0] for c in m.continuations(opened)][0].startswith(" H \\). Using")
    # the output has begun the closing
    assert [c[0] for c in m.continuations("vanishing Poisson bracket with \\( H \\")][0].startswith("). Using")
    # prose ends no formula
    assert not any("\\)" in c[0] for c in m.continuations("must have vanishing Poisson bracket with"))


def test_a_number_takes_the_form_other_numbers_took():
    from core.speculative.notation import Notation

    notation = Notation()
    notation.learn("700", "$700")
    notation.learn("wt%TiO2", "\\mathrm{wt} \\% \\mathrm{TiO}_{2}$")
    assert notation.render("30") == "$30" and notation.render("wt%TiO2").startswith("\\mathrm{wt}")
    assert notation.render("(3)") == "(3)"  # another shape
    notation.learn("1999", "1999")  # a plain number again: the shape's form is forgotten
    assert notation.render("30") == "30"
    notation.learn("air", "\\mathrm{air} x")  # adds a letter: never learned
    assert "air" not in notation.words


def test_matchers_sharing_a_notation_learn_from_each_other():
    from core.speculative.notation import Notation

    notation = Notation()
    region = TextMatcher(["pressed at 700 MPa for 30 min"], notation=notation)
    page = TextMatcher(["then the samples were pressed at 700 MPa for 30 min and cooled"], notation=notation)
    region.continuations("pressed at $700 \\mathrm{MPa}$ for")
    conts = [c[0] for c in page.continuations("then the samples were pressed at $")]
    assert any(c.startswith("700 \\mathrm{MPa}$ for $30") for c in conts)


def test_a_matcher_made_after_the_notation_learned_renders_its_drafts_at_once():
    """A later page's matcher starts from the document's notation, not after its next change."""
    from core.speculative.notation import Notation

    notation = Notation()
    TextMatcher(["pressed at 700 MPa for 30 min"], notation=notation).continuations(
        "pressed at $700 \\mathrm{MPa}$ for")
    later = TextMatcher(["the samples were then pressed at 700 MPa and cooled"], notation=notation)
    conts = [c[0] for c in later.continuations("the samples were then pressed at $")]
    assert any(c.startswith("700 \\mathrm{MPa}$") for c in conts)


def test_a_learned_word_re_renders_only_the_drafts_holding_it():
    m = TextMatcher(["with TiO2 powder and TiO2 grains", "nothing of the sort here"])
    m.continuations("with $\\mathrm{TiO}_{2}$ powder and")
    assert m._rendered[0] is not None and "\\mathrm{TiO}_{2}$ grains" in m._rendered[0].raw
    assert m._rendered[1] is None


def test_a_listing_whose_lines_the_output_joins_is_proposed_joined():
    # docling_redp5110 p16: the text layer gives the SQL one statement line per line, indented; the
    # output writes it on one line. Each break differs ("'\n", "\n   ", " ;\n"), so no single learned
    # rewrite covers them: once the output has joined a break, every single break is proposed joined.
    draft = "ELSE 'XXX-XX-XXXX'\nEND\n   ENABLE ;\nCREATE MASK B ON C\n   FOR COLUMN TAX_ID\n   RETURN CASE\n\nNext para"
    m = TextMatcher([draft])
    (text, _, _), = m.continuations("ELSE 'XXX-XX-XXXX' END")
    assert text.startswith(" ENABLE ; CREATE MASK B ON C FOR COLUMN TAX_ID RETURN CASE\n\nNext")  # blank line kept
    # The output writes a break where the draft has one: breaks are proposed as breaks again.
    (text, _, _), = m.continuations("ELSE 'XXX-XX-XXXX' END ENABLE ; CREATE MASK B ON C\n   FOR")
    assert text.startswith(" COLUMN TAX_ID\n   RETURN CASE")


def test_a_rewrite_learned_at_one_indent_serves_every_indent():
    m = TextMatcher(["alpha beta gamma;\n    delta epsilon;\n        zeta eta theta"])
    (text, _, _), = m.continuations("alpha beta gamma;\ndelta epsilon")  # indentation dropped
    assert text.startswith(";\nzeta eta theta")


def test_a_heading_mark_or_bullet_the_output_began_is_followed_by_its_space():
    """The drafter gave no mark (or another level): after the output's ``###`` or ``-`` comes a
    space, not the draft's next word glued to the mark."""
    m = TextMatcher(["Deep appreciation\n\nWarm winds make travellers drunk"])
    (text, _, _), = m.continuations("## Deep appreciation\n\n###")
    assert text.startswith(" Warm winds")
    (text, _, _), = m.continuations("## Deep appreciation\n  -")
    assert text.startswith(" Warm winds")
    (text, _, _), = m.continuations("Deep appreciation -")  # a dash inside a line is no bullet
    assert text.startswith("Warm winds")


def test_a_listings_own_tags_are_its_text_where_html_tags_are_markup():
    """``<td>`` is table markup (the draft's ``<th>`` matches it); an XML listing's ``<ejb-name>`` is
    the listing's text, which the draft holds and the output copies."""
    assert NormalizedText.of("<td>7</td><TD colspan=\"2\">8</TD>").norm == "78"
    assert NormalizedText.of("<ejb-name>Address</ejb-name>").norm == "ejbnameAddressejbname"
    m = TextMatcher(["<field-map>\n  <cmp-field>id</cmp-field>\n</field-map>"])
    (text, _, _), = m.continuations("<field-map>\n  <cmp-")
    assert text.startswith("field>id</cmp-field>")


def test_a_short_cjk_tail_finds_its_draft():
    # three ideographs say as much as six Latin letters: the match starts at half the window
    m = TextMatcher(["采用胶缝传力的全玻幕墙，其胶缝必须采用硅酮结构密封胶。"], min_chars=6)
    (text, _, _), = m.continuations("\n\n7. 4.1 采用胶缝")
    assert text.startswith("传力的全玻幕墙")
    assert TextMatcher(["abc defghi"], min_chars=6).continuations("x abc") == []


def _normalized_char_by_char(raw):
    """The plain definition ``NormalizedText.of`` must keep: markup skipped (a LaTeX command naming
    a letter kept as that letter), ASCII letters and digits kept, any other character replaced by
    its NFKC form's letters and digits."""
    import unicodedata

    from core.speculative.normalized import _LATEX_LETTERS, _MARKUP

    markup, letters = [False] * len(raw), {}
    for m in _MARKUP.finditer(raw):
        markup[m.start():m.end()] = [True] * (m.end() - m.start())
        letter = _LATEX_LETTERS.get(m.group(0)[1:]) if m.group(0)[0] == "\\" else None
        if letter:
            letters[m.start()] = (letter, m.end())
    chars, index, end = [], [], []
    for i, ch in enumerate(raw):
        if markup[i]:
            if i in letters:
                chars.append(letters[i][0]), index.append(i), end.append(letters[i][1])
            continue
        for c in (ch if ch < "\x80" else unicodedata.normalize("NFKC", ch)):
            if c.isalnum():
                chars.append(c), index.append(i), end.append(i + 1)
    return "".join(chars), index, end


def test_normalized_text_is_the_character_by_character_definition():
    import random

    rng = random.Random(11)
    pieces = ["word", " ", "42", "</td><td>", "<b>", "\\alpha", "\\mathrm{TiO}_{2}", "$x^{2}$", "漢字", "，",
              "ﬁ", "Ａｂ", "é", "e\u0301", "①", "½", "\n\n", "<!-- c -->", "Ⅻ", "ß", "\u200b", "α", "<", ">", "ǅ"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    texts += ["", "plain ascii only", "全角の文字と漢字だけ", "ﬁ①½", "x\ud800y"]
    one_each = [p for p in pieces if p not in ("ﬁ", "①", "½", "Ⅻ")]  # no character folding to several
    texts += ["".join(rng.choice(one_each) for _ in range(rng.randint(300, 600))) for _ in range(20)]
    texts += ["".join(rng.choice(pieces) for _ in range(400)) + "\ud800" * k for k in (0, 1)]  # long: both walks
    for raw in texts:
        n = NormalizedText.of(raw)
        assert (n.norm, list(n.raw_index), list(n.raw_end)) == _normalized_char_by_char(raw), raw


def test_past_a_misread_letter_the_draft_goes_on_at_once():
    m = TextMatcher(["In der Landschaft wurde die Obrigteit zu Carrow verlesen."])
    assert m.continuations("wurde die Obrigk") == []  # no draft holds the tail
    (text, d, _), = m.continuations_past_misreading("wurde die Obrigk")
    assert d == 0 and text.startswith("eit zu Carrow")
    # a dropped or an added letter too
    assert m.continuations_past_misreading("wurde die Obrigeit")[0][0].startswith(" zu Carrow")
    assert m.continuations_past_misreading("wurde die Obrigtteit")[0][0].startswith(" zu Carrow")


def test_text_unlike_the_draft_is_no_misreading():
    m = TextMatcher(["In der Landschaft wurde die Obrigteit zu Carrow verlesen."])
    assert m.continuations_past_misreading("wurde die Regierung") == []
    assert m.continuations_past_misreading("das ist ganz anders") == []
    # LaTeX is no misreading of a draft's symbols
    assert TextMatcher(["where x2 + y2 = r2 holds"]).continuations_past_misreading("where $x^") == []


def test_a_misread_word_is_learned_where_every_lookup_ends_on_a_misread_letter():
    # each pass ends on the model's V where the draft has B: no lookup of the agreeing text
    # alone ever happens, so the misread lookup learns from what agreed before its letter
    m = TextMatcher(["Es ist die Bersammlung, die Bernunft und die Berfassung."])
    m.continuations_past_misreading("Es ist die V")
    assert not m.notation.misread
    (text, _, _), *_ = m.continuations_past_misreading("Es ist die Versammlung, die V")
    assert text.startswith("ernunft und")
    assert m.notation.misread == {"Bersammlung": "Versammlung"}
    assert m.notation.confusions == {("B", "V"): {"Bersammlung"}}


def test_a_misread_word_is_proposed_the_way_the_output_wrote_it_before():
    draft = "Es ist die Obrigteit, welche die Kirche bewahrt. Man ehrt die Obrigteit. Man sah die Bolte hier."
    m = TextMatcher([draft])
    m.continuations("Es ist die Obrigkeit, welche die Kirche")  # agrees again past the word
    assert m.notation.misread == {"Obrigteit": "Obrigkeit"}
    conts = [c[0] for c in m.continuations("Es ist die Obrigkeit, welche die Kirche bewahrt. Man ehrt die")]
    assert conts[0].startswith(" Obrigkeit. Man sah")  # put right, the punctuation kept
    assert any(c.startswith(" Obrigteit.") for c in conts[1:])  # the raw draft beside it
    # found again in the rendering, where the output's tail holds the put-right word
    conts = [c[0] for c in m.continuations("bewahrt. Man ehrt die Obrigkeit")]
    assert conts and conts[0].startswith(". Man sah die")


def test_only_a_few_letters_put_right_are_a_misreading():
    from core.speculative.notation import Notation

    notation = Notation()
    notation.learn("Bolte", "Volke")  # two of five letters
    notation.learn("gemeinde", "Freiheit")  # the same length, another word
    notation.learn("Kirche", "Kirchen")  # another length: the positions would shift
    assert notation.misread == {"Bolte": "Volke"}
    assert notation.render_text("dem Bolte, dem Bolten") == "dem Volke, dem Bolten"
    notation.learn("Bolte", "Bolte")  # written as drafted: forgotten
    assert notation.misread == {} and notation.render_text("dem Bolte") == "dem Bolte"


def test_a_letter_the_page_often_misread_is_guessed_put_right_and_branched():
    from core.speculative.notation import Notation

    notation = Notation()
    for word, form in [("Bon", "Von"), ("Berordnung", "Verordnung"), ("Bersammlung", "Versammlung"),
                       ("Buerger", "Buerger"), ("der", "der")]:
        notation.learn(word, form)
    assert notation.confusions[("B", "V")] == {"Bon", "Berordnung", "Bersammlung"}
    # B read V in 3 of the 4 runs holding B; words the output wrote already are left alone
    raw = "die Berwaltung der Buerger und die Bersammlung"
    assert notation.guesses(raw, 0, len(raw)) == [(4, "V", 0.75)]
    notation.learn("Bolte", "Volke")  # once is not yet a habit of the page
    assert notation.guesses("die Tolte", 0, 9) == []

    m = TextMatcher(["Man sah die Berwaltung der Stadt hier."], notation=notation)
    conts = [c[0] for c in m.continuations("Man sah die")]
    assert conts[:2] == [" Verwaltung der Stadt hier.", " Berwaltung der Stadt hier."]


def test_a_rare_misreading_branches_beside_the_draft_as_read():
    from core.speculative.notation import Notation

    notation = Notation()
    for word in ["Obrigteit", "Volte"]:
        notation.learn(word, word.replace("te", "ke"))
    for word in ["mit", "Stadt", "ist", "Sorgfalt", "treu"]:
        notation.learn(word, word)  # t written as t in 5 runs: t -> k in 2 of 7
    m = TextMatcher(["Es ist die Rirche, welche die Schule bewahrt."], notation=notation)
    conts = [c[0] for c in m.continuations("Es ist die Rirche, welche")]
    # as read first (t -> k is the rarer reading), then with the first unknown t read k
    assert conts[0] == " die Schule bewahrt."
    assert conts[1] == " die Schule bewahrk."


def test_a_misread_first_letter_of_a_draft_is_learned():
    m = TextMatcher(["## Bon der Neuen Kirche"])
    m.continuations("## Von der Neuen")
    assert m.notation.misread == {"Bon": "Von"}


def test_misread_words_are_learned_from_the_raw_draft_beside_a_reading_that_holds_the_tail():
    read = "die Obrigkeit zu Carrow wurde verlesen"
    m = TextMatcher([read, "die Obrigteit zu Carrow wurde berlesen"])
    m.continuations("die Obrigkeit zu Carrow wurde")
    assert m.notation.misread == {"Obrigteit": "Obrigkeit"}


def test_a_letter_the_ocr_read_two_ways_branches_from_the_pages_first_word():
    from core.speculative.notation import Notation

    notation = Notation()
    notation.second_readings = {"Berordnung": [[0, "V", 0.35], [3, "m", 0.06]], "die": [[0, "b", 0.3]]}
    m = TextMatcher(["Man las die Berordnung vor."], notation=notation)
    conts = [c[0] for c in m.continuations("Man las")]
    # as read first (a second reading is the less likely one), then each second reading of 0.2 or more
    assert conts[:3] == [" die Berordnung vor.", " bie Berordnung vor.", " die Verordnung vor."]
    notation.learn("die", "die")  # written as read: no longer read two ways
    conts = [c[0] for c in m.continuations("Man las")]
    assert conts[:2] == [" die Berordnung vor.", " die Verordnung vor."]


def test_a_misread_opening_is_read_past_where_the_output_is_the_whole_text_so_far():
    m = TextMatcher(["## Bon der Neuen Kirche", "Which poem ABCDEFGH describes"])
    assert m.continuations_past_misreading("## Von") == []  # no six characters before to find it by
    (text, d, _), = m.continuations_past_misreading("## Von", whole=True)
    assert d == 0 and text == " der Neuen Kirche"
    # an output that has just left a draft is no misreading of its opening
    assert m.continuations_past_misreading("Which poemth", whole=True) == []


def test_a_words_ends_are_where_white_space_is_on_random_texts():
    """``_word_start`` / ``_word_end`` find the white space around a position by searches, as a walk
    character by character would (spaces of every kind, CJK with none)."""
    import random

    from core.speculative.textmatch import _word_end, _word_start

    def walked(raw, i, step):
        while 0 < i if step < 0 else i < len(raw):
            if raw[i - 1 if step < 0 else i].isspace():
                break
            i += step
        return i

    rng = random.Random(5)
    alphabet = ["a", "7", " ", "\n", "\t", "\r", "\xa0", "\u3000", "\x1c", "中", "文", "$"]
    for _ in range(3000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        for i in range(len(raw) + 1):
            assert _word_start(raw, i) == walked(raw, i, -1), (raw, i)
            assert _word_end(raw, i) == walked(raw, i, 1), (raw, i)
