"""The batched decoding loop (``core.speculative.decode``) on the replay stand-in target, whose
greedy output is a reference text: drafts change passes, never tokens; the policy decides which
rows join; counters add up."""

import pytest

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.speculative.decode import DecodePolicy, DecodeRow, SpeculativeDecoder
from core.speculative.proposal_config import ProposalConfig
from core.speculative.proposers import NoDrafts, TokenNgramProposer
from core.speculative.stopping import StopRule
from core.targets.base import PrefillRequest

PAGE = ("The decoder verifies every draft tree in one pass and keeps the accepted path. "
        "Rows of different lengths share one cache with holes that the mask blocks.")
REGION = "A region row decodes beside the page row until the page is done."


@pytest.fixture()
def target():
    t = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    t.set_page(PAGE, [REGION])
    return t


def _page_row(target, proposer, **kw):
    bp = target.prefill_batch([PrefillRequest(None, kind="page")])
    row = DecodeRow(proposer=proposer, stop=StopRule(target.eos_token_ids, 512), length=bp.lengths[0],
                    rope_delta=bp.rope_deltas[0], root=int(bp.logits[0].argmax()), **kw)
    return row, bp


def test_drafts_change_passes_never_tokens_and_counters_add_up(target):
    plain, bp = _page_row(target, NoDrafts())
    SpeculativeDecoder(target).run([plain], bp.cache, bp.valid)
    drafted, bp = _page_row(target, TokenNgramProposer([target.encode(PAGE)], ProposalConfig()))
    decoder = SpeculativeDecoder(target)
    decoder.run([drafted], bp.cache, bp.valid)
    assert target.decode(plain.output) == target.decode(drafted.output) == PAGE
    assert plain.stop_reason == drafted.stop_reason == "eos"
    s = drafted.stats
    assert s.forward_passes == decoder.forward_passes == len(s.tokens_per_pass) < plain.stats.forward_passes / 4
    assert sum(s.tokens_per_pass) == len(drafted.output)  # each pass keeps its root and accepted drafts
    assert s.accepted <= s.proposed and plain.stats.proposed == 0


class _JoinAfter(DecodePolicy):
    """Admits one region row after ``passes`` passes and records every pass."""

    def __init__(self, target, passes: int):
        self.target, self.passes, self.seen, self.joined = target, passes, [], []

    def admit(self, live):
        if len(self.seen) != self.passes or self.joined:
            return None
        bp = self.target.prefill_batch([PrefillRequest(None, kind="region", region=0)])
        row = DecodeRow(proposer=NoDrafts(), stop=StopRule(self.target.eos_token_ids, 512),
                        length=bp.lengths[0], rope_delta=bp.rope_deltas[0], root=int(bp.logits[0].argmax()))
        self.joined.append(row)
        return [row], bp.cache, bp.valid

    def after_pass(self, live, gained):
        self.seen.append(len(live))


def test_the_policy_admits_rows_and_the_page_row_ends_the_batch(target):
    page, bp = _page_row(target, NoDrafts(), ends_batch=True)
    policy = _JoinAfter(target, passes=3)
    decoder = SpeculativeDecoder(target)
    assert decoder.run([page], bp.cache, bp.valid, policy) == [page]
    (region,) = policy.joined
    assert target.decode(page.output) == PAGE
    assert policy.seen[:3] == [1, 1, 1] and policy.seen[3] == 2  # joined after the third pass
    assert len(policy.seen) == decoder.forward_passes
    # the region (shorter than the page) finished on its own, with its reference as output
    assert region.stop_reason == "eos" and target.decode(region.output) == REGION


def test_a_row_whose_drafts_keep_failing_gives_up(target):
    wrong = [target.encode("the zebra quietly")] * 3
    row, bp = _page_row(target, TokenNgramProposer(wrong, ProposalConfig()), give_up_below=2.0)
    SpeculativeDecoder(target).run([row], bp.cache, bp.valid)
    assert row.stop_reason == "low_acceptance" and len(row.stats.tokens_per_pass) == row.patience


def test_cancel_is_checked_before_every_pass(target):
    from core.errors import CancelledError

    row, bp = _page_row(target, NoDrafts())
    calls = []
    with pytest.raises(CancelledError):
        SpeculativeDecoder(target, should_cancel=lambda: calls.append(1) or len(calls) > 2).run(
            [row], bp.cache, bp.valid)
    assert len(row.output) == 2 and len(calls) == 3


def test_untimed_targets_get_no_pass_cost(target):
    from core.speculative.budget import PassCost

    assert SpeculativeDecoder(target, cost=PassCost()).cost is None


class _Asked(ReplayTarget):
    """The replay target, recording whether each pass was asked for ids or for logits."""

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        self.asked = []

    def forward(self, *args, greedy=False, **kwargs):
        self.asked.append(greedy)
        return super().forward(*args, greedy=greedy, **kwargs)


def test_at_tau_one_a_pass_asks_the_target_for_ids_only():
    target = _Asked(ReplayTokenizer(base_tokenizer("tiny")))
    target.set_page(PAGE, [REGION])
    row, bp = _page_row(target, TokenNgramProposer([target.encode(PAGE)], ProposalConfig()))
    SpeculativeDecoder(target).run([row], bp.cache, bp.valid)
    assert target.asked and all(target.asked)  # never logits as wide as the vocabulary
    relaxed, bp = _page_row(target, TokenNgramProposer([target.encode(PAGE)], ProposalConfig()))
    target.asked.clear()
    SpeculativeDecoder(target, tau=0.75).run([relaxed], bp.cache, bp.valid)
    assert target.asked and not any(target.asked)  # the relaxed rule reads the logits
    assert target.decode(row.output) == target.decode(relaxed.output) == PAGE


def _decoded_from_page_drafts(page: str, draft: str) -> tuple[str, int]:
    """The replay target writing ``page``, drafted by one text ``draft``: its text and passes."""
    from core.speculative.page_drafts import PageDrafts

    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    target.set_page(page, [])
    drafts = PageDrafts([target.encode(draft)], [draft], target.encode, target.decode, ProposalConfig())
    row, bp = _page_row(target, drafts.proposer)
    SpeculativeDecoder(target).run([row], bp.cache, bp.valid)
    return target.decode(row.output), row.stats.forward_passes


def test_letters_the_page_keeps_misreading_are_guessed_in_fewer_passes_and_the_same_tokens(monkeypatch):
    import core.speculative.notation as notation_module

    page = ("Von der Verwaltung. Die Versammlung pruefte die Verordnung. Man las die Vorschrift vor. "
            "Die Vernunft und die Verfassung, die Vollmacht und der Vertrag, die Vorsicht und der Verein, "
            "die Vermessung und die Verteilung, der Vorrat und die Vergabe.")
    draft = " ".join("B" + w[1:] if w.startswith("V") else w for w in page.split(" "))  # an OCR's B for V
    guessed, guessed_passes = _decoded_from_page_drafts(page, draft)
    monkeypatch.setattr(notation_module, "MISREAD_GUESS_SUPPORT", 10 ** 6)  # never a habit
    as_read, as_read_passes = _decoded_from_page_drafts(page, draft)
    assert guessed == as_read == page
    assert guessed_passes < as_read_passes


def test_the_ocrs_second_readings_take_fewer_passes_and_the_same_tokens(monkeypatch):
    import core.speculative.notation as notation_module
    from core.speculative.page_drafts import PageDrafts

    page = "Die Kirche verkuendete die Verordnung. Man pruefte die Obrigkeit und das Volk der Stadt."
    draft = "Die Rirche bertuendete die Berordnung. Man pruefte die Obrigteit und das Bolk der Stadt."
    readings = {"Rirche": [[0, "K", 0.3]], "bertuendete": [[0, "v", 0.25], [3, "k", 0.3]],
                "Berordnung": [[0, "V", 0.4]], "Obrigteit": [[5, "k", 0.35]], "Bolk": [[0, "V", 0.3]],
                "Stadt": [[0, "G", 0.1]]}  # a faint one: not branched
    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    target.set_page(page, [])
    monkeypatch.setattr(notation_module, "MISREAD_GUESS_SUPPORT", 10 ** 6)  # the readings alone

    def decode_page(second):
        notation = notation_module.Notation()
        notation.second_readings = second
        drafts = PageDrafts([target.encode(draft)], [draft], target.encode, target.decode, ProposalConfig(),
                            notation=notation)
        row, bp = _page_row(target, drafts.proposer)
        SpeculativeDecoder(target).run([row], bp.cache, bp.valid)
        return target.decode(row.output), row.stats.forward_passes

    with_readings, fewer = decode_page(readings)
    as_read, passes = decode_page({})
    assert with_readings == as_read == page
    assert fewer < passes


def test_inline_formulas_closed_where_the_drafts_prose_goes_on_take_fewer_passes_for_the_same_tokens(
        monkeypatch):
    import core.speculative.textmatch as textmatch_module

    page = ("If \\( u \\) attains an interior maximum, the bracket with \\( H \\) vanishes. For some \\( x \\) in "
            "the set \\( U \\), the value \\( c \\) is the bound and \\( v \\) is positive where \\( w \\) is not.")
    draft = page.replace("\\( ", "").replace(" \\)", "")  # an OCR reads the letters, not the delimiters
    closed, closed_passes = _decoded_from_page_drafts(page, draft)
    monkeypatch.setattr(textmatch_module, "inline_closer", lambda text: None)  # never closed by the drafts
    as_drafted, as_drafted_passes = _decoded_from_page_drafts(page, draft)
    assert closed == as_drafted == page
    assert closed_passes < as_drafted_passes, (closed_passes, as_drafted_passes)


def test_the_proposal_length_doubles_where_the_deepest_continuation_ran_true_and_is_kept_after_a_miss(target):
    from core.speculative.tree import build_tree

    decoder = SpeculativeDecoder(target)
    row, _ = _page_row(target, NoDrafts())
    chain = decoder.proposal.max_chain
    tree = build_tree(0, [([1] * 10, None), ([2] * 3, None)])
    assert decoder._next_budget(row, tree, 10) == 2 * chain  # shorter than the budget, accepted whole
    row.budget = 4 * chain
    assert decoder._next_budget(row, tree, 0) == 4 * chain   # rejected whole: no news of the next draft
    assert decoder._next_budget(row, tree, 3) == chain       # the drafts left the output
