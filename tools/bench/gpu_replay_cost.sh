#!/usr/bin/env bash
# Wall-clock of HSD on a GPU against what real models wrote, and the simulated GPU checked against it.
#
# 1. The pass cost of a randomly initialised model of HunyuanOCR's real size (bf16) on this GPU:
#    passes of 1, 16, 64 and 256 tokens after a page prefill, and the simulated GPU's cost-model
#    constants fitted to them (tools/bench/gpu_pass_cost.py) -> OUT/pass_cost.txt.
# 2. The replay-cost target: that model run on exactly the shapes HSD runs, while acceptance replays
#    the recorded outputs of model_outputs/ (every page counted, drafting time included).
# 3. The simulated GPU with the constants of step 1 on the same pages: its wall-clock ratios beside
#    those of step 2 say how far the simulation (docs/benchmarks.md) can be trusted.
#
#   bash tools/bench/gpu_replay_cost.sh [CORPUS_ROOT] [OUT]     # defaults: ../shared/corpus, bench-gpu
#
# Needs a CUDA GPU, torch with CUDA, and tiktoken for Qwen's BPE (pip install tiktoken). Writes one
# report per corpus and target (OUT/NAME/report.md, OUT/NAME-simulated/report.md) and the machine's
# GPU into OUT/gpu.txt.
set -euo pipefail
corpus="${1:-../shared/corpus}"
out="${2:-bench-gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1 || true
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU'; print(torch.cuda.get_device_name(0))"
python3 -m tools.bench.gpu_pass_cost --model hunyuan-ocr-random --device cuda --dtype bf16 | tee "$out/pass_cost.txt"
read -r -a measured <<< "$(grep -o -- '--gpu-pass-ms .*' "$out/pass_cost.txt")"
for name in omnidocbench_demo glm_ocr; do
  hsd bench "$corpus/model_outputs/$name" --target replay-cost --model hunyuan-ocr-random \
    --device cuda --dtype bf16 --tokenizer qwen --methods ar,page,hsd --out "$out/$name"
  hsd bench "$corpus/model_outputs/$name" --target simulated-gpu "${measured[@]}" \
    --tokenizer qwen --methods ar,page,hsd --out "$out/$name-simulated"
done
cat "$out/pass_cost.txt"
grep -h -A12 "^## " "$out"/*/report.md | head -120
