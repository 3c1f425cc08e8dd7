"""Native outputs to our Markdown, after decoding, identically for every mode."""

from __future__ import annotations

import dataclasses

import pytest
from PIL import Image, ImageDraw

from core.drafters.base import Region
from core.engine import Engine, EngineConfig
from core.targets.profiles import get_profile
from core.targets.profiles.postprocess import qwen_html_to_markdown, qwen_markdown, trim_trailing_repeats


def test_runaway_tail_is_cut_to_one_copy():
    body = "Page text. " * 800  # 8800 characters of a page that really repeats: no tail unit at the end?
    looping = "Intro line.\n" + "x" * 7990 + "<td></td>" * 40
    assert trim_trailing_repeats(looping) == "Intro line.\n" + "x" * 7990 + "<td></td>"
    assert trim_trailing_repeats("<td></td>" * 40) == "<td></td>" * 40  # short outputs are left alone
    assert trim_trailing_repeats(body.rstrip() + " The end.") == body.rstrip() + " The end."
    assert trim_trailing_repeats("a" * 9000) == "aa"  # the shortest unit, two characters, kept once


def test_qwen3_markdown_loses_fence_and_image_comments():
    native = ("```markdown\n# Title\n\n<!-- Image (12,40,300,200) -->\n\nBody text with $x^2$.\n\n"
              "| a | b |\n|---|---|\n| 1 | 2 |\n```")
    assert qwen_markdown(native) == "# Title\n\nBody text with $x^2$.\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert qwen_markdown("Plain text, no fence.") == "Plain text, no fence."
    assert qwen_markdown("```markdown\nCut off mid-page") == "Cut off mid-page"


def test_qwen_html_becomes_markdown():
    native = ('```html\n<html><body>\n<h1 data-bbox="10 10 200 40">Annual Report</h1>\n'
              '<p data-bbox="10 50 500 90">Revenue grew by <b>12</b> percent.</p>\n'
              '<img data-bbox="10 100 300 300"/>\n'
              '<ul><li data-bbox="1 2 3 4">first</li><li>second</li></ul>\n'
              '<table data-bbox="10 320 500 400"><tr><td colspan="2" data-bbox="1 1 2 2">Total</td></tr>'
              '<tr><td>1</td><td>2</td></tr></table>\n'
              '<div class="formula" data-bbox="10 410 300 440">$$E = mc^2$$</div>\n</body></html>\n```')
    assert qwen_html_to_markdown(native) == (
        "# Annual Report\n\nRevenue grew by 12 percent.\n\n- first\n\n- second\n\n"
        '<table><tr><td colspan="2">Total</td></tr><tr><td>1</td><td>2</td></tr></table>\n\n$$E = mc^2$$')
    assert qwen_html_to_markdown("no markup at all") == "no markup at all"


def test_profiles_post_process_their_native_format():
    assert get_profile("qwen3_vl").postprocess("```markdown\nA\n```") == "A"
    assert get_profile("qwen2_5_vl").postprocess("<p>A</p>") == "A"
    assert get_profile("hunyuan_vl").postprocess("ab" * 5000) == "ab"
    assert get_profile("paddleocr_vl").postprocess("```markdown\nA\n```") == "```markdown\nA\n```"
    assert get_profile("qwen2_5_vl").page_prompt == "QwenVL HTML"
    assert get_profile("qwen3_vl").page_prompt == "qwenvl markdown"


@dataclasses.dataclass(frozen=True)
class _Fenced:
    """A stand-in profile whose native output is its text in a fence (and so changes every page)."""

    base: object

    def __getattr__(self, name):
        return getattr(self.base, name)

    def postprocess(self, text: str) -> str:
        return "[" + text.strip() + "]"


@pytest.mark.parametrize("mode", ["ar", "hsd", "page"])
def test_engine_post_processes_after_decoding_in_every_mode(tiny_target, mode):
    target = tiny_target("qwen3_vl")
    image = Image.new("RGB", (300, 300), "white")
    ImageDraw.Draw(image).text((10, 10), "A short page", fill="black")
    saved = target.profile
    target.profile = _Fenced(saved)
    try:
        ar = Engine(EngineConfig(mode="ar", max_new_tokens=40), target=target).convert_image(image, [], 300, 300)
        drafts = [Region("text", (10, 10, 290, 100), target.decode(ar.output_tokens), "rapidocr")]
        other = Engine(EngineConfig(mode=mode, max_new_tokens=40), target=target).convert_image(
            image, drafts, 300, 300)
    finally:
        target.profile = saved
    assert ar.markdown == "[" + target.decode(ar.output_tokens).strip() + "]"
    assert other.output_tokens == ar.output_tokens and other.markdown == ar.markdown
    assert other.spans == []  # character spans of the raw text no longer fit the converted one
