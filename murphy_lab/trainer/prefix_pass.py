"""`PrefixSharing`: the trainer's log-prob pass with every shared prompt encoded once per group (docs/performance.md).

A mixin in front of TRL's GRPOTrainer (`class MurphyTrainer(PrefixSharing, GRPOTrainer)`). Two overrides:

- `_get_per_token_logps_and_entropies` (the loss, π_old and π_ref passes) calls `murphy_lab.prefix.shared_logps`
  where that is exact, and TRL's row-by-row pass otherwise (prefix_sharing off, images, MoE aux loss, a model or
  attention backend `prefix.supported` rejects, or a first batch on which the shared pass disagrees with TRL's);
- `_prepare_inputs` shuffles a round by prompt group, not by row, before TRL splits it into steps_per_generation
  micro-batches, so siblings stay in one micro-batch and share their prompt. An optimizer step sums the same rows'
  losses either way (every accepted loss_type normalises by round-level counts, decision 3 in docs/training.md),
  so its gradient is unchanged.

Length-sorted batches (`sort_by_length`): the shuffled groups are then put in order of length before the split, so
each micro-batch holds rows of similar length, and every log-prob pass runs chunks of similar length, each cut to
its own last unmasked column (`prefix.shared_logps(by_length=True)`): the same rows and the same loss and gradient
(tests/test_trainer_levers.py), less padding. On by default where the numbers already move with the batch's shape
(bf16 / fp16); off in fp32, where the order of rows would change the last bits of a run's committed numbers.
Where the loss is normalised by the round's counts (dapo, group_sum), the sorted round is then cut into micro-batches
of even cost (`prefix.split_cost`, `prefix.balanced_split`, `balance_cost`), rather than equal row counts: TRL's equal
split put the longest rows together in one micro-batch, whose loss pass set the run's peak memory.
"""

from __future__ import annotations

import logging

import torch
from trl.trainer.utils import split_tensor_dict

from murphy_lab import prefix

logger = logging.getLogger(__name__)


class PrefixSharing:
    """Prefix-shared log-probs for a GRPOTrainer subclass that has `self.murphy.prefix_sharing`."""

    # length-sorted micro-batches and chunks; None: on in bf16 / fp16 (docstring)
    sort_by_length: bool | None = None
    # length-sorted micro-batches of even cost (`prefix.split_cost`) rather than equal rows, where exact
    # (`prefix.balanced_split`): the longest rows no longer share one micro-batch, which set the round's peak memory
    balance_cost: bool = True
    # rows of the one-time check of the shared pass against TRL's (`_prefix_check`): the batch's first whole groups
    check_rows: int = 8

    def _by_length(self) -> bool:
        on = self.sort_by_length
        return bool(self.args.bf16 or self.args.fp16) if on is None else bool(on)

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **extra,
    ):
        """TRL's log-prob pass (loss, π_old, π_ref), with every shared prompt encoded once per group where exact."""
        # MoE aux loss, images: TRL's pass
        plain = compute_aux_loss or any(v is not None for v in extra.values())
        if plain or not self._prefix_ok(model, input_ids, attention_mask, logits_to_keep):
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **extra,
            )
        logps, entropy = self._shared_logps(
            model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy
        )
        return logps, entropy, None

    def _shared_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy):
        # TRL's LM head (temperature, chunked log-softmax), as its row pass
        def fused_head(m, inputs, labels):
            out = m(**inputs, labels=labels, fused_lm_head=True)
            return out.log_probs, out.entropy if compute_entropy else None

        with self.accelerator.autocast():
            return prefix.shared_logps(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                score=fused_head,
                prefix_model=self.accelerator.unwrap_model(model),
                batch_size=batch_size,
                by_length=self._by_length(),
            )

    def _prepare_inputs(self, generation_batch):
        """TRL's `_prepare_inputs`, except that with prefix sharing the round is shuffled by prompt group."""
        if not (self.murphy.prefix_sharing and self.model.training):
            return super()._prepare_inputs(generation_batch)
        spg = self.args.steps_per_generation
        if self._step % (spg * self.num_iterations) == 0 or self._buffered_inputs is None:
            batch = prefix.shuffle_groups(self._generate_and_score_completions(generation_batch))
            parts = None
            # micro-batches of similar length (one micro-batch: nothing to sort)
            if self._by_length() and spg > 1:
                batch = prefix.sort_groups(batch)
                # of even cost, where the loss is normalised by the round's counts (dapo; group_sum is dapo)
                if self.balance_cost and self.loss_type == "dapo":
                    parts = prefix.balanced_split(batch, spg)
            self._buffered_inputs = parts or split_tensor_dict(batch, spg)
        return self._buffered_inputs[self._step % spg]

    def _prefix_ok(self, model, input_ids, attention_mask, logits_to_keep) -> bool:
        """murphy.prefix_sharing, `prefix.supported` and, once per model, `_prefix_check` on its first batch."""
        if not self.murphy.prefix_sharing:
            return False
        # id(model) -> None (shares) or the reason not
        verdicts = self.__dict__.setdefault("_prefix_verdicts", {})
        key = id(model)
        if key not in verdicts:
            reason = prefix.supported(self.accelerator.unwrap_model(model))
            if reason is None:
                reason = self._prefix_check(model, input_ids, attention_mask, logits_to_keep)
            verdicts[key] = reason
            if reason is not None:
                logger.warning(
                    f"prefix sharing off for {type(self.accelerator.unwrap_model(model)).__name__}: "
                    f"{reason}; using TRL's row-by-row log-prob pass"
                )
        return verdicts[key] is None

    def _prefix_check(self, model, input_ids, attention_mask, logits_to_keep) -> str | None:
        """None if the shared pass reproduces TRL's row pass on this batch's first groups, else why not.

        Both passes run on the first whole groups of at most `check_rows` rows, cut to their last unmasked column:
        the check compares the same computation as on the whole batch, at a fraction of its cost (on the real
        0.5B model the whole 44-row first batch took 470-1,135 CPU-s, on every process start: docs/real_model.md)."""
        p = input_ids.size(1) - logits_to_keep
        rows = prefix.first_groups(
            prefix.prefix_groups(input_ids[:, :p], attention_mask[:, :p]), self.check_rows
        )
        ids, mask = input_ids[rows], attention_mask[rows]
        end = max(p + 1, int(mask.any(0).nonzero().max()) + 1)  # causal: later columns change nothing before
        bs, args = self.args.per_device_train_batch_size, (model, ids[:, :end], mask[:, :end], end - p)
        with torch.no_grad():
            rows = super()._get_per_token_logps_and_entropies(*args, batch_size=bs)[0]
            try:
                shared = self._shared_logps(*args, bs, False)[0]
            except prefix.PrefixUnsupported as err:
                return str(err)
        return prefix.disagreement(rows, shared, mask[:, p:end], self.args.bf16 or self.args.fp16)


__all__ = ["PrefixSharing"]
