"""GLM-OCR: multimodal RoPE on half of each head (partial rotary), text offset by rope_delta.

``transformers`` maps no processor to glm_ocr; the GLM-4.6V processor (same image tokens, same patch
merging) is used when the checkpoint does not name one. Prompts are the task prompts of its model card.
"""

from core.targets.profiles.base import Profile

PROFILE = Profile(
    family="glm_ocr",
    rope_axes=3,
    page_prompt="Text Recognition:",
    text_prompt="Text Recognition:",
    table_prompt="Table Recognition:",
    formula_prompt="Formula Recognition:",
    page_max_pixels=2048 * 2048,
    stop_tokens=("<|endoftext|>", "<|user|>", "<|observation|>"),
    fallback_processor="Glm46VProcessor",
)
