"""Replay targets: stand-ins for a VLM whose greedy output is the reference Markdown.

``ReplayTarget`` answers every forward pass from the reference instead of a network: for the page
(``prefill(kind="page")``) its greedy output is the page's reference Markdown, for region ``i``
(``prefill(kind="region", region=i)``) the reference span that region covers (an early OCR line's
crop, ``region=-1 - k``: the span line ``k`` covers). It stands for a reader
exactly as accurate as the reference, so what it measures is how the engine's *acceptance* behaves
with real drafts of real documents: forward passes, accepted lengths, proposal quality. It says
nothing about a real model's accuracy.

How rows are recognised: the engine's decoder batches rows, drops finished ones (``index_select`` on
dim 0 of every cache tensor), trims and compacts columns (slices / ``gather`` on dim 2). Every cache
carries one *tracker* layer whose keys ``(B, 1, T, 1)`` hold, per column, the id of the sequence the
row belongs to; whatever surgery the decoder does, each row's columns still name its sequence (padding
columns from merging are zeros; ids start at 1). The logits of a node at logical position ``p`` are
the one-hot of ``reference[p - prompt_length + 1]`` (then end-of-sequence), i.e. the reference's next
token: on the accepted path every token equals the reference's, so these are exactly the greedy
model's logits there (nodes off the accepted path are never read at ``tau = 1``). One-hot logits
leave no room for the relaxed rule: ``tau < 1`` behaves as ``tau = 1`` under replay.

``CostReplayTarget`` wraps a real ``Target``: every prefill and forward runs the real network on
exactly the shapes HSD runs (the real crops and page image, the real trees, batch and cache), the
tracker layer rides along in the real cache, and acceptance follows the reference as above. Its
wall-clock is that of a deployment whose model reads like the reference.

Token ids are *compact*: a ``ReplayTokenizer`` numbers the base tokenizer's tokens in order of first
use (0 = end of sequence, 1 = padding), so one-hot logits are as wide as the tokens seen so far (a few
thousand) instead of the base vocabulary (150 k for Qwen), which keeps batched tree logits small.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from core.targets.base import BatchPrefill, Prefill, stack_prefills

EOS, PAD = 0, 1
_ONE_HOT = 30.0  # logit of the reference token; every other logit is 0

# --- tokenizers ----------------------------------------------------------------------------------

#: Qwen's BPE pre-tokenisation pattern (Qwen 1/2/2.5/3 share these merges; single-digit numbers).
QWEN_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def qwen_tiktoken_file() -> Path | None:
    """The Qwen BPE ranks file: ``$HSD_QWEN_TIKTOKEN``, else the copy shipped inside the ``dashscope``
    package (``pip install --no-deps dashscope tiktoken``), else None."""
    env = os.environ.get("HSD_QWEN_TIKTOKEN")
    if env and Path(env).is_file():
        return Path(env)
    spec = importlib.util.find_spec("dashscope")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "resources" / "qwen.tiktoken"
        if path.is_file():
            return path
    return None


class _TikTokenBase:
    name = "qwen"

    def __init__(self, path: Path):
        import base64

        import tiktoken

        ranks = {}
        for line in path.read_bytes().splitlines():
            if line:
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
        self.enc = tiktoken.Encoding("qwen", pat_str=QWEN_PATTERN, mergeable_ranks=ranks, special_tokens={})

    def encode(self, text: str) -> list[int]:
        return self.enc.encode_ordinary(text)

    def decode(self, ids: list[int]) -> str:
        return self.enc.decode(ids, errors="replace")


class _HFBase:
    def __init__(self, tokenizer, name: str):
        self.tok, self.name = tokenizer, name

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=True)


def base_tokenizer(choice: str = "auto", model: str | None = None):
    """The tokenizer whose granularity replay counts tokens in.

    ``model`` (a model folder): that model's tokenizer. ``qwen``: Qwen's 151 k BPE (needs ``tiktoken``
    and the ranks file, see ``qwen_tiktoken_file``). ``tiny``: the tiny models' 4 k byte-level BPE
    (always available, but it splits CJK into bytes, which inflates token counts). ``auto``: the
    model's if given, else qwen where available, else tiny.
    """
    if model:
        from transformers import AutoTokenizer

        return _HFBase(AutoTokenizer.from_pretrained(model), f"model:{Path(model).name}")
    if choice in ("auto", "qwen"):
        path = qwen_tiktoken_file()
        if path is not None and importlib.util.find_spec("tiktoken") is not None:
            return _TikTokenBase(path)
        if choice == "qwen":
            from core.errors import HSDError

            raise HSDError("the qwen tokenizer needs tiktoken and Qwen's ranks file: "
                           "pip install tiktoken && pip install --no-deps dashscope, "
                           "or set HSD_QWEN_TIKTOKEN=/path/to/qwen.tiktoken")
    from core.targets.tiny import train_tiny_tokenizer

    if choice == "auto":
        import warnings

        from core.errors import HSDWarning

        # Numbers counted in the tiny BPE do not compare with Qwen-counted ones (CJK pages several
        # times longer): say so where a fresh install would otherwise switch silently.
        warnings.warn("replay counts tokens with the tiny 4 k BPE (CJK split into bytes), not Qwen's: "
                      "pip install tiktoken && pip install --no-deps dashscope, or pass --tokenizer tiny",
                      HSDWarning, stacklevel=2)
    raw = train_tiny_tokenizer(["<eos>", "<pad>"])
    return _HFBase(_RawTok(raw), "tiny")


class _RawTok:
    """``tokenizers.Tokenizer`` with the ``transformers`` call signature the wrapper uses."""

    def __init__(self, raw):
        self.raw = raw

    def encode(self, text, add_special_tokens=False):
        return self.raw.encode(text, add_special_tokens=False).ids

    def decode(self, ids, skip_special_tokens=True):
        return self.raw.decode(ids, skip_special_tokens=skip_special_tokens)


class ReplayTokenizer:
    """A base tokenizer with compact ids (module docstring): 0 is end of sequence, 1 padding."""

    def __init__(self, base):
        self.base = base
        self.name = base.name
        self.to_base: list[int] = [-1, -1]
        self.from_base: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.to_base)

    def reset(self) -> None:
        """Forget the numbering (ids are only meaningful until the next reset): keeps logits narrow."""
        self.to_base, self.from_base = [-1, -1], {}

    def encode(self, text: str) -> list[int]:
        base_ids = self.base.encode(text)
        out = list(map(self.from_base.get, base_ids))
        if None in out:  # tokens not numbered yet: number them in order of appearance
            for k, t in enumerate(base_ids):
                c = self.from_base.get(t)
                if c is None:
                    c = self.from_base[t] = len(self.to_base)
                    self.to_base.append(t)
                out[k] = c
        return out

    def decode(self, ids) -> str:
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        to_base, end = self.to_base, len(self.to_base)
        return self.base.decode([to_base[i] for i in ids if PAD < i < end])


# --- the replay target ---------------------------------------------------------------------------


class ReplayTarget:
    """Greedy output = the reference (module docstring). Set the page with ``set_page`` first.

    It stands for a GPU, where a pass costs the same whatever its width, so the decoder does not
    time its passes (``measures_pass_cost``); ``CostReplayTarget`` runs real passes and is timed."""

    measures_pass_cost = False
    clock = staticmethod(time.perf_counter)  # the wall-clock; the timeline's replay sets a virtual one
    profile = None     # no model family: the output is taken as written (``core.targets.protocol``)
    vocab_size = None  # ids grow with the replayed text: no fixed bound
    device_seconds = None  # no simulated device (``core.bench.simulated_gpu`` has one)
    fast_passes = None  # no static cache: the eager engine's passes (``core.targets.protocol``)

    def __init__(self, tokenizer: ReplayTokenizer, prompt_length: int = 8):
        self.tokenizer = tokenizer
        self.eos_token_ids = frozenset({EOS})
        self.pad_token_id = PAD
        self.dtype = torch.float32
        self.device = torch.device("cpu")
        self.prompt_length = prompt_length
        self.page_reference = ""
        self.region_references: list[str] = []
        self.line_references: list[str] = []
        # sequence id -> (reference + eos, prompt length); id 0 stands for padding
        self._seqs: list[tuple[list[int], int]] = [([EOS], 0)]
        self._table: tuple[torch.Tensor, ...] | None = None  # the sequences as tensors (``_sequence_table``)
        self._kinds: list[str] = [""]
        self._last_root: dict[int, tuple[int, int]] = {}
        #: per row per observed pass: (kind, tokens gained, tree size proposed incl. root, sequence id)
        self.pass_log: list[tuple[str, int, int, int]] = []
        self.prefills = 0
        self.forwards = 0

    # text
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)

    def set_page(self, page_reference: str, region_references: list[str], line_references=()) -> None:
        """What the page and each region (by index in the engine's region list) read as, and each
        early OCR line with a box (by its place among them: ``core.page_job.PageRegions.lines``)."""
        self.page_reference = page_reference
        self.region_references = list(region_references)
        self.line_references = list(line_references)
        self.reset()

    def start_document(self) -> None:
        """Number tokens afresh: one document's tokens only, so one-hot logits stay a few thousand
        wide. Not per page: the engine keeps a document's earlier output as a draft (its token ids
        must keep their meaning from page to page)."""
        if self.tokenizer is not None:
            self.tokenizer.reset()

    def reset(self) -> None:
        """Forget the sequences and the pass log (call between runs; old caches are gone by then)."""
        self._seqs, self._kinds, self._table = [([EOS], 0)], [""], None
        self._last_root = {}
        self.pass_log = []

    def gains(self, kind: str = "page", final: int | None = None) -> list[int]:
        """Tokens gained per pass by the rows of ``kind`` since ``reset``: each pass's accepted path
        (root included), read from where the next pass's root sits. The last pass of a row is never
        followed by another; ``final`` (the page's generated tokens, one page row) closes it."""
        out = [g for k, g, _, _ in self.pass_log if k == kind]
        if final is not None and kind == "page":
            rest = final - sum(out)
            if rest > 0:
                out.append(rest)
        return out

    def reference_for(self, kind: str, region: int | None) -> str:
        if kind == "page":
            return self.page_reference
        if region is not None and region < 0:
            line = -1 - region
            return self.line_references[line] if line < len(self.line_references) else ""
        if region is None or region >= len(self.region_references):
            return ""
        return self.region_references[region]

    # model
    def _new_sequence(self, kind: str, region: int | None, prompt_length: int,
                      replayed: bool = True) -> tuple[int, list[int]]:
        """A new row's sequence id and what it reads (its reference, or nothing where not ``replayed``)."""
        ref = (self.encode(self.reference_for(kind, region)) if replayed else []) + [EOS]
        self._seqs.append((ref, prompt_length))
        self._table = None
        self._kinds.append(kind)
        return len(self._seqs) - 1, ref

    def _one_hot(self, ids: torch.Tensor) -> torch.Tensor:
        width = max(len(self.tokenizer), int(ids.max()) + 1 if ids.numel() else 1)
        out = torch.zeros(*ids.shape, width, dtype=torch.float32)
        out.scatter_(-1, ids.unsqueeze(-1), _ONE_HOT)
        return out

    @staticmethod
    def _tracked_cache(seq: int, columns: int) -> DynamicCache:
        """A prompt's cache as replay keeps it: the tracker layer alone, ``columns`` long."""
        cache = DynamicCache()
        cache.layers = [ReplayTarget._tracker_of(torch.full((1, columns), float(seq)))]
        return cache

    @staticmethod
    def _tracker_of(ids: torch.Tensor) -> DynamicLayer:
        """A cache layer whose keys ``(B, 1, T, 1)`` hold ``ids`` ``(B, T)``: each column's sequence id."""
        layer = DynamicLayer()
        keys = ids[:, None, :, None].float()
        layer.lazy_initialization(keys, keys)
        layer.keys, layer.values = keys, keys.clone()
        return layer

    def prefill(self, image, kind: str = "page", label: str = "text", region: int | None = None) -> Prefill:
        self.prefills += 1
        seq, ref = self._new_sequence(kind, region, self.prompt_length)
        return Prefill(cache=self._tracked_cache(seq, self.prompt_length), length=self.prompt_length, rope_delta=0,
                       logits=self._one_hot(torch.tensor(ref[0]))[...])

    def prefill_batch(self, requests) -> BatchPrefill:
        """Several prompts in one pass, as ``Target.prefill_batch`` runs them for every family."""
        self.prefills += 1
        seqs = [self._new_sequence(r.kind, r.region, self.prompt_length) for r in requests]
        prefills = [Prefill(cache=self._tracked_cache(seq, self.prompt_length), length=self.prompt_length,
                            rope_delta=0, logits=torch.zeros(0)) for seq, _ in seqs]
        bp = stack_prefills(prefills, passes=1)
        bp.logits = self._one_hot(torch.tensor([ref[0] for _, ref in seqs]))  # one width for all rows
        return bp

    def _sequence_table(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every sequence's reference (and end of sequence) one after another, and per sequence id
        where it starts, its length and its prompt's length: a batch is answered by one gather."""
        if self._table is None:
            refs = [ref for ref, _ in self._seqs]
            starts, pos = [], 0
            for ref in refs:
                starts.append(pos)
                pos += len(ref)
            self._table = (torch.tensor([t for ref in refs for t in ref], dtype=torch.long),
                           torch.tensor(starts), torch.tensor([len(r) for r in refs]),
                           torch.tensor([prompt for _, prompt in self._seqs]))
        return self._table

    def _next_tokens(self, positions: torch.Tensor, cache, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """(B, q) reference token following each node; reads row identity from the tracker layer."""
        tracker = cache.layers[-1].keys[:, 0, :, 0]  # (B, T)
        seq = tracker.amax(dim=1).round().long().cpu()
        positions = positions.cpu()
        roots = positions[:, 0].tolist()
        sizes = ((tokens != self.pad_token_id).sum(dim=1).tolist() if tokens is not None
                 else [positions.shape[1]] * positions.shape[0])
        for b, s in enumerate(seq.tolist()):
            if s in self._last_root:
                last_root, last_size = self._last_root[s]
                self.pass_log.append((self._kinds[s], roots[b] - last_root, last_size, s))
            self._last_root[s] = (roots[b], max(1, int(sizes[b])))
        refs, starts, lengths, prompts = self._sequence_table()
        # node at logical position p: the reference's token p - prompt + 1, then end of sequence
        at = (positions - (prompts[seq] - 1)[:, None]).clamp_(min=0)
        at = torch.minimum(at, (lengths[seq] - 1)[:, None])
        return refs[starts[seq][:, None] + at]

    @staticmethod
    def _grow_tracker(cache, q: int) -> None:
        layer = cache.layers[-1]
        seq = layer.keys.amax(dim=2, keepdim=True)  # (B, 1, 1, 1)
        new = seq.expand(-1, -1, q, -1)
        layer.keys = torch.cat([layer.keys, new], dim=2)
        layer.values = torch.cat([layer.values, new], dim=2)

    def forward(self, tokens, positions, attention_mask, cache, rope_deltas=None, real=None,
                greedy: bool = False) -> torch.Tensor:
        self.forwards += 1
        B, q = tokens.shape
        expected = (B, 1, q, cache.get_seq_length() + q)
        if tuple(attention_mask.shape) != expected:
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, expected {expected}")
        nxt = self._next_tokens(positions, cache, tokens.cpu())
        self._grow_tracker(cache, q)
        return nxt if greedy else self._one_hot(nxt)


class CostReplayTarget(ReplayTarget):
    """Real passes of a wrapped ``Target`` (exact shapes), acceptance from the reference.

    ``replay=False`` makes it a plain pass-through that only records accepted lengths (``pass_log``):
    the real model's own logits decide, with the real tokenizer (``--target real``)."""

    measures_pass_cost = True

    def __init__(self, real, tokenizer: ReplayTokenizer | None = None, replay: bool = True):
        super().__init__(tokenizer)
        self.real = real
        self.replay = replay
        self.dtype = real.dtype
        self.device = real.device
        self.real_vocab = int(real.vocab_size)
        if not replay:
            self.eos_token_ids = real.eos_token_ids
            self.pad_token_id = real.pad_token_id

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text) if self.replay else self.real.encode(text)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids) if self.replay else self.real.decode(ids)

    def prefill(self, image, kind: str = "page", label: str = "text", region: int | None = None) -> Prefill:
        self.prefills += 1
        p = self.real.prefill(image, kind=kind, label=label, region=region)
        seq, ref = self._new_sequence(kind, region, p.length, self.replay)
        columns = int(p.cache.get_seq_length())
        p.cache.layers.append(self._tracker_of(torch.full((1, columns), float(seq), device=self.device)))
        if not self.replay:
            return p
        int(p.logits.argmax())  # the real argmax the engine would take
        return Prefill(cache=p.cache, length=p.length, rope_delta=p.rope_delta,
                       logits=self._one_hot(torch.tensor(ref[0])))

    def prefill_batch(self, requests) -> BatchPrefill:
        self.prefills += 1
        bp = self.real.prefill_batch(requests)
        seqs, refs = [], []
        for r, length in zip(requests, bp.lengths):
            seq, ref = self._new_sequence(r.kind, r.region, length, self.replay)
            seqs.append(seq)
            refs.append(ref)
        ids = bp.valid.to(torch.float32) * torch.tensor(seqs, dtype=torch.float32, device=bp.valid.device)[:, None]
        bp.cache.layers.append(self._tracker_of(ids.to(self.device)))  # padding columns: id 0
        if self.replay:
            bp.logits.argmax(dim=-1).tolist()  # the real argmax the engine would take
            bp.logits = self._one_hot(torch.tensor([ref[0] for ref in refs]))
        return bp

    def forward(self, tokens, positions, attention_mask, cache, rope_deltas=None, real=None,
                greedy: bool = False) -> torch.Tensor:
        self.forwards += 1
        q = tokens.shape[1]
        nxt = self._next_tokens(positions, cache, tokens.cpu())
        tracker = cache.layers.pop()
        try:
            ids = tokens % self.real_vocab if self.replay else tokens
            out = self.real.forward(ids, positions, attention_mask, cache, rope_deltas, real=real, greedy=greedy)
            if self.replay:  # what verification reads from the real pass
                (out if greedy else out.argmax(dim=-1)).tolist()
        finally:
            cache.layers.append(tracker)
        self._grow_tracker(cache, q)
        if not self.replay:
            return out
        return nxt if greedy else self._one_hot(nxt)


# --- real-size random models (GPU) ---------------------------------------------------------------

#: HunyuanOCR's published dimensions (1B: 0.5 B language model, 0.4 B vision encoder).
HUNYUAN_OCR_TEXT = dict(hidden_size=1024, intermediate_size=3584, num_hidden_layers=24, num_attention_heads=16,
                        num_key_value_heads=8, head_dim=128, vocab_size=120818, max_position_embeddings=32768,
                        tie_word_embeddings=True)
HUNYUAN_OCR_VISION = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
                          out_hidden_size=1024, patch_size=16, max_image_size=2048, min_image_size=512)


def real_size_hunyuan_target(device: str = "cuda", dtype: str = "bf16", layers: int | None = None,
                             vision_layers: int | None = None, seed: int = 0):
    """A randomly initialised model of HunyuanOCR's size (``layers`` / ``vision_layers`` shrink it for
    CPU tests), wrapped as a ``Target`` with the tiny model's tokenizer and processor (the processor's
    pixel limits raised to the real page size). Weights are random: only its timing means anything."""
    import tempfile

    from transformers import AutoProcessor, HunYuanVLConfig, HunYuanVLForConditionalGeneration

    from core.targets.base import Target
    from core.targets.loader import pick_device, pick_dtype
    from core.targets.profiles import get_profile
    from core.targets.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        build_tiny_model(tmp, "hunyuan_vl", seed=seed)
        processor = AutoProcessor.from_pretrained(tmp)
        tiny_config = HunYuanVLConfig.from_pretrained(tmp)
    ip = processor.image_processor
    profile = get_profile("hunyuan_vl")
    for attr, value in (("max_pixels", profile.page_max_pixels), ("min_pixels", 512 * 512)):
        if hasattr(ip, attr):
            setattr(ip, attr, value)
    if isinstance(getattr(ip, "size", None), dict):
        ip.size = dict(ip.size, longest_edge=profile.page_max_pixels, shortest_edge=512 * 512)
    text = _sub_config(tiny_config.text_config)
    text.update(HUNYUAN_OCR_TEXT, initializer_range=0.02,
                rope_parameters={"rope_type": "xdrope", "rope_theta": 10000.0, "alpha": 1000.0, "factor": 1.0,
                                 "xdrope_section": [16, 16, 16, 16]})
    vision = _sub_config(tiny_config.vision_config)
    vision.update(HUNYUAN_OCR_VISION, initializer_range=0.02)
    if layers:
        text["num_hidden_layers"] = layers
    if vision_layers:
        vision["num_hidden_layers"] = vision_layers
    config = HunYuanVLConfig(text_config=text, vision_config=vision, image_token_id=tiny_config.image_token_id,
                             im_start_id=tiny_config.im_start_id, im_end_id=tiny_config.im_end_id,
                             im_newline_id=tiny_config.im_newline_id)
    config.eos_token_id = tiny_config.eos_token_id
    config.pad_token_id = tiny_config.pad_token_id
    torch_device = pick_device(device)
    torch_dtype = pick_dtype(torch_device, dtype)
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        with torch.device(torch_device):
            model = HunYuanVLForConditionalGeneration(config).to(torch_dtype)
    model.eval()
    tokenizer = processor.tokenizer
    eos = frozenset(int(e) for e in (config.eos_token_id if isinstance(config.eos_token_id, list)
                                     else [config.eos_token_id]))
    return Target(profile=profile, model=model, processor=processor, tokenizer=tokenizer, device=torch_device,
                  dtype=torch_dtype, eos_token_ids=eos, pad_token_id=int(config.pad_token_id))


def _sub_config(config) -> dict:
    """A sub-model's configuration as keyword arguments for a new one (what names the saved one left out)."""
    left_out = ("_name_or_path", "transformers_version", "architectures", "model_type", "dtype", "torch_dtype")
    return {k: v for k, v in config.to_dict().items() if k not in left_out}
