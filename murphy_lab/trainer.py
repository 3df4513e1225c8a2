"""`MurphyTrainer`: TRL's GRPOTrainer with MURPHY's rollout tree in place of flat groups (docs/training.md).

TRL's rollout hooks cannot express a tree (rows are fixed at batch x num_generations, advantages are computed over
contiguous blocks), so we override exactly one method, `_generate_and_score_completions`, and reuse the rest:

    rows from TRL's sampler (each task prompt repeated G1 times)      roots = rows[::G1]
    -> build_trees: per turn, ONE call of TRL's own `_generate_single_turn` (transformers / vLLM colocate / vLLM
       server, weight sync included) and ONE executor batch                                       (§3.1)
    -> InterP / IntraP on immediate rewards (prune.py)                                            (§3.3)
    -> MaRS / MeRS credit backup (credit.py), group-relative advantages (grpo.py)                 (§3.2, §3.4)
       [grpo_mt: G chains, final reward broadcast (baselines.rules.grpo_mt); grpo: one group]
    -> one row per kept (prompt, completion) pair, in the dict TRL's `_compute_loss` reads        (unchanged)

Three thin overrides serve the loss pass (docs/performance.md): `_get_per_token_logps_and_entropies` encodes each
shared prompt once per group (murphy_lab/prefix.py) where that is exact, `_prepare_inputs` keeps groups together
in micro-batches, and `_compute_loss` makes filler rows exact for the loss types that count rows.

The private TRL names we rely on (`_generate_single_turn`, `_tokenize_prompts`, `_get_per_token_logps_and_entropies`,
`_compute_loss`, `split_tensor_dict`) change between releases: trl is pinned to 1.16.0 and tests/test_trainer.py
holds a contract test. Two traps handled here: TRL's `split_tensor_dict` silently drops rows when the row count is
not a multiple of `steps_per_generation` (we pad with zero-mask rows, exact for every loss_type), and vLLM server
mode / ZeRO-3 need every rank to make the same generation calls with the same prompt counts (we pad each turn to
the largest rank and let ranks whose trees finished early join the remaining turns with filler prompts).
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import pad, split_tensor_dict, use_adapter

from murphy_lab import prefix
from murphy_lab.baselines.rules import grpo_mt, grpo_single
from murphy_lab.config import MurphyConfig
from murphy_lab.credit import assign_credit
from murphy_lab.grpo import group_advantages
from murphy_lab.prompts import answer_extractor, first_prompt, refine_prompt, token_budget
from murphy_lab.prune import interp, intrap
from murphy_lab.tasks.task import Task
from murphy_lab.tree import Node, RolloutTree, build_trees

logger = logging.getLogger(__name__)
_TOKEN_KEYS = ("prompt_ids", "completion_ids", "sampling_logps")  # per-node token data, stripped before trees/ dump


def task_dataset(tasks: list) -> Any:
    """The TRL dataset: one row per task, `prompt` = the turn-1 prompt q(1), `task_id` to find the Task again."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": first_prompt(t.prompt), "task_id": t.task_id} for t in tasks])


def answer_program(kind: str, code: str) -> str:
    """`Task.program` for a bare answer kind: the code itself, or `ANSWER = '<text>'` for text-answer tasks
    (smoke.py). The trainer runs `task.program(code)`, which also adds a benchmark's import header."""
    return Task("", "", metadata={"answer": kind}).program(code)


def _unused_reward(completions, **kwargs):  # TRL requires a reward function; MurphyTrainer never calls it
    return [0.0] * len(completions)


class MurphyTrainer(GRPOTrainer):
    """GRPOTrainer whose rollouts are MURPHY trees. `args` is TRL's GRPOConfig (`MurphyConfig.to_grpo_config`).

    Args:
        model: path / hub id (TRL loads it; with beta > 0 TRL rebuilds the reference from the same path).
        args: GRPOConfig with `num_generations == murphy.g1`.
        murphy: the MurphyConfig (mode, credit, budgets, G1/G2/S).
        tasks: list of murphy_lab.tasks.Task; rewards from `hidden_tests` (or visible, per `murphy.reward_tests`).
        executor: anything with `run_many(jobs)`; default `murphy_lab.executor.Executor(**murphy.executor)`.
    """

    def __init__(self, model, args, murphy: MurphyConfig, tasks: list, executor: Any = None, **kwargs: Any):
        murphy.validate()
        if args.num_generations != murphy.g1:
            raise ValueError(f"args.num_generations ({args.num_generations}) must equal murphy.g1 ({murphy.g1})")
        ids = [t.task_id for t in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("tasks: task_id values must be unique")
        self.murphy = murphy
        self.tasks_by_id = {t.task_id: t for t in tasks}
        if executor is None:
            from murphy_lab.executor import Executor

            executor = Executor(**murphy.executor)
        self.executor = executor
        super().__init__(model=model, reward_funcs=_unused_reward, args=args, train_dataset=task_dataset(tasks),
                         **kwargs)
        self.rollout_stats: dict[str, float] = {}  # the latest round's statistics (read by RunLog)
        self.add_callback(RunLog(self))

    # ------------------------------------------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict]) -> dict[str, Any]:
        g1 = self.num_generations  # = G1 in the paper
        t0 = time.perf_counter()
        tasks = []
        for i in range(0, len(inputs), g1):  # TRL's RepeatSampler: each task prompt G1 times in a row
            block = {row["task_id"] for row in inputs[i : i + g1]}
            if len(block) != 1:
                raise RuntimeError(f"rows {i}..{i + g1 - 1} mix tasks {sorted(block)}: a tree must live on one rank")
            tasks.append(self.tasks_by_id[block.pop()])

        trees, sampler, execute = self._grow(tasks)
        t_grown = time.perf_counter()
        for tree in trees:
            self._score(tree)  # prune -> credit -> advantages, or a baseline's rule
        nodes = [n for tree in trees for n in tree.nodes(kept_only=True) if n.advantage is not None]
        batch = self._batch(nodes)
        t_end = time.perf_counter()

        stats = self._stats(trees, nodes, padded=len(batch["advantages"]) - len(nodes))
        stats.update({"time/generation_s": sampler.seconds, "time/execution_s": execute.seconds,
                      "time/scoring_s": t_end - t_grown, "time/rollout_s": t_end - t0})
        self.rollout_stats = stats
        for k, v in stats.items():
            self._metrics["train"][k].append(v)  # also reaches TensorBoard / W&B through TRL's report_to
        self._dump_trees(trees)
        return batch

    # --- 1. grow the trees with TRL's generation and our executor ------------------------------------------------
    def _grow(self, tasks: list) -> tuple[list[RolloutTree], _TurnSampler, _TimedExecutor]:
        m = self.murphy
        task_prompt = {first_prompt(t.prompt): t.prompt for t in tasks}
        positions = getattr(self.model.config, "max_position_embeddings", None)
        fit = token_budget(self.processing_class, positions, m.max_completion_length, m.chat, m.chat_template_kwargs)
        g2 = 1 if m.mode == "grpo_mt" else m.g2  # GRPO-MT grows G chains: one refinement per failure
        turns = 1 if m.mode == "grpo" else m.turns
        sampler = _TurnSampler(self, filler=first_prompt(tasks[0].prompt))
        execute = _TimedExecutor(self.executor)
        trees = build_trees(
            [first_prompt(t.prompt) for t in tasks],
            [t.hidden_tests if m.reward_tests == "hidden" else t.visible_tests for t in tasks],
            sampler, execute, g1=m.g1, g2=g2, turns=turns,
            refine=lambda q1, code, feedback: refine_prompt(task_prompt[q1], code, feedback, **fit),  # [task, v, f(v)]
            extract=answer_extractor(tasks),  # the reading evaluation uses too (prompts.read_answer)
            task_ids=[t.task_id for t in tasks], on_turn=sampler.attach,
            programs=[t.program for t in tasks],  # what runs: text answers as ANSWER = '...', LCB's header
        )
        if self.accelerator.num_processes > 1:  # ranks whose trees finished early still join every turn's call
            while sampler.calls < turns:
                sampler([], g2)
        return trees, sampler, execute

    # --- 2. credit and advantages (pure functions over the tree) --------------------------------------------------
    def _score(self, tree: RolloutTree) -> None:
        m = self.murphy
        if m.mode == "grpo":
            grpo_single(tree)  # one group, credit = reward
        elif m.mode == "grpo_mt":
            grpo_mt(tree)  # chain's final reward broadcast, normalised across the G chains
        else:
            if m.b_grp is not None:
                interp(tree, m.b_grp)  # InterP: keep the b_grp highest-variance groups per turn s >= 2
            if m.b_traj is not None:
                intrap(tree, m.b_traj, method=m.prune_method)  # IntraP: b_traj members per group
            assign_credit(tree, rule=m.credit, gamma=m.gamma, backup_on=m.backup_on)  # MaRS / MeRS backup
            group_advantages(tree)  # Â = (r~ - mean_g) / (std_g + 1e-4) inside every kept group

    # --- 3. the rows TRL's _compute_loss reads -------------------------------------------------------------------
    def _batch(self, nodes: list[Node]) -> dict[str, Any]:
        device, pad_id = self.accelerator.device, self._tokenizer.pad_token_id
        rows = len(nodes)
        ends = set(self.eos_token_ids) | {pad_id}  # TRL's mask_truncated_completions: no EOS/pad at the end
        truncated = [self.mask_truncated_completions and (not n.meta["completion_ids"] or
                     n.meta["completion_ids"][-1] not in ends) for n in nodes]  # fmt: skip
        tokens = sum(len(n.meta["completion_ids"]) for n, cut in zip(nodes, truncated) if not cut)
        counts = self._gather_counts(rows, tokens)  # (ranks, 2): real rows and completion tokens of every rank
        target = self._row_target(int(counts[:, 0].max()))  # equal on every rank, a multiple of steps_per_generation
        fill = [nodes[0]] * (target - rows)  # copies with a zero completion mask (decision 3 in docs/training.md)
        prompts = [torch.tensor(n.meta["prompt_ids"], dtype=torch.long) for n in nodes + fill]
        comps = [torch.tensor(n.meta["completion_ids"], dtype=torch.long) for n in nodes + fill]
        ptm = self.pad_to_multiple_of
        prompt_ids = pad(prompts, padding_value=pad_id, padding_side="left", pad_to_multiple_of=ptm).to(device)
        prompt_mask = pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left",
                          pad_to_multiple_of=ptm).to(device)  # (B, P)
        completion_ids = pad(comps, padding_value=pad_id, padding_side="right", pad_to_multiple_of=ptm).to(device)
        completion_mask = pad([torch.ones_like(c) for c in comps], padding_value=0, padding_side="right",
                              pad_to_multiple_of=ptm).to(device)  # (B, C)
        completion_mask[rows:] = 0  # filler rows
        completion_mask[:rows][torch.tensor(truncated, dtype=torch.bool, device=device)] = 0
        advantages = torch.zeros(target, device=device)  # (B,)
        advantages[:rows] = torch.tensor([n.advantage for n in nodes], dtype=torch.float32)
        out = {
            "prompt_ids": prompt_ids, "prompt_mask": prompt_mask,
            "completion_ids": completion_ids, "completion_mask": completion_mask,
            "advantages": advantages,
            "num_items_in_batch": counts[:, 1].sum().to(device),  # completion tokens, all ranks
            "num_rows_in_batch": counts[:, 0].sum().to(device),  # real rows, all ranks (read by _compute_loss)
        }
        out.update(self._logps(prompt_ids, prompt_mask, completion_ids, completion_mask, nodes + fill))
        return out

    def _gather_counts(self, rows: int, tokens: int) -> torch.Tensor:
        """(ranks, 2) int64: every rank's real rows and completion tokens this round (one collective)."""
        local = torch.tensor([[rows, tokens]], dtype=torch.long, device=self.accelerator.device)
        return self.accelerator.gather(local).cpu() if self.accelerator.num_processes > 1 else local.cpu()

    def _compute_loss(self, model, inputs):
        """TRL's loss, with filler rows made exact for the loss types that count rows (decision 3, docs/training.md).

        grpo and dr_grpo divide by the micro-batch's row count B_mb, filler rows included; the unpadded batch has
        B_real = (real rows on all ranks) / (ranks · steps_per_generation) rows per micro-batch, so the loss is
        multiplied by B_mb / B_real (= 1 exactly when there are no filler rows). dapo divides by a token count and
        bnpo is accepted only with one micro-batch per round, so both are exact as TRL computes them.
        """
        if self.loss_type == "bnpo" and self.args.steps_per_generation > 1 and self.model.training:
            raise ValueError("loss_type='bnpo' is exact under filler rows only with steps_per_generation = 1")
        loss = super()._compute_loss(model, inputs)
        if self.loss_type not in ("grpo", "dr_grpo") or "num_rows_in_batch" not in inputs or not self.model.training:
            return loss
        b_mb = inputs["advantages"].size(0)
        b_real = inputs["num_rows_in_batch"].float() / (self.accelerator.num_processes * self.args.steps_per_generation)
        scale = b_mb / b_real.clamp(min=1e-8)
        if (self._entropy_bonus_enabled or self.aux_loss_enabled) and not torch.isclose(scale, torch.ones_like(scale)):
            raise ValueError(f"loss_type={self.loss_type!r} with filler rows cannot rescale TRL's entropy bonus or MoE "
                             "aux loss with the policy loss; use loss_type='dapo'")
        return loss * scale

    def _logps(self, prompt_ids, prompt_mask, completion_ids, completion_mask, nodes) -> dict[str, torch.Tensor]:
        """old_per_token_logps (when TRL would compute them), importance_sampling_ratio (vLLM), ref_per_token_logps."""
        out: dict[str, torch.Tensor] = {}
        ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (B, P+C)
        attn = torch.cat([prompt_mask, completion_mask], dim=1)  # (B, P+C)
        keep, bs = completion_ids.size(1), self.args.per_device_train_batch_size
        is_correction = self.use_vllm and self.vllm_importance_sampling_correction
        generate_every = self.args.steps_per_generation * self.num_iterations
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            # same rule as TRL: π_old differs from π_θ when a round spans optimizer steps (num_iterations > 1, ...)
            if self.args.gradient_accumulation_steps % generate_every != 0 or is_correction:
                out["old_per_token_logps"] = self._get_per_token_logps_and_entropies(
                    self.model, ids, attn, keep, batch_size=bs)[0]  # (B, C)
            if is_correction:
                out.update(self._is_ratio(out["old_per_token_logps"], completion_mask, nodes))
            if self.beta != 0.0:
                if self.ref_model is not None:
                    ref = self._get_per_token_logps_and_entropies(self.ref_model, ids, attn, keep, batch_size=bs)[0]
                else:  # PEFT: the base model is the adapter-free model (as TRL does)
                    unwrapped = self.accelerator.unwrap_model(self.model)
                    with use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None):
                        ref = self._get_per_token_logps_and_entropies(self.model, ids, attn, keep, batch_size=bs)[0]
                out["ref_per_token_logps"] = ref  # (B, C)
        return out

    def _is_ratio(self, old: torch.Tensor, mask: torch.Tensor, nodes: list[Node]) -> dict[str, torch.Tensor]:
        """vLLM importance-sampling correction π_θ_old / π_vLLM, computed exactly as TRL 1.16 does."""
        sampled = [torch.tensor([math.nan if x is None else x for x in (n.meta.get("sampling_logps") or [])])
                   for n in nodes]
        sampled = pad(sampled, padding_value=0.0, padding_side="right").to(old.device)
        sampled = torch.nn.functional.pad(sampled, (0, old.size(1) - sampled.size(1)))  # (B, C)
        diff = torch.nan_to_num((old - sampled) * mask, nan=0.0)
        mode = self.vllm_importance_sampling_mode
        if mode in ("sequence_mask", "sequence_truncate"):
            diff = diff.sum(dim=-1, keepdim=True)  # (B, 1)
        ratio = torch.exp(diff)
        lo, hi = self.vllm_importance_sampling_clip_min, self.vllm_importance_sampling_clip_max
        if mode in ("sequence_truncate", "token_truncate"):
            ratio = torch.clamp(ratio, min=lo, max=hi)
        elif mode in ("sequence_mask", "token_mask"):
            lo, hi = -math.inf if lo is None else lo, math.inf if hi is None else hi
            ratio = ratio.masked_fill((ratio < lo) | (ratio > hi), 0.0)
        else:
            raise ValueError(f"unknown vllm_importance_sampling_mode {mode!r}")
        return {"importance_sampling_ratio": ratio, "sampling_per_token_logps": sampled}

    def _row_target(self, rows: int) -> int:
        """Rows after padding: the largest rank's count `rows`, rounded up to a multiple of steps_per_generation."""
        spg = self.args.steps_per_generation
        return -(-rows // spg) * spg

    # --- 4. prefix-shared log-probs (murphy_lab/prefix.py, docs/performance.md) -----------------------------------
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        """TRL's log-prob pass (loss, π_old, π_ref), with every shared prompt encoded once per group where that is
        exact; TRL's row-by-row pass otherwise (prefix_sharing off, images, MoE aux loss, unsupported model)."""
        plain = compute_aux_loss or any(v is not None for v in extra.values())  # MoE aux loss, images: TRL's pass
        if plain or not self._prefix_ok(model, input_ids, attention_mask, logits_to_keep):
            return super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                              batch_size, compute_entropy, compute_aux_loss, **extra)
        logps, entropy = self._shared_logps(model, input_ids, attention_mask, logits_to_keep, batch_size,
                                            compute_entropy)
        return logps, entropy, None

    def _shared_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy):
        def fused_head(m, inputs, labels):  # TRL's LM head (temperature, chunked log-softmax), as its row pass
            out = m(**inputs, labels=labels, fused_lm_head=True)
            return out.log_probs, out.entropy if compute_entropy else None

        with self.accelerator.autocast():
            return prefix.shared_logps(model, input_ids, attention_mask, logits_to_keep, score=fused_head,
                                       prefix_model=self.accelerator.unwrap_model(model), batch_size=batch_size)

    def _prepare_inputs(self, generation_batch):
        """TRL's `_prepare_inputs`, except that with prefix sharing the round is shuffled by prompt group, not by
        row, before TRL's split into steps_per_generation micro-batches, so siblings stay in one micro-batch and
        share their prompt. An optimizer step sums the same rows' losses either way (every accepted loss_type
        normalises by round-level counts, decision 3 in docs/training.md), so its gradient is unchanged."""
        if not (self.murphy.prefix_sharing and self.model.training):
            return super()._prepare_inputs(generation_batch)
        spg = self.args.steps_per_generation
        if self._step % (spg * self.num_iterations) == 0 or self._buffered_inputs is None:
            batch = self._generate_and_score_completions(generation_batch)
            self._buffered_inputs = split_tensor_dict(prefix.shuffle_groups(batch), spg)
        return self._buffered_inputs[self._step % spg]

    def _prefix_ok(self, model, input_ids, attention_mask, logits_to_keep) -> bool:
        """murphy.prefix_sharing, `prefix.supported` and, once per model, `_prefix_check` on its first batch."""
        if not self.murphy.prefix_sharing:
            return False
        verdicts = self.__dict__.setdefault("_prefix_verdicts", {})  # id(model) -> None (shares) or the reason not
        key = id(model)
        if key not in verdicts:
            reason = prefix.supported(self.accelerator.unwrap_model(model))
            if reason is None:
                reason = self._prefix_check(model, input_ids, attention_mask, logits_to_keep)
            verdicts[key] = reason
            if reason is not None:
                logger.warning(f"prefix sharing off for {type(self.accelerator.unwrap_model(model)).__name__}: "
                               f"{reason}; using TRL's row-by-row log-prob pass")
        return verdicts[key] is None

    def _prefix_check(self, model, input_ids, attention_mask, logits_to_keep) -> str | None:
        """None if the shared pass reproduces TRL's row pass on this batch, else why not."""
        bs, args = self.args.per_device_train_batch_size, (model, input_ids, attention_mask, logits_to_keep)
        with torch.no_grad():
            rows = super()._get_per_token_logps_and_entropies(*args, batch_size=bs)[0]
            try:
                shared = self._shared_logps(*args, bs, False)[0]
            except prefix.PrefixUnsupported as err:
                return str(err)
        return prefix.disagreement(rows, shared, attention_mask[:, -logits_to_keep:], self.args.bf16 or self.args.fp16)

    # --- logging -------------------------------------------------------------------------------------------------
    def _stats(self, trees: list[RolloutTree], kept: list[Node], padded: int) -> dict[str, float]:
        """Round statistics summed over all ranks: rewards, credit, advantages, what pruning kept."""
        allnodes = [n for t in trees for n in t.nodes()]
        turn1 = [n for t in trees for n in t.root.children]
        credits = [n.credit for n in kept if n.credit is not None]
        adv = [n.advantage for n in kept]
        sums = {
            "trees": len(trees),
            "trees_solved": sum(any(n.reward >= 1.0 for n in t.nodes()) for t in trees),
            "turn1": len(turn1), "turn1_reward": sum(n.reward for n in turn1),
            "turn1_solved": sum(n.reward >= 1.0 for n in turn1),
            "all": len(allnodes), "all_reward": sum(n.reward for n in allnodes),
            "credit_n": len(credits), "credit": sum(credits), "credit_sq": sum(c * c for c in credits),
            "adv_n": len(adv), "adv": sum(adv), "adv_sq": sum(a * a for a in adv), "adv_abs": sum(map(abs, adv)),
            "adv_zero": sum(abs(a) < 1e-8 for a in adv),
            "groups": sum(len(t.groups()) for t in trees), "groups_kept": sum(len(t.groups(kept_only=True)) for t in trees),
            "padded": padded,
            "completion_tokens": sum(len(n.meta["completion_ids"]) for n in allnodes),
        }
        if self.accelerator.num_processes > 1:
            vec = self.accelerator.gather(torch.tensor([list(sums.values())], dtype=torch.float64,
                                                       device=self.accelerator.device)).sum(0)
            sums = dict(zip(sums, vec.tolist()))
        s, div = sums, lambda a, b: a / b if b else 0.0

        def std(total, sq, n):
            return math.sqrt(max(div(sq, n) - div(total, n) ** 2, 0.0))

        return {
            "trees": s["trees"],
            "reward/turn1_mean": div(s["turn1_reward"], s["turn1"]),
            "reward/mean": div(s["all_reward"], s["all"]),
            "solved/turn1_frac": div(s["turn1_solved"], s["turn1"]),
            "solved/tree_frac": div(s["trees_solved"], s["trees"]),
            "credit/mean": div(s["credit"], s["credit_n"]),
            "credit/std": std(s["credit"], s["credit_sq"], s["credit_n"]),
            "advantage/mean": div(s["adv"], s["adv_n"]),
            "advantage/std": std(s["adv"], s["adv_sq"], s["adv_n"]),
            "advantage/abs_mean": div(s["adv_abs"], s["adv_n"]),
            "advantage/zero_frac": div(s["adv_zero"], s["adv_n"]),
            "groups/total": s["groups"], "groups/kept": s["groups_kept"],
            "trajectories/total": s["all"], "trajectories/kept": s["adv_n"], "rows/padding": s["padded"],
            "completions/mean_length": div(s["completion_tokens"], s["all"]),
        }

    def _dump_trees(self, trees: list[RolloutTree]) -> None:
        """Write this round's trees as JSON lines to output_dir/trees/step_NNNNNN[.rankR].jsonl (token ids dropped)."""
        folder = Path(self.args.output_dir) / "trees"
        folder.mkdir(parents=True, exist_ok=True)
        rank = f".rank{self.accelerator.process_index}" if self.accelerator.num_processes > 1 else ""
        path = folder / f"step_{self.state.global_step + 1:06d}{rank}.jsonl"
        with open(path, "w") as f:
            for tree in trees:
                for n in tree.root.walk():
                    for k in _TOKEN_KEYS:
                        n.meta.pop(k, None)
                tree.meta.update(step=self.state.global_step + 1, mode=self.murphy.mode)
                f.write(tree.to_json() + "\n")


class _TurnSampler:
    """`sample(prompts, n)` for build_trees, through TRL's `_generate_single_turn`; keeps token ids for the loss."""

    def __init__(self, trainer: MurphyTrainer, filler: str):
        self.trainer, self.filler = trainer, filler
        self.calls, self.seconds, self.pending = 0, 0.0, []

    def __call__(self, prompts: list[str], n: int) -> list[list[str]]:
        t0, tr = time.perf_counter(), self.trainer
        k = len(prompts)
        width = k  # prompts this call sends; equal on every rank (vLLM server gathers them, ZeRO-3 gathers params)
        if tr.accelerator.num_processes > 1:
            width = int(tr.accelerator.gather(torch.tensor([k], device=tr.accelerator.device)).max())
        self.calls += 1
        if width == 0:
            return []
        padded = list(prompts) + [self.filler] * (width - k)
        if tr.murphy.chat:
            padded = [[{"role": "user", "content": p}] for p in padded]
        prompt_ids = tr._tokenize_prompts(padded)[0]
        repeated = [list(p) for p in prompt_ids for _ in range(n)]  # each prompt n times in a row (width*n rows)
        completion_ids, logprobs = tr._generate_single_turn(repeated, None, {}, num_generations=n)
        completion_ids = [list(c) for c in completion_ids[: k * n]]  # drop the filler rows
        texts = tr.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        self.pending = [
            {"prompt_ids": repeated[j], "completion_ids": completion_ids[j],
             "sampling_logps": None if logprobs is None else list(logprobs[j])}
            for j in range(k * n)
        ]
        self.seconds += time.perf_counter() - t0
        return [texts[i * n : (i + 1) * n] for i in range(k)]

    def attach(self, turn: int, nodes: list[Node]) -> None:
        """build_trees' on_turn hook: the turn's new nodes arrive in the order their completions were sampled."""
        if len(nodes) != len(self.pending):
            raise RuntimeError(f"turn {turn}: {len(nodes)} nodes for {len(self.pending)} sampled completions")
        for node, rec in zip(nodes, self.pending):
            node.meta.update(rec)
        self.pending = []


class _TimedExecutor:
    """`run_many` that times the executor (the jobs already hold `task.program(code)`, built by build_trees)."""

    def __init__(self, executor: Any):
        self.executor, self.seconds = executor, 0.0

    def run_many(self, jobs: list) -> list:
        t0 = time.perf_counter()
        out = self.executor.run_many(jobs)
        self.seconds += time.perf_counter() - t0
        return out


class RunLog(TrainerCallback):
    """Writes output_dir/metrics.jsonl: one line per optimizer step (round statistics, timings, TRL's loss/KL)."""

    TRL_KEYS = ("loss", "grad_norm", "learning_rate", "kl", "entropy", "clip_ratio/region_mean")

    def __init__(self, trainer: MurphyTrainer):
        self.trainer, self.t0, self.line = trainer, 0.0, None

    def on_step_begin(self, args, state, control, **kw):
        self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self._flush(args)
        step_s = time.perf_counter() - self.t0
        stats, self.trainer.rollout_stats = self.trainer.rollout_stats, {}  # empty when the round was reused
        self.line = {"step": state.global_step, "generated": bool(stats), **stats, "time/step_s": step_s,
                     "time/optimization_s": step_s - stats.get("time/rollout_s", 0.0)}

    def on_log(self, args, state, control, logs=None, **kw):
        if self.line is not None and logs:
            self.line.update({f"trl/{k}": v for k, v in logs.items() if k in self.TRL_KEYS})
        self._flush(args)

    def on_train_end(self, args, state, control, **kw):
        self._flush(args)

    def _flush(self, args) -> None:
        if self.line is None:
            return
        if self.trainer.accelerator.is_main_process:
            with open(Path(args.output_dir) / "metrics.jsonl", "a") as f:
                f.write(json.dumps(self.line) + "\n")
        self.line = None


__all__ = ["MurphyTrainer", "RunLog", "answer_program", "task_dataset"]
