"""PaddleOCR-VL and GLM-OCR read a page element by element, and hsd stays lossless doing so.

Their page is the layout's text regions, each crop with its label's task prompt, joined in reading
order: that is ``ar``'s reference, and ``hsd`` verifies the regions' drafts on the same crops and
prompts. The losslessness matrix on the real-layout tiny models: at tau = 1 hsd == ar with drafts
right, partly wrong, misplaced and useless. Counted, never timed.
"""

from __future__ import annotations

import random

import pytest

from core.drafters.base import Region
from core.engine import Engine, EngineConfig

ELEMENT_ARCHS = ["paddleocr_vl", "glm_ocr"]
MAX_NEW = 48
PAGE_W, PAGE_H = 300.0, 390.0
LAYOUT = [("title", (10, 10, 290, 40)), ("text", (10, 50, 290, 150)), ("table", (10, 160, 290, 260)),
          ("formula", (10, 270, 290, 300)), ("figure", (10, 310, 290, 380))]


def _regions(texts: list[str]) -> list[Region]:
    return [Region(label, bbox, text, "rapidocr") for (label, bbox), text in zip(LAYOUT, texts)]


@pytest.fixture(params=ELEMENT_ARCHS)
def element_setup(request, lined_page_ar):
    """(target, page image, the page's ar result), converted once per family."""
    return lined_page_ar(request.param, _regions(["unused draft"] * len(LAYOUT)), MAX_NEW, (PAGE_W, PAGE_H))


def _run(target, image, mode, regions, **kw):
    engine = Engine(EngineConfig(mode=mode, max_new_tokens=MAX_NEW, **kw), target=target)
    return engine.convert_image(image, regions, PAGE_W, PAGE_H)


def _corrupt(tokens: list[int], rate: float, rng: random.Random) -> list[int]:
    out = []
    for t in tokens:
        r = rng.random()
        if r < rate / 2:
            out.append(rng.randrange(300, 4000))
        elif r < rate:
            continue
        else:
            out.append(t)
    return out


def _drafts(kind: str, target, ar) -> list[str]:
    rng = random.Random(5)
    per_region = [target.decode(ar_tokens) for ar_tokens in _region_tokens(target, ar)]
    if kind == "exact":
        return per_region
    if kind.startswith("corrupt"):
        rate = float(kind.split("-")[1])
        return [target.decode(_corrupt(target.encode(t), rate, rng)) for t in per_region]
    if kind == "shuffled":
        return per_region[::-1]
    if kind == "unrelated":
        return ["Quarterly revenue grew by 12 percent, driven by cloud services."] * len(per_region)
    if kind == "empty":
        return [""] * len(per_region)
    raise ValueError(kind)


def _region_tokens(target, ar) -> list[list[int]]:
    return [target.encode(text) for text in ar.region_outputs]


def test_ar_reads_each_text_region_with_its_task_prompt_and_never_the_page(element_setup, monkeypatch):
    target, image, ar = element_setup
    requests = []
    real = target.prefill_batch

    def record(batch):
        requests.extend((r.kind, r.label) for r in batch)
        return real(batch)

    monkeypatch.setitem(vars(target), "prefill_batch", record)
    monkeypatch.setitem(vars(target), "prefill", lambda *a, **k: pytest.fail("a whole page was prefilled"))
    result = _run(target, image, "ar", _regions(["x"] * len(LAYOUT)))
    assert requests == [("region", label) for label, _ in LAYOUT if label != "figure"]
    assert [target.profile.prompt("region", label) for _, label in requests][2:4] == [
        "Table Recognition:", "Formula Recognition:"]
    assert result.output_tokens == ar.output_tokens
    texts = [t for t in ar.region_outputs[:4] if t.strip()]
    assert ar.markdown == "\n\n".join(texts) and len(set(ar.output_tokens)) > 40
    assert ar.region_outputs[4] == ""  # figures are not read


#: Every draft kind in hsd; the other modes share its element path, so two kinds each.
LOSSLESS_CASES = ([("hsd", k) for k in ("exact", "corrupt-0.15", "corrupt-0.3", "shuffled", "unrelated", "empty")]
                  + [(m, k) for m in ("page", "regions") for k in ("exact", "corrupt-0.3")])


@pytest.mark.parametrize("mode, kind", LOSSLESS_CASES)
def test_lossless_at_tau_1(element_setup, mode, kind):
    target, image, ar = element_setup
    result = _run(target, image, mode, _regions(_drafts(kind, target, ar)))
    assert result.output_tokens == ar.output_tokens
    assert result.markdown == ar.markdown


def test_exact_drafts_save_passes(element_setup):
    target, image, ar = element_setup
    result = _run(target, image, "hsd", _regions(_drafts("exact", target, ar)))
    assert result.output_tokens == ar.output_tokens
    assert result.stats.forward_passes * 3 <= ar.stats.forward_passes, result.stats.to_dict()


def test_a_page_without_text_regions_reads_as_empty(element_setup):
    target, image, _ = element_setup
    result = _run(target, image, "hsd", [Region("figure", (10, 10, 290, 200), "", "layout")])
    assert result.markdown == "" and result.stats.forward_passes == 0
