"""Unicode math drafts rendered the way a document VLM writes formulas."""

from core.speculative.latex import has_math_symbol, math_symbols, to_latex
from core.speculative.textmatch import NormalizedText, TextMatcher


def test_symbols_become_commands_parted_from_letters():
    assert to_latex("for some x0 ∈ ∂U, u(x0) > u(x) ∀x ∈ U") == \
        r"for some x0 \in \partial U, u(x0) > u(x) \forall x \in U"
    assert to_latex("α∈Ω") == r"\alpha \in \Omega"
    assert to_latex("φ′(u) ≤ 0") == r"\phi'(u) \leq 0"


def test_super_and_subscripts_and_degrees():
    assert to_latex("x² + y₁₂ = 90°") == r"x^{2} + y_{12} = 90^{\circ}"


def test_the_rendering_keeps_the_normalised_stream():
    for text in ("B[φ(u), v] = ∑aij φ′(u)uxivxj dx ≤ 0", "x² + y₁₂ = 90°, α∈Ω", "⟨a, b⟩ → ∞"):
        assert NormalizedText.of(to_latex(text)).norm == NormalizedText.of(text).norm


def test_kept_symbols_stay_as_they_are():
    assert to_latex("68.3 ± 19.7 ≤ 90", keep={"±"}) == r"68.3 ± 19.7 \leq 90"
    assert math_symbols("a ± b ≤ c") == {"±", "≤"}
    assert not has_math_symbol("plain text, no formula")


def test_inside_a_formula_the_latex_form_is_proposed_first():
    m = TextMatcher(["If not, then for some x0 ∈ ∂U, u(x0) > u(x) ∀x ∈ U. Then"])
    conts = [c for c, _, _ in m.continuations(r"If not, then for some \( x^0")]
    assert conts[0].startswith(r" \in \partial U, u(x0)")
    assert conts[1].startswith(" ∈ ∂U")  # the draft as read stays proposed


def test_outside_a_formula_the_draft_is_proposed_as_read():
    m = TextMatcher(["the range 5 ≤ n ≤ 9 holds"])
    conts = [c for c, _, _ in m.continuations("the range 5 ")]
    assert conts == ["≤ n ≤ 9 holds"]


def test_a_symbol_the_output_writes_as_it_is_is_not_rewritten():
    m = TextMatcher(["<td>68.3 ± 19.7</td><td>65.6 ± 1.4</td>"])
    conts = [c for c, _, _ in m.continuations(r"$x$ <td>68.3 ± 19.7</td><td>65")]
    assert all(r"\pm" not in c for c in conts)


def test_every_greek_command_reads_as_its_letter():
    # the commands a model writes, including shapes no rendering produces, normalise to the letter
    for draft, output in (("Σ = α", r"\varSigma = \alpha"), ("ϕ ϵ", r"\varphi \epsilon"), ("ε", r"\varepsilon")):
        assert NormalizedText.of(draft).norm == NormalizedText.of(output).norm
