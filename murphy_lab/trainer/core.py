"""`MurphyTrainer`: TRL's GRPOTrainer with MURPHY's rollout tree in place of flat groups (docs/training.md).

TRL's rollout hooks cannot express a tree (rows are fixed at batch x num_generations, advantages are computed over
contiguous blocks), so we override `_generate_and_score_completions` and reuse the rest. One round:

    rows from TRL's sampler (each task prompt repeated G1 times)        tasks = rows[::G1]
    -> grow_trees: rollout.task_trees, per turn ONE call of TRL's `_generate_single_turn` (sampling.TurnSampler)
       and ONE executor batch                                                                     (§3.1)
    -> score_trees: scoring.score_tree, the one prune -> credit -> advantages pipeline (InterP / IntraP, MaRS / MeRS,
       GRPO in every kept group; GRPO-MT's chains and single-turn GRPO by their own rules)     (§3.2-§3.4)
    -> build_rows: one row per kept (prompt, completion) pair, in the dict TRL's `_compute_loss` reads

`grow_trees`, `score_trees`, `build_rows` and `dump_round` are the hooks a baseline overrides (ReVeal grows chains
and writes per-token advantages: murphy_lab/baselines/reveal/trainer.py); the round around them, the row padding,
π_old / π_ref and the loss are shared. The prefix-shared log-prob pass is `prefix_pass.PrefixSharing`; the run
lifecycle (train / resume / metrics.jsonl) is `murphy_lab.trainer.run`.

The private TRL names we rely on (`_generate_single_turn`, `_tokenize_prompts`, `_get_per_token_logps_and_entropies`,
`_compute_loss`, `_prepare_inputs`, `split_tensor_dict`) change between releases: they appear only in this
package, trl is pinned to 1.16.0 and tests/test_trainer.py holds a contract test. TRL's `split_tensor_dict` silently
drops rows when the row count is not a multiple of `steps_per_generation`: we pad with zero-mask rows, exact for
every loss_type (decision 3 in docs/training.md).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from trl import GRPOTrainer
from trl.models import unwrap_model_for_generation
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import pad, use_adapter

from murphy_lab import executor as executor_pkg
from murphy_lab.config import MurphyConfig
from murphy_lab.modes import Mode
from murphy_lab.modes import mode as get_mode
from murphy_lab.policy.hf import CodeBlockClosed, contiguous_head, generate_groups
from murphy_lab.policy.packaged import defaults_for, resolve_model
from murphy_lab.prompts import answer_extractor, first_prompt, token_budget
from murphy_lab.rollout import task_trees
from murphy_lab.scoring import score_trees
from murphy_lab.trainer import memory
from murphy_lab.trainer.metrics import RunLog, tree_stats
from murphy_lab.trainer.prefix_pass import PrefixSharing
from murphy_lab.trainer.sampling import TimedExecutor, TurnSampler, tasks_of_rows
from murphy_lab.tree import Node, RolloutTree

# per-node token data, stripped before trees/ dump
_TOKEN_KEYS = ("prompt_ids", "completion_ids", "sampling_logps")


def task_dataset(tasks: list) -> Any:
    """The TRL dataset: one row per task, `prompt` = the turn-1 prompt q(1), `task_id` to find the Task again."""
    return Dataset.from_list([{"prompt": first_prompt(t.prompt), "task_id": t.task_id} for t in tasks])


def group_token_weights(trees: list[RolloutTree], mode: str | Mode) -> dict[int, float]:
    """id(node) -> the weight of each of its completion tokens in the paper's objective for one tree:

        J(tree) = Σ_{g ∈ groups} (1/|g|) Σ_{o ∈ g} (1/|o|) Σ_{t ∈ o} ℓ_t     (the sum of per-group GRPO objectives,
                                                                           MURPHY's J^pruned)

    so w(v) = 1 / (|g| · |o|), with the groups g and their sequences o the mode's (`Mode.loss_groups`): GRPO's and
    MURPHY's g are the kept members of a response group that have an advantage and o = one node's completion
    (|o| tokens; GRPO is then DeepSeekMath's GRPO); GRPO-MT's g is the tree's G chains and o a whole chain (its
    turns' completions together), since its advantage is the chain's. The trainer divides by the round's trees
    (`loss_type="group_sum"`: the mean over tasks of the sum over a tree's groups).
    """
    groups_of = get_mode(mode).loss_groups
    out: dict[int, float] = {}
    for tree in trees:
        for group in groups_of(tree):
            for seq in group:
                # |o|: the sequence's generated tokens
                tokens = sum(len(n.meta["completion_ids"]) for n in seq)
                out.update({id(n): 1.0 / (len(group) * max(tokens, 1)) for n in seq})  # w = 1 / (|g| · |o|)
    return out


def _unused_reward(completions, **kwargs):  # TRL requires a reward function; MurphyTrainer never calls it
    return [0.0] * len(completions)


class MurphyTrainer(PrefixSharing, GRPOTrainer):
    """GRPOTrainer whose rollouts are MURPHY trees. `args` is TRL's GRPOConfig (`MurphyConfig.to_grpo_config`).

    Args:
        model: path / hub id (TRL loads it; with beta > 0 TRL rebuilds the reference from the same path), or
            a packaged model's name (a real model PyPI packages ship, cached as a folder: murphy_lab.policy.packaged).
        args: GRPOConfig with `num_generations == murphy.g1`.
        murphy: the MurphyConfig (mode, credit, budgets, G1/G2/S).
        tasks: list of murphy_lab.tasks.Task; rewards from `hidden_tests` (or visible, per `murphy.reward_tests`).
        executor: anything with `run_many(jobs)`; default `murphy_lab.executor.Executor(**murphy.executor)`.
        stop_after_code: end each rollout completion at its closed code block (`policy.hf.CodeBlockClosed`, the
            evaluation's rule); None: the model's own rule (`policy.packaged.defaults_for`: on for the code model).
        kwargs: GRPOTrainer's (e.g. `peft_config`; default with `murphy.use_peft`: `murphy.peft_config()`).

    The transformers rollouts (`_generate_single_turn`) prefill each distinct prompt once for its rows
    (`policy.hf.generate_groups`; `prefill_once = False`: every row prefills its prompt, as TRL does).
    """

    # the rollouts prefill each distinct prompt once (exact: tests/test_trainer_levers.py)
    prefill_once = True

    def __init__(
        self,
        model,
        args,
        murphy: MurphyConfig,
        tasks: list,
        executor: Any = None,
        stop_after_code: bool | None = None,
        **kwargs: Any,
    ):
        murphy.validate()
        if args.num_generations != murphy.g1:
            raise ValueError(
                f"args.num_generations ({args.num_generations}) must equal murphy.g1 ({murphy.g1})"
            )
        ids = [t.task_id for t in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("tasks: task_id values must be unique")
        self.murphy = murphy
        self.tasks_by_id = {t.task_id: t for t in tasks}
        self.executor = executor_pkg.Executor(**murphy.executor) if executor is None else executor
        if murphy.use_peft and kwargs.get("peft_config") is None:  # LoRA: TRL wraps the model in a PeftModel
            kwargs["peft_config"] = murphy.peft_config()
        model = resolve_model(model)
        own = defaults_for(model)  # the model's own generation rules, as its evaluation applies them
        self.stop_after_code = bool(
            own.get("stop_after_code", False) if stop_after_code is None else stop_after_code
        )
        # rows that ended leave the batch (policy.hf)
        self.compact_rows = bool(own.get("compact_rows", False))
        super().__init__(
            model=model, reward_funcs=_unused_reward, args=args, train_dataset=task_dataset(tasks), **kwargs
        )
        self.rollout_stats: dict[str, float] = {}  # the latest round's statistics (read by RunLog)
        contiguous_head(self.model)  # rollouts and TRL's generate score the last position (policy.hf)
        self.run_log = RunLog(self)
        self.add_callback(self.run_log)

    # --- one round: the hooks in order ---------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict]) -> dict[str, Any]:
        t0 = time.perf_counter()
        tasks = tasks_of_rows(inputs, self.num_generations, self.tasks_by_id)  # G1 rows per task
        grown, sampler, execute = self._grow(tasks)
        t_grown = time.perf_counter()
        self.score_trees(grown)
        batch, stats = self.build_rows(grown)
        t_end = time.perf_counter()
        stats.update(
            {
                "time/generation_s": sampler.seconds,
                "time/execution_s": execute.seconds,
                "time/scoring_s": t_end - t_grown,
                "time/rollout_s": t_end - t0,
            }
        )
        self.rollout_stats = stats
        for k, v in stats.items():
            self._metrics["train"][k].append(v)  # also reaches TensorBoard / W&B through TRL's report_to
        self.dump_round(grown)
        memory.release()  # what decoding freed, before the loss passes allocate theirs (trainer/memory.py)
        return batch

    def _grow(self, tasks: list) -> tuple[list, TurnSampler, TimedExecutor]:
        """`grow_trees` with a fresh sampler and timed executor; every rank joins every turn's generation call."""
        sampler = TurnSampler(self, filler=self.filler_prompt(tasks))
        execute = TimedExecutor(self.executor)
        grown = self.grow_trees(tasks, sampler, execute)
        sampler.join_remaining(self.round_calls(), self.later_group_size())
        return grown, sampler, execute

    # --- hook 1: grow the trees with TRL's generation and our executor --------------------------------------------
    def grow_trees(self, tasks: list, sample: TurnSampler, execute: TimedExecutor) -> list[RolloutTree]:
        m = self.murphy  # the config fixes G2 = 1 for grpo_mt and S = 1 for grpo (modes.py)
        positions = getattr(self.model.config, "max_position_embeddings", None)
        fit = token_budget(
            self.processing_class, positions, m.max_completion_length, m.chat, m.chat_template_kwargs
        )
        return task_trees(
            tasks,
            sample,
            execute,
            g1=m.g1,
            g2=m.g2,
            turns=m.turns,
            reward_tests=m.reward_tests,
            budget=fit,
            # the reading evaluation uses too (prompts.read_answer)
            extract=answer_extractor(tasks),
            on_turn=sample.attach,
        )

    def filler_prompt(self, tasks: list) -> Any:
        """What a rank sends in place of prompts it does not have (the calls must match across ranks)."""
        return first_prompt(tasks[0].prompt)

    def round_calls(self) -> int:
        """Generation calls every rank makes per round (S turns)."""
        return self.murphy.turns

    def later_group_size(self) -> int:
        """Samples per prompt after turn 1 (G2): what a rank that finished early joins the others' calls with."""
        return self.murphy.g2

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        """TRL's generation of one turn; on the plain transformers path (no vLLM, continuous batching or images) our
        `policy.hf.generate_groups`: each distinct prompt prefilled once for its rows (`TurnSampler` sends each
        prompt `num_generations` times in a row) and, with `stop_after_code`, each row ended at its closed code
        block. A completion keeps its tokens up to and including its first EOS (TRL's rule) or its closing fence."""
        if self.use_vllm or self.use_transformers_continuous_batching or images or multimodal_fields:
            return super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        n = num_generations
        grouped = (
            self.prefill_once
            and len(prompt_ids) % n == 0
            and all(list(prompt_ids[i]) == list(prompt_ids[i - i % n]) for i in range(len(prompt_ids)))
        )
        prompts = [torch.tensor(p) for p in (prompt_ids[::n] if grouped else prompt_ids)]
        ids = pad(
            prompts,
            padding_value=self._tokenizer.pad_token_id,
            padding_side="left",
            pad_to_multiple_of=self.pad_to_multiple_of,
        ).to(self.accelerator.device)
        mask = pad(
            [torch.ones_like(p) for p in prompts],
            padding_value=0,
            padding_side="left",
            pad_to_multiple_of=self.pad_to_multiple_of,
        ).to(self.accelerator.device)
        stop = CodeBlockClosed(self._tokenizer, ids.size(1)) if self.stop_after_code else None
        with (
            unwrap_model_for_generation(
                self.model_wrapped,
                self.accelerator,
                gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                generation_kwargs=self.generation_kwargs,
                gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
            ) as unwrapped,
            torch.no_grad(),
            self._dist.summon_full_params(self.model_wrapped, recurse=False),
        ):
            seqs = generate_groups(
                unwrapped,
                ids,
                mask,
                n if grouped else 1,
                stop=stop,
                compact=self.compact_rows,
                generation_config=self.generation_config,
            )  # (rows, P + T)
        ends = set(self.eos_token_ids)
        out = []
        for i, row in enumerate(seqs[:, ids.size(1) :].tolist()):
            length = stop.ended.get(i, len(row)) if stop is not None else len(row)
            eos = next((t for t, tok in enumerate(row[:length]) if tok in ends), None)
            out.append(row[: length if eos is None else eos + 1])
        return out, None

    # --- hook 2: credit and advantages (pure functions over the tree) ----------------------------------------------
    def score_trees(self, trees: list[RolloutTree]) -> None:
        # prune -> credit -> advantages per tree (one task's trees together for a rule whose advantages
        # compare them, GiGPO's anchor states), or a baseline's rule (scoring.py)
        score_trees(trees, self.murphy)

    # --- hook 3: the rows TRL's _compute_loss reads, and the round's statistics ------------------------------------
    def build_rows(self, trees: list[RolloutTree]) -> tuple[dict[str, Any], dict[str, float]]:
        nodes = [n for tree in trees for n in tree.nodes(kept_only=True) if n.advantage is not None]
        weights = None
        # the paper's aggregation: per group, summed, mean over trees
        if self.murphy.loss_type == "group_sum":
            per_token, trees_in_round = (
                group_token_weights(trees, self.murphy.mode),
                self._gather_total(len(trees)),
            )
            # mean over the round's trees (all ranks)
            weights = [per_token[id(n)] / trees_in_round for n in nodes]
        batch = self._batch(nodes, weights)
        return batch, tree_stats(trees, nodes, len(batch["advantages"]) - len(nodes), self.accelerator)

    # --- hook 4: what the round leaves on disk ---------------------------------------------------------------------
    def dump_round(self, trees: list[RolloutTree]) -> None:
        """This round's trees as JSON lines in trees/step_NNNNNN[.rankR].jsonl (token ids dropped)."""
        with open(self.round_file("trees"), "w") as f:
            for tree in trees:
                for n in tree.root.walk():
                    for k in _TOKEN_KEYS:
                        n.meta.pop(k, None)
                tree.meta.update(step=self.state.global_step + 1, mode=self.murphy.mode)
                f.write(tree.to_json() + "\n")

    def round_file(self, folder: str) -> Path:
        """output_dir/<folder>/step_NNNNNN[.rankR].jsonl for the step this round feeds (the folder is created)."""
        path = Path(self.args.output_dir) / folder
        path.mkdir(parents=True, exist_ok=True)
        rank = f".rank{self.accelerator.process_index}" if self.accelerator.num_processes > 1 else ""
        return path / f"step_{self.state.global_step + 1:06d}{rank}.jsonl"

    # --- rows -----------------------------------------------------------------------------------------------------
    def _batch(self, nodes: list[Node], weights: list[float] | None = None) -> dict[str, Any]:
        """TRL's generation batch for these rows; `weights`: each row's per-token weight in the loss, for
        loss_type="group_sum" (`group_token_weights` / trees in the round), which TRL's 'dapo' then sums."""
        if (self.murphy.loss_type == "group_sum") != (weights is not None):
            raise ValueError(
                "loss_type='group_sum' weighs every row by its group: build_rows passes `weights` "
                "exactly when the config asks for it"
            )
        device, pad_id = self.accelerator.device, self._tokenizer.pad_token_id
        rows = len(nodes)
        ends = set(self.eos_token_ids) | {pad_id}  # TRL's mask_truncated_completions: no EOS/pad at the end
        truncated = [
            self.mask_truncated_completions
            and (not n.meta["completion_ids"] or n.meta["completion_ids"][-1] not in ends)
            for n in nodes
        ]
        tokens = sum(len(n.meta["completion_ids"]) for n, cut in zip(nodes, truncated) if not cut)
        # (ranks, 2): real rows and completion tokens of every rank
        counts = self._gather_counts(rows, tokens)
        # equal on every rank, a multiple of steps_per_generation
        target = self._row_target(int(counts[:, 0].max()))
        # copies with a zero completion mask (decision 3 in docs/training.md)
        fill = [nodes[0]] * (target - rows)
        prompts = [torch.tensor(n.meta["prompt_ids"], dtype=torch.long) for n in nodes + fill]
        comps = [torch.tensor(n.meta["completion_ids"], dtype=torch.long) for n in nodes + fill]
        ptm = self.pad_to_multiple_of
        prompt_ids = pad(prompts, padding_value=pad_id, padding_side="left", pad_to_multiple_of=ptm).to(
            device
        )
        prompt_mask = pad(
            [torch.ones_like(p) for p in prompts],
            padding_value=0,
            padding_side="left",
            pad_to_multiple_of=ptm,
        ).to(device)  # (B, P)
        completion_ids = pad(comps, padding_value=pad_id, padding_side="right", pad_to_multiple_of=ptm).to(
            device
        )
        # (B, C)
        completion_mask = pad(
            [torch.ones_like(c) for c in comps], padding_value=0, padding_side="right", pad_to_multiple_of=ptm
        ).to(device)
        completion_mask[rows:] = 0  # filler rows
        completion_mask[:rows][torch.tensor(truncated, dtype=torch.bool, device=device)] = 0
        advantages = torch.zeros(target, device=device)  # (B,)
        advantages[:rows] = torch.tensor([n.advantage for n in nodes], dtype=torch.float32)
        out = {
            "prompt_ids": prompt_ids,
            "prompt_mask": prompt_mask,
            "completion_ids": completion_ids,
            "completion_mask": completion_mask,
            "advantages": advantages,
            "num_items_in_batch": counts[:, 1].sum().to(device),  # completion tokens, all ranks
            # real rows, all ranks (read by _compute_loss)
            "num_rows_in_batch": counts[:, 0].sum().to(device),
        }
        if weights is not None:
            # TRL's dapo loss is Σ_tokens ℓ · mask / (tokens of the round) and `tool_mask` multiplies its mask, so a
            # row weight τ = w · tokens makes it Σ_v w(v) Σ_t ℓ_t: the paper's sum of per-group GRPO objectives
            tau = torch.zeros(target, device=device)  # (B,): filler rows weigh nothing
            tau[:rows] = torch.tensor(weights, dtype=torch.float32) * counts[:, 1].sum().clamp(min=1).float()
            out["tool_mask"] = tau[:, None].expand_as(completion_mask).contiguous()  # (B, C)
        out.update(self._logps(prompt_ids, prompt_mask, completion_ids, completion_mask, nodes + fill))
        return out

    def _gather_total(self, n: int) -> int:
        """The sum of `n` over all ranks (the round's trees, for loss_type="group_sum")."""
        if self.accelerator.num_processes == 1:
            return n
        return int(self.accelerator.gather(torch.tensor([n], device=self.accelerator.device)).sum())

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
        if (
            self.loss_type not in ("grpo", "dr_grpo")
            or "num_rows_in_batch" not in inputs
            or not self.model.training
        ):
            return loss
        b_mb = inputs["advantages"].size(0)
        b_real = inputs["num_rows_in_batch"].float() / (
            self.accelerator.num_processes * self.args.steps_per_generation
        )
        scale = b_mb / b_real.clamp(min=1e-8)
        if (self._entropy_bonus_enabled or self.aux_loss_enabled) and not torch.isclose(
            scale, torch.ones_like(scale)
        ):
            raise ValueError(
                f"loss_type={self.loss_type!r} with filler rows cannot rescale TRL's entropy bonus or MoE "
                "aux loss with the policy loss; use loss_type='dapo'"
            )
        return loss * scale

    def _logps(
        self, prompt_ids, prompt_mask, completion_ids, completion_mask, nodes
    ) -> dict[str, torch.Tensor]:
        """old_per_token_logps (when TRL would compute them), importance_sampling_ratio (vLLM), ref_per_token_logps."""
        out: dict[str, torch.Tensor] = {}
        ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (B, P+C)
        attn = torch.cat([prompt_mask, completion_mask], dim=1)  # (B, P+C)
        keep, bs = completion_ids.size(1), self.args.per_device_train_batch_size
        is_correction = self.use_vllm and self.vllm_importance_sampling_correction
        generate_every = self.args.steps_per_generation * self.num_iterations
        with (
            torch.no_grad(),
            disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs),
        ):
            # same rule as TRL: π_old differs from π_θ when a round spans optimizer steps (num_iterations > 1, ...)
            if self.args.gradient_accumulation_steps % generate_every != 0 or is_correction:
                # (B, C)
                out["old_per_token_logps"] = self._get_per_token_logps_and_entropies(
                    self.model, ids, attn, keep, batch_size=bs
                )[0]
            if is_correction:
                out.update(self._is_ratio(out["old_per_token_logps"], completion_mask, nodes))
            if self.beta != 0.0:
                if self.ref_model is not None:
                    ref = self._get_per_token_logps_and_entropies(
                        self.ref_model, ids, attn, keep, batch_size=bs
                    )[0]
                else:  # PEFT: the base model is the adapter-free model (as TRL does)
                    unwrapped = self.accelerator.unwrap_model(self.model)
                    with use_adapter(
                        unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None
                    ):
                        ref = self._get_per_token_logps_and_entropies(
                            self.model, ids, attn, keep, batch_size=bs
                        )[0]
                out["ref_per_token_logps"] = ref  # (B, C)
        return out

    def _is_ratio(self, old: torch.Tensor, mask: torch.Tensor, nodes: list[Node]) -> dict[str, torch.Tensor]:
        """vLLM importance-sampling correction π_θ_old / π_vLLM, computed exactly as TRL 1.16 does."""
        sampled = [
            torch.tensor([math.nan if x is None else x for x in (n.meta.get("sampling_logps") or [])])
            for n in nodes
        ]
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


__all__ = ["MurphyTrainer", "RunLog", "group_token_weights", "task_dataset"]
