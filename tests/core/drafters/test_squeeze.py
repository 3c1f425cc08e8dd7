"""Squeezed reading of CJK lines (``core.drafters.squeeze``): a scripted recogniser checks which
crops are read at which width, and a real OCR run checks the text on a rendered page."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from core import tuning
from core.documents import open_document
from core.drafters import squeeze
from core.drafters.rapidocr import RapidOCRDrafter
from core.drafters.line_stream import PageReads
from core.drafters.ocr_recognise import LineRead
from core.drafters.squeeze import SqueezePolicy

HEIGHT = 24


def crop(tag: int, chars: int, cjk: bool) -> np.ndarray:
    """A uniform crop whose pixel value is ``tag``, as wide as ``chars`` characters of the script
    (a CJK character about an em, 24 px here; a Latin one about half)."""
    width = chars * (HEIGHT if cjk else HEIGHT * 5 // 12)
    return np.full((HEIGHT, width, 3), tag, dtype=np.uint8)


class ScriptedRecognizer:
    """Reads a crop by its pixel value; records the widths it was given, call by call."""

    def __init__(self, texts: dict[int, str]):
        self.texts = texts
        self.calls: list[list[tuple[int, int]]] = []  # per call: (tag, width read)

    def __call__(self, crops: list[np.ndarray]) -> list[LineRead]:
        tags = [int(img[0, 0, 0]) for img in crops]
        self.calls.append([(tag, img.shape[1]) for tag, img in zip(tags, crops)])
        return [LineRead(self.texts[tag], 0.99, (self.texts[tag], 0.99, None), []) for tag in tags]


CJK = "今天的天气很好我们去公园散步然后回家吃饭"


def page(tags: range, latin: set[int] = frozenset()) -> tuple[list[np.ndarray], dict[int, str]]:
    crops, texts = [], {}
    for tag in tags:
        if tag in latin:
            texts[tag] = f"The survey asked shop number {tag} about widgets"
            crops.append(crop(tag, len(texts[tag]), cjk=False))
        else:
            texts[tag] = CJK[: 12 + tag % 8]
            crops.append(crop(tag, len(texts[tag]), cjk=True))
    return crops, texts


def read(policy: SqueezePolicy, inner: ScriptedRecognizer, crops, tell=None) -> PageReads:
    """One page's ``crops`` read through ``policy`` by ``inner``."""
    reads = PageReads(crops, inner, tell=tell)
    policy.read_page(reads)
    return reads


def test_a_latin_document_is_read_at_full_width_and_later_pages_in_one_call():
    crops, texts = page(range(1, 11), latin=set(range(1, 11)))
    inner = ScriptedRecognizer(texts)
    recognizer = SqueezePolicy()
    out = read(recognizer, inner, crops)
    assert out.texts == [texts[t] for t in range(1, 11)]
    assert all(width == crops[tag - 1].shape[1] for call in inner.calls for tag, width in call)
    assert len(inner.calls) == 2  # the sample, then the rest
    inner.calls.clear()
    read(recognizer, inner, crops)
    assert len(inner.calls) == 1 and len(inner.calls[0]) == 10
    assert recognizer.squeezed_lines == 0


def test_a_cjk_page_is_read_squeezed_after_a_full_width_sample():
    crops, texts = page(range(1, 13))
    inner = ScriptedRecognizer(texts)
    recognizer = SqueezePolicy()
    out = read(recognizer, inner, crops)
    assert out.texts == [texts[t] for t in range(1, 13)]  # the order of the input
    assert [w[0] for w in out.words] == list(out.texts)
    sample, rest = inner.calls
    assert len(sample) == 6 and all(width == crops[tag - 1].shape[1] for tag, width in sample)
    for tag, width in rest:
        full = crops[tag - 1].shape[1]
        assert width == max(round(full * tuning.SQUEEZE), round(squeeze.MIN_ASPECT * HEIGHT)) < full
    assert recognizer.squeezed_lines == 6 and recognizer.squeeze_next
    # The next page of the document is squeezed from its first line; a new document samples again.
    inner.calls.clear()
    read(recognizer, inner, crops)
    assert len(inner.calls) == 1 and all(width < crops[tag - 1].shape[1] for tag, width in inner.calls[0])
    recognizer.begin_document()
    inner.calls.clear()
    read(recognizer, inner, crops)
    assert len(inner.calls[0]) == 6
    # A Latin page (references, say) in a CJK document: read at full width, and the page after it
    # is sampled again rather than read at full width for good.
    latin_crops, latin_texts = page(range(20, 32), latin=set(range(20, 32)))
    inner.texts.update(latin_texts)
    read(recognizer, inner, latin_crops)
    assert not recognizer.squeeze_next
    inner.calls.clear()
    read(recognizer, inner, crops)
    assert len(inner.calls[0]) == 6 and recognizer.squeeze_next


def test_a_latin_line_on_a_cjk_page_is_read_again_at_full_width():
    crops, texts = page(range(1, 13), latin={9})
    inner = ScriptedRecognizer(texts)
    recognizer = SqueezePolicy()
    read(recognizer, inner, crops)  # learns the document is CJK
    inner.calls.clear()
    out = read(recognizer, inner, crops)
    squeezed, again = inner.calls
    assert (9, crops[8].shape[1]) in again and len(again) == 1
    assert out.texts[8] == texts[9]
    assert recognizer.squeeze_next  # eleven of twelve lines were dense


def test_crops_narrower_than_320_by_48_are_never_squeezed():
    narrow = crop(1, 5, cjk=True)  # 5 ems: under 320/48 of its height
    assert squeeze.crop_factor(narrow, tuning.SQUEEZE) == 1.0
    wide = crop(2, 40, cjk=True)
    assert squeeze.crop_factor(wide, tuning.SQUEEZE) == tuning.SQUEEZE
    assert squeeze.squeeze_width(wide, 0.5).shape == (HEIGHT, 20 * HEIGHT, 3)


@pytest.fixture(scope="module")
def chinese_pdf(tmp_path_factory):
    lines = ["今天的天气很好，我们去公园散步。", "公园里有很多人在跑步和打太极拳。", "孩子们在草地上放风筝，非常开心。",
             "我们在湖边坐了一会儿，看着水里的鱼。", "中午我们在附近的小饭馆吃了面条。", "下午回家以后，大家都觉得有点累。",
             "晚上我们一起看了一部很有意思的电影。", "明天我们打算去图书馆借几本新书。"]
    latin = "The survey asked one hundred shops"
    doc = pymupdf.open()
    for _ in range(2):
        pdf_page = doc.new_page(width=420, height=320)
        for i, line in enumerate(lines):
            pdf_page.insert_text((30, 40 + 30 * i), line, fontsize=14, fontname="china-s")
        pdf_page.insert_text((30, 40 + 30 * len(lines)), latin, fontsize=12, fontname="helv")
    path = tmp_path_factory.mktemp("cjk") / "cjk.pdf"
    doc.save(path)
    return path, "".join(lines), latin


def test_rapidocr_reads_a_chinese_document_squeezed_with_the_same_text(chinese_pdf):
    path, chinese, latin = chinese_pdf
    texts = {}
    for squeeze_cjk in (False, True):
        drafter = RapidOCRDrafter(layout=False, dpi=200, squeeze_cjk=squeeze_cjk)
        with open_document(path) as doc:
            texts[squeeze_cjk] = ["".join(r.text for r in drafter.draft(p)) for p in doc.pages()]
    assert drafter._ocr_engine().squeeze.squeezed_lines >= 8
    for full, squeezed in zip(texts[False], texts[True]):
        assert Levenshtein.normalized_distance(full, squeezed) < 0.02, (full, squeezed)
        strip = "".join(ch for ch in squeezed if ch not in "，。 \n")
        want = "".join(ch for ch in chinese + latin if ch not in "，。 ")
        assert Levenshtein.normalized_distance(strip, want) < 0.05, strip
        assert latin.replace(" ", "") in squeezed.replace(" ", "")


def test_a_short_cjk_first_page_whose_lines_are_all_in_the_sample():
    """Four lines, all read as the sample: nothing is left to squeeze, and the page still reads."""
    crops, texts = page(range(1, 5))
    inner = ScriptedRecognizer(texts)
    recognizer = SqueezePolicy()
    out = read(recognizer, inner, crops)
    assert out.texts == [texts[t] for t in range(1, 5)]
    assert len(inner.calls) == 1 and recognizer.squeeze_next
