#!/usr/bin/env bash
# The paper's hardware: one node with 8 H100s; GPUs 0-1 serve vLLM rollouts, GPUs 2-7 train with DeepSpeed ZeRO-2.
# Usage: reproduce/configs/launch/train_8xh100.sh CONFIG.yaml OUTPUT_DIR [--resume]
# Expected time per optimizer step (paper, Qwen3-1.7B, MaRS without pruning): 72.74 s, of which 17.49 s
# optimization; InterP cuts optimization to 4.53 s (-74.1%) and the step by 21.4%.
set -euo pipefail
CONFIG=${1:?usage: train_8xh100.sh CONFIG.yaml OUTPUT_DIR [--resume]}
OUT=${2:?usage: train_8xh100.sh CONFIG.yaml OUTPUT_DIR [--resume]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
PORT=$(python -c "from murphy_lab.config import MurphyConfig as C; print(C.from_yaml('$CONFIG').trl.get('vllm_server_port', 8000))")
MODEL=$(python -c "from murphy_lab.config import MurphyConfig as C; print(C.from_yaml('$CONFIG').model)")
mkdir -p "$OUT"
"$HERE/vllm_serve_2gpu.sh" "$MODEL" "$PORT" > "$OUT/vllm.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; do
  kill -0 $SERVER 2>/dev/null || { echo "vLLM server died; see $OUT/vllm.log" >&2; exit 1; }
  sleep 5
done
CUDA_VISIBLE_DEVICES=${TRAIN_GPUS:-2,3,4,5,6,7} accelerate launch \
  --config_file "$HERE/accelerate_zero2_6gpu.yaml" \
  -m murphy_lab.train --config "$CONFIG" --output-dir "$OUT" "$@"
