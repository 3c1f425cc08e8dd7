"""What a verification pass costs in the eager and the fast engine, on a CPU.

The model has a real family's full depth (HunyuanOCR's 24 decoder layers, ``--layers``) and very
thin layers (the tiny models' 64-wide, a 4,096-word head), so a pass is nearly all dispatch and host
work, as a small model's pass is on a GPU. Per engine, the seconds of one pass (model and engine:
the mask, the cache's writes, the rollback) at ``--tokens`` tokens a pass and ``--cached`` cached
tokens, the median of ``--repeats`` rounds that time every case once (on a CPU the process's CPU
seconds: the shared machine's load moves both engines alike):

* eager: ``Target.forward`` over a ``DynamicCache`` (which grows by ``torch.cat``) with the mask the
  decoder builds (``tree_pass_mask``), then the rejected columns cropped off;
* fast: ``FastPasses.forward`` over the static cache, then ``accept`` of the verified path;
* attention: every layer's attention arithmetic alone at that shape, what a pass pays for its
  cached tokens whatever the engine (on a CPU, real arithmetic: the growth left to an engine is
  the rest, each round's fast pass less the attention timed right after it, the median of those);
* on a CPU, the fast pass at the fewest cached tokens right after reading as many bytes as the
  attention at the most does (``cold_caches``): the CPU's caches hold none of the model's weights
  then, as after a long cache's attention. Where the growth beside the attention were that
  eviction, this pass would cost what the long one does beside its attention;
* on a CPU, the fast pass less its own attention kernels (``beside_own_attention``): the profiler's
  times of the attention calls inside the very pass, taken from the pass's time. The attention
  column is the same kernel (the CPU's flash attention, the key/value heads shared inside it, a
  float mask) timed apart, and at 8,000 cached tokens its round-to-round noise is larger than what
  a pass does beside it; inside the pass the two are read off one run of it.

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


class Clock:
    """Seconds of one pass: the process's CPU seconds on a CPU (the shared machine's load then
    slows both engines' passes alike instead of whichever ran while it peaked; with ``--threads 1``
    nothing else of the process runs meanwhile), wall seconds with a device synchronise on a GPU."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        self.name = "wall" if self.cuda else "process CPU"

    def now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
            return time.perf_counter()
        return time.process_time()


def interleaved_medians(runs: dict, repeats: int, clock: Clock) -> dict:
    """The median seconds of each of ``runs`` (name -> (setup, timed)), timed in rounds that run
    every one once, so that a change of the machine's load reaches every measurement alike."""
    return {name: statistics.median(t) for name, t in interleaved_times(runs, repeats, clock).items()}


def interleaved_times(runs: dict, repeats: int, clock: Clock) -> dict:
    """The seconds of each of ``runs`` in each of ``repeats`` rounds that run every one once, in
    the order given (``interleaved_medians``): ``[round]`` of two runs side by side were timed one
    right after the other."""
    for setup, timed in runs.values():  # first calls: allocations, nothing to compile (done at load)
        setup()
        timed()
    times: dict = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (setup, timed) in runs.items():
            setup()
            t0 = clock.now()
            timed()
            times[name].append(clock.now() - t0)
    return times


def eager_pass(target, tokens: int, cached: int):
    """(setup, timed) of one eager pass: the mask the decoder builds, the pass over a
    ``DynamicCache`` of ``cached`` columns, the rejected columns cropped off."""
    from transformers import DynamicCache

    from core.speculative.tree import ancestor_masks
    from core.targets.kv import cache_crop, tree_pass_mask

    text = target.model.config.get_text_config()
    shape = (1, text.num_key_value_heads, cached, text.head_dim)
    like = dict(dtype=target.dtype, device=target.device)
    cache = DynamicCache(ddp_cache_data=[(torch.randn(shape, **like), torch.randn(shape, **like))
                                         for _ in range(text.num_hidden_layers)])
    valid = torch.ones(1, cached, dtype=torch.bool, device=target.device)
    tree = _chain(tokens, random.Random(0))

    def timed():
        mask = tree_pass_mask(valid, ancestor_masks([tree], tokens), target.dtype)
        ids = target.forward(torch.tensor([tree.tokens]), torch.tensor([[cached + d for d in tree.depths]]),
                             mask, cache, torch.zeros(1, dtype=torch.long), greedy=True)
        ids.tolist()
        cache_crop(cache, cached)  # the rejected columns go (a decode keeps about half)

    return (lambda: None), timed


def fast_pass(fast, tokens: int, cached: int):
    """(setup, timed) of one fast pass at ``cached`` cached tokens and the accept of half its
    tree; the setup puts the cached length and its mask back."""
    cache = fast.cache
    tree = _chain(tokens, random.Random(0))

    def setup():
        cache.mask[..., :cached] = 0
        cache.mask[..., cached:] = cache.blocked
        cache.length = cached

    def timed():
        ids = fast.forward(tree, 0, greedy=True)
        ids.tolist()
        fast.accept(list(range(max(1, tokens // 2))))

    return setup, timed


def attention_pass(target, tokens: int, cached: int):
    """(setup, timed) of the attention arithmetic alone of one pass: every layer's
    ``scaled_dot_product_attention`` of ``tokens`` queries over ``cached + tokens`` columns with a
    mask, the floor a CPU pays whatever the engine (it grows with the cached tokens)."""
    text = target.model.config.get_text_config()
    like = dict(dtype=target.dtype, device=target.device)
    heads, kv_heads, dim = text.num_attention_heads, text.num_key_value_heads, text.head_dim
    query = torch.randn(1, heads, tokens, dim, **like)
    # A layer's own keys and values, as in a cache: at 8,000 tokens they outgrow the CPU's caches,
    # and reading them from memory is part of the floor.
    shape = (1, kv_heads, cached + tokens, dim)
    layers = [(torch.randn(shape, **like), torch.randn(shape, **like)) for _ in range(text.num_hidden_layers)]
    mask = torch.zeros(1, 1, tokens, cached + tokens, **like)

    def timed():
        for keys, values in layers:
            torch.nn.functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask,
                                                             enable_gqa=heads != kv_heads)

    return (lambda: None), timed


def quartiles(values: list[float]) -> tuple[float, float]:
    """The first and third quartiles of ``values`` (both the value itself where there is one)."""
    if len(values) < 2:
        return values[0], values[0]
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return first, third


def sweep_bytes(target, tokens: int, cached: int) -> int:
    """Bytes the attention of a pass of ``tokens`` after ``cached`` tokens reads: every layer's
    keys and values over its visible columns, and the mask."""
    text = target.model.config.get_text_config()
    element = torch.tensor([], dtype=target.dtype).element_size()
    columns = cached + tokens
    return element * columns * (2 * text.num_hidden_layers * text.num_key_value_heads * text.head_dim + tokens)


def cold_caches(run, sweep: torch.Tensor):
    """``run`` (setup, timed) whose setup then reads all of ``sweep`` (untimed), so the timed pass
    finds the CPU's caches full of other bytes."""
    setup, timed = run

    def cold_setup():
        setup()
        sweep.sum()

    return cold_setup, timed


#: The profiler's names of a pass's attention kernels (the compiled pass calls the CPU's flash
#: attention itself; an uncompiled one goes through ``scaled_dot_product_attention`` to it).
ATTENTION_KERNELS = ("scaled_dot_product",)


def beside_own_attention(fast, tokens: list[int], cached: list[int], repeats: int) -> dict:
    """Milliseconds of each fast pass less its own attention kernels, ``(tokens, cached) -> [per
    round]``: every pass timed whole (a profiler range around it) and its attention calls inside
    it, by the profiler's clock; rounds run every case once, as ``interleaved_times`` does."""
    from torch.profiler import ProfilerActivity, profile, record_function

    runs = {(t, c): fast_pass(fast, t, c) for c in cached for t in tokens}
    rest: dict = {key: [] for key in runs}
    for _ in range(repeats):
        for key, (setup, timed) in runs.items():
            setup()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                with record_function("hsd fast pass"):
                    timed()
            events = prof.key_averages()
            whole = next(e.cpu_time_total for e in events if e.key == "hsd fast pass")
            attention = sum(e.self_cpu_time_total for e in events if any(k in e.key for k in ATTENTION_KERNELS))
            rest[key].append((whole - attention) / 1000)
    return rest


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
    clock = Clock(target.device)
    for buffer in fast.cache.keys + fast.cache.values:
        buffer.normal_()  # cached tokens of any length hold numbers, as a page's would
    runs = {}
    for c in cached:
        for t in tokens:
            runs["eager", t, c] = eager_pass(target, t, c)
            runs["fast", t, c] = fast_pass(fast, t, c)
            runs["attention", t, c] = attention_pass(target, t, c)
    lo, hi = min(cached), max(cached)
    cold = len(cached) > 1 and not clock.cuda
    if cold:
        sweep = torch.ones(max(sweep_bytes(target, t, hi) for t in tokens) // 4)
        for t in tokens:
            runs["fast, caches cold", t, lo] = cold_caches(fast_pass(fast, t, lo), sweep)
    with torch.no_grad():
        times = interleaved_times(runs, args.repeats, clock)
        ms = {key: 1000 * statistics.median(seconds) for key, seconds in times.items()}
        # A pass less its attention, the two timed one after the other in each round: over several
        # rounds the machine's load moves both of a pair alike, as it does not the medians of each.
        pairs = {(t, c): [1000 * (f - a) for f, a in zip(times["fast", t, c], times["attention", t, c])]
                 for t in tokens for c in cached}
        beside = {key: statistics.median(differences) for key, differences in pairs.items()}
        # How far the rounds' differences spread (their middle half): at thousands of cached tokens the
        # attention's own noise can be larger than what is left of a pass beside it.
        spread = {key: quartiles(differences) for key, differences in pairs.items()}
        # The same of the pass at the fewest cached tokens with the CPU's caches cleared first.
        beside_cold = {t: 1000 * statistics.median(f - a for f, a in zip(times["fast, caches cold", t, lo],
                                                                         times["attention", t, lo]))
                       for t in tokens} if cold else {}
        print(f"milliseconds a pass ({clock.name} time, the median of {args.repeats} interleaved rounds); "
              f"attention: every layer's attention arithmetic alone, the part of a pass that grows with the "
              f"cached tokens whatever the engine")
        print(f"{'tokens':>6} {'cached':>6} {'eager ms':>9} {'fast ms':>8} {'eager/fast':>10} {'attention ms':>12}")
        for c in cached:
            for t in tokens:
                eager, fast_ms, attention = ms["eager", t, c], ms["fast", t, c], ms["attention", t, c]
                print(f"{t:>6} {c:>6} {eager:>9.2f} {fast_ms:>8.2f} {eager / fast_ms:>10.2f} {attention:>12.2f}")
        if len(cached) > 1:
            for t in tokens:
                grown = {engine: ms[engine, t, hi] / ms[engine, t, lo] - 1 for engine in ("eager", "fast")}
                print(f"growth {lo} -> {hi} cached at {t} tokens: eager {grown['eager']:+.0%}, "
                      f"fast {grown['fast']:+.0%} (fast beside its attention arithmetic {beside[t, lo]:.1f} -> "
                      f"{beside[t, hi]:.1f} ms, {beside[t, hi] / beside[t, lo] - 1:+.0%}; the rounds' middle half "
                      f"{spread[t, lo][0]:.1f}-{spread[t, lo][1]:.1f} -> {spread[t, hi][0]:.1f}-{spread[t, hi][1]:.1f} ms)")
            if cold:
                print(f"fast beside its attention at {lo} cached, the CPU's caches cleared first (a read of "
                      f"{sweep.numel() * 4 / 1e6:.0f} MB, what the attention at {hi} reads): "
                      + ", ".join(f"{beside_cold[t]:.1f} ms at {t} tokens ({beside_cold[t] / beside[t, lo] - 1:+.0%})"
                                  for t in tokens))
        if cold:
            own = beside_own_attention(fast, tokens, [lo, hi], args.repeats)
            print("fast beside its own attention kernels (the profiler's times inside each pass, wall clock; "
                  "the median of the rounds, their middle half):")
            for t in tokens:
                low, high = statistics.median(own[t, lo]), statistics.median(own[t, hi])
                (a, b), (c, d) = quartiles(own[t, lo]), quartiles(own[t, hi])
                print(f"  at {t} tokens: {low:.1f} -> {high:.1f} ms from {lo} to {hi} cached, {high / low - 1:+.0%} "
                      f"(middle half {a:.1f}-{b:.1f} -> {c:.1f}-{d:.1f} ms)")
        passes, graphs = page_shapes(fast, args.page_tokens)
    print(f"a page of {args.page_tokens} tokens: {passes} passes at widths {sorted(fast.shapes)}, "
          f"{graphs} graphs compiled during it (all {len(fast.widths)} widths compiled at load in "
          f"{compile_seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
