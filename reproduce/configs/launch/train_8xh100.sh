#!/usr/bin/env bash
# The paper's hardware: one node with 8 H100s; GPUs 0-1 serve vLLM rollouts, GPUs 2-7 train with DeepSpeed ZeRO-2.
# Fewer GPUs (docs/gpu.md, "2-4 GPUs"): VLLM_GPUS=0 TRAIN_GPUS=1,2,3 (vLLM on one GPU, 3 training processes); the
# training processes follow TRAIN_GPUS. Keep 24 tasks per step with --set gradient_accumulation_steps=N
# steps_per_generation=N, N = 16 x 6 / (training GPUs). (Not yet run on a GPU.)
# Usage: reproduce/configs/launch/train_8xh100.sh CONFIG.yaml OUTPUT_DIR [--resume] [--set FIELD=VALUE ...]
# ENTRY=murphy_lab.baselines.reveal trains a ReVeal recipe (reproduce/configs/<model>/reveal.yaml) the same way.
# VLLM_STARTUP_TIMEOUT (seconds, default 1800) bounds the wait for the vLLM server's /health.
# Expected time per optimizer step (paper, Qwen3-1.7B, MaRS without pruning): 72.74 s, of which 17.49 s
# optimization; InterP cuts optimization to 4.53 s (-74.1%) and the step by 21.4%.
set -euo pipefail
source "$(dirname "$0")/venv.sh"  # the project's venv: .venv unless one is active (VENV=...)
CONFIG=${1:?usage: train_8xh100.sh CONFIG.yaml OUTPUT_DIR [--resume]}
OUT=${2:?usage: train_8xh100.sh CONFIG.yaml OUTPUT_DIR [--resume]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
ENTRY=${ENTRY:-murphy_lab.train}
TIMEOUT=${VLLM_STARTUP_TIMEOUT:-1800}
PORT=$(python "$HERE/recipe_field.py" "$CONFIG" port)
MODEL=$(python "$HERE/recipe_field.py" "$CONFIG" model)
MAX_MODEL_LEN=$(python "$HERE/recipe_field.py" "$CONFIG" max_model_len)
mkdir -p "$OUT"
"$HERE/vllm_serve_2gpu.sh" "$MODEL" "$PORT" "$MAX_MODEL_LEN" > "$OUT/vllm.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
START=$SECONDS
until curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; do
  kill -0 $SERVER 2>/dev/null || { echo "vLLM server died; see $OUT/vllm.log" >&2; exit 1; }
  if (( SECONDS - START >= TIMEOUT )); then
    echo "vLLM server not healthy after ${TIMEOUT}s (VLLM_STARTUP_TIMEOUT); see $OUT/vllm.log" >&2; exit 1
  fi
  sleep 5
done
TRAIN_GPUS=${TRAIN_GPUS:-2,3,4,5,6,7}
NPROC=$(( $(tr -cd , <<< "$TRAIN_GPUS" | wc -c) + 1 ))  # one training process per GPU of TRAIN_GPUS
CUDA_VISIBLE_DEVICES=$TRAIN_GPUS accelerate launch \
  --config_file "$HERE/accelerate_zero2_6gpu.yaml" --num_processes "$NPROC" \
  -m "$ENTRY" --config "$CONFIG" --output-dir "$OUT" "$@"
