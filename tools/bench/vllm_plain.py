"""vLLM's plain decoding of HunyuanOCR's architecture with random weights: the reference line a
user would compare HSD Studio with.

The random real-size model's configuration and the tiny model's tokenizer are written to a folder
(no weights: vLLM's ``load_format="dummy"`` fills them at random), then vLLM decodes greedily at
batch 1, ``--tokens`` tokens after a text prompt whose length puts the cache at ``--cached`` tokens,
end of sequence ignored. Printed: milliseconds a generated token (a pass of one token), beside the
seconds to load. Without vLLM installed it says so in one line and exits 0.

    python -m tools.bench.vllm_plain [--tokens 256] [--cached 500,8000]
"""

from __future__ import annotations

import argparse
import tempfile
import time


def write_random_model_folder(folder: str) -> str:
    """HunyuanOCR's real-size configuration and the tiny tokenizer and processor, no weights."""
    from core.bench.replay import HUNYUAN_OCR_TEXT, HUNYUAN_OCR_VISION, real_size_hunyuan_target

    target = real_size_hunyuan_target("cpu", "bf16", layers=1, vision_layers=1)  # one layer: built fast
    config = target.model.config
    config.text_config.num_hidden_layers = HUNYUAN_OCR_TEXT["num_hidden_layers"]
    config.vision_config.num_hidden_layers = HUNYUAN_OCR_VISION["num_hidden_layers"]
    config.architectures = ["HunYuanVLForConditionalGeneration"]
    config.save_pretrained(folder)
    target.processor.save_pretrained(folder)
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.vllm_plain", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=256, help="tokens generated a measurement")
    parser.add_argument("--cached", default="500,8000", help="prompt tokens before the generated ones")
    parser.add_argument("--folder", default=None, help="where to write the configuration (default: a temporary folder)")
    args = parser.parse_args(argv)
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        print("vLLM is not installed: no vLLM reference line (pip install vllm on the GPU machine)")
        return 0
    folder = write_random_model_folder(args.folder or tempfile.mkdtemp(prefix="hsd-vllm-"))
    cached = [int(c) for c in args.cached.split(",")]
    t0 = time.perf_counter()
    llm = LLM(model=folder, load_format="dummy", dtype="bfloat16", max_model_len=max(cached) + args.tokens + 64,
              limit_mm_per_prompt={"image": 0}, enable_prefix_caching=False, seed=0)
    print(f"vLLM loaded HunyuanOCR-size random weights in {time.perf_counter() - t0:.1f} s")
    params = SamplingParams(max_tokens=args.tokens, temperature=0.0, ignore_eos=True)
    for c in cached:
        prompt = {"prompt_token_ids": [100 + i % 3000 for i in range(c)]}
        llm.generate([prompt], SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True), use_tqdm=False)
        short = SamplingParams(max_tokens=1, temperature=0.0, ignore_eos=True)
        t0 = time.perf_counter()
        llm.generate([prompt], short, use_tqdm=False)
        prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = llm.generate([prompt], params, use_tqdm=False)
        total = time.perf_counter() - t0
        generated = len(out[0].outputs[0].token_ids)
        per_token = (total - prefill) / max(1, generated - 1)
        print(f"vLLM plain decoding at {c} cached tokens: {1000 * per_token:.2f} ms a token "
              f"({generated} tokens, prefill {1000 * prefill:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
