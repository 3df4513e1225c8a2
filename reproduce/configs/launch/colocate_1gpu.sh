#!/usr/bin/env bash
# One GPU: vLLM runs inside the training process ("colocate") and sleeps while the model trains.
# Same YAML as the 8-GPU runs; only the generation backend changes. With one GPU a step holds 1/6 of the tasks of
# the 6-GPU layout (4 tasks: per_device_train_batch_size x steps_per_generation / G1), so expect ~6x more steps per
# epoch; raise gradient_accumulation_steps and steps_per_generation together to keep 24 tasks per step.
# Memory: the policy and the reference load in bf16 (model_init_kwargs.dtype) under DeepSpeed ZeRO-2 with the fp32
# master weights and Adam state offloaded to CPU RAM (accelerate_zero2_1gpu.yaml), so lr 1e-6 updates are not lost
# to bf16 rounding. On the GPU: 2 bytes/param for weights + 2 for gradients + 2 for the reference, plus vLLM's 30%:
# Qwen3-1.7B (~10 GB + vLLM) and Qwen3-4B (~24 GB + vLLM) fit one 80 GB H100; OLMo-2-7B (~42 GB + vLLM) fits an
# 80 GB GPU only with short batches, and a 141 GB H200 comfortably. Host RAM: ~16 bytes/param (7B: ~112 GB).
# (Estimates from parameter counts; not measured: no GPU run has been made.)
# Usage: reproduce/configs/launch/colocate_1gpu.sh CONFIG.yaml OUTPUT_DIR [--resume] [--set FIELD=VALUE ...]
# Your --set values win over this script's: a field you set (vllm_mode, trl) is not set by the script, since the
# trainer refuses a field given twice with different values.
set -euo pipefail
source "$(dirname "$0")/venv.sh"  # the project's venv: .venv unless one is active (VENV=...)
CONFIG=${1:?usage: colocate_1gpu.sh CONFIG.yaml OUTPUT_DIR [--resume] [--set FIELD=VALUE ...]}
OUT=${2:?usage: colocate_1gpu.sh CONFIG.yaml OUTPUT_DIR [--resume] [--set FIELD=VALUE ...]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
ENTRY=${ENTRY:-murphy_lab.train}
TRL=$(python "$HERE/recipe_field.py" "$CONFIG" colocate_trl)
USER_SETS=()
REST=()
in_set=0
for arg in "$@"; do
  if [[ $arg == --set ]]; then in_set=1; continue; fi
  if [[ $arg == --* ]]; then in_set=0; fi
  if (( in_set )); then USER_SETS+=("$arg"); else REST+=("$arg"); fi
done
SETS=()  # ours first, unless the user sets the same field; then the user's, in one --set list
[[ " ${USER_SETS[*]} " == *" vllm_mode="* ]] || SETS+=(vllm_mode=colocate)
[[ " ${USER_SETS[*]} " == *" trl="* ]] || SETS+=("trl=$TRL")
SETS+=("${USER_SETS[@]}")
CUDA_VISIBLE_DEVICES=${GPU:-0} accelerate launch --config_file "$HERE/accelerate_zero2_1gpu.yaml" \
  -m "$ENTRY" --config "$CONFIG" --output-dir "$OUT" "${REST[@]}" --set "${SETS[@]}"
