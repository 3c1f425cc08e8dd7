"""What the real checkpoints of the supported families look like, as far as a tiny model must copy it.

Special tokens at their real ids, vocabulary sizes, stop ids, rotary layouts and image-processor limits
of the public checkpoints, written down as constants so that nothing at run time needs the checkpoint
files (``docs/models.md`` says where each value comes from and which could be checked against real
metadata). ``core.targets.tiny`` builds its test models from these; the tests compare them with the
real ``tokenizer_config.json`` / ``processor_config.json`` / ``config.json`` files where those are at hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: CLIP's normalisation (HunyuanOCR's processor_config.json, Qwen2.5-VL).
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)


@dataclass(frozen=True)
class ProcessorLimits:
    """The target's image processor as the checkpoint configures it."""

    min_pixels: int
    max_pixels: int
    patch_size: int
    merge_size: int = 2
    temporal_patch_size: int = 2
    image_mean: tuple = CLIP_MEAN
    image_std: tuple = CLIP_STD
    #: PIL resampling filter number (1 LANCZOS, 3 BICUBIC).
    resample: int = 3


@dataclass(frozen=True)
class RealLayout:
    """One family's real token layout and limits.

    ``special_tokens``: name -> real id. ``vocab_size``: rows of the real embedding (the logits'
    width); ``tokenizer_size``: entries of the real tokenizer (Qwen's is smaller than its embedding).
    ``rope``: the real ``rope_parameters`` for a head of ``real_head_dim``; a tiny head scales the
    sections by ``tiny_head_dim / real_head_dim`` (``scaled_rope``).
    """

    family: str
    checkpoint: str
    vocab_size: int
    tokenizer_size: int
    special_tokens: dict[str, int]
    bos: str | None
    eos: str
    pad: str
    stop_tokens: tuple[str, ...]
    image_token: str
    image_start: str
    image_end: str
    rope: dict
    real_head_dim: int
    processor: ProcessorLimits
    extra: dict = field(default_factory=dict)

    def id(self, token: str) -> int:
        return self.special_tokens[token]

    @property
    def stop_ids(self) -> tuple[int, ...]:
        return tuple(self.special_tokens[t] for t in self.stop_tokens)

    def scaled_rope(self, head_dim: int) -> dict:
        """``rope`` with its per-axis sections scaled to a head of ``head_dim`` (same proportions)."""
        rope = dict(self.rope)
        factor = head_dim / self.real_head_dim
        for key in ("mrope_section", "xdrope_section"):
            if key in rope:
                rope[key] = [int(s * factor) for s in rope[key]]
        return rope


# ------------------------------------------------------------------------------------------------
# HunyuanOCR: 120 000 ordinary tokens, then 18 named tokens and 800 numbered placeholders
# (``<｜hy_place▁holder▁no▁N｜>`` = 120018 + N: no_100/101/102 are the image start/end/token at
# 120118-120120, so no_2 is eod 120020 and no_103 the image newline 120121).

HY_PLACEHOLDER_BASE = 120018


def hy_placeholder(n: int) -> str:
    return f"<｜hy_place▁holder▁no▁{n}｜>"


def _hunyuan_specials() -> dict[str, int]:
    named = {120000: "<｜hy_begin▁of▁sentence｜>", 120002: "<｜hy_▁pad▁｜>", 120006: "<｜hy_User｜>",
             120007: "<｜hy_Assistant｜>"}
    tokens = {named.get(i, f"<｜hy_reserved▁{i - 120000}｜>"): i for i in range(120000, HY_PLACEHOLDER_BASE)}
    tokens.update({hy_placeholder(n): HY_PLACEHOLDER_BASE + n for n in range(800)})
    return tokens


HUNYUAN = RealLayout(
    family="hunyuan_vl", checkpoint="tencent/HunyuanOCR",
    vocab_size=120818, tokenizer_size=120818, special_tokens=_hunyuan_specials(),
    bos="<｜hy_begin▁of▁sentence｜>", eos="<｜hy_Assistant｜>", pad="<｜hy_▁pad▁｜>",
    stop_tokens=("<｜hy_Assistant｜>", hy_placeholder(2)),
    image_token=hy_placeholder(102), image_start=hy_placeholder(100), image_end=hy_placeholder(101),
    rope={"rope_type": "xdrope", "rope_theta": 10000.0, "alpha": 1000.0, "factor": 1.0,
          "xdrope_section": [16, 16, 16, 16]},
    real_head_dim=128,
    processor=ProcessorLimits(min_pixels=262144, max_pixels=16777216, patch_size=16, temporal_patch_size=1,
                              resample=1),
    extra={"user": "<｜hy_User｜>", "system_separator": hy_placeholder(3), "image_newline": hy_placeholder(103),
           "eod": hy_placeholder(2), "video_start": hy_placeholder(104), "video_end": hy_placeholder(105),
           "video_token": hy_placeholder(665), "sep_token_id": 0},
)


# ------------------------------------------------------------------------------------------------
# GLM-OCR: GLM-4's special-token order from 59246 (<|endoftext|>) on; config.json names 59246/59253
# as eos and 59256/59257/59280/59281 as image begin/end, image, video.

def _glm_specials() -> dict[str, int]:
    named = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
             "<|assistant|>", "<|observation|>", "<|begin_of_image|>", "<|end_of_image|>",
             "<|begin_of_video|>", "<|end_of_video|>"]
    tokens = {name: 59246 + i for i, name in enumerate(named)}
    for i in range(59246 + len(named), 59392):
        tokens[{59280: "<|image|>", 59281: "<|video|>"}.get(i, f"<|reserved_{i}|>")] = i
    return tokens


GLM_OCR = RealLayout(
    family="glm_ocr", checkpoint="zai-org/GLM-OCR",
    vocab_size=59392, tokenizer_size=59392, special_tokens=_glm_specials(),
    bos=None, eos="<|endoftext|>", pad="<|endoftext|>", stop_tokens=("<|endoftext|>", "<|user|>"),
    image_token="<|image|>", image_start="<|begin_of_image|>", image_end="<|end_of_image|>",
    rope={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0,
          "mrope_section": [16, 24, 24]},
    real_head_dim=128,
    # The official SDK's page loader (glmocr/config.yaml): at least 112 x 112 pixels.
    processor=ProcessorLimits(min_pixels=12544, max_pixels=71372800, patch_size=14, image_mean=CLIP_MEAN,
                              image_std=CLIP_STD),
    extra={"video_token": "<|video|>", "video_start": "<|begin_of_video|>", "video_end": "<|end_of_video|>"},
)


# ------------------------------------------------------------------------------------------------
# PaddleOCR-VL (ERNIE-4.5 0.3B text model): <unk> <s> </s> first, image tokens high up.

PADDLE_OCR_VL = RealLayout(
    family="paddleocr_vl", checkpoint="PaddlePaddle/PaddleOCR-VL",
    vocab_size=103424, tokenizer_size=103424,
    special_tokens={"<unk>": 0, "<s>": 1, "</s>": 2, "<|begin_of_sentence|>": 100273,
                    "<|IMAGE_PLACEHOLDER|>": 100295, "<|IMAGE_START|>": 101305, "<|IMAGE_END|>": 101306,
                    "<|video_pad|>": 101307},
    bos="<s>", eos="</s>", pad="<unk>", stop_tokens=("</s>",),
    image_token="<|IMAGE_PLACEHOLDER|>", image_start="<|IMAGE_START|>", image_end="<|IMAGE_END|>",
    rope={"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [16, 24, 24]},
    real_head_dim=128,
    processor=ProcessorLimits(min_pixels=147384, max_pixels=2822400, patch_size=14, temporal_patch_size=1,
                              image_mean=HALF, image_std=HALF),
    extra={"video_token": "<|video_pad|>"},
)


# ------------------------------------------------------------------------------------------------
# Qwen2.5-VL / Qwen3-VL: Qwen2's BPE of 151 643 tokens, then the chat and vision tokens; the
# embedding has 151 936 rows, more than the tokenizer has tokens.

_QWEN_NAMES = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
               "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
               "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
               "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
               "<|repo_name|>", "<|file_sep|>"]
_QWEN3_NAMES = _QWEN_NAMES + ["<tool_response>", "</tool_response>", "<think>", "</think>"]


def _qwen_layout(family: str, checkpoint: str, names: list[str], rope: dict,
                 processor: ProcessorLimits, **extra) -> RealLayout:
    specials = {name: 151643 + i for i, name in enumerate(names)}
    return RealLayout(
        family=family, checkpoint=checkpoint, vocab_size=151936, tokenizer_size=151643 + len(names),
        special_tokens=specials, bos=None, eos="<|im_end|>", pad="<|endoftext|>",
        stop_tokens=("<|im_end|>", "<|endoftext|>"),
        image_token="<|image_pad|>", image_start="<|vision_start|>", image_end="<|vision_end|>",
        rope=rope, real_head_dim=128, processor=processor, extra={"video_token": "<|video_pad|>", **extra},
    )


QWEN2_5_VL = _qwen_layout(
    "qwen2_5_vl", "Qwen/Qwen2.5-VL-3B-Instruct", _QWEN_NAMES,
    {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
    ProcessorLimits(min_pixels=3136, max_pixels=12845056, patch_size=14), rms_norm_eps=1e-6,
)

QWEN3_VL = _qwen_layout(
    "qwen3_vl", "Qwen/Qwen3-VL-2B-Instruct", _QWEN3_NAMES,
    {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [24, 20, 20], "mrope_interleaved": True},
    ProcessorLimits(min_pixels=65536, max_pixels=16777216, patch_size=16, image_mean=HALF, image_std=HALF),
)

LAYOUTS: dict[str, RealLayout] = {layout.family: layout for layout in
                                  (QWEN2_5_VL, HUNYUAN, QWEN3_VL, PADDLE_OCR_VL, GLM_OCR)}
