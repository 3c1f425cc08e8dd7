"""Qwen2.5-VL: multimodal RoPE over (temporal, height, width); text after the image is offset by rope_delta.

Document parsing as the Qwen2.5-VL cookbook asks for it: "QwenVL HTML", an HTML page whose blocks
carry ``data-bbox`` attributes, turned into our Markdown after decoding. The chat template adds its
default system message ("You are a helpful assistant.") itself.
"""

from dataclasses import dataclass

from core.targets.profiles.base import PageStyle, Profile
from core.targets.profiles.postprocess import qwen_html_to_markdown


@dataclass(frozen=True)
class QwenHtmlProfile(Profile):
    def postprocess(self, text: str) -> str:
        return qwen_html_to_markdown(text)


PROFILE = QwenHtmlProfile(
    family="qwen2_5_vl",
    rope_axes=3,
    page_prompt="QwenVL HTML",
    page_max_pixels=1280 * 28 * 28 * 4,
    stop_tokens=("<|im_end|>", "<|endoftext|>"),
    fallback_processor="Qwen2_5_VLProcessor",
    # "QwenVL HTML" answers with a fenced HTML page
    style=PageStyle(openings=("```html\n<html><body>\n", "")),
)
