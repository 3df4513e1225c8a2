#!/usr/bin/env bash
# One GPU: vLLM runs inside the training process ("colocate") and sleeps while the model trains.
# Same YAML as the 8-GPU runs; only the generation backend changes. With one GPU a step holds 1/6 of the tasks of
# the 6-GPU layout (4 tasks: per_device_train_batch_size x steps_per_generation / G1), so expect ~6x more steps per
# epoch; raise gradient_accumulation_steps and steps_per_generation together to keep 24 tasks per step.
# Usage: reproduce/configs/launch/colocate_1gpu.sh CONFIG.yaml OUTPUT_DIR [--resume]
set -euo pipefail
CONFIG=${1:?usage: colocate_1gpu.sh CONFIG.yaml OUTPUT_DIR [--resume]}
OUT=${2:?usage: colocate_1gpu.sh CONFIG.yaml OUTPUT_DIR [--resume]}
shift 2
CUDA_VISIBLE_DEVICES=${GPU:-0} python -m murphy_lab.train --config "$CONFIG" --output-dir "$OUT" "$@" \
  --set vllm_mode=colocate \
  'trl={vllm_gpu_memory_utilization: 0.3, vllm_enable_sleep_mode: true, vllm_max_model_length: 8192, lr_scheduler_type: constant, max_grad_norm: 1.0}'
