"""A key/value cache written in place: one buffer per model load, no growth per pass, no holes.

The eager engine's ``DynamicCache`` grows by ``torch.cat`` (each pass copies every layer's whole
cache), keeps a rejected tree node as a masked hole and gathers the whole cache again to squeeze
the holes out (``core.speculative.decode``'s eager batch). Here each layer's keys (and values) are
one tensor ``(rows, kv_heads, capacity, head_dim)``: a row slot per sequence being decoded (Stage
2's page, and Stage 1's regions beside it), each with its own ``lengths[row]`` cached tokens. A
row's prompt is copied into a free slot once (``load``), and then a pass of width ``W`` over the
slots ``[0, top)``:

1. writes each row's ``W`` keys and values at its columns ``[lengths[row], lengths[row] + W)``
   (``PassCache.update``: one ``index_put_`` per buffer, in place) and attends over
   ``[0, max(lengths) + W)`` only, through a view (no copy);
2. after verification, ``accept`` moves each row's accepted path to
   ``[lengths[row], lengths[row] + a)`` (one gather and one write of the accepted columns per
   buffer, all rows at once) and the rejected nodes' columns are simply written over by the next pass.

The additive attention mask lives in a preallocated ``(rows, 1, max_width, capacity)`` buffer too:
a row's columns before its length are zeros (written as they are accepted), every later column is
blocked; a pass writes only each row's ``W x W`` tree block. A slot in ``[0, top)`` that no row
holds this pass is a pad row: its tokens see only themselves, and its block is blocked again after
the pass. A finished row frees its slot (``release``); the lowest free slots are taken first, so
the pass stays as narrow as the rows it runs. Where more rows are admitted than there are slots,
the buffers grow by the missing slots (``take``: at admission, never during a pass), but only where
the device can give the grown buffers' bytes (``can_take``: a ``tuning.FAST_SLOT_MEMORY_SHARE`` of
``device_free_bytes``, which on CUDA keeps under the ``--max-gpu-memory`` cap too); where it cannot,
the admitted rows and the rows beside them go on with the eager engine (``to_dynamic``), whose
cache holds only the tokens in use. The grown buffers serve the next decodes too, and shrink back
once the last ``tuning.FAST_SLOT_SHRINK_DECODES`` decodes each held fewer slots
(``decode_ended``: between decodes, never in one; on CUDA their memory goes back to the device,
``give_back_cached_memory``). The slots at load are sized by the same rule
(``for_model``): fewer than asked for, and the buffers keep that size; not one, and the model
decodes with the eager engine (``SlotsDoNotFit``).
"""

from __future__ import annotations

import torch

from core import tuning
from core.hardware import gib


class SlotsDoNotFit(Exception):
    """Not one row slot's buffers fit the memory the device can give: the model decodes with the
    eager engine (the same tokens), whose cache holds only the tokens in use."""

    def __init__(self, slot_bytes: int, room: float):
        super().__init__(f"the fast engine's cache needs {gib(slot_bytes)} a row and the device can spare "
                         f"{gib(room)}: decoding with the eager engine")


def device_free_bytes(device) -> int:
    """Bytes ``device`` can still give new buffers: on CUDA the free memory (plus what torch's
    allocator holds unused) and no more than the per-process cap (``--max-gpu-memory``, held by
    ``core.hardware.hold_memory``) leaves; on MPS the recommended working set less what the driver
    holds; on the CPU the available RAM."""
    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        free, total = torch.cuda.mem_get_info(index)
        allocated, reserved = torch.cuda.memory_allocated(index), torch.cuda.memory_reserved(index)
        fraction = getattr(torch.cuda, "get_per_process_memory_fraction", lambda _: 1.0)(index)
        return max(0, min(free + reserved - allocated, int(total * fraction) - allocated))
    if device.type == "mps":
        return max(0, int(torch.mps.recommended_max_memory()) - int(torch.mps.driver_allocated_memory()))
    import psutil

    return int(psutil.virtual_memory().available)


def give_back_cached_memory(device) -> None:
    """On CUDA, the blocks torch's allocator keeps after buffers are freed go back to the device, so
    that other processes (and the drafter, on the same GPU) can have the memory of shrunk row slots;
    the allocator would otherwise keep it for this process. Nothing to give back elsewhere."""
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def slot_bytes(layer_shape: tuple[int, int, int], capacity: int, max_width: int, dtype: torch.dtype) -> int:
    """Bytes of one row slot of a ``StaticPageCache`` of ``layer_shape`` (layers, key/value heads,
    head size): its keys and values at every layer, its mask rows and their packed copy."""
    layers, kv_heads, head_dim = layer_shape
    element = torch.tensor([], dtype=dtype).element_size()
    return capacity * element * (2 * layers * kv_heads * head_dim + 2 * max_width)


class PassCache:
    """What a decoder layer's attention sees during one pass (duck-typed as a transformers cache:
    the layers call ``update`` only, given a prepared 4-D mask and explicit positions).

    ``update`` writes the pass's keys and values of row ``r`` at its columns ``write_at[r]``
    (``(rows, W)``) and returns the first ``visible`` columns of the pass's rows, a view of the
    static buffer."""

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], write_at: torch.Tensor, visible):
        self.keys = keys
        self.values = values
        self.write_at = write_at
        self.visible = visible

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        rows = key_states.shape[0]
        at_rows = torch.arange(rows, device=keys.device)[:, None]
        # An index_put_ into the layer's own buffer (not a view of a larger one), which torch.compile
        # writes in place; it cannot do so for a scatter_, whose graph copied the whole buffer out and
        # back at every layer (every slot's every column: half to two thirds of a 24-layer CPU pass).
        keys[at_rows, :, self.write_at] = key_states.transpose(1, 2).to(keys.dtype)
        values[at_rows, :, self.write_at] = value_states.transpose(1, 2).to(values.dtype)
        return keys[:rows, :, : self.visible], values[:rows, :, : self.visible]

    def get_seq_length(self, layer_idx: int = 0):
        return self.visible - self.write_at.shape[1]


class StaticPageCache:
    """The rows' caches and attention masks, allocated once (``capacity`` columns a row) and reused
    by every page. ``lengths[row]``: the row's cached tokens, all of them real (no holes)."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int, max_width: int,
                 dtype: torch.dtype, device, rows: int = 1, free_bytes=None, most_rows: int | None = None):
        """``free_bytes()``: the bytes the device can give new buffers now (default
        ``device_free_bytes`` of ``device``), asked before the slots grow. ``rows``: the slots at
        load, which the buffers never shrink below (a compiled pass's graphs were made for them);
        ``most_rows``: the slots they never grow past (None: as many as the memory allows)."""
        self.capacity = capacity
        self.free_bytes = free_bytes or (lambda: device_free_bytes(self.device))
        self.max_width = max_width
        self.dtype = dtype
        self.device = device
        self.layer_shape = (layers, kv_heads, head_dim)
        self.blocked = torch.finfo(dtype).min
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.mask = torch.empty(0)
        self.packed = torch.empty(0)
        self.lengths: list[int] = []
        self.written: list[int] = []  # per row, the width of the pass written last, not yet accepted
        self.taken: list[bool] = []
        self.fewest = rows
        self.most_rows = most_rows
        self._peak = 0  # the most slots (the highest taken, plus one) held since the last decode ended
        self._peaks: list[int] = []  # the same of each recent decode, the latest last
        self._allocate(rows)

    @classmethod
    def for_model(cls, model, capacity: int, max_width: int, dtype: torch.dtype, device, rows: int = 1,
                  free_bytes=None) -> "StaticPageCache":
        """Sized from ``model``'s text configuration: ``rows`` slots where their buffers fit a
        ``tuning.FAST_SLOT_MEMORY_SHARE`` of what the device can give (``free_bytes()``, default
        ``device_free_bytes``), as growth is weighed; else as many as fit, and the buffers never
        grow (the device had no room for more, and a compiled pass made for one slot is a graph of
        its own). Raises ``SlotsDoNotFit`` where not even one fits."""
        text = model.config.get_text_config()
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        kv_heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
        layer_shape = (text.num_hidden_layers, kv_heads, head_dim)
        free_bytes = free_bytes or (lambda: device_free_bytes(device))
        each = slot_bytes(layer_shape, capacity, max_width, dtype)
        room = tuning.FAST_SLOT_MEMORY_SHARE * free_bytes()
        fit = min(rows, int(room // each))
        if fit < 1:
            raise SlotsDoNotFit(each, room)
        return cls(*layer_shape, capacity, max_width, dtype, device, rows=fit, free_bytes=free_bytes,
                   most_rows=fit if fit < rows else None)

    @property
    def rows(self) -> int:
        return len(self.lengths)

    @property
    def length(self) -> int:
        """The first row's cached tokens (a one-row decode runs there)."""
        return self.lengths[0]

    @length.setter
    def length(self, value: int) -> None:
        self.lengths[0] = value

    def _allocate(self, rows: int) -> None:
        """Buffers of ``rows`` slots (more or fewer than now), the slots below ``rows`` copied over
        (their cached columns only). Where none of those holds a token, the old buffers go first:
        shrinking then never holds both."""
        layers, kv_heads, head_dim = self.layer_shape
        shape = (rows, kv_heads, self.capacity, head_dim)
        old = self.rows
        carried = min(old, rows)
        if not any(self.lengths[:carried]) and not any(self.taken[:carried]):
            self.keys, self.values, self.mask, self.packed = [], [], torch.empty(0), torch.empty(0)
            carried = 0
        keys = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(layers)]
        values = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(layers)]
        mask = torch.full((rows, 1, self.max_width, self.capacity), self.blocked, dtype=self.dtype,
                          device=self.device)
        for row in range(carried):
            n = self.lengths[row]
            for new, current in zip(keys + values, self.keys + self.values):
                new[row, :, :n] = current[row, :, :n]
            mask[row] = self.mask[row]
        self.keys, self.values, self.mask = keys, values, mask
        # A pass's mask laid out row after row (``pass_mask(packed=True)``): a CPU's attention kernel
        # reads a mask whose rows are a buffer's rows (strided) a third slower at every layer.
        self.packed = torch.empty(rows * self.max_width * self.capacity, dtype=self.dtype, device=self.device)
        self.lengths = self.lengths[:rows] + [0] * (rows - old)
        self.written = self.written[:rows] + [0] * (rows - old)
        self.taken = self.taken[:rows] + [False] * (rows - old)

    def fits(self, length: int, width: int) -> bool:
        return length + width <= self.capacity and width <= self.max_width

    # -- row slots ---------------------------------------------------------------------------------

    def bytes_for(self, rows: int) -> int:
        """Bytes of the buffers of ``rows`` slots (``slot_bytes`` each)."""
        return rows * slot_bytes(self.layer_shape, self.capacity, self.max_width, self.dtype)

    def can_take(self, count: int) -> bool:
        """Whether ``count`` slots can be taken: free ones, or buffers grown by the missing slots
        that fit a ``tuning.FAST_SLOT_MEMORY_SHARE`` of what the device can give (the grown buffers
        are allocated whole while the current ones are still held)."""
        missing = count - self.taken.count(False)
        if missing <= 0:
            return True
        if self.most_rows is not None and self.rows + missing > self.most_rows:
            return False
        return self.bytes_for(self.rows + missing) <= tuning.FAST_SLOT_MEMORY_SHARE * self.free_bytes()

    def take(self, count: int) -> list[int]:
        """The ``count`` lowest free slots, now taken; the buffers grow where too few are free."""
        free = [row for row, taken in enumerate(self.taken) if not taken]
        if len(free) < count:
            missing = count - len(free)
            free += list(range(self.rows, self.rows + missing))
            self._allocate(self.rows + missing)
        slots = free[:count]
        for row in slots:
            self.taken[row] = True
        self._peak = max([self._peak, *(row + 1 for row in slots)])
        return slots

    def release(self, slots: list[int]) -> None:
        """Free ``slots``: their columns are blocked until a row is loaded there again."""
        for row in slots:
            self.taken[row] = False
            self.lengths[row] = self.written[row] = 0
            self.mask[row] = self.blocked

    def decode_ended(self) -> None:
        """A decode has given its slots back: remember the most it held, and where each of the last
        ``tuning.FAST_SLOT_SHRINK_DECODES`` decodes held fewer slots than the buffers have, give the
        rest back to the device (the buffers reallocated at the most any of them held, never below
        the slots at load nor a slot still taken). Between decodes, so no pass waits for it; a
        compiled pass's slots are a dynamic dimension (marked again on the new buffers), so no
        graph is compiled for it. Growing again later is a reallocation, which these decodes
        showed is not needed often."""
        window = tuning.FAST_SLOT_SHRINK_DECODES
        self._peaks = (self._peaks + [self._peak])[-window:]
        self._peak = self._highest_taken()
        needed = max(self.fewest, self._peak, *self._peaks)
        if len(self._peaks) == window and needed < self.rows:
            self._allocate(needed)
            give_back_cached_memory(self.device)

    def _highest_taken(self) -> int:
        """The highest slot taken, plus one (0: none)."""
        return max((row + 1 for row, taken in enumerate(self.taken) if taken), default=0)

    def load(self, row: int, cache, source: int, columns: torch.Tensor) -> None:
        """Copy a prompt in: row ``source`` of the eager ``DynamicCache`` ``cache``, its real
        ``columns`` (1-D, in order), to the first columns of slot ``row``."""
        n = columns.shape[0]
        columns = columns.to(self.keys[0].device)
        for keys, values, layer in zip(self.keys, self.values, cache.layers, strict=True):
            keys[row, :, :n] = layer.keys[source].index_select(1, columns)
            values[row, :, :n] = layer.values[source].index_select(1, columns)
        self.mask[row, ..., :n] = 0
        self.mask[row, ..., n:] = self.blocked  # what an earlier page accepted (a full-length pass sees it)
        self.lengths[row] = n
        self.written[row] = 0

    def begin(self, cache, length: int) -> None:
        """Copy a page's prompt (a one-row ``DynamicCache`` whose last ``length`` columns are real)
        into the first slot."""
        total = cache.layers[0].keys.shape[2]
        self.load(0, cache, 0, torch.arange(total - length, total))

    # -- a pass --------------------------------------------------------------------------------------

    def pass_mask(self, block: torch.Tensor, packed: bool = False) -> torch.Tensor:
        """The ``(top, 1, width, max(lengths) + width)`` mask of a pass over the slots ``[0, top)``
        whose trees' ancestor masks, padded to ``width``, are ``block`` (``(top, width, width)``
        bool; ``(width, width)`` for the first slot alone): each row's block written into the buffer
        at its length and a view of the buffer returned; where ``packed``, the same mask laid out
        contiguously instead (in ``packed``, allocated once), which the pass's every layer then reads
        at the kernel's full speed."""
        if block.dim() == 2:
            block = block[None]
        top, width = block.shape[0], block.shape[1]
        lengths = self.lengths[:top]
        values = torch.where(block.to(self.mask.device), 0.0, self.blocked).to(self.dtype)
        for row in range(top):
            self.written[row] = width
        visible = max(lengths) + width
        if packed:
            return self._packed_mask(values, lengths, visible)
        starts = torch.tensor(lengths, device=self.mask.device)
        columns = (starts[:, None] + torch.arange(width, device=self.mask.device))[:, None, :].expand(top, width, width)
        self.mask[:top, 0, :width].scatter_(2, columns, values)
        return self.mask[:top, :, :width, :visible]

    def _packed_mask(self, values: torch.Tensor, lengths: list[int], visible: int) -> torch.Tensor:
        """``pass_mask``'s packed mask, written rather than copied out of the buffer: a row's cached
        columns are all real (0), its block ``values`` follows them and every later column is
        blocked, as the buffer holds them. Filling reads nothing, where a copy read the buffer's
        strided rows over every cached column (twice the time at 8,000 cached tokens). The buffer's
        own columns are left as they were: ``accept_rows`` writes the pass's columns there."""
        top, width = values.shape[0], values.shape[1]
        rows = self.packed[: top * width * visible].view(top, 1, width, visible)
        for row, n in enumerate(lengths):
            rows[row, :, :, :n] = 0
            rows[row, 0, :, n:n + width] = values[row]
            rows[row, :, :, n + width:] = self.blocked
        return rows

    def accept(self, path: list[int], row: int = 0) -> None:
        """Keep the accepted nodes (tree indices, in order, the root first) of the pass just written
        at row ``row``'s length: see ``accept_rows``."""
        self.accept_rows([row], [path])

    def accept_rows(self, rows: list[int], paths: list[list[int]]) -> None:
        """Keep each row's accepted path of the pass just written: the nodes' columns move to
        ``[length, length + len(path))`` for every layer, all rows in one gather and one write per
        buffer; a row given an empty path (a pad row) keeps nothing."""
        moved_rows, sources, targets = [], [], []
        for row, path in zip(rows, paths):
            n = self.lengths[row]
            if path != list(range(len(path))):  # a chain accepted from its start is in place already
                moved_rows += [row] * len(path)
                sources += [n + i for i in path]
                targets += range(n, n + len(path))
        if moved_rows:
            device = self.mask.device
            at_rows = torch.tensor(moved_rows, device=device)
            at_sources, at_targets = torch.tensor(sources, device=device), torch.tensor(targets, device=device)
            for buffer in self.keys + self.values:
                buffer[at_rows, :, at_targets] = buffer[at_rows, :, at_sources]
        for row, path in zip(rows, paths):
            n, a = self.lengths[row], len(path)
            self.mask[row, ..., n:n + a] = 0
            self.mask[row, ..., n + a:n + self.written[row]] = self.blocked  # the rejected block (a full-length pass)
            self.lengths[row] = n + a
            self.written[row] = 0

    def to_dynamic(self, rows: list[int] | None = None):
        """The cached tokens of ``rows`` (default: the first slot) as an eager ``DynamicCache``,
        left-padded to the longest, and its ``valid`` columns, for rows that go on with the eager
        engine (the buffer full, or a tree wider than any width)."""
        from transformers import DynamicCache

        rows = [0] if rows is None else rows
        lengths = [self.lengths[row] for row in rows]
        total = max(lengths, default=0)
        device = self.mask.device
        valid = torch.zeros((len(rows), total), dtype=torch.bool, device=device)
        layers = []
        for keys, values in zip(self.keys, self.values):
            shape = (len(rows), keys.shape[1], total, keys.shape[3])
            k, v = torch.zeros(shape, dtype=keys.dtype, device=device), torch.zeros(shape, dtype=values.dtype, device=device)
            for i, (row, n) in enumerate(zip(rows, lengths)):
                k[i, :, total - n:] = keys[row, :, :n]
                v[i, :, total - n:] = values[row, :, :n]
            layers.append((k, v))
        for i, n in enumerate(lengths):
            valid[i, total - n:] = True
        return DynamicCache(ddp_cache_data=layers), valid
