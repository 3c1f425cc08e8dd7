#!/usr/bin/env bash
# The OCR drafter's seconds a page with its models on the GPU (onnxruntime's CUDA provider, chosen by
# --ocr-device auto) against the CPU (--ocr-device cpu), on the generated scan set, and whether the two
# read the same text.
#
#   bash tools/bench/gpu_drafter_cost.sh [OUT] [PER_KIND]     # defaults: bench-gpu-drafter, 2 pages a kind
#
# Needs an NVIDIA GPU and onnxruntime's CUDA build (pip install -e ".[gpu]"; on a machine without the
# network, installed beforehand). Writes the GPU into OUT/gpu.txt, the pages into OUT/scanset, and the
# table (seconds a page, median and p90, per kind and device; pages read differently) into
# OUT/drafter_cost.txt. Each device drafts one page untimed first (models loaded, CUDA warmed up).
set -euo pipefail
out="${1:-bench-gpu-drafter}"
per_kind="${2:-2}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1 || true
python3 -c "
import onnxruntime
offered = onnxruntime.get_available_providers()
print('onnxruntime', onnxruntime.__version__, offered)
assert 'CUDAExecutionProvider' in offered, 'onnxruntime offers no CUDA here: pip install onnxruntime-gpu'
" | tee -a "$out/gpu.txt"
[ -d "$out/scanset/scan/pairs" ] || python3 -m tools.bench.scan_set --out "$out/scanset" --per-kind "$per_kind"
python3 - "$out/scanset/scan/pairs" <<'PY' | tee "$out/drafter_cost.txt"
import statistics
import sys
import time
import warnings
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from core.documents import open_document
from core.drafters import drafter_spec, get_drafter
from core.drafters.accelerators import choose_providers

pdfs = sorted(Path(sys.argv[1]).glob("*.pdf"))
print(f"{len(pdfs)} scan pages; auto chooses {choose_providers('auto').providers}")


def draft_all(device: str) -> dict[str, tuple[float, str]]:
    """Each page's drafting seconds and text with the models on ``device``."""
    drafter = get_drafter(drafter_spec("rapidocr", None, None, device))
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        with open_document(pdfs[0]) as document:  # untimed: models loaded, the device warmed up
            drafter.prepare(document.page(0))
            drafter.draft(document.page(0))
    for note in told:
        print(f"  {device}: {note.message}")
    out = {}
    for pdf in pdfs:
        with open_document(pdf) as document:
            page = document.page(0)
            start = time.perf_counter()
            regions = drafter.draft(page)
            out[pdf.stem] = (time.perf_counter() - start, "\n".join(r.text for r in regions))
    return out


def p90(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.9 * len(values)) - 1)]


results = {device: draft_all(device) for device in ("cpu", "auto")}
kinds = sorted({name.split("_")[0] for name in results["cpu"]})
print(f"\n| kind | pages | cpu median s | cpu p90 s | gpu median s | gpu p90 s | median speed-up |")
print("|---|---|---|---|---|---|---|")
for kind in kinds + ["all"]:
    names = [n for n in results["cpu"] if kind == "all" or n.split("_")[0] == kind]
    cpu = [results["cpu"][n][0] for n in names]
    gpu = [results["auto"][n][0] for n in names]
    print(f"| {kind} | {len(names)} | {statistics.median(cpu):.2f} | {p90(cpu):.2f} | {statistics.median(gpu):.2f} "
          f"| {p90(gpu):.2f} | {statistics.median(cpu) / statistics.median(gpu):.2f}x |")
differ = [(n, Levenshtein.normalized_distance(results["cpu"][n][1], results["auto"][n][1])) for n in results["cpu"]
          if results["cpu"][n][1] != results["auto"][n][1]]
print(f"\npages read differently on the GPU: {len(differ)} of {len(results['cpu'])}"
      + "".join(f"\n  {n}: normalised edit distance {d:.4f}" for n, d in differ))
PY
