#!/usr/bin/env bash
# The eager and the fast engine's pass cost on a GPU, and vLLM's plain decoding beside them.
#
# 1. A random model of HunyuanOCR's real size (bf16): a verification pass at 1, 16, 64 and 128
#    tokens and at 500 and 8,000 cached tokens, eager (DynamicCache, transformers' passes) against
#    fast (static cache, fixed widths, compiled with CUDA graphs: core/targets/fast_pass.py), the
#    compile seconds at load, and the shapes a 2,000-token page compiles -> OUT/engine_cost.txt.
# 2. Where vLLM is installed: its plain greedy decoding of the same architecture with random
#    weights (load_format="dummy"), milliseconds a token at the same cached lengths
#    -> OUT/vllm_plain.txt. A fast-engine pass of 1 token against vLLM's token says whether plain
#    decoding in HSD Studio keeps up; HSD's passes of 64 tokens against it whether HSD beats it.
#
#   bash tools/bench/gpu_engine_cost.sh [OUT]     # default OUT: bench-gpu-engine
#
# Needs a CUDA GPU and torch with CUDA (and vLLM for step 2). The simulated GPU takes its pass
# costs from these figures: --gpu-pass-ms and --gpu-token-ms (tools/bench/gpu_pass_cost.py) fitted to
# the fast engine's column, the eager one's, and vLLM's per-token line as the reference.
set -euo pipefail
out="${1:-bench-gpu-engine}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1 || true
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU'; print(torch.cuda.get_device_name(0))"
python3 -m tools.bench.engine_cost --model hunyuan-ocr-random --device cuda --dtype bf16 --repeats 30 \
  | tee "$out/engine_cost.txt"
python3 -m tools.bench.vllm_plain --cached 500,8000 | tee "$out/vllm_plain.txt"
