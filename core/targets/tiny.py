"""Tiny randomly initialised models of the real target architectures, for demos and tests offline.

``build_tiny_model(out_dir, arch)`` writes a folder laid out like a hub checkpoint (config, safetensors
weights, tokenizer, image processor, chat template) so that ``load_target(out_dir)`` loads it through
exactly the same ``from_pretrained`` path as a real model. Sizes follow ``TINY-VLMS.md``: about 3-5 M
parameters, with ``initializer_range`` 0.1 and sharpened q/k-norm attention so that greedy output is
varied rather than a short loop (a losslessness test over a degenerate model proves nothing).
The tokenizer is a byte-level BPE trained on built-in text in well under a second.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from core.targets.tiny_corpus import TOKENIZER_TRAINING_TEXT

TINY_VOCAB_SIZE = 4096
#: Large enough for varied greedy output from random weights (0.02, the default, collapses).
TINY_INITIALIZER_RANGE = 0.1

_TEXT_SIZES = dict(
    hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
    initializer_range=TINY_INITIALIZER_RANGE,
)
_VISION_SIZES = dict(depth=2, hidden_size=128, intermediate_size=256, num_heads=2,
                     initializer_range=TINY_INITIALIZER_RANGE)


# ----------------------------------------------------------------------------------------------
# Tokenizer


def train_tiny_tokenizer(special_tokens: list[str], vocab_size: int = TINY_VOCAB_SIZE):
    """A byte-level BPE trained on the built-in corpus; ``special_tokens`` get ids 0, 1, 2, ... in order.

    Returns a raw ``tokenizers.Tokenizer`` whose vocabulary has exactly ``vocab_size`` entries.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    # Random numbers add enough distinct byte pairs for the trainer to reach the full vocabulary.
    rng = random.Random(0)
    numbers = [" ".join(str(rng.randint(0, 99999)) for _ in range(200)) for _ in range(20)]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special_tokens, min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(TOKENIZER_TRAINING_TEXT + numbers, trainer=trainer)
    if tokenizer.get_vocab_size() != vocab_size:
        raise RuntimeError(f"tiny tokenizer reached {tokenizer.get_vocab_size()} tokens, not {vocab_size}")
    return tokenizer


def _wrap_tokenizer(raw, chat_template: str, **special):
    """``PreTrainedTokenizerFast`` around ``raw``; ``special`` names bos/eos/pad/... and ``extra_special_tokens``."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, **special)
    tokenizer.chat_template = chat_template
    return tokenizer


# ----------------------------------------------------------------------------------------------
# Chat templates (the real models' layouts, reduced to what a one-image, one-text user turn needs)

_QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# ----------------------------------------------------------------------------------------------
# Families


def _qwen_image_processor(patch_size: int):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    factor = patch_size * 2
    return Qwen2VLImageProcessorPil(
        patch_size=patch_size, merge_size=2, temporal_patch_size=2,
        min_pixels=4 * factor * factor, max_pixels=256 * factor * factor,
    )


def _qwen_tokenizer_and_ids():
    """Qwen-VL chat tokens (the real models' names), and their ids in the tiny vocabulary."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
    tokenizer = _wrap_tokenizer(
        train_tiny_tokenizer(specials), _QWEN_TEMPLATE,
        eos_token="<|im_end|>", pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                              "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"},
    )
    return tokenizer, {t: i for i, t in enumerate(specials)}


def _build_qwen2_5_vl(out_dir: Path) -> None:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tokenizer, ids = _qwen_tokenizer_and_ids()
    text = dict(_TEXT_SIZES, vocab_size=len(tokenizer),
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [8, 12, 12]},
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"])
    vision = dict(_VISION_SIZES, out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=14,
                  window_size=112, fullatt_block_indexes=[1])
    config = Qwen2_5_VLConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        initializer_range=TINY_INITIALIZER_RANGE,
    )
    config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    config.pad_token_id = ids["<|endoftext|>"]
    model = Qwen2_5_VLForConditionalGeneration(config)
    _save(out_dir, model, tokenizer, _qwen_image_processor(14), _QWEN_TEMPLATE)


_HUNYUAN_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] }}<|hy_sep|>"
    "{% elif message['role'] == 'user' %}<|hy_User|>"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|hy_image_start|><|hy_image|><|hy_image_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% else %}<|hy_Assistant|>{{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|hy_Assistant|>{% endif %}"
)


def _build_hunyuan_vl(out_dir: Path) -> None:
    from transformers import HunYuanVLConfig, HunYuanVLForConditionalGeneration, HunYuanVLProcessor
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil

    specials = ["<|hy_pad|>", "<|hy_bos|>", "<|hy_eos|>", "<|hy_eod|>", "<|hy_sep|>", "<|hy_User|>",
                "<|hy_Assistant|>", "<|hy_image_start|>", "<|hy_image_end|>", "<|hy_image|>",
                "<|hy_image_newline|>"]
    ids = {t: i for i, t in enumerate(specials)}
    tokenizer = _wrap_tokenizer(
        train_tiny_tokenizer(specials), _HUNYUAN_TEMPLATE,
        bos_token="<|hy_bos|>", eos_token="<|hy_eos|>", pad_token="<|hy_pad|>", sep_token="<|hy_sep|>",
        extra_special_tokens={"image_token": "<|hy_image|>", "image_start_token": "<|hy_image_start|>",
                              "image_end_token": "<|hy_image_end|>"},
    )
    text = dict(_TEXT_SIZES, vocab_size=len(tokenizer),
                rope_parameters={"rope_type": "xdrope", "rope_theta": 10000.0, "alpha": 1000.0, "factor": 1.0,
                                 "xdrope_section": [8, 8, 8, 8]},
                pad_token_id=ids["<|hy_pad|>"], bos_token_id=ids["<|hy_bos|>"], eos_token_id=ids["<|hy_eos|>"],
                eod_token_id=ids["<|hy_eod|>"], sep_token_id=ids["<|hy_sep|>"])
    vision = dict(hidden_size=128, intermediate_size=256, num_attention_heads=2, num_hidden_layers=2,
                  out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=16, max_image_size=512,
                  min_image_size=64, initializer_range=TINY_INITIALIZER_RANGE)
    config = HunYuanVLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|hy_image|>"],
        im_start_id=ids["<|hy_image_start|>"], im_end_id=ids["<|hy_image_end|>"],
        im_newline_id=ids["<|hy_image_newline|>"], initializer_range=TINY_INITIALIZER_RANGE,
    )
    config.eos_token_id = [ids["<|hy_eos|>"], ids["<|hy_eod|>"]]
    config.pad_token_id = ids["<|hy_pad|>"]
    model = HunYuanVLForConditionalGeneration(config)
    image_processor = HunYuanVLImageProcessorPil(min_pixels=4 * 32 * 32, max_pixels=256 * 32 * 32)
    processor = HunYuanVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                   chat_template=_HUNYUAN_TEMPLATE)
    _save(out_dir, model, tokenizer, image_processor, _HUNYUAN_TEMPLATE, processor=processor)


def _build_qwen3_vl(out_dir: Path) -> None:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    tokenizer, ids = _qwen_tokenizer_and_ids()
    text = dict(_TEXT_SIZES, vocab_size=len(tokenizer),
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [12, 10, 10],
                                 "mrope_interleaved": True},
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"])
    vision = dict(_VISION_SIZES, out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=16,
                  num_position_embeddings=1024, deepstack_visual_indexes=[0, 1])
    config = Qwen3VLConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        initializer_range=TINY_INITIALIZER_RANGE,
    )
    config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    config.pad_token_id = ids["<|endoftext|>"]
    model = Qwen3VLForConditionalGeneration(config)
    _save(out_dir, model, tokenizer, _qwen_image_processor(16), _QWEN_TEMPLATE)


_PADDLE_TEMPLATE = (
    "<|begin_of_sentence|>{% for message in messages %}"
    "{% if message['role'] == 'user' %}User: "
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>{% endif %}{% endfor %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}\n"
    "{% elif message['role'] == 'assistant' %}Assistant: {{ message['content'] }}<|end_of_sentence|>"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}Assistant: {% endif %}"
)


def _build_paddleocr_vl(out_dir: Path) -> None:
    from transformers import PaddleOCRVLConfig, PaddleOCRVLForConditionalGeneration, PaddleOCRVLProcessor
    from transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl import (
        PaddleOCRVLImageProcessorPil,
    )

    specials = ["<unk>", "<s>", "</s>", "<|begin_of_sentence|>", "<|end_of_sentence|>", "<|IMAGE_START|>",
                "<|IMAGE_END|>", "<|IMAGE_PLACEHOLDER|>", "<|video_pad|>"]
    ids = {t: i for i, t in enumerate(specials)}
    tokenizer = _wrap_tokenizer(
        train_tiny_tokenizer(specials), _PADDLE_TEMPLATE,
        bos_token="<s>", eos_token="</s>", pad_token="<unk>", unk_token="<unk>",
        extra_special_tokens={"image_token": "<|IMAGE_PLACEHOLDER|>"},
    )
    text = dict(_TEXT_SIZES, vocab_size=len(tokenizer),
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [8, 12, 12]},
                pad_token_id=ids["<unk>"], bos_token_id=ids["<s>"], eos_token_id=ids["</s>"])
    vision = dict(hidden_size=128, intermediate_size=256, num_attention_heads=2, num_hidden_layers=2,
                  image_size=384, patch_size=14, initializer_range=TINY_INITIALIZER_RANGE)
    config = PaddleOCRVLConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|IMAGE_PLACEHOLDER|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|IMAGE_START|>"], vision_end_token_id=ids["<|IMAGE_END|>"],
        initializer_range=TINY_INITIALIZER_RANGE,
    )
    config.eos_token_id = [ids["</s>"], ids["<|end_of_sentence|>"]]
    config.pad_token_id = ids["<unk>"]
    model = PaddleOCRVLForConditionalGeneration(config)
    image_processor = PaddleOCRVLImageProcessorPil(min_pixels=4 * 28 * 28, max_pixels=256 * 28 * 28)
    processor = PaddleOCRVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                     chat_template=_PADDLE_TEMPLATE)
    _save(out_dir, model, tokenizer, image_processor, _PADDLE_TEMPLATE, processor=processor)


_GLM_TEMPLATE = (
    "[gMASK]<sop>{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|begin_of_image|><|image|><|end_of_image|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def _build_glm_ocr(out_dir: Path) -> None:
    from transformers import GlmOcrConfig, GlmOcrForConditionalGeneration
    from transformers.models.glm46v.image_processing_pil_glm46v import Glm46VImageProcessorPil

    specials = ["<|endoftext|>", "[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>",
                "<|observation|>", "<|begin_of_image|>", "<|end_of_image|>", "<|image|>",
                "<|begin_of_video|>", "<|end_of_video|>", "<|video|>"]
    ids = {t: i for i, t in enumerate(specials)}
    tokenizer = _wrap_tokenizer(
        train_tiny_tokenizer(specials), _GLM_TEMPLATE,
        eos_token="<|endoftext|>", pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image|>", "video_token": "<|video|>"},
    )
    # Half the head is rotated, split over (temporal, height, width) as 4 + 6 + 6 frequency pairs.
    text = dict(_TEXT_SIZES, vocab_size=len(tokenizer),
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                                 "mrope_section": [4, 6, 6]},
                pad_token_id=ids["<|endoftext|>"], eos_token_id=[ids["<|endoftext|>"], ids["<|user|>"],
                                                                 ids["<|observation|>"]])
    vision = dict(_VISION_SIZES, out_hidden_size=_TEXT_SIZES["hidden_size"], patch_size=14, image_size=336)
    config = GlmOcrConfig(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image|>"], video_token_id=ids["<|video|>"],
        image_start_token_id=ids["<|begin_of_image|>"], image_end_token_id=ids["<|end_of_image|>"],
        video_start_token_id=ids["<|begin_of_video|>"], video_end_token_id=ids["<|end_of_video|>"],
        initializer_range=TINY_INITIALIZER_RANGE,
    )
    config.eos_token_id = [ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]]
    config.pad_token_id = ids["<|endoftext|>"]
    model = GlmOcrForConditionalGeneration(config)
    image_processor = Glm46VImageProcessorPil(size={"shortest_edge": 4 * 28 * 28, "longest_edge": 256 * 28 * 28})
    _save(out_dir, model, tokenizer, image_processor, _GLM_TEMPLATE)


#: Text-attention query/key RMSNorm weights are multiplied by this (see ``_sharpen_attention``).
QK_NORM_GAIN = 3.0
_QK_NORM_NAMES = ("q_norm", "k_norm", "query_layernorm", "key_layernorm")


def _sharpen_attention(model) -> None:
    """Scale the text decoder's query/key RMSNorm weights by ``QK_NORM_GAIN``.

    Families with q/k normalisation (Qwen3-VL, HunyuanVL) bound the attention logits to about N(0, 1)
    whatever the initializer range, so a random model attends almost uniformly and greedy output
    becomes a bigram loop that ignores context and positions. Sharper attention makes the output
    depend on both, which is what the losslessness tests need to be able to fail.
    """
    import torch

    with torch.no_grad():
        for name, module in model.named_modules():
            is_vision = "visual" in name or "vision" in name or "vit" in name
            if name.endswith(_QK_NORM_NAMES) and not is_vision and getattr(module, "weight", None) is not None:
                module.weight.mul_(QK_NORM_GAIN)


def _save(out_dir: Path, model, tokenizer, image_processor, chat_template: str, processor=None) -> None:
    """Write the folder the way hub checkpoints are laid out (one file per component).

    ``processor`` where the family's processor can be built without torchvision (it then writes the
    processor config too); otherwise tokenizer and image processor are saved on their own.
    """
    _sharpen_attention(model)
    model.save_pretrained(out_dir)  # safetensors is the only format transformers 5.x writes
    if processor is not None:
        processor.save_pretrained(out_dir)
    else:
        tokenizer.save_pretrained(out_dir)
        image_processor.save_pretrained(out_dir)
    (out_dir / "chat_template.jinja").write_text(chat_template, encoding="utf-8")


_BUILDERS: dict[str, Callable[[Path], None]] = {
    "qwen2_5_vl": _build_qwen2_5_vl,
    "hunyuan_vl": _build_hunyuan_vl,
    "qwen3_vl": _build_qwen3_vl,
    "paddleocr_vl": _build_paddleocr_vl,
    "glm_ocr": _build_glm_ocr,
}

#: Architectures ``build_tiny_model`` knows, in the order they were added.
TINY_ARCHS: tuple[str, ...] = tuple(_BUILDERS)


def build_tiny_model(out_dir, arch: str, seed: int = 0) -> Path:
    """Write a tiny random model of architecture ``arch`` (a ``config.model_type``) into ``out_dir``.

    The same ``seed`` gives the same weights. Returns the folder as a ``Path``.
    """
    if arch not in _BUILDERS:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of {', '.join(TINY_ARCHS)}")
    import torch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        _BUILDERS[arch](out)
    return out
