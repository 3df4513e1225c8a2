"""Merge a LoRA run into a plain model folder: `python -m murphy_lab.merge`.

    python -m murphy_lab.merge runs/own-lora --out models/own-lora        # the run's final/ adapter
    python -m murphy_lab.merge runs/own-lora/checkpoint-4 --out models/own-lora-4

A LoRA run's `final/` (and each `checkpoint-N/`) holds only the adapter; every evaluation loads it over the run's
base model as it is (`murphy_lab.models`). This writes the base model with the adapter merged in (W + (α/r)·BA,
float32) and the tokenizer, as a folder any tool loads with `from_pretrained` (vLLM, another trainer, the hub).
Evaluate it at the run's generation settings with `python -m murphy_lab.eval_cli --model models/own-lora --like
runs/own-lora`: the same table as `--model runs/own-lora` (tests/test_lora_model.py).
"""

from __future__ import annotations

from pathlib import Path

from murphy_lab import cli, models
from murphy_lab.preflight import model_problem


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.merge", __doc__)
    p.add_argument(
        "adapter", metavar="RUN", help="a LoRA run folder (its final/), or an adapter folder (checkpoint-N/)"
    )
    p.add_argument("--out", help="the merged model's folder (default: <adapter folder>-merged beside it)")
    return p


def adapter_folder(run: str) -> Path:
    """The adapter folder `run` names: the folder itself, or a run folder's `final/`; ValueError otherwise."""
    path = Path(run).expanduser()
    for folder in (path, path / "final"):
        if models.is_adapter(folder):
            return folder
    if not path.is_dir():
        raise ValueError(f"{run!r}: no such folder")
    raise ValueError(
        f"{run!r} holds no LoRA adapter (adapter_config.json, here or in final/): a full-weight run's "
        "final/ is already a plain model folder"
    )


def main(argv: list[str] | None = None) -> Path:
    a = parser().parse(argv)
    folder = adapter_folder(a.adapter)
    out = Path(a.out) if a.out else folder.parent / f"{folder.name}-{models.MERGED}"
    problems = [model_problem(str(folder))]
    if out.exists() and any(out.iterdir()):
        problems.append(f"--out {str(out)!r} exists and is not empty; name a new folder")
    cli.refuse(problems)
    models.merge(folder, out)
    print(f"merged {folder} over {models.adapter_base(folder)} into {out}")
    return out


if __name__ == "__main__":
    cli.run(main)
