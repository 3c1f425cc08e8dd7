"""Unicode math written as LaTeX: how a document VLM writes what an OCR reads as symbols.

An OCR drafter reads a formula's symbols as Unicode characters; the target writes them as LaTeX
commands. Until the output has used a symbol once (the text matcher then learns the separator), every
such symbol costs a pass or two per command (`` \\`` + ``partial``). ``to_latex`` renders a draft the
way a formula is written, so the first occurrence is proposed right too.

Worked example (an OCR line of a proof and what the model wrote for it):

    draft   "for some x0 ∈ ∂U, u(x0) > u(x) ∀x ∈ U"
    latex   "for some x0 \\in \\partial U, u(x0) > u(x) \\forall x \\in U"
    output  "for some \\( x^0 \\in \\partial U, u(x^0) > u(x) \\forall x \\in U \\)"

The rendering keeps every letter and digit of the draft and adds only markup (Greek letters become
the commands the text matcher reads as those letters), so the normalised character streams of the
raw and the rendered text are one (``textmatch``) and a hit in one is a hit in the other. What the OCR
cannot see (``x0`` for ``x^0``, the delimiters) still costs its pass; the matcher re-synchronises on
the next letters.
"""

from __future__ import annotations

import re
import unicodedata

#: Symbol -> command. Relations and operators the way document VLMs write them (``\\leq`` rather
#: than ``\\le``); learned separators take over where a family writes another form.
_COMMANDS = {
    "∈": r"\in", "∉": r"\notin", "∋": r"\ni", "⊂": r"\subset", "⊆": r"\subseteq", "⊃": r"\supset",
    "⊇": r"\supseteq", "∩": r"\cap", "∪": r"\cup", "∅": r"\emptyset", "∀": r"\forall", "∃": r"\exists",
    "∂": r"\partial", "∇": r"\nabla", "∞": r"\infty", "∑": r"\sum", "∏": r"\prod", "∫": r"\int",
    "∮": r"\oint", "√": r"\sqrt", "≤": r"\leq", "≥": r"\geq", "⩽": r"\leqslant", "⩾": r"\geqslant",
    "≠": r"\neq", "≈": r"\approx", "≡": r"\equiv", "∼": r"\sim", "≅": r"\cong", "∝": r"\propto",
    "±": r"\pm", "∓": r"\mp", "×": r"\times", "÷": r"\div", "·": r"\cdot", "⋅": r"\cdot", "∘": r"\circ",
    "→": r"\rightarrow", "←": r"\leftarrow", "↔": r"\leftrightarrow", "⇒": r"\Rightarrow",
    "⇐": r"\Leftarrow", "⇔": r"\Leftrightarrow", "↦": r"\mapsto", "…": r"\ldots", "⋯": r"\cdots",
    "∧": r"\wedge", "∨": r"\vee", "¬": r"\neg", "⊥": r"\perp", "∥": r"\parallel", "∠": r"\angle",
    "△": r"\triangle", "⊕": r"\oplus", "⊗": r"\otimes", "ℓ": r"\ell", "ℏ": r"\hbar",
    "〈": r"\langle", "〉": r"\rangle", "⟨": r"\langle", "⟩": r"\rangle",
}


def _greek_letter(name: str) -> str:
    case = "CAPITAL" if name[0].isupper() else "SMALL"
    return unicodedata.lookup(f"GREEK {case} LETTER " + name.upper().replace("LAMBDA", "LAMDA"))


_GREEK_NAMES = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma "
                "tau upsilon phi chi psi omega").split()
#: Greek letter -> the command a model writes for it (the capitals LaTeX has; the variant shapes).
GREEK = {_greek_letter(n): "\\" + n for n in _GREEK_NAMES if n != "omicron"}
GREEK.update({_greek_letter(n): "\\" + n for n in
              "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()})
GREEK.update({"ε": r"\varepsilon", "ϵ": r"\epsilon", "ϑ": r"\vartheta", "ς": r"\varsigma", "ϕ": r"\phi",
              "ϖ": r"\varpi", "ϱ": r"\varrho"})
_COMMANDS.update(GREEK)

#: Command name -> the letter it writes, as the text matcher normalises it (NFKC: ``ϕ`` is ``φ``), so
#: a draft's ``α=90°`` and the output's ``\\alpha=90^{\\circ}`` are one normalised stream. Also the
#: names a model may write for a letter that no rendering above produces (``\\varphi``,
#: ``\\varSigma``, ``\\Alpha``).
LETTER_OF_COMMAND = {name: _greek_letter(name) for name in _GREEK_NAMES}
LETTER_OF_COMMAND.update({name.capitalize(): _greek_letter(name.capitalize()) for name in _GREEK_NAMES})
LETTER_OF_COMMAND.update({cmd[1:]: unicodedata.normalize("NFKC", letter) for letter, cmd in GREEK.items()})
LETTER_OF_COMMAND.update({"var" + n: LETTER_OF_COMMAND[n] for n in ("phi", "rho", "pi", "theta", "sigma")
                          if "var" + n not in LETTER_OF_COMMAND})
LETTER_OF_COMMAND.update({"var" + n: LETTER_OF_COMMAND[n] for n in
                          "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()})

#: Symbols that are plain characters in LaTeX, not commands.
_PLAIN = {"−": "-", "′": "'", "″": "''", "‴": "'''", "∗": "*", "∣": "|"}
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ⁿⁱ", "0123456789+-ni"))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋", "0123456789+-"))

_SYMBOL = re.compile("[" + re.escape("".join(_COMMANDS) + "".join(_PLAIN)) + "°]|[" + "".join(_SUPERSCRIPTS)
                     + "]+|[" + "".join(_SUBSCRIPTS) + "]+")


def has_math_symbol(text: str) -> bool:
    return _SYMBOL.search(text) is not None


def math_symbols(text: str) -> set[str]:
    """The symbols of ``text`` that ``to_latex`` would rewrite (superscript runs as one)."""
    return set(_SYMBOL.findall(text))


def to_latex(text: str, keep: set[str] | frozenset[str] = frozenset()) -> str:
    """``text`` with its Unicode math symbols as LaTeX (module docstring), except those in ``keep``;
    other text unchanged."""
    out: list[str] = []
    last = 0
    for m in _SYMBOL.finditer(text):
        if m.group(0) in keep:
            continue
        out.append(text[last:m.start()])
        last = m.end()
        sym = m.group(0)
        if sym in _COMMANDS:
            cmd = _COMMANDS[sym]
            nxt = text[m.end():m.end() + 1]
            # a command must be parted from a letter after it; models part it from a digit or
            # another command too (``\\alpha \\in``)
            out.append(cmd + " " if nxt.isalnum() or nxt in _COMMANDS else cmd)
        elif sym in _PLAIN:
            out.append(_PLAIN[sym])
        elif sym == "°":
            out.append(r"^{\circ}")
        elif sym[0] in _SUPERSCRIPTS:
            out.append("^{" + "".join(_SUPERSCRIPTS[c] for c in sym) + "}")
        else:
            out.append("_{" + "".join(_SUBSCRIPTS[c] for c in sym) + "}")
    out.append(text[last:])
    return "".join(out)
