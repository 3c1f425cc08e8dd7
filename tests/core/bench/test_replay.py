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
