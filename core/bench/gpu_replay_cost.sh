#!/usr/bin/env bash
# Wall-clock of HSD on a GPU against what real models wrote: the replay-cost target runs a randomly
# initialised model of HunyuanOCR's real size (bf16) on exactly the shapes HSD runs, while acceptance
# replays the recorded outputs of model_outputs/ (every page counted, drafting time included).
#
#   bash core/bench/gpu_replay_cost.sh [CORPUS_ROOT] [OUT]     # defaults: ../shared/corpus, bench-gpu
#
# Needs a CUDA GPU, torch with CUDA, and tiktoken for Qwen's BPE (pip install tiktoken). Writes one
# report per corpus (OUT/NAME/report.md, bench.json) and the machine's GPU into OUT/gpu.txt.
set -euo pipefail
corpus="${1:-../shared/corpus}"
out="${2:-bench-gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1 || true
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU'; print(torch.cuda.get_device_name(0))"
for name in omnidocbench_demo glm_ocr; do
  hsd bench "$corpus/model_outputs/$name" --target replay-cost --model hunyuan-ocr-random \
    --device cuda --dtype bf16 --tokenizer qwen --methods ar,page,hsd --out "$out/$name"
done
grep -h -A12 "^## " "$out"/*/report.md | head -80
