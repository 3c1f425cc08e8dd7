"""Qwen2.5-VL: multimodal RoPE over (temporal, height, width); text after the image is offset by rope_delta."""

from core.targets.profiles.base import Profile

PROFILE = Profile(
    family="qwen2_5_vl",
    rope_axes=3,
    # Qwen2.5-VL's document parsing format ("QwenVL HTML"/Markdown) is asked for in plain words.
    page_prompt="Convert this document page to Markdown. Write tables as HTML and formulas as LaTeX.",
    page_max_pixels=1280 * 28 * 28 * 4,
    stop_tokens=("<|im_end|>", "<|endoftext|>"),
    fallback_processor="Qwen2_5_VLProcessor",
)
