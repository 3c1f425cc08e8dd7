"""Qwen3-VL: interleaved multimodal RoPE over (temporal, height, width); text offset by rope_delta.

The text model also accepts a 4-row form whose first row is the text position used only to build a
mask; with an explicit 4D mask the 3-row form is all it needs. Document parsing: "qwenvl markdown",
whose answer comes inside a ```markdown fence with ``<!-- Image (x1,y1,x2,y2) -->`` comments for
figures; both are removed after decoding.
"""

from dataclasses import dataclass

from core.targets.profiles.base import PageStyle, Profile
from core.targets.profiles.postprocess import qwen_markdown


@dataclass(frozen=True)
class QwenMarkdownProfile(Profile):
    def postprocess(self, text: str) -> str:
        return qwen_markdown(text)


PROFILE = QwenMarkdownProfile(
    family="qwen3_vl",
    rope_axes=3,
    page_prompt="qwenvl markdown",
    page_max_pixels=1280 * 32 * 32 * 4,
    stop_tokens=("<|im_end|>", "<|endoftext|>"),
    fallback_processor="Qwen3VLProcessor",
    # "qwenvl markdown" answers inside a fence; the bare answer stays a choice (short pages)
    style=PageStyle(openings=("```markdown\n", ""), heading_marks=("## ", "# ", "### ")),
)
