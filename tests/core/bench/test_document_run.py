"""A benchmark document converted as ``hsd convert`` does (``core.bench.document_run``)."""

import pytest

from core.bench.document_run import FixedDrafts, PageReference, run_document
from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.base import Region
from core.drafters.textlayer import TextLayerDrafter
from core.engine import EngineConfig

from tests.core.bench.conftest import PAGES


def _references():
    pages = ["\n\n".join(blocks) for blocks in PAGES["alpha_report"]]
    return {k + 1: PageReference(text, []) for k, text in enumerate(pages)}


@pytest.mark.parametrize("mode", ["ar", "hsd"])
def test_each_page_reads_as_its_own_reference_in_one_run(synthetic_corpus, mode):
    target = ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))
    target.start_document()
    references = _references()
    drafter = FixedDrafts({}) if mode == "ar" else TextLayerDrafter()
    config = EngineConfig(mode=mode, max_new_tokens=2048, background_drafting="on")
    run = run_document(synthetic_corpus / "pairs" / "alpha_report.pdf", config, target, drafter, references)
    assert sorted(run.pages) == [1, 2]
    for number, measure in run.pages.items():
        assert measure.result.markdown == references[number].page  # the target was handed this page's text
        assert measure.result.stats.forward_passes > 0 and measure.cpu_seconds > 0
        assert sum(measure.gains) == measure.result.stats.generated_tokens
        assert (measure.regions == []) if mode == "ar" else bool(measure.regions)  # what the run's drafter found
    assert sum(m.wall_seconds for m in run.pages.values()) <= run.seconds


def test_drafts_computed_beforehand_are_returned_at_once():
    region = Region(label="text", bbox=(0, 0, 10, 10), text="hello", source="test")

    class Page:
        number = 2

    assert FixedDrafts({2: [region]}).draft(Page()) == [region]
    assert FixedDrafts({1: [region]}).draft(Page()) == [] and FixedDrafts({}).draft(Page()) == []
