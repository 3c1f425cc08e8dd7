"""What a pass really costs on the machine at hand, as the simulated GPU's cost model.

``core.bench.simulated_gpu`` prices a pass as ``pass_ms + token_ms x tokens``. This measures the
same thing on a real target: after one prefill of a page-sized image, verification passes of a
chain of 1, 16, 64 and 256 tokens (each on the same cache, cropped back after the pass), timed
until their argmax ids are read (the device synchronised, as verification does), the median of
several repeats. A least-squares line through the medians gives the two constants; the measured
prefill is set beside what the model predicts for it.

    python -m tools.bench.gpu_pass_cost --model hunyuan-ocr-random --device cuda --dtype bf16

prints the table and ``--gpu-pass-ms A --gpu-token-ms B``, the flags that make ``hsd bench
--target simulated-gpu`` simulate this machine (``tools/bench/gpu_replay_cost.sh`` runs both).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

WIDTHS = (1, 16, 64, 256)


@dataclass
class PassCostReport:
    """Measured medians and the line through them (milliseconds)."""

    device: str
    widths: list[int]
    seconds: list[float]                 # median seconds of a pass per width
    pass_ms: float                       # fitted fixed part
    token_ms: float                      # fitted part per token
    prefill_seconds: float               # one page-image prefill, measured
    prefill_tokens: int                  # what the cost model counts for it
    samples: dict = field(default_factory=dict)  # width -> every repeat's seconds

    @property
    def predicted_prefill_seconds(self) -> float:
        return (self.pass_ms + self.token_ms * self.prefill_tokens) / 1000.0

    def flags(self) -> str:
        return f"--gpu-pass-ms {self.pass_ms:.3g} --gpu-token-ms {self.token_ms:.3g}"

    def table(self) -> str:
        lines = [f"pass cost on {self.device} (median of {max(len(v) for v in self.samples.values())} passes):",
                 "| tokens in the pass | measured ms | cost model ms |", "|---|---|---|"]
        for w, s in zip(self.widths, self.seconds):
            lines.append(f"| {w} | {s * 1000:.2f} | {self.pass_ms + self.token_ms * w:.2f} |")
        lines.append(f"| prefill of a page ({self.prefill_tokens} patches and prompt tokens) | "
                     f"{self.prefill_seconds * 1000:.1f} | {self.predicted_prefill_seconds * 1000:.1f} |")
        lines.append(f"cost model constants: {self.flags()}")
        return "\n".join(lines)


def fit_line(widths: list[int], seconds: list[float]) -> tuple[float, float]:
    """Least squares ``seconds = a + b x width`` in milliseconds, ``a, b >= 0`` (a pass never
    gets cheaper with more tokens; a single width gives its own cost as the fixed part)."""
    ms = [s * 1000.0 for s in seconds]
    n = len(widths)
    mean_w, mean_s = sum(widths) / n, sum(ms) / n
    var = sum((w - mean_w) ** 2 for w in widths)
    b = max(0.0, sum((w - mean_w) * (s - mean_s) for w, s in zip(widths, ms)) / var) if var else 0.0
    return max(0.0, mean_s - b * mean_w), b


def page_image(width: int = 1224, height: int = 1584):
    """A page-sized image (a letter page at 144 dpi) with some ink: the processor's page size."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for y in range(80, height - 80, 28):
        draw.line((90, y, width - 90, y), fill="black", width=3)
    return image


def measure(target, widths=WIDTHS, repeats: int = 7, warmup: int = 2, image=None) -> PassCostReport:
    """Time passes of ``widths`` tokens on ``target`` (a ``core.targets.base.Target``) after a prefill
    of ``image`` (default: ``page_image()``)."""
    import torch

    from core.bench.simulated_gpu import prefill_tokens
    from core.targets.kv import additive_mask, cache_crop, causal_allowed

    image = image if image is not None else page_image()
    _sync(target)
    t0 = time.perf_counter()
    prefill = target.prefill(image, kind="page")
    int(prefill.logits.argmax())
    prefill_seconds = time.perf_counter() - t0
    cache, length = prefill.cache, int(prefill.cache.get_seq_length())
    token = int(target.pad_token_id)
    samples: dict[int, list[float]] = {}
    for w in widths:
        tokens = torch.full((1, w), token, dtype=torch.long)
        positions = (prefill.length + torch.arange(w)).view(1, w)
        mask = additive_mask(causal_allowed(torch.zeros(1, dtype=torch.long), length, w), target.dtype)
        deltas = torch.tensor([prefill.rope_delta])
        times = []
        for r in range(warmup + repeats):
            _sync(target)
            t0 = time.perf_counter()
            target.forward(tokens, positions, mask, cache, deltas, greedy=True).tolist()  # the ids read: synchronised
            elapsed = time.perf_counter() - t0
            cache_crop(cache, length)
            if r >= warmup:
                times.append(elapsed)
        samples[w] = times
    medians = [statistics.median(samples[w]) for w in widths]
    pass_ms, token_ms = fit_line(list(widths), medians)
    return PassCostReport(device=str(target.device), widths=list(widths), seconds=medians, pass_ms=pass_ms,
                          token_ms=token_ms, prefill_seconds=prefill_seconds, prefill_tokens=prefill_tokens(image),
                          samples=samples)


def _sync(target) -> None:
    import torch

    if getattr(target.device, "type", None) == "cuda":
        torch.cuda.synchronize(target.device)


def main(argv=None) -> int:
    import argparse

    from core.bench.runner import RANDOM_HUNYUAN, BenchConfig, _real_target

    p = argparse.ArgumentParser(prog="python -m tools.bench.gpu_pass_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=RANDOM_HUNYUAN,
                   help=f"model folder, or {RANDOM_HUNYUAN} (default): a random model of HunyuanOCR's size")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--layers", type=int, default=None, help=f"with {RANDOM_HUNYUAN}: this many layers (tests)")
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args(argv)
    target, detail = _real_target(BenchConfig(corpus="", model=a.model, device=a.device, dtype=a.dtype,
                                              cost_layers=a.layers))
    report = measure(target, repeats=a.repeats)
    print(detail)
    print(report.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
