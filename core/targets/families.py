"""The target families the engine supports, by ``config.model_type``.

Kept free of torch and transformers: the command line checks a model folder's ``config.json``
against it before loading either.
"""

#: ``config.model_type`` -> module under ``core.targets.profiles`` that defines ``PROFILE``.
FAMILY_MODULES = {
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "hunyuan_vl": "hunyuan_vl",
    "paddleocr_vl": "paddleocr_vl",
    "glm_ocr": "glm_ocr",
}
