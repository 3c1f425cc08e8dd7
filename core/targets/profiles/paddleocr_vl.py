"""PaddleOCR-VL: multimodal RoPE over (temporal, height, width), text offset by rope_delta.

The model is trained on the four task prompts of its model card ("OCR:", "Table Recognition:",
"Formula Recognition:", "Chart Recognition:"); a whole page is read with "OCR:".
"""

from core.targets.profiles.base import Profile

PROFILE = Profile(
    family="paddleocr_vl",
    rope_axes=3,
    page_prompt="OCR:",
    text_prompt="OCR:",
    table_prompt="Table Recognition:",
    formula_prompt="Formula Recognition:",
    page_max_pixels=1536 * 1536,
    stop_tokens=("</s>", "<|end_of_sentence|>"),
)
