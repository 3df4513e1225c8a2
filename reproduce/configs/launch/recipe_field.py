"""Print one field of a training recipe for the launch scripts: `python recipe_field.py CONFIG.yaml FIELD`.

FIELD is `model`, `port` (trl.vllm_server_port, default 8000), `max_model_len` (trl.vllm_max_model_length, default
4096) or `colocate_trl` (the recipe's `trl:` mapping for one-GPU colocate mode, as JSON). Reads the YAML as it is
(MURPHY, GRPO, ReVeal recipes alike), so it needs only PyYAML.
"""

import json
import sys

import yaml


def field(recipe: dict, name: str) -> str:
    trl = dict(recipe.get("trl") or {})
    if name == "model":
        return str(recipe["model"])
    if name == "port":
        return str(trl.get("vllm_server_port", 8000))
    if name == "max_model_len":
        return str(trl.get("vllm_max_model_length", 4096))
    if name == "colocate_trl":  # vLLM inside the training process, asleep while the model trains
        trl = {k: v for k, v in trl.items() if not k.startswith("vllm_server_")}
        trl.update(vllm_gpu_memory_utilization=0.3, vllm_enable_sleep_mode=True)
        trl.setdefault("vllm_max_model_length", 4096)
        trl["model_init_kwargs"] = {**trl.get("model_init_kwargs", {}), "dtype": "bfloat16"}  # not float32
        return json.dumps(trl)
    raise SystemExit(f"recipe_field.py: unknown field {name!r} (model, port, max_model_len, colocate_trl)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: recipe_field.py CONFIG.yaml FIELD")
    with open(sys.argv[1]) as f:
        print(field(yaml.safe_load(f) or {}, sys.argv[2]))
