"""The replay target under the real engine: output = reference, rows survive the decoder's surgery."""

import pytest
from PIL import Image

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.base import Region
from core.engine import Engine, EngineConfig

REF = ("# Results\n\nThe model reads every page of the report and writes Markdown quickly.\n\n"
       "<table><tr><td>year</td><td>2023</td></tr><tr><td>total</td><td>1,352</td></tr></table>\n\n"
       "All measurements were repeated three times at room temperature.")
REGIONS = [
    Region("title", (10, 10, 200, 30), "Results", "test"),
    Region("text", (10, 40, 400, 80), "The model reads every page of the report and writes Markdwn quickly.", "test"),
    Region("table", (10, 90, 400, 150), "<table><tr><td>year</td><td>2023</td></tr></table>", "test"),
    Region("text", (10, 160, 400, 200), "All measurements were repeated three times at room temperature.", "test"),
    Region("footer", (10, 560, 400, 580), "page 3 of 9", "test"),
]
REGION_REFS = ["# Results", "The model reads every page of the report and writes Markdown quickly.",
               "<table><tr><td>year</td><td>2023</td></tr><tr><td>total</td><td>1,352</td></tr></table>",
               "All measurements were repeated three times at room temperature.", ""]


@pytest.fixture(scope="module")
def target():
    return ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))


def _convert(target, mode, tau=1.0, regions=REGIONS, refs=REGION_REFS):
    target.set_page(REF, refs)
    engine = Engine(EngineConfig(mode=mode, tau=tau, max_new_tokens=2048), target=target, drafter=None)
    return engine.convert_image(Image.new("RGB", (420, 595), "white"), regions, 420, 595, 1)


def test_tokenizer_compact_ids_round_trip(target):
    ids = target.encode(REF)
    assert min(ids) >= 2 and target.decode(ids) == REF
    assert target.decode([0, 1] + ids) == REF  # eos / pad decode to nothing


@pytest.mark.parametrize("mode", ["ar", "page", "hsd"])
def test_page_output_is_the_reference(target, mode):
    res = _convert(target, mode)
    assert res.markdown == REF
    assert res.stats.stop_reason == "eos"


def test_hsd_needs_fewer_passes_and_pass_log_adds_up(target):
    ar = _convert(target, "ar")
    assert ar.stats.forward_passes == ar.stats.generated_tokens + 1  # prefill + one pass per token
    hsd = _convert(target, "hsd")
    assert hsd.stats.forward_passes < ar.stats.forward_passes / 3
    gains = target.gains("page", final=hsd.stats.generated_tokens)
    assert sum(gains) == hsd.stats.generated_tokens and len(gains) == hsd.stats.stage2_passes
    assert hsd.stats.mean_accepted_length > 5


def test_regions_mode_writes_each_regions_reference(target):
    res = _convert(target, "regions")
    assert res.region_outputs[:4] == REGION_REFS[:4]
    assert res.region_outputs[4] == ""  # no counterpart: immediate end of sequence


def test_tau_below_one_equals_tau_one_under_replay(target):
    assert _convert(target, "hsd", tau=0.75).markdown == REF


def test_stage_1_runs_beside_the_page_and_its_outputs_become_stage_2_drafts(target):
    """Drafts that are all wrong (or missing) leave ``page`` at one token per pass; in ``hsd`` the
    regions' Stage 1 outputs (here: their reference spans) reach Stage 2 while it decodes, so hsd
    needs far fewer passes, and Stage 1 costs only its prefill: no pass of its own."""
    blank = [Region(r.label, r.bbox, "" if i % 2 else "zq xv kw", "test") for i, r in enumerate(REGIONS)]
    page = _convert(target, "page", regions=blank)
    hsd = _convert(target, "hsd", regions=blank)
    assert page.markdown == hsd.markdown == REF
    assert hsd.stats.stage1_passes == 0
    assert hsd.stats.prefill_passes == 2  # the page, then all five crops in one batch
    assert [s.verified for s in hsd.region_stats] == [True] * 5
    assert hsd.region_outputs[1] == REGION_REFS[1]
    assert hsd.stats.forward_passes < 0.6 * page.stats.forward_passes  # short page: Stage 1 barely ahead


def test_regions_beyond_one_batch_are_admitted_as_slots_free_up(target):
    target.set_page(REF, REGION_REFS)
    engine = Engine(EngineConfig(mode="hsd", stage1_batch=2, max_new_tokens=2048), target=target, drafter=None)
    res = engine.convert_image(Image.new("RGB", (420, 595), "white"), REGIONS, 420, 595, 1)
    assert res.markdown == REF
    assert res.stats.prefill_passes >= 3  # the page and at least two batches of crops
    verified = [s.verified for s in res.region_stats]
    assert verified[0] and verified[1]  # the first batch, read beside the page from the start


def test_a_document_shares_what_one_page_taught_about_notation(target):
    """Page 1's output writes the draft's ``8 wt%TiO2`` as LaTeX; an engine that started the
    document proposes page 2's ``2 wt%TiO2`` that way at once, a fresh engine learns it again."""
    pages = [("The powder with $8 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ was milled for five hours in argon "
              "and the powder with $8 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ was sieved.",
              "The powder with 8 wt%TiO2 was milled for five hours in argon and the powder with 8 wt%TiO2 was sieved."),
             ("Samples with $2 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ were pressed at room temperature and sintered.",
              "Samples with 2 wt%TiO2 were pressed at room temperature and sintered.")]
    image = Image.new("RGB", (420, 595), "white")

    def passes(engine, number):
        ref, draft = pages[number - 1]
        target.set_page(ref, [ref])
        res = engine.convert_image(image, [Region("text", (10, 40, 400, 80), draft, "test")], 420, 595, number)
        assert res.markdown == ref
        return res.stats.forward_passes

    shared = Engine(EngineConfig(mode="page", max_new_tokens=2048), target=target, drafter=None)
    shared.start_document("paper.pdf")
    passes(shared, 1)
    with_document = passes(shared, 2)
    alone = passes(Engine(EngineConfig(mode="page", max_new_tokens=2048), target=target, drafter=None), 2)
    assert with_document < alone
    # another document starts afresh
    notation = shared.notation
    shared.start_document("paper.pdf")
    assert shared.notation is notation
    shared.start_document("other.pdf")
    assert shared.notation is not notation and not shared.notation


def test_without_qwens_tokenizer_auto_falls_back_to_the_tiny_one_and_says_so(monkeypatch):
    """Token counts in the tiny BPE do not compare with Qwen's: a fresh install must not switch silently."""
    import core.bench.replay as replay
    from core.errors import HSDWarning

    monkeypatch.setattr(replay, "qwen_tiktoken_file", lambda: None)
    with pytest.warns(HSDWarning, match="tiny 4 k BPE"):
        assert base_tokenizer("auto").name == "tiny"
