"""µCode baseline: BT/BCE losses, pairs, the expert's relabeling, best-of-N, the stage cache, one full smoke round."""

from __future__ import annotations

import inspect
import json
import math

import pytest
import torch

from murphy_lab.baselines import mucode
from murphy_lab.baselines.mucode import (
    MuCodeConfig,
    VerifierBestOfN,
    bce_loss,
    bradley_terry_loss,
    expert_choice,
    preference_pairs,
    relabel,
    run_mucode,
    stage,
)
from murphy_lab.baselines.mucode.sft import sft_generator
from murphy_lab.tasks.task import Task
from murphy_lab.tree import Node, RolloutTree
from murphy_lab.trl_args import checkpointing

torch.set_num_threads(1)


# --- hand-made labeled trees -------------------------------------------------------------------------------------
def _n(completion: str, correct: bool, verifier: float, prompt: str = "", children=()) -> Node:
    meta = {"oracle": 1.0 if correct else 0.0, "correct": correct, "verifier": verifier}
    return Node(
        reward=float(correct),
        completion=completion,
        code=completion,
        prompt=prompt,
        meta=meta,
        children=list(children),
    )


def chain_tree() -> RolloutTree:
    """Three chains of task x:  A: a1 -> a2 (fails, R=0.5);  B: b1 -> b2 (b2 correct, R=0.1);  C: c1 (fails, R=0.9)."""
    a = _n("a1", False, 0.2, "x", [_n("a2", False, 0.5, "x|a1")])
    b = _n("b1", False, 0.3, "x", [_n("b2", True, 0.1, "x|b1")])
    c = _n("c1", False, 0.9, "x")
    return RolloutTree(root=Node(prompt="x", children=[a, b, c]), task_id="t")


# --- losses ------------------------------------------------------------------------------------------------------
def test_bradley_terry_loss_equals_minus_log_sigmoid_of_margin():
    r_c, r_r = torch.tensor([2.0, 0.0, -1.0]), torch.tensor([1.0, 0.0, 1.0])
    sig = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    expected = (-math.log(sig(1.0)) - math.log(sig(0.0)) - math.log(sig(-2.0))) / 3
    assert bradley_terry_loss(r_c, r_r).item() == pytest.approx(expected, rel=1e-6)


def test_bce_loss_labels_chosen_one_and_rejected_zero():
    r_c, r_r = torch.tensor([2.0]), torch.tensor([-1.0])
    sig = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    expected = (-math.log(sig(2.0)) - math.log(1 - sig(-1.0))) / 2
    assert bce_loss(r_c, r_r).item() == pytest.approx(expected, rel=1e-6)


def test_reward_trainer_loss_equals_bradley_terry_loss(tmp_path):
    """TRL's RewardTrainer (what trains the verifier) computes exactly our BT loss on the model's scores."""
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    from murphy_lab.policy.tiny import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    rows = [
        {"chosen_ids": mucode.encode(tok, "x", "good"), "rejected_ids": mucode.encode(tok, "x", "bad!!")},
        {"chosen_ids": mucode.encode(tok, "y", "ok"), "rejected_ids": mucode.encode(tok, "y", "no")},
    ]
    args = RewardConfig(
        output_dir=str(tmp_path / "rm"),
        use_cpu=True,
        bf16=False,
        report_to=[],
        disable_tqdm=True,
        **checkpointing(RewardConfig, False),
    )  # the keyword this transformers knows
    trainer = RewardTrainer(
        model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok
    )
    batch = trainer.data_collator(rows)  # chosen rows first, then rejected
    with torch.no_grad():
        trl_loss = trainer.compute_loss(model, dict(batch)).item()
        scores = model(**batch).logits.squeeze(-1)  # (2P,)
    r_c, r_r = scores.chunk(2)
    assert trl_loss == pytest.approx(bradley_terry_loss(r_c, r_r).item(), rel=1e-5)


# --- pairs and relabeling ----------------------------------------------------------------------------------------
def test_preference_pairs_pair_a_correct_with_an_incorrect_response_to_the_same_prompt():
    all_wrong = RolloutTree(
        root=Node(prompt="z", children=[_n("w1", False, 0), _n("w2", False, 0)]), task_id="u"
    )
    pairs = preference_pairs([chain_tree(), all_wrong], pairs_per_task=5, seed=0)
    # task u has no correct response: no pair
    assert len(pairs) == 5 and {p["task_id"] for p in pairs} == {"t"}
    assert all(p["prompt"] == "x" and p["chosen"] == "b2" and p["rejected"] != "b2" for p in pairs)


def test_expert_choice_ranks_a_correct_response_above_a_higher_verifier_score():
    assert expert_choice(chain_tree(), "oracle+verifier")["completion"] == "b2"  # 100·1 + 0.1 > 0.9
    assert expert_choice(chain_tree(), "verifier")["completion"] == "c1"  # R_φ alone prefers c1


def test_relabel_maps_every_state_of_the_top_failed_chains_to_the_expert_choice():
    rows = relabel([chain_tree()], "oracle+verifier", num_to_relabel=1, keep_positive=True)
    relabeled = [(r["prompt"], r["completion"]) for r in rows if r["kind"] == "relabeled"]
    positive = [(r["prompt"], r["completion"]) for r in rows if r["kind"] == "positive"]
    assert relabeled == [("x", "b2")]  # only chain C (highest R_φ among failed chains) with num_to_relabel=1
    assert positive == [("x", "b2"), ("x|b1", "b2")]  # the correct chain keeps its own answer at each state


def test_relabel_all_failed_chains_when_num_to_relabel_is_zero():
    rows = relabel([chain_tree()], "oracle+verifier", num_to_relabel=0, keep_positive=False)
    assert sorted(r["prompt"] for r in rows) == ["x", "x", "x|a1"] and {r["completion"] for r in rows} == {
        "b2"
    }


# --- the expert relabels among SAMPLED candidates only ------------------------------------------------------------
GOLD = "def add(a, b):\n    return a + b\n"


def test_the_reference_solution_is_never_a_candidate_of_the_expert(executor):
    """A task whose reference passes and whose samples all fail: no SFT row may target the gold program."""
    from murphy_lab.baselines.mucode.rollouts import collect_rollouts
    from murphy_lab.baselines.mucode.verifier import candidates
    from murphy_lab.policy import ScriptedPolicy

    task = Task(
        task_id="add",
        prompt="Write add(a, b).",
        visible_tests=["assert add(1, 2) == 3"],
        hidden_tests=["assert add(2, 2) == 4"],
        reference=GOLD,
    )
    wrong = ScriptedPolicy(lambda prompt, n: ["def add(a, b):\n    return a - b\n"] * n)
    (tree,) = collect_rollouts([task], wrong, executor, rollouts=2, turns=2, progress=False)
    for c in candidates(tree):
        c["meta"]["verifier"] = 0.0
    assert GOLD not in [c["completion"] for c in candidates(tree)]
    assert not any(c["meta"]["correct"] for c in candidates(tree))
    assert GOLD not in {r["completion"] for r in relabel([tree], "oracle+verifier", num_to_relabel=0)}


@pytest.mark.parametrize(
    "build",
    [
        lambda: MuCodeConfig.for_profile("toy", include_reference=True),
        lambda: MuCodeConfig.from_dict({"profile": "toy", "include_reference": True}),
    ],
)
def test_config_refuses_the_removed_gold_reference_option_with_the_reason(build):
    with pytest.raises(ValueError, match="include_reference was removed: .*SAMPLED candidates only"):
        build()


def test_a_tree_that_carries_a_reference_candidate_is_refused():
    from murphy_lab.baselines.mucode.verifier import candidates

    tree = chain_tree()
    tree.meta["reference"] = {"completion": GOLD, "code": GOLD, "correct": True}
    with pytest.raises(ValueError, match="sampled attempts only"):
        candidates(tree)


# --- inference ---------------------------------------------------------------------------------------------------
class _ScoreByText:
    def score(self, prompts, completions):
        return [1.0 if "right" in c else 0.0 for c in completions]


class _Exec:
    def run_many(self, jobs):
        from murphy_lab.executor.types import ExecutionResult

        return [
            ExecutionResult(
                reward=float("right" in p),
                passed=int("right" in p),
                total=1,
                status="passed" if "right" in p else "failed",
                feedback="no",
            )
            for p, _ in jobs
        ]


def test_verifier_best_of_n_holds_the_candidate_the_verifier_scores_highest():
    from murphy_lab.evaluate import evaluate
    from murphy_lab.policy import ScriptedPolicy

    task = Task(task_id="t", prompt="p", visible_tests=["assert 1"], hidden_tests=["assert 1"])
    policy = ScriptedPolicy(lambda prompt, n: (["wrong", "right"] * n)[:n])
    bon = VerifierBestOfN(_ScoreByText(), n=2, extract=lambda c: c)
    # always the first sample: "wrong"
    plain = VerifierBestOfN(None, n=1, selection="random", extract=lambda c: c)
    kw = dict(iters=(1,), runs=1, progress=False)
    assert evaluate(policy, [task], _Exec(), scaffold=bon, **kw)["pass@1"].iloc[0] == 100.0
    assert evaluate(policy, [task], _Exec(), scaffold=plain, **kw)["pass@1"].iloc[0] == 0.0


# --- stages and config -------------------------------------------------------------------------------------------
def test_stage_skips_a_stage_whose_done_marker_exists(tmp_path):
    calls = []
    first = stage(tmp_path, "s", lambda d: calls.append(d) or {"x": 1})
    again = stage(tmp_path, "s", lambda d: calls.append(d) or {"x": 2})
    assert len(calls) == 1 and first["x"] == again["x"] == 1 and again["skipped"]


def test_config_rejects_an_unknown_field_by_name():
    with pytest.raises(ValueError, match="verifer_lr"):
        MuCodeConfig.from_dict({"method": "mucode", "profile": "smoke", "verifer_lr": 1e-6})


def test_config_defaults_are_the_published_values():
    cfg = MuCodeConfig()
    assert (cfg.rollouts, cfg.turns, cfg.temperature, cfg.sft_lr, cfg.verifier_lr, cfg.verifier_loss) == (
        15,
        3,
        0.7,
        5e-7,
        1e-6,
        "bt",
    )


# --- one full round on the smoke profile -------------------------------------------------------------------------
STAGES = ["eval", "round1/relabel", "round1/rollouts", "round1/sft", "round1/verifier"]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from murphy_lab.executor import Executor
    from murphy_lab.smoke import build_smoke

    out = tmp_path_factory.mktemp("mucode") / "run"
    base, tasks = build_smoke(out.parent)
    with Executor(timeout=2, workers=2) as executor:
        final = run_mucode(
            MuCodeConfig.for_profile("smoke"), out, model=base, tasks=tasks, executor=executor, progress=False
        )
        yield dict(out=out, final=final, base=base, tasks=tasks, executor=executor)


def test_smoke_run_does_one_full_round(smoke_run):
    out = smoke_run["out"]
    assert mucode.finished_stages(out) == STAGES
    import pandas as pd

    table = pd.read_csv(out / "eval" / "table.csv")
    assert set(table["inference"]) == {"iter-k", "verifier-bon"} and set(table["k"]) == {1, 2}
    assert json.loads((out / "round1" / "verifier" / "done.json").read_text())["trained"]


def test_smoke_run_logs_its_rollout_budget_in_the_trainers_keys(smoke_run):
    lines = [json.loads(x) for x in (smoke_run["out"] / "metrics.jsonl").read_text().splitlines()]
    (rollouts,) = [x for x in lines if x.get("stage") == "round1/rollouts"]
    assert rollouts["trajectories/total"] == rollouts["attempts"] > 0  # every sampled attempt is a tree node
    assert 0 < rollouts["completions/mean_length"] <= MuCodeConfig.for_profile("smoke").max_new_tokens


def test_smoke_run_sft_changes_the_generator_parameters(smoke_run):
    from transformers import AutoModelForCausalLM

    before = AutoModelForCausalLM.from_pretrained(smoke_run["base"]).state_dict()
    after = AutoModelForCausalLM.from_pretrained(smoke_run["final"]).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_resume_skips_every_finished_stage(smoke_run, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a finished stage ran again")

    for name in ("collect_rollouts", "train_verifier", "relabel", "sft_generator", "evaluate_mucode"):
        monkeypatch.setattr(f"murphy_lab.baselines.mucode.pipeline.{name}", boom)  # the names the stages call
    again = run_mucode(
        MuCodeConfig.for_profile("smoke"),
        smoke_run["out"],
        resume=True,
        model=smoke_run["base"],
        tasks=smoke_run["tasks"],
        executor=smoke_run["executor"],
        progress=False,
    )
    assert again == smoke_run["final"]


def test_run_refuses_a_used_output_dir_without_resume(smoke_run):
    with pytest.raises(FileExistsError, match="resume"):
        run_mucode(
            MuCodeConfig.for_profile("smoke"),
            smoke_run["out"],
            model=smoke_run["base"],
            tasks=smoke_run["tasks"],
            executor=smoke_run["executor"],
            progress=False,
        )


def test_cli_reads_the_config_file_and_lets_profile_and_resume_through(tmp_path, monkeypatch):
    from murphy_lab.baselines.mucode import __main__ as cli
    from murphy_lab.baselines.mucode import pipeline

    seen = {}
    monkeypatch.setattr(
        pipeline, "run_mucode", lambda cfg, out, resume, progress: seen.update(cfg=cfg, resume=resume)
    )
    (tmp_path / "c.yaml").write_text("method: mucode\nprofile: toy\nbest_of_n: 3\n")
    cli.main(
        [
            "--config",
            str(tmp_path / "c.yaml"),
            "--output-dir",
            str(tmp_path / "o"),
            "--profile",
            "smoke",
            "--resume",
        ]
    )
    assert (seen["cfg"].profile, seen["cfg"].best_of_n, seen["cfg"].rollouts, seen["resume"]) == (
        "smoke",
        3,
        2,
        True,
    )


@pytest.mark.parametrize("loss", ["bt", "bce"])
def test_train_verifier_learns_to_rank_the_chosen_response_higher(tmp_path, loss):
    from murphy_lab.policy.tiny import build_tiny_model

    base = build_tiny_model(tmp_path / "tiny")
    pairs = [{"prompt": "x", "chosen": "return 1", "rejected": "retrun !"}] * 8
    stats = mucode.train_verifier(
        pairs,
        base,
        tmp_path / "v",
        loss=loss,
        lr=1e-2,
        epochs=4,
        batch_size=4,
        grad_accum=1,
        trl_kwargs={"logging_steps": 1},
    )
    good, bad = mucode.Verifier(tmp_path / "v" / "model").score(["x", "x"], ["return 1", "retrun !"])
    assert stats["trained"] and stats["loss_type"] == loss and good > bad


def test_the_method_trains_on_the_experiments_training_set_and_leaves_evaluation_to_the_caller(monkeypatch):
    from murphy_lab.baselines.mucode import method
    from murphy_lab.experiments import Experiment

    seen = {}
    monkeypatch.setattr(
        method, "run_mucode", lambda cfg, out, resume: seen.update(cfg=cfg, resume=resume) or out
    )
    exp = Experiment("toy", "toy", "mucode", seed=1, overrides=(("rounds", 1), ("max_steps", 40)))
    method.train(exp, "base/path", "out")
    cfg = seen["cfg"]
    assert (
        cfg.model,
        cfg.tasks,
        cfg.task_args,
        cfg.n_train_tasks,
        cfg.seed,
        cfg.rounds,
        cfg.evaluate,
        seen["resume"],
    ) == ("base/path", "toy", {"split": "train", "n": 512, "seed": 0}, 200, 1, 1, False, True)


def test_a_standalone_toy_run_trains_on_the_first_n_train_tasks_of_the_toy_training_set(
    tmp_path, monkeypatch
):
    from murphy_lab.baselines.mucode import pipeline

    seen = {}
    monkeypatch.setattr(
        pipeline, "_run", lambda cfg, out, base, train, test, *a: seen.update(train=train, test=test)
    )
    run_mucode(MuCodeConfig.for_profile("toy", model="m", evaluate=True), tmp_path / "run", executor=object())
    assert [t.task_id for t in seen["train"]] == [f"toy/train/0/{i}" for i in range(200)]
    assert len(seen["test"]) == 200 and seen["test"][0].task_id.startswith("toy/test/")


@pytest.mark.parametrize("stage, fn", [("sft", sft_generator), ("verifier", mucode.train_verifier)])
def test_stage_knobs_are_the_stage_functions_keywords_with_the_stages_own_values(stage, fn):
    cfg = MuCodeConfig(
        sft_lr=1e-3,
        sft_max_length=77,
        verifier_lr=2e-3,
        verifier_max_length=99,
        seed=5,
        trl={"logging_steps": 3},
    )
    knobs = cfg.stage_knobs(stage)
    keywords = {p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert set(knobs) == keywords - {"loss"}  # the verifier's loss is passed by the pipeline itself
    assert knobs["lr"] == getattr(cfg, f"{stage}_lr") and knobs["max_length"] == getattr(
        cfg, f"{stage}_max_length"
    )
    assert (knobs["seed"], knobs["trl_kwargs"]) == (5, {"logging_steps": 3})
