"""GLM-OCR: multimodal RoPE over the whole head (partial_rotary_factor 1.0), text offset by rope_delta.

``transformers`` maps no processor to glm_ocr; the GLM-4.6V processor (same image tokens, same patch
merging) is used when the checkpoint does not name one. An element-level model: its official SDK
detects the layout and sends one crop per region with "Text Recognition:", "Table Recognition:" or
"Formula Recognition:" (a whole page with "Text Recognition:" is only the model card's quick
example). Stop ids: the config's eos list, <|endoftext|> 59246 and <|user|> 59253.
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
    stop_tokens=("<|endoftext|>", "<|user|>"),
    fallback_processor="Glm46VProcessor",
    element_level=True,
)
