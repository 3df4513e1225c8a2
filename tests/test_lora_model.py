"""A LoRA run is a model: its `final/` holds only the adapter, and every evaluation loads the run's base model with
the adapter on top (`murphy_lab.models`): `eval_cli --model RUN`, `--like RUN`, the tables' evaluation of a trained
run (and of its cached checkpoint). `python -m murphy_lab.merge RUN` writes a plain model folder that evaluates the
same, sample for sample."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from murphy_lab import experiments as X
from murphy_lab import merge, models, preflight
from murphy_lab.cli import Refused
from murphy_lab.eval_cli import main as eval_main
from murphy_lab.train import main as train_main

pytest.importorskip("peft")
HELDOUT = "docs/examples/own_tasks/heldout.jsonl"


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory, tiny_model_path):
    run = tmp_path_factory.mktemp("lora") / "run"
    train_main(
        [
            "--profile",
            "smoke",
            "--threads",
            "1",
            "--output-dir",
            str(run),
            "--set",
            f"model={tiny_model_path}",
            "use_peft=true",
            "lora_target_modules=all-linear",
            "max_steps=1",
            "save_steps=1",
        ]
    )
    return run


@pytest.mark.slow
def test_a_lora_run_is_evaluated_as_its_base_plus_adapter_and_merged_the_same(
    lora_run, tiny_model_path, tmp_path
):
    final = lora_run / "final"
    assert models.is_adapter(final) and not (final / "config.json").exists()  # the adapter only
    assert models.adapter_base(final) == tiny_model_path and preflight.model_problem(str(final)) is None
    flags = ["--task-args", f"path={HELDOUT}", "--iters", "1", "2", "--runs", "1", "--threads", "1"]
    adapter = eval_main(["--model", str(lora_run), *flags])  # "holds no config.json" before
    merged = merge.main([str(lora_run), "--out", str(tmp_path / "merged")])
    assert (merged / "config.json").is_file() and not models.is_adapter(merged)
    plain = eval_main(
        ["--model", str(merged), "--like", str(lora_run), "--output-dir", str(tmp_path / "ev"), *flags]
    )
    pd.testing.assert_frame_equal(adapter, plain)
    same = [
        [json.loads(line)["attempts"] for line in (folder / "transcripts.jsonl").read_text().splitlines()]
        for folder in (lora_run / "eval", tmp_path / "ev")
    ]
    assert same[0] == same[1]  # sample for sample
    base = eval_main(
        ["--model", tiny_model_path, "--like", str(lora_run), "--output-dir", str(tmp_path / "b"), *flags]
    )
    assert json.loads((tmp_path / "b" / "eval.json").read_text())["settings_from"] == str(lora_run) and len(
        base
    )
    with pytest.raises(Refused, match="exists and is not empty"):
        merge.main([str(lora_run), "--out", str(tmp_path / "merged")])


def test_merge_refuses_a_folder_without_an_adapter_in_one_line(tmp_path, tiny_model_path):
    with pytest.raises(ValueError, match="holds no LoRA adapter .* already a plain model folder"):
        merge.main([tiny_model_path])
    with pytest.raises(ValueError, match="no such folder"):
        merge.main([str(tmp_path / "nope")])


@pytest.mark.slow
def test_the_tables_train_a_lora_run_and_evaluate_it_and_its_cached_checkpoint(tmp_path):
    (exp,) = X.plan(
        "smoke",
        methods=["grpo"],
        seeds=[0],
        overrides=(("max_steps", 1), ("use_peft", True), ("lora_target_modules", "all-linear")),
    )
    results, cache = tmp_path / "results", tmp_path / "cache"
    trained = X.run_experiment(exp, results, cache)
    checkpoint = cache / "checkpoints" / X.train_key(exp) / "final"
    assert models.is_adapter(checkpoint) and len(trained.results)
    # the run record gone, the checkpoint kept: the jobs' / notebooks' evaluation of it
    shutil.rmtree(trained.path)
    again = X.run_experiment(exp, results, cache, train=False)
    pd.testing.assert_frame_equal(
        trained.results.reset_index(drop=True), again.results.reset_index(drop=True)
    )


def test_an_adapter_of_a_packaged_model_loads_its_cached_base_by_the_name_its_run_recorded(
    tiny_model_path, tmp_path, monkeypatch
):
    # a real-cpu run records the packaged model's name (`model: qwen2.5-coder-0.5b` in config.yaml), which no hub
    # serves here: the store's final evaluation of MURPHY's adapter tried the hub and failed
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from murphy_lab.policy import CODE_MODEL, packaged

    run = tmp_path / "run"
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_path), LoraConfig(r=2, target_modules="all-linear")
    )
    model.save_pretrained(run / "final")
    (run / "config.yaml").write_text(f"model: {CODE_MODEL}\n")
    assert models.adapter_base(run / "final") == CODE_MODEL
    monkeypatch.setattr(packaged, "resolve_model", lambda m: tiny_model_path if m == CODE_MODEL else m)
    loaded = models.load_model(run / "final", device="cpu")
    assert loaded.base_model.model.config.vocab_size == model.base_model.model.config.vocab_size
    assert models.tokenizer_source(run / "final") == tiny_model_path
