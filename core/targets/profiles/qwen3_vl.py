"""Qwen3-VL: interleaved multimodal RoPE over (temporal, height, width); text offset by rope_delta.

The text model also accepts a 4-row form whose first row is the text position used only to build a
mask; with an explicit 4D mask the 3-row form is all it needs.
"""

from core.targets.profiles.base import Profile

PROFILE = Profile(
    family="qwen3_vl",
    rope_axes=3,
    # Qwen3-VL documents "qwenvl markdown" as its document-parsing request.
    page_prompt="qwenvl markdown",
    page_max_pixels=1280 * 32 * 32 * 4,
    stop_tokens=("<|im_end|>", "<|endoftext|>"),
    fallback_processor="Qwen3VLProcessor",
)
