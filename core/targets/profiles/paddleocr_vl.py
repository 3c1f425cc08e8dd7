"""PaddleOCR-VL: multimodal RoPE over (temporal, height, width), text offset by rope_delta.

An element-level model: the model card's page parsing is layout detection, then one request per
element with one of its four task prompts ("OCR:", "Table Recognition:", "Formula Recognition:",
"Chart Recognition:"); transformers supports exactly that. A page is never sent whole with an
element prompt. The stop id is eos ``</s>``; ``<|end_of_sentence|>`` is a separator, not an eos.
"""

from core.targets.profiles.base import Profile

PROFILE = Profile(
    family="paddleocr_vl",
    rope_axes=3,
    page_prompt="OCR:",
    text_prompt="OCR:",
    table_prompt="Table Recognition:",
    formula_prompt="Formula Recognition:",
    chart_prompt="Chart Recognition:",
    page_max_pixels=1536 * 1536,
    stop_tokens=("</s>",),
    element_level=True,
)
