"""What a verification pass costs in the eager and the fast engine, on a CPU.

The model has a real family's full depth (HunyuanOCR's 24 decoder layers, ``--layers``) and very
thin layers (the tiny models' 64-wide, a 4,096-word head), so a pass is nearly all dispatch and host
work, as a small model's pass is on a GPU. Per engine, the seconds of one pass (model and engine:
the mask, the cache's writes, the rollback) at ``--tokens`` tokens a pass and ``--cached`` cached
tokens, the median of ``--repeats``:

* eager: ``Target.forward`` over a ``DynamicCache`` (which grows by ``torch.cat``) with the mask the
  decoder builds (``tree_pass_mask``), then the rejected columns cropped off;
* fast: ``FastPasses.forward`` over the static cache, then ``accept`` of the verified path.

Then a page of ``--page-tokens`` tokens decoded through the fast engine at tree sizes drawn from
1 to 128: how many shapes it compiled (torch.compile's graphs) beside the compile seconds at load.

    python -m tools.bench.engine_cost [--layers 24] [--repeats 20] [--no-compile]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

import torch

from core import tuning

THIN_VOCAB = 4096


def thin_target(family: str = "hunyuan_vl", layers: int = 24, folder: str | None = None):
    """A ``Target`` of ``family``'s tiny architecture at ``layers`` decoder layers and a small head,
    random weights, fp32 on the CPU; no tokenizer or processor (passes only)."""
    from transformers import AutoConfig, AutoModelForImageTextToText

    from core.targets.base import Target
    from core.targets.profiles import get_profile
    from core.targets.tiny import build_tiny_model

    folder = folder or tempfile.mkdtemp(prefix="hsd-thin-")
    build_tiny_model(folder, family, seed=0)
    config = AutoConfig.from_pretrained(folder)
    text = config.get_text_config()
    text.num_hidden_layers = layers
    text.vocab_size = THIN_VOCAB
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "eod_token_id", "sep_token_id"):
        if isinstance(getattr(text, name, None), int) and getattr(text, name) >= THIN_VOCAB:
            setattr(text, name, 0)
    if getattr(text, "layer_types", None):
        text.layer_types = [text.layer_types[0]] * layers
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32).eval()
    profile = get_profile(family)
    model.config._attn_implementation = profile.attention("cpu")
    return Target(profile=profile, model=model, processor=None, tokenizer=None, device=torch.device("cpu"),
                  dtype=torch.float32, eos_token_ids=frozenset({1}), pad_token_id=0)


def _chain(tokens: int, rng: random.Random):
    from core.speculative.tree import DraftTree

    return DraftTree([rng.randrange(2, THIN_VOCAB) for _ in range(tokens)], list(range(-1, tokens - 1)),
                     list(range(tokens)), [None] * tokens)


def _median_seconds(run, repeats: int) -> float:
    run()  # first call: allocations (and, for the fast engine, nothing more: compiled at load)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def eager_pass_seconds(target, tokens: int, cached: int, repeats: int) -> float:
    from transformers import DynamicCache

    from core.speculative.tree import ancestor_masks
    from core.targets.kv import cache_crop, tree_pass_mask

    text = target.model.config.get_text_config()
    shape = (1, text.num_key_value_heads, cached, text.head_dim)
    like = dict(dtype=target.dtype, device=target.device)
    cache = DynamicCache(ddp_cache_data=[(torch.randn(shape, **like), torch.randn(shape, **like))
                                         for _ in range(text.num_hidden_layers)])
    valid = torch.ones(1, cached, dtype=torch.bool, device=target.device)
    rng = random.Random(0)
    tree = _chain(tokens, rng)

    def run():
        mask = tree_pass_mask(valid, ancestor_masks([tree], tokens), target.dtype)
        ids = target.forward(torch.tensor([tree.tokens]), torch.tensor([[cached + d for d in tree.depths]]),
                             mask, cache, torch.zeros(1, dtype=torch.long), greedy=True)
        ids.tolist()
        cache_crop(cache, cached)  # the rejected columns go (a decode keeps about half)

    return _median_seconds(run, repeats)


def fast_pass_seconds(fast, tokens: int, cached: int, repeats: int) -> float:
    cache = fast.cache
    for buffer in cache.keys + cache.values:
        buffer[:, :, :cached].normal_()
    cache.mask[..., :cached] = 0
    cache.mask[..., cached:] = cache.blocked
    rng = random.Random(0)
    tree = _chain(tokens, rng)

    def run():
        cache.length = cached
        ids = fast.forward(tree, 0, greedy=True)
        ids.tolist()
        fast.accept(list(range(max(1, tokens // 2))))

    return _median_seconds(run, repeats)


def page_shapes(fast, page_tokens: int, seed: int = 0) -> tuple[int, int]:
    """Decode ``page_tokens`` tokens' worth of passes at tree sizes drawn from 1 to ``MAX_NODES``:
    (passes, torch.compile graphs compiled meanwhile)."""
    from torch._dynamo.utils import counters

    rng = random.Random(seed)
    before = counters["stats"]["unique_graphs"]
    fast.cache.length = 0
    fast.cache.mask[..., :] = fast.cache.blocked
    passes = done = 0
    while done < page_tokens:
        size = rng.choice([1, 1, rng.randrange(2, 17), rng.randrange(2, 65), rng.randrange(2, tuning.MAX_NODES + 1)])
        fast.forward(_chain(size, rng), 0, greedy=True)
        accepted = rng.randrange(1, size + 1)
        fast.accept(list(range(accepted)))
        done += accepted
        passes += 1
    return passes, counters["stats"]["unique_graphs"] - before


def main(argv=None) -> int:
    from core.targets.fast_pass import FastPasses

    parser = argparse.ArgumentParser(prog="python -m tools.bench.engine_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="hunyuan_vl")
    parser.add_argument("--model", default="thin", choices=("thin", "hunyuan-ocr-random"),
                        help="thin: the family's tiny layers at --layers depth (default); hunyuan-ocr-random: "
                             "a random model of HunyuanOCR's real size (a GPU's measurement)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="fp32")
    parser.add_argument("--layers", type=int, default=24, help="decoder layers (HunyuanOCR: 24)")
    parser.add_argument("--tokens", default="1,16,64,128", help="tokens a pass")
    parser.add_argument("--cached", default="500,8000", help="cached tokens")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--page-tokens", type=int, default=2000)
    parser.add_argument("--no-compile", action="store_true", help="the fast engine's cache and widths, uncompiled")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tokens = [int(t) for t in args.tokens.split(",")]
    cached = [int(c) for c in args.cached.split(",")]
    if args.model == "thin":
        target = thin_target(args.family, args.layers)
    else:
        from core.bench.replay import real_size_hunyuan_target

        target = real_size_hunyuan_target(args.device, args.dtype)
    fast = FastPasses(target, max(*cached, args.page_tokens) + tuning.FAST_PASS_WIDTHS[-1] + 1, tuning.FAST_PASS_WIDTHS,
                      compiled=not args.no_compile)
    compile_seconds = fast.warm_up()
    what = "compiled" if fast.compiled else "uncompiled"
    text = target.model.config.get_text_config()
    print(f"{target.family}, {text.num_hidden_layers} layers of width {text.hidden_size}, {target.dtype} on "
          f"{target.device}, torch {torch.__version__}, {torch.get_num_threads()} threads; fast engine {what}"
          f"{' over the whole buffer (CUDA graphs)' if fast.full_length else ''}, "
          f"{len(fast.widths)} widths warmed up in {compile_seconds:.1f} s")
    print(f"{'tokens':>6} {'cached':>6} {'eager ms':>9} {'fast ms':>8} {'eager/fast':>10}")
    fast_at: dict[tuple[int, int], float] = {}
    eager_at: dict[tuple[int, int], float] = {}
    with torch.no_grad():
        for c in cached:
            for t in tokens:
                eager_at[t, c] = eager_pass_seconds(target, t, c, args.repeats)
                fast_at[t, c] = fast_pass_seconds(fast, t, c, args.repeats)
                print(f"{t:>6} {c:>6} {1000 * eager_at[t, c]:>9.2f} {1000 * fast_at[t, c]:>8.2f} "
                      f"{eager_at[t, c] / fast_at[t, c]:>10.2f}", flush=True)
        if len(cached) > 1:
            lo, hi = min(cached), max(cached)
            for t in tokens:
                print(f"growth {lo} -> {hi} cached at {t} tokens: eager {eager_at[t, hi] / eager_at[t, lo] - 1:+.0%}, "
                      f"fast {fast_at[t, hi] / fast_at[t, lo] - 1:+.0%}")
        passes, graphs = page_shapes(fast, args.page_tokens)
    print(f"a page of {args.page_tokens} tokens: {passes} passes at widths {sorted(fast.shapes)}, "
          f"{graphs} graphs compiled during it (all {len(fast.widths)} widths compiled at load in "
          f"{compile_seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
