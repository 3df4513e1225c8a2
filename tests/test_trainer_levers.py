"""The levers that make a real MURPHY step cheaper on a CPU (docs/performance.md, "The real step on a CPU"), each
checked exact (or, for bf16, within its stated tolerance) on tiny local models:

- one prefill per group: `policy.hf.generate_groups` gives `generate(num_return_sequences=n)`'s tokens and scores;
  the trainer's rollouts give the same completions with it as without;
- the stop rule in the trainer's rollouts: a completion ends at its closed code block (the evaluation's rule);
- length-sorted micro-batches and chunks: the same log-probs, loss and gradient as the unsorted round;
- bf16 on a CPU: log-probs, the importance ratio at the first iteration and the loss within the stated tolerance
  of fp32.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

import murphy_lab.config as config_mod
from murphy_lab.config import MurphyConfig
from murphy_lab.policy.hf import CodeBlockClosed, generate_groups
from murphy_lab.smoke import smoke_tasks
from murphy_lab.trainer.sampling import TurnSampler

peft_missing = pytest.mark.skipif(
    importlib.util.find_spec("peft") is None, reason="LoRA needs peft (the lora extra)"
)
# bf16 against fp32 on the tiny model (random weights, logits of order 1): the stated tolerance
BF16_LOGP_MAX, BF16_LOGP_MEAN, BF16_RATIO, BF16_LOSS = 0.1, 0.02, 0.05, 0.05


def make_trainer(tmp_path, model_path, executor, stop_after_code=None, **overrides):
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile("smoke", model=model_path, **{"max_steps": 1, **overrides})
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    return MurphyTrainer(
        model=model_path,
        args=args,
        murphy=cfg,
        tasks=smoke_tasks(),
        executor=executor,
        stop_after_code=stop_after_code,
    )


def rows_for(trainer, tasks):
    from murphy_lab.trainer import task_dataset

    return [row for row in task_dataset(tasks) for _ in range(trainer.num_generations)]


# --- one prefill per group ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sample", [False, True])
def test_generate_groups_prefills_once_and_gives_generates_tokens_and_scores(tiny_model_path, sample):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    enc = tok(["def f(x):", "a much longer prompt, padded less", "z"], return_tensors="pt", padding=True)
    kw = dict(
        max_new_tokens=12,
        pad_token_id=tok.pad_token_id,
        output_scores=True,
        return_dict_in_generate=True,
        do_sample=sample,
        **({"top_k": 0} if sample else {}),
    )
    calls = []
    hook = model.model.register_forward_pre_hook(
        lambda m, a, k: calls.append(k["input_ids"].shape), with_kwargs=True
    )
    torch.manual_seed(0)
    ours = generate_groups(model, enc["input_ids"], enc["attention_mask"], 4, **kw)
    prefill = calls[:2]
    hook.remove()
    torch.manual_seed(0)
    if sample:
        ref = model.generate(**enc, num_return_sequences=4, **kw)
    else:  # greedy search repeats the rows instead
        ref = model.generate(**{k: v.repeat_interleave(4, 0) for k, v in enc.items()}, **kw)
    # 3 prompts once, then rows
    assert prefill == [torch.Size([3, enc["input_ids"].size(1) - 1]), torch.Size([12, 1])]
    assert torch.equal(ours.sequences, ref.sequences)
    assert max(float((a - b).abs().max()) for a, b in zip(ours.scores, ref.scores)) <= 1e-5


def test_the_trainers_rollouts_are_the_same_with_one_prefill_per_group(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    prompts = [t.prompt for t in smoke_tasks()[:3]]
    out = {}
    for once in (True, False):
        trainer.prefill_once = once
        sampler = TurnSampler(trainer, filler=prompts[0])
        torch.manual_seed(1)
        texts = sampler(prompts, 4)
        out[once] = (texts, [r["completion_ids"] for r in sampler.pending])
    assert out[True] == out[False] and len(out[True][1]) == 12


def test_the_trainers_rollouts_are_trls_own(tmp_path, tiny_model_path, executor):
    """Without the stop rule the trainer's generation gives TRL's `_generate_single_turn` completions, token for
    token (the toy and smoke runs sample what they sampled before)."""
    from trl import GRPOTrainer

    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    ids = trainer._tokenize_prompts([t.prompt for t in smoke_tasks()[:3]])[0]
    rows = [list(p) for p in ids for _ in range(4)]
    torch.manual_seed(2)
    ours = trainer._generate_single_turn(rows, None, {}, 4)[0]
    torch.manual_seed(2)
    trls = GRPOTrainer._generate_single_turn(trainer, rows, None, {}, 4)[0]
    assert ours == trls and len(ours) == 12


# --- the stop rule in the trainer's rollouts ------------------------------------------------------------------------
OPEN, BODY, CLOSE, MORE = "```\n", "pass\n", "```", "more"


@pytest.fixture(scope="module")
def fence_model(tmp_path_factory):
    """A tiny model whose tokenizer has one token per fence piece, made (by a hook on its head) to answer
    OPEN BODY CLOSE MORE MORE ...: a closed code block, then prose."""
    from murphy_lab.policy.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("fence") / "model", pieces=(OPEN, BODY, CLOSE, MORE))


def force_answer(model, tokenizer, after=None):
    """Hooks that make the next token a function of the last one (OPEN after any prompt token, then BODY, CLOSE,
    MORE, MORE, ...): a deterministic answer that closes its code block after three tokens. `after`: other
    (token -> next token) pairs, e.g. a prompt's last character -> MORE (an answer that never closes)."""
    nxt = {
        tokenizer.convert_tokens_to_ids(a): tokenizer.convert_tokens_to_ids(b)
        for a, b in ((OPEN, BODY), (BODY, CLOSE), (CLOSE, MORE), (MORE, MORE), *(after or {}).items())
    }
    first = tokenizer.convert_tokens_to_ids(OPEN)
    last = {}
    body = model.get_base_model() if hasattr(model, "get_base_model") else model

    def remember(module, args, kwargs):
        last["ids"] = kwargs["input_ids"][:, -1]

    def steer(module, args, output):
        target = torch.tensor([nxt.get(int(t), first) for t in last["ids"]])
        out = torch.full_like(output, -1e4)
        out[torch.arange(out.size(0)), :, target] = 1e4
        return out

    return [
        body.model.register_forward_pre_hook(remember, with_kwargs=True),
        body.lm_head.register_forward_hook(steer),
    ]


@pytest.mark.parametrize("stop", [True, False])
def test_the_trainers_rollouts_end_at_the_closed_code_block(tmp_path, fence_model, executor, stop):
    trainer = make_trainer(tmp_path, fence_model, executor, stop_after_code=stop, max_completion_length=10)
    hooks = force_answer(trainer.model, trainer.processing_class)
    try:
        sampler = TurnSampler(trainer, filler="q")
        texts = sampler(["write f", "write a longer g"], 2)
    finally:
        for h in hooks:
            h.remove()
    ids = [r["completion_ids"] for r in sampler.pending]
    tok = trainer.processing_class
    block = [tok.convert_tokens_to_ids(t) for t in (OPEN, BODY, CLOSE)]
    if stop:  # ended right after the closing fence: no padding or EOS the model did not sample
        assert ids == [block] * 4 and texts == [[OPEN + BODY + CLOSE] * 2] * 2
    else:  # without the rule it writes on to the length limit
        assert ids == [block + [tok.convert_tokens_to_ids(MORE)] * 7] * 4


@pytest.mark.parametrize("sample", [False, True])
def test_compacting_decoding_gives_generates_sequences(fence_model, sample):
    """Rows that end (the stop rule after 3 tokens, an EOS at once) leave the batch while the others run to the cap:
    the same sequences and the same ends as `generate` (the forced answers make sampling deterministic)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(fence_model)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(fence_model).eval()
    hooks = force_answer(model, tok, after={"b": MORE, "c": tok.eos_token})
    enc = tok(["write a", "then b", "and c", "longer prompt a"], return_tensors="pt", padding=True)
    kw = dict(
        max_new_tokens=8,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        do_sample=sample,
        **({"top_k": 0, "temperature": 0.7} if sample else {}),
    )
    out = {}
    try:
        for compact in (False, True):
            stop = CodeBlockClosed(tok, enc["input_ids"].size(1))
            seqs = generate_groups(
                model, enc["input_ids"], enc["attention_mask"], 2, stop=stop, compact=compact, **kw
            )
            new = seqs[:, enc["input_ids"].size(1) :]
            ends = [stop.ended.get(i) for i in range(new.size(0))]
            out[compact] = ([row[: e or len(row)].tolist() for row, e in zip(new, ends)], ends)
    finally:
        for h in hooks:
            h.remove()
    assert out[True] == out[False]
    # "a" rows closed their block; "b" ran to the cap
    assert out[True][1] == [3, 3, None, None, None, None, 3, 3]


def test_the_trainer_takes_the_models_own_stop_rule(tmp_path, tiny_model_path, executor, monkeypatch):
    from murphy_lab.trainer import core

    assert make_trainer(tmp_path, tiny_model_path, executor).stop_after_code is False  # no packaged model
    # the code model's record
    monkeypatch.setattr(core, "defaults_for", lambda model: {"stop_after_code": True})
    assert make_trainer(tmp_path, tiny_model_path, executor).stop_after_code is True
    assert make_trainer(tmp_path, tiny_model_path, executor, stop_after_code=False).stop_after_code is False


def test_the_stop_rule_records_where_each_row_ended():
    class Chars:
        def decode(self, ids, skip_special_tokens=False):
            return "".join(map(chr, ids.tolist()))

        def batch_decode(self, rows):
            return [self.decode(r) for r in rows]

    rule = CodeBlockClosed(Chars(), 1)
    rows = ["q```\nx\n`", "qabcdefg"]
    for t in range(2, len(rows[0]) + 1):
        rule(torch.tensor([[ord(c) for c in r[:t]] for r in rows]), None)
    assert rule.ended == {}
    rows = ["q```\nx\n```", "qabcdefghi"]
    done = rule(torch.tensor([[ord(c) for c in r] for r in rows]), None)
    assert done.tolist() == [True, False] and rule.ended == {0: 9}


# --- length-sorted micro-batches and chunks -------------------------------------------------------------------------
def test_shared_logps_by_length_equals_the_unsorted_pass(tiny_model_path):
    from transformers import AutoModelForCausalLM

    from murphy_lab import prefix

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    torch.manual_seed(0)
    b, p, c = 10, 9, 7
    ids = torch.randint(5, 90, (b, p + c))
    mask = torch.ones_like(ids)
    for i, (lead, comp) in enumerate(
        [(0, 7), (0, 7), (3, 2), (3, 2), (3, 2), (5, 5), (5, 1), (2, 3), (2, 6), (2, 6)]
    ):
        mask[i, :lead] = 0
        mask[i, p + comp :] = 0
    # prompt groups
    ids[1, :p], ids[3, :p], ids[4, :p], ids[9, :p] = ids[0, :p], ids[2, :p], ids[2, :p], ids[8, :p]
    with torch.no_grad():
        plain = prefix.shared_logps(model, ids, mask, c, batch_size=4)[0]
        ordered = prefix.shared_logps(model, ids, mask, c, batch_size=4, by_length=True)[0]
    real = mask[:, p:].bool()
    assert float((plain - ordered)[real].abs().max()) <= 1e-5 and float(ordered[~real].abs().max()) == 0.0


def test_length_sorted_groups_keep_siblings_together_longest_first():
    from murphy_lab import prefix

    batch = {
        "prompt_ids": torch.tensor([[1, 2], [3, 4], [1, 2], [5, 6]]),
        "prompt_mask": torch.ones(4, 2, dtype=torch.long),
        "completion_mask": torch.tensor([[1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0]]),
        "tag": ["a", "b", "c", "d"],
        "scalar": torch.tensor(3),
    }
    out = prefix.sort_groups(batch)
    assert out["tag"] == ["b", "a", "c", "d"] and int(out["scalar"]) == 3


def test_balanced_split_cuts_the_sorted_rows_into_micro_batches_no_costlier_than_equal_rows():
    from murphy_lab import prefix

    def cost(part):  # what the shared pass runs
        group = prefix.prefix_groups(part["prompt_ids"], part["prompt_mask"]).tolist()
        return prefix.split_cost(
            group, part["prompt_mask"].sum(1).tolist(), part["completion_mask"].sum(1).tolist()
        )

    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        # groups (prompt i) of 1-4 rows of random length, sorted longest first as the trainer sorts them
        prompts, lengths = [], []
        for i in range(int(torch.randint(4, 12, (1,), generator=g))):
            for _ in range(int(torch.randint(1, 5, (1,), generator=g))):
                prompts.append([i, i])
                lengths.append(int(torch.randint(1, 30, (1,), generator=g)))
        batch = prefix.sort_groups(
            {
                "prompt_ids": torch.tensor(prompts),
                "prompt_mask": torch.ones(len(prompts), 2, dtype=torch.long),
                "completion_mask": torch.tensor([[1] * n + [0] * (30 - n) for n in lengths]),
                "row": torch.arange(len(prompts)),
                "names": [f"r{i}" for i in range(len(prompts))],
                "num_items_in_batch": torch.tensor(7),
            }
        )
        for parts in (2, 4, len(prompts)):
            split = prefix.balanced_split(batch, parts)
            assert len(split) == parts and all(p["row"].numel() for p in split)
            assert torch.equal(torch.cat([p["row"] for p in split]), batch["row"])  # every row once, in order
            assert sum((p["names"] for p in split), []) == batch["names"]
            assert all(int(p["num_items_in_batch"]) == 7 for p in split)  # scalars as they are
            equal = [
                {k: batch[k][idx] for k in ("prompt_ids", "prompt_mask", "completion_mask")}
                for idx in torch.tensor_split(torch.arange(len(prompts)), parts)
            ]  # TRL's cut
            assert max(cost(p) for p in split) <= max(cost(p) for p in equal)
    with pytest.raises(ValueError, match="3 rows cannot make 4"):
        prefix.balanced_split({k: v[:3] for k, v in batch.items() if k != "num_items_in_batch"}, 4)


def _round_loss_and_grad(trainer, batch, spg, balanced=False):
    from trl.trainer.utils import split_tensor_dict

    from murphy_lab import prefix

    if trainer._by_length():
        batch = prefix.sort_groups(batch)
    trainer.model.zero_grad()
    total = 0.0
    parts = prefix.balanced_split(batch, spg) if balanced else split_tensor_dict(batch, spg)
    assert parts is not None
    for part in parts:
        loss = trainer._compute_loss(trainer.model, part)
        loss.backward()
        total += float(loss)
    return total, {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}


def four_micro_batches(tmp_path, model_path, executor):
    """A trainer in train mode whose round is cut into 4 micro-batches of 2 rows (TRL's split)."""
    trainer = make_trainer(
        tmp_path,
        model_path,
        executor,
        steps_per_generation=4,
        per_device_train_batch_size=2,
        max_completion_length=16,
    )
    trainer.model.train()
    return trainer


def test_length_sorted_micro_batches_give_the_same_loss_and_gradient(tmp_path, tiny_model_path, executor):
    trainer = four_micro_batches(tmp_path, tiny_model_path, executor)
    trainer.current_gradient_accumulation_steps = 4  # what the training loop sets: 4 micro-batches per step
    torch.manual_seed(0)
    batch = trainer._generate_and_score_completions(rows_for(trainer, smoke_tasks()[:2]))
    assert batch["completion_mask"].sum(1).unique().numel() > 2  # rows of several lengths
    trainer.sort_by_length = False
    loss0, grad0 = _round_loss_and_grad(trainer, batch, 4)
    trainer.sort_by_length = True
    for balanced in (False, True):  # equal rows, then even cost (the loss is dapo here)
        loss1, grad1 = _round_loss_and_grad(trainer, batch, 4, balanced)
        assert loss1 == pytest.approx(loss0, rel=1e-5, abs=1e-7)
        assert grad0.keys() == grad1.keys()
        for name in grad0:
            scale = float(grad0[name].abs().max()) or 1.0
            assert float((grad0[name] - grad1[name]).abs().max()) <= 1e-4 * scale, name


def split_cost(part: dict) -> int:
    from murphy_lab import prefix

    group = prefix.prefix_groups(part["prompt_ids"], part["prompt_mask"]).tolist()
    return prefix.split_cost(
        group, part["prompt_mask"].sum(1).tolist(), part["completion_mask"].sum(1).tolist()
    )


def test_the_trainer_cuts_a_sorted_round_into_micro_batches_of_even_cost(tmp_path, tiny_model_path, executor):
    trainer = four_micro_batches(tmp_path, tiny_model_path, executor)
    trainer.sort_by_length = True
    torch.manual_seed(0)
    trainer._prepare_inputs(rows_for(trainer, smoke_tasks()[:2]))
    parts = trainer._buffered_inputs
    rows = sum(p["completion_mask"].size(0) for p in parts)
    cost = [split_cost(p) for p in parts]
    assert len(parts) == 4
    assert {"advantages", "num_items_in_batch", "ref_per_token_logps"} <= set(parts[0])
    trainer.balance_cost = False  # TRL's equal rows
    trainer._buffered_inputs = None
    torch.manual_seed(0)
    trainer._prepare_inputs(rows_for(trainer, smoke_tasks()[:2]))
    equal = [split_cost(p) for p in trainer._buffered_inputs]
    assert {p["completion_mask"].size(0) for p in trainer._buffered_inputs} == {rows // 4}  # the same rows
    assert max(cost) <= max(equal) and len({p["completion_mask"].size(0) for p in parts}) > 1


def test_length_sorting_is_on_by_default_only_where_numbers_move_with_the_batch_shape(
    tmp_path, tiny_model_path, executor
):
    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    assert trainer._by_length() is False  # fp32: committed runs keep their numbers bit for bit
    trainer.args.bf16 = True
    assert trainer._by_length() is True


# --- bf16 on a CPU ----------------------------------------------------------------------------------------------------
@peft_missing
def test_bf16_on_a_cpu_stays_within_the_stated_tolerance_of_fp32(
    tmp_path, tiny_model_path, executor, monkeypatch
):
    """The same round (fp32 rollouts) scored by a LoRA trainer in fp32 and one in bf16 (base weights in bf16,
    adapters fp32, autocast): per-token log-probs, the importance ratio π_θ / π_old at the first iteration (two
    passes of the bf16 model over the same round, as num_iterations > 1 computes it) and the loss."""
    monkeypatch.setattr(config_mod, "cpu_bf16", lambda: True)  # allowed on any CPU here (torch emulates bf16)
    lora = dict(
        use_peft=True,
        lora_r=4,
        lora_target_modules="all-linear",
        steps_per_generation=2,
        per_device_train_batch_size=4,
        max_completion_length=12,
    )
    fp32 = make_trainer(tmp_path / "fp32", tiny_model_path, executor, bf16=False, **lora)
    bf16 = make_trainer(tmp_path / "bf16", tiny_model_path, executor, bf16=True, **lora)
    assert next(p for n, p in bf16.model.named_parameters() if "lora_" not in n).dtype == torch.bfloat16
    assert next(p for n, p in bf16.model.named_parameters() if "lora_" in n).dtype == torch.float32
    torch.manual_seed(0)
    fp32.model.train()
    bf16.model.train()
    fp32.current_gradient_accumulation_steps = bf16.current_gradient_accumulation_steps = 1
    batch = fp32._generate_and_score_completions(rows_for(fp32, smoke_tasks()[:2]))
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    c, mask = batch["completion_ids"].size(1), batch["completion_mask"].bool()
    with torch.no_grad():
        ref = fp32._get_per_token_logps_and_entropies(fp32.model, ids, attn, c, batch_size=4)[0]
        # π_old (no grad)
        old = bf16._get_per_token_logps_and_entropies(bf16.model, ids, attn, c, batch_size=4)[0]
    # the loss pass: one chunk, grad
    new = bf16._get_per_token_logps_and_entropies(bf16.model, ids, attn, c)[0]
    diff = (new.float() - ref)[mask].abs()
    ratio = torch.exp(new.float() - old.float())[mask]
    loss32 = float(fp32._compute_loss(fp32.model, batch))
    loss16 = float(bf16._compute_loss(bf16.model, batch))
    assert float(diff.max()) <= BF16_LOGP_MAX and float(diff.mean()) <= BF16_LOGP_MEAN
    assert float((ratio - 1).abs().max()) <= BF16_RATIO
    assert abs(loss16 - loss32) <= BF16_LOSS * max(abs(loss32), 1e-3)
