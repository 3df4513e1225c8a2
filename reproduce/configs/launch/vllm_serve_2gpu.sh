#!/usr/bin/env bash
# Rollout server for the paper's layout: GPUs 0-1 run vLLM (tensor parallel 2, prefix caching on); TRL pushes the
# trainer's weights to it after every optimizer step (NCCL weight transfer, set up by `trl vllm-serve`).
# Prefix caching matters for MURPHY: the G2 refinements of a node share their whole prompt, and every refinement
# prompt starts with the task prompt. (TRL's docs: data_parallel_size must stay 1 for dense models.)
# Usage: reproduce/configs/launch/vllm_serve_2gpu.sh MODEL [PORT]
set -euo pipefail
MODEL=${1:?usage: vllm_serve_2gpu.sh MODEL [PORT]}
PORT=${2:-8000}
CUDA_VISIBLE_DEVICES=${VLLM_GPUS:-0,1} exec trl vllm-serve \
  --model "$MODEL" \
  --tensor_parallel_size 2 \
  --enable_prefix_caching true \
  --max_model_len 8192 \
  --gpu_memory_utilization 0.9 \
  --port "$PORT"
