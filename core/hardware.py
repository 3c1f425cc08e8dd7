"""The user's hardware: which device the model runs on, and a cap on the GPU memory it may take.

**Device.** Without ``--device``, the model goes to CUDA where torch sees a CUDA GPU, else to Apple
Silicon's GPU (MPS) where torch was built with it and the family's profile does not rule MPS out,
else to the CPU (``choose_device``: plain logic, tested without any GPU). On MPS the weights stay
fp32 (fp16 overflows in these models' attention; bf16 needs macOS 14): the model's own greedy output
is what verification reproduces there as everywhere. MPS has not been run by our tests (no Mac
here): it is documented as unverified (docs/exports.md, "Your hardware").

**Memory cap** (``--max-gpu-memory``, the app's setting). Before any weight is read, the weights'
size in the chosen dtype is estimated from the model folder's safetensors files and compared with
the cap: a model that cannot fit is refused in one line that says by how much. Otherwise torch's
allocator is held to the cap for the whole process (``torch.cuda.set_per_process_memory_fraction``,
``torch.mps.set_per_process_memory_fraction``), so loading and every decoding pass stay within it: a
page that would need more fails with torch's out-of-memory error, which the run records on that page
and goes on. There is no offloading of layers to the CPU (transformers' ``max_memory`` /
``device_map`` path needs accelerate, which the bundle leaves out, and a pass split across devices
would cost more than HSD saves). On the CPU the cap has nothing to hold: one warning says so.

**The CPU's threads.** torch's kernels run on OpenMP threads, which by default spin for a while after
each parallel piece of work, waiting for the next. On an idle machine that costs nothing; on a
desktop where other programs want the cores, the spinning threads take them, and the model itself
gets slower (a tiny model's conversion of the sample beside other work: over 4 times the CPU
seconds and the wall-clock). ``calm_cpu_threads`` makes them sleep instead
(``tuning.OPENMP_WAIT_POLICY``): importing ``core`` does it, before any entry point imports torch.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from core import tuning
from core.errors import HSDError, HSDWarning

_UNITS = {"": 1 << 30, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000 ** 2, "mb": 1000 ** 2, "mib": 1 << 20,
          "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1 << 30, "t": 1000 ** 4, "tb": 1000 ** 4, "tib": 1 << 40}
_AMOUNT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]{0,3}|%)\s*")
#: Bytes per weight of each dtype name a config or the user may give.
_DTYPE_BYTES = {"float32": 4, "fp32": 4, "float16": 2, "fp16": 2, "bfloat16": 2, "bf16": 2, "float64": 8}


def calm_cpu_threads(environ=os.environ) -> None:
    """Before torch loads: its OpenMP threads sleep between pieces of work rather than spin
    (``OMP_WAIT_POLICY``, ``tuning.OPENMP_WAIT_POLICY``), unless the user chose a wait policy. The
    OpenMP runtime reads it once, as torch loads; it reaches the processes this one starts."""
    environ.setdefault("OMP_WAIT_POLICY", tuning.OPENMP_WAIT_POLICY)


@dataclass(frozen=True)
class MemoryCap:
    """``--max-gpu-memory``: an amount of bytes, or a percentage of the device's memory."""

    bytes: int | None = None
    percent: float | None = None

    def on(self, total: int) -> int:
        """The cap in bytes on a device of ``total`` bytes."""
        return int(total * self.percent / 100) if self.percent is not None else int(self.bytes)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else gib(self.bytes)


def gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def parse_memory(value: str) -> MemoryCap:
    """``12``, ``12GiB``, ``12GB``, ``800MiB``, ``80%`` -> a ``MemoryCap`` (a plain number is GiB;
    GB is 10^9 bytes, GiB 2^30); ``ValueError`` with one line for anything else."""
    found = _AMOUNT.fullmatch(str(value))
    if not found:
        raise ValueError(f"{value!r} is not an amount of memory; write it as 12GiB, 12GB, 800MiB or 80%")
    number, unit = float(found.group(1)), found.group(2).lower()
    if unit == "%":
        if not 0 < number <= 100:
            raise ValueError(f"{value!r}: a share of the GPU's memory is above 0% and at most 100%")
        return MemoryCap(percent=number)
    if unit not in _UNITS:
        raise ValueError(f"{value!r}: unknown unit {found.group(2)!r}; use MiB, GiB, MB, GB or %")
    amount = int(number * _UNITS[unit])
    if amount < 64 << 20:
        raise ValueError(f"{value!r} is less than any model needs (at least 64 MiB)")
    return MemoryCap(bytes=amount)


def choose_device(requested: str | None, cuda: bool, mps: bool, family_on_mps: bool = True) -> str:
    """The device a model is loaded on: ``requested`` where given, else cuda, else mps (where the
    family runs there), else cpu."""
    if requested:
        return requested
    if cuda:
        return "cuda"
    if mps and family_on_mps:
        return "mps"
    return "cpu"


def weights_bytes(folder: Path, config: dict, dtype_bytes: int) -> int | None:
    """The weights' size once loaded in a dtype of ``dtype_bytes`` bytes, from the folder's
    safetensors files and the dtype they were saved in (None where the folder has none)."""
    files = list(Path(folder).glob("*.safetensors")) if Path(folder).is_dir() else []
    if not files:
        return None
    stored = _DTYPE_BYTES.get(str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").lower(), 2)
    return int(sum(f.stat().st_size for f in files) * dtype_bytes / stored)


def plan_cap(cap: MemoryCap, device_type: str, total: int | None, weights: int | None) -> float | None:
    """The share of the device's memory torch's allocator is held to (None: nothing to hold), or
    ``HSDError`` when the weights alone leave decoding no room under the cap."""
    if device_type not in ("cuda", "mps"):
        warnings.warn(HSDWarning(f"--max-gpu-memory {cap}: the model runs on the {device_type.upper()}, "
                                 "where no GPU memory is taken; the cap has nothing to hold"), stacklevel=2)
        return None
    if total is None or total <= 0:
        raise HSDError(f"--max-gpu-memory {cap}: torch does not say how much memory the {device_type.upper()} "
                       "device has, so the cap cannot be held; leave --max-gpu-memory out")
    limit = cap.on(total)
    if weights is not None and weights > limit * (1 - tuning.GPU_DECODE_HEADROOM):
        raise HSDError(f"--max-gpu-memory {cap}: the model's weights alone take about {gib(weights)} of the "
                       f"{gib(limit)} allowed, leaving no room to decode a page; allow at least "
                       f"{gib(weights / (1 - tuning.GPU_DECODE_HEADROOM))}, choose --dtype bf16, or run on --device cpu")
    if limit >= total:
        return None
    return limit / total


def device_memory(device) -> int | None:
    """Bytes of memory of a torch ``device`` (cuda, mps), or None where torch does not say."""
    import torch

    try:
        if device.type == "cuda":
            return int(torch.cuda.get_device_properties(device.index or 0).total_memory)
        if device.type == "mps":
            return int(torch.mps.recommended_max_memory())
    except (RuntimeError, AttributeError, AssertionError):
        return None
    return None


def hold_memory(device, fraction: float) -> None:
    """Hold torch's allocator on ``device`` to ``fraction`` of its memory, for this process."""
    import torch

    if device.type == "cuda":
        torch.cuda.set_per_process_memory_fraction(fraction, device.index or 0)
    elif device.type == "mps":
        torch.mps.set_per_process_memory_fraction(fraction)


def apply_cap(cap: MemoryCap, device, dtype, folder: Path | None, config: dict) -> None:
    """Before the weights load: refuse a model that cannot fit under ``cap`` on ``device``, and hold
    the allocator to the cap (``plan_cap``, ``hold_memory``)."""
    import torch

    dtype_bytes = torch.tensor([], dtype=dtype).element_size()
    weights = weights_bytes(folder, config, dtype_bytes) if folder is not None else None
    fraction = plan_cap(cap, device.type, device_memory(device) if device.type in ("cuda", "mps") else None,
                        weights)
    if fraction is not None:
        hold_memory(device, fraction)
