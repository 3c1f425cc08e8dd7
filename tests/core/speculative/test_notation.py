"""Rendering drafts with what the output taught (``core.speculative.notation.Notation.render_text``)."""

import random
import re

from core.speculative.notation import Notation


def _rendered_by_patterns(notation: Notation, text: str) -> str:
    """The rule written as patterns: misread runs of letters (whole runs) put right, then every whole
    word (between white space) that is learned, or holds a digit where digit shapes are known, rendered."""
    if notation.misread:
        runs = "|".join(re.escape(w) for w in sorted(notation.misread, key=len, reverse=True))
        text = re.sub(r"(?<!\w)(?:" + runs + r")(?!\w)", lambda m: notation.misread[m.group(0)], text)
    words = "|".join(re.escape(w) for w in sorted(notation.words, key=len, reverse=True))
    either = "|".join(a for a in (words, r"\S*\d\S*" if notation.shapes else "") if a)
    if either:
        text = re.sub(r"(?<!\S)(?:" + either + r")(?!\S)", lambda m: notation.render(m.group(0)), text)
    return text


def test_rendering_a_text_follows_the_pattern_rule_on_random_texts():
    rng = random.Random(7)
    pieces = ["wt%TiO2", "TiO2", "Obrigteit", "Obrigteit.", "700", "MPa", "a", "der", "x1", "12.5", "(3)", "é",
              "Volte", "\u00a0", " ", "  ", "\n", "\n\n", "\t", ",", "$", "wt", "7,", ", "]
    for _ in range(200):
        n = Notation()
        if rng.random() < 0.7:
            n.learn("wt%TiO2", "\\mathrm{wt} \\% \\mathrm{TiO}_{2}$")
        if rng.random() < 0.7:
            n.learn("700", "$700")  # a digit shape: every number gets "$" before it
        if rng.random() < 0.7:
            n.learn("Obrigteit.", "Obrigkeit.")
        if rng.random() < 0.3:
            n.learn("Volte", "Volke")
        if rng.random() < 0.3:
            n.learn(",", "")  # a form may be empty: a separator the output leaves out
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert n.render_text(text) == _rendered_by_patterns(n, text), (text, n.words, n.misread, n.shapes)


def test_rendering_follows_the_rules_as_they_change_between_renderings():
    """Rendered words are remembered between texts; each change of the rules (a word's form, a digit
    shape, a form forgotten) is seen by the next rendering as by a notation that never rendered."""
    rng = random.Random(11)
    lessons = [("wt%TiO2", "\\mathrm{wt} \\% \\mathrm{TiO}_{2}$"), ("wt%TiO2", "wt%TiO2"), ("700", "$700"),
               ("700", "700"), ("12.5", "$12.5$"), ("Obrigteit.", "Obrigkeit."), ("Obrigteit.", "Obrigteit."),
               ("x1", "$x_1$"), ("MPa", "\\mathrm{MPa}"), ("MPa", "MPa")]
    pieces = ["wt%TiO2", "700", "12.5", "Obrigteit.", "x1", "MPa", "30", " ", "\n", "der", "7,"]
    for _ in range(50):
        n = Notation()
        for _ in range(12):
            n.learn(*rng.choice(lessons))
            text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
            assert n.render_text(text) == _rendered_by_patterns(n, text), (text, n.words, n.misread, n.shapes)


def test_learning_a_form_again_after_another_takes_it_back():
    n = Notation()
    n.learn("wt%", "\\mathrm{wt} \\%")
    n.learn("wt%", "wt%")
    assert "wt%" not in n.words
    n.learn("wt%", "\\mathrm{wt} \\%")  # learned before, but the rules have changed since
    assert n.words["wt%"] == "\\mathrm{wt} \\%"


def test_a_learned_form_renders_the_word_wherever_it_stands_whole():
    n = Notation()
    n.learn("wt%TiO2", "\\mathrm{wt} \\% \\mathrm{TiO}_{2}$")
    n.learn("Obrigteit.", "Obrigkeit.")
    assert n.render_text("8 wt%TiO2 and wt%TiO2x der Obrigteit, Obrigteiten") == (
        "8 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ and wt%TiO2x der Obrigkeit, Obrigteiten")
