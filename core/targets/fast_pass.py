"""The fast engine's verification pass: a static cache, a few fixed widths, compiled once per load.

``FastPasses`` holds one ``core.targets.static_kv.StaticPageCache`` for the loaded model and runs a
pass of a draft tree padded to the smallest of ``tuning.FAST_PASS_WIDTHS`` that holds it, so a page
runs a handful of shapes (one per width) instead of one per tree size. The decoder stack (the
family's own transformers modules, fed the static cache and a prepared mask) is compiled with
``torch.compile`` per width; the cached length is a dynamic dimension, so a width compiles once
however long the page. The decoder layers are one compiled region (``DecoderLayerRegion``, a
``torch.compiler.nested_compile_region``): torch.compile traces and compiles one layer and runs it
at every depth, so compiling takes about as long for 24 layers as for one. Its options
(``compile_options``) take the host work a call does before the kernels run down: no guards on
the model's modules and weights, no size assertions. ``warm_up`` compiles
every width at load time (``compile_seconds``). The output head runs after the compiled part on
the real positions only (the CPU's skinny head).

``compiled=False`` runs the same static cache and widths without compiling: what the lossless
tests check on every family without paying for a compile each.

Several rows decode in one pass (Stage 1's regions beside Stage 2's page): each has a slot of the
static cache (``StaticPageCache.take``), its own length and rope delta, and the pass runs the slots
``[0, top)``, every row's tree padded to the one width that holds the widest (``forward_rows``).
Compiled, the number of rows is a dynamic dimension too: a width compiles once for one row and once
for several (``warm_up``).
"""

from __future__ import annotations

import contextlib
import logging
import time

import torch

from core import tuning
from core.targets.cpu_head import greedy_ids
from core.targets.static_kv import PassCache, SlotsDoNotFit, StaticPageCache

log = logging.getLogger(__name__)

#: Cached tokens (garbage) the warm-up passes run after: any length above 1 compiles the graph
#: every later length runs.
WARM_UP_LENGTH = 37

#: The decode engines users choose between (``--engine``).
ENGINES = ("eager", "fast")


def install_fast_engine(target, compiled: bool = True, capacity: int = tuning.FAST_CACHE_TOKENS,
                        widths: tuple[int, ...] = tuning.FAST_PASS_WIDTHS) -> "FastPasses | None":
    """Give ``target`` a fast engine (``target.fast_passes``), compiled now where ``compiled``:
    a step of loading the model, whose seconds ``compile_seconds`` keeps. None, with a warning,
    where not one row of its cache fits the device's memory: the target decodes eagerly."""
    try:
        fast = FastPasses(target, capacity, widths, compiled=compiled)
    except SlotsDoNotFit as exc:
        import warnings

        from core.errors import HSDWarning

        warnings.warn(HSDWarning(str(exc)), stacklevel=2)
        return None
    seconds = fast.warm_up()
    if compiled:
        log.info("compiled the verification pass at %d widths in %.1f s", len(fast.widths), seconds)
    target.fast_passes = fast
    return fast


def compile_options(full_length: bool) -> dict:
    """``torch.compile`` options of a fast pass (never the compiler's global settings, which other
    code compiles with too). A pass is mostly host work before every layer's kernels run, so:

    * no guards on the model's modules and weights (``skip_guard_on_all_nn_modules_unsafe``):
      thousands of checks a call at 24 layers (each layer's hooks, attributes and weights), though
      a load's model, weights and attention function never change under its passes (the pass
      sets the same attention function and layers each time, ``_fast_modules``). The guards on
      the pass's own inputs stay: they choose the width's graph, and one row's or several's;
    * no size assertions (``size_asserts``): a check of every weight's and buffer's sizes each
      call, which the load's fixed weights and the guards on the pass's inputs make needless;
    * not ``cpp_wrapper`` (the graph's calls from C++): on the 24-layer thin CPU model at 64
      tokens the compiled call cost 11.1 ms of CPU against 11.4 without, and compiling a width
      93 s of CPU against 25 (and the C++ compiler's besides): what a call does beside its kernels
      is not the Python that calls them;
    * CUDA graphs where the pass runs over the whole buffer (``reduce-overhead``'s own option)."""
    from torch._inductor import list_mode_options

    options = dict(list_mode_options("reduce-overhead")) if full_length else {}
    options.update({"size_asserts": False, "guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe})
    return options


def fast_passes_of(target) -> "FastPasses | None":
    """The target's fast engine where it loaded one (``Target.fast_passes``); None for the eager
    engine and for stand-ins (the benchmark's replay targets), which have no static cache."""
    return target.fast_passes


class DecoderLayerRegion(torch.nn.Module):
    """One decoder layer as a region torch.compile compiles once for all the layers alike (the
    same code over each layer's own weights). Swapped in for the layers during a compiled pass
    only (``FastPasses._fast_modules``): the eager engine's model is left as it was."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer

    @torch.compiler.nested_compile_region
    def forward(self, *args, **kwargs):
        return self.layer(*args, **kwargs)


#: The attention function of a fast pass (registered with transformers by that name).
STATIC_ATTENTION = "hsd_static_sdpa"


def static_sdpa_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                          **kwargs):
    """transformers' sdpa attention for a pass over the static cache, the key/value heads shared
    by their query heads inside the kernel (``enable_gqa``): transformers' own sdpa copies every
    cached key and value once per query head sharing them (``repeat_kv``) whenever it is compiled
    or a pass has more than one token, a copy of the whole visible cache at every layer."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if kwargs.get("sliding_window") or kwargs.get("position_bias") is not None or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                           scale=scaling, enable_gqa=key.shape[1] != query.shape[1])
    return out.transpose(1, 2).contiguous(), None


def _register_static_attention() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(STATIC_ATTENTION, static_sdpa_attention)


def _text_model(model):
    """The decoder stack of a loaded VLM (``model.model.language_model`` in every family)."""
    inner = model.model
    return getattr(inner, "language_model", inner)


class FastPasses:
    """Verification passes of one row or several over a static cache (see the module docstring)."""

    def __init__(self, target, capacity: int, widths: tuple[int, ...], compiled: bool = True,
                 full_length: bool | None = None):
        """``full_length``: every pass attends over the whole buffer, so its shapes never change and
        CUDA graphs can replay it (``torch.compile``'s ``reduce-overhead``); default on CUDA. Else a
        pass attends over the cached tokens only, the cached length a dynamic dimension (a CPU's
        attention costs by the column)."""
        self.target = target
        self.widths = tuple(sorted(widths))
        self.cache = StaticPageCache.for_model(target.model, capacity, self.widths[-1], target.dtype,
                                               target.device, rows=2 if compiled else 1)  # warm_up's rows
        self.compiled = compiled
        if full_length is None:
            full_length = getattr(target.device, "type", str(target.device)) == "cuda"
        self.full_length = full_length
        self.compile_seconds = 0.0
        self.shapes: set[int] = set()  # widths run since load: each one compiled graph
        self.batched_passes = 0  # passes of several rows since load
        self._inner = target.model.model
        self._head = target.model.get_output_embeddings()
        self._hidden = self._decoder_stack
        self._text = _text_model(target.model)
        self._text_config = target.model.config.get_text_config()
        _register_static_attention()
        self._regions = None
        self._marked_buffers = None  # the mask whose buffers' slots and addresses were marked
        if compiled:
            self._regions = torch.nn.ModuleList(DecoderLayerRegion(layer) for layer in self._text.layers)
            self._hidden = torch.compile(self._decoder_stack, options=compile_options(full_length),
                                         isolate_recompiles=True)

    def width_for(self, size: int) -> int | None:
        """The smallest width that holds a tree of ``size`` nodes (None: wider than any)."""
        return next((w for w in self.widths if w >= size), None)

    def fits(self, size: int, rows: list[int] | tuple[int, ...] = (0,)) -> bool:
        """Whether trees of at most ``size`` nodes after the cached tokens of slots ``rows`` fit
        a width and the buffer."""
        width = self.width_for(size)
        return width is not None and all(self.cache.fits(self.cache.lengths[row], width) for row in rows)

    def _decoder_stack(self, tokens, position_ids, mask, write_at):
        cache = PassCache(self.cache.keys, self.cache.values, write_at, mask.shape[-1])
        out = self._inner(input_ids=tokens, position_ids=position_ids, attention_mask=mask, cache=cache,
                          use_cache=True)
        return out.last_hidden_state

    @torch.no_grad()
    def forward(self, tree, rope_delta: int, greedy: bool) -> torch.Tensor:
        """One pass of ``tree`` (``core.speculative.tree.DraftTree``) after the first slot's cached
        tokens: ``forward_rows`` of that row alone."""
        return self.forward_rows([0], [tree], [rope_delta], greedy)

    @torch.no_grad()
    def forward_rows(self, rows: list[int], trees: list, rope_deltas: list[int], greedy: bool) -> torch.Tensor:
        """One pass of ``trees[i]`` (``core.speculative.tree.DraftTree``) after the cached tokens of
        slot ``rows[i]``, every tree padded to the width that holds the largest. Each row's keys and
        values are written at ``[length, length + width)``; ``accept_rows`` keeps the verified paths.
        The slots below the highest that are not ``rows`` run as pad rows (their tokens see only
        themselves, nothing of theirs is kept). Returns ids ``(len(rows), q)`` long where ``greedy``,
        else logits ``(len(rows), q, V)`` float32, ``q`` the largest tree's size."""
        from core.speculative.tree import ancestor_masks

        size = max(len(tree) for tree in trees)
        width = self.width_for(size)
        cache, device = self.cache, self.target.device
        top = max(rows) + 1
        pads = [row for row in range(top) if row not in rows]
        pad = self.target.pad_token_id
        lengths = cache.lengths[:top]
        tokens = [[pad] * width for _ in range(top)]
        positions = [[n] * width for n in lengths]
        deltas = [0] * top
        for row, tree, delta in zip(rows, trees, rope_deltas):
            n = lengths[row]
            tokens[row][:len(tree)] = tree.tokens
            positions[row][:len(tree)] = [n + d for d in tree.depths]
            deltas[row] = delta
        block = torch.eye(width, dtype=torch.bool).repeat(top, 1, 1)  # a pad row's tokens see themselves
        block[rows] = ancestor_masks(trees, width)
        tokens = torch.tensor(tokens, device=device)
        position_ids = self.target.position_ids(torch.tensor(positions, device=device),
                                                torch.tensor(deltas, device=device))
        mask = cache.pass_mask(block, packed=not self.full_length)
        write_at = torch.tensor(lengths, device=device)[:, None] + torch.arange(width, device=device)
        if self.full_length:
            mask = cache.mask[:top, :, :width]
        self._mark_shapes(tokens, position_ids, mask, write_at)
        self.shapes.add(width)
        self.batched_passes += len(rows) > 1
        with self._fast_modules():
            hidden = self._hidden(tokens, position_ids, mask, write_at)
        if pads:
            cache.accept_rows(pads, [[] for _ in pads])  # their blocks blocked again, nothing kept
        if rows != list(range(top)):
            hidden = hidden[torch.tensor(rows, device=hidden.device)]
        logits = self._head(hidden[:, :size])
        if greedy:
            return greedy_ids(logits)
        return logits.float()

    def _mark_shapes(self, tokens, position_ids, mask, write_at) -> None:
        """Where compiled: which dimensions vary from pass to pass (the cached length; the rows, once
        there are several; the buffers' slots, which grow), and the buffers' fixed addresses for CUDA
        graphs (again after they grew)."""
        if not self.compiled:
            return
        if self._marked_buffers is not self.cache.mask:  # new at load, and again after they grew
            for buffer in self.cache.keys + self.cache.values + [self.cache.mask]:
                torch._dynamo.maybe_mark_dynamic(buffer, 0)  # more slots: the same graphs
                if self.full_length:
                    torch._dynamo.mark_static_address(buffer)
            self._marked_buffers = self.cache.mask
        if not self.full_length:
            torch._dynamo.mark_dynamic(mask, 3)
        if tokens.shape[0] > 1:  # one row is a graph of its own (torch.compile specialises a size of 1)
            for tensor, dim in ((tokens, 0), (position_ids, 1), (mask, 0), (write_at, 0)):
                torch._dynamo.maybe_mark_dynamic(tensor, dim)

    def accept(self, path: list[int]) -> None:
        self.cache.accept(path)

    def accept_rows(self, rows: list[int], paths: list[list[int]]) -> None:
        self.cache.accept_rows(rows, paths)

    @contextlib.contextmanager
    def _fast_modules(self):
        """For one pass, the static cache's attention function and (where compiled) the layer
        regions in the decoder stack's place; the eager engine's model is given back as it was."""
        config, layers = self._text_config, self._text.layers
        attention = config._attn_implementation_internal
        config._attn_implementation_internal = STATIC_ATTENTION
        if self._regions is not None:
            self._text.layers = self._regions
        try:
            yield
        finally:
            config._attn_implementation_internal = attention
            self._text.layers = layers

    def warm_up(self) -> float:
        """Run (and so compile) every width once on an empty cache, for one row and, where compiled,
        for two (the graph every batch of several rows runs); returns the seconds it took."""
        from core.speculative.tree import DraftTree

        t0 = time.perf_counter()
        batches = ([0], [0, 1]) if self.compiled and self.cache.rows > 1 else ([0],)
        slots = self.cache.take(max(map(len, batches)))
        for rows in batches:
            for width in self.widths:
                # Not at 0 cached tokens: a pass of one token would see a length of 1, which torch.compile
                # specialises (0 and 1 are never dynamic), and the page's first pass would compile again.
                for row in rows:
                    self.cache.lengths[row] = min(WARM_UP_LENGTH + row, self.cache.capacity - width)
                chain = DraftTree([self.target.pad_token_id] * width, list(range(-1, width - 1)),
                                  list(range(width)), [None] * width)
                self.forward_rows(rows, [chain] * len(rows), [0] * len(rows), greedy=True)
        self.cache.release(slots)
        self.shapes.clear()
        self.batched_passes = 0
        self.compile_seconds = time.perf_counter() - t0
        return self.compile_seconds
