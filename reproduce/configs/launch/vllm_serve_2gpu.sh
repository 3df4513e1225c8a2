#!/usr/bin/env bash
# Rollout server for the paper's layout: GPUs 0-1 run vLLM (tensor parallel 2, prefix caching on); TRL pushes the
# trainer's weights to it after every optimizer step (NCCL weight transfer, set up by `trl vllm-serve`).
# Prefix caching matters for MURPHY: the G2 refinements of a node share their whole prompt, and every refinement
# prompt starts with the task prompt. (TRL's docs: data_parallel_size must stay 1 for dense models.)
# MAX_MODEL_LEN (prompt + completion) must not exceed the model's positions: train_8xh100.sh passes the recipe's
# `trl.vllm_max_model_length` (8192 for Qwen3, 4096 for OLMo-2-7B, whose config has 4,096 positions).
# Usage: reproduce/configs/launch/vllm_serve_2gpu.sh MODEL [PORT] [MAX_MODEL_LEN]
set -euo pipefail
source "$(dirname "$0")/venv.sh"  # the project's venv: .venv unless one is active (VENV=...)
MODEL=${1:?usage: vllm_serve_2gpu.sh MODEL [PORT] [MAX_MODEL_LEN]}
PORT=${2:-8000}
MAX_MODEL_LEN=${3:-4096}
VLLM_GPUS=${VLLM_GPUS:-0,1}
TP=$(( $(tr -cd , <<< "$VLLM_GPUS" | wc -c) + 1 ))  # tensor parallel over every GPU of VLLM_GPUS (1 or 2)
CUDA_VISIBLE_DEVICES=$VLLM_GPUS exec trl vllm-serve \
  --model "$MODEL" \
  --tensor_parallel_size "$TP" \
  --enable_prefix_caching true \
  --max_model_len "$MAX_MODEL_LEN" \
  --gpu_memory_utilization 0.9 \
  --port "$PORT"
