"""The `Policy` protocol every backend implements, and the checks and chat helpers they share.

A policy turns a batch of prompts into `n` completions each, in ONE call (MURPHY grows a whole turn of every tree
with one generation call; generation dominates the cost of a step):

    policy.sample(prompts, n, max_new_tokens=..., temperature=..., top_p=..., seed=None) -> list[list[str]]
    # len(out) == len(prompts), len(out[i]) == n

A prompt is a plain string or a list of chat messages ({"role": ..., "content": ...}). A backend whose tokenizer has
a chat template wraps a plain string into one user message; a message list is passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

Prompt = Any  # str, or list[dict[str, str]] chat messages


@runtime_checkable
class Policy(Protocol):
    """Anything with `sample(prompts, n, **kw) -> list[list[str]]` (n completions per prompt, in prompt order)."""

    def sample(
        self,
        prompts: list,
        n: int,
        *,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> list[list[str]]: ...


def check_request(prompts: Any, n: Any) -> list:
    """Validate a `sample` request; return the prompts as a list."""
    if isinstance(prompts, (str, dict)) or not isinstance(prompts, Sequence):
        raise TypeError(
            f"prompts must be a list of prompts (str or chat messages), got {type(prompts).__name__}"
        )
    for i, p in enumerate(prompts):
        if not (isinstance(p, str) or is_messages(p)):
            raise TypeError(
                f"prompts[{i}] must be a str or a list of {{'role', 'content'}} messages, got {p!r:.80}"
            )
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return list(prompts)


def check_sampling(max_new_tokens: Any, temperature: Any, top_p: Any) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if not isinstance(temperature, (int, float)) or temperature < 0:
        raise ValueError(f"temperature must be a number >= 0 (0 = greedy), got {temperature!r}")
    if not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise ValueError(f"top_p must lie in (0, 1], got {top_p!r}")


def is_messages(p: Any) -> bool:
    return isinstance(p, (list, tuple)) and all(
        isinstance(m, dict) and "role" in m and "content" in m for m in p
    )


def as_messages(prompt: Prompt) -> list[dict]:
    """A plain-string prompt becomes one user message; a message list is passed through."""
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)


def render(
    prompt: Prompt,
    tokenizer: Any,
    use_chat_template: bool | None = None,
    system: str | None = None,
    **template_kw: Any,
) -> str:
    """The text a model is conditioned on.

    With a chat template (auto: when the tokenizer has one), the prompt goes through
    `apply_chat_template(..., add_generation_prompt=True)`, after `system` (if given) is put in front as a system
    message unless the prompt already starts with one. Without one, a string is used as is and a message list
    is flattened to its contents joined by blank lines (plain-text models such as the toy model).
    """
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if use_chat_template is None:
        use_chat_template = has_template
    if use_chat_template:
        if not has_template:
            raise ValueError("use_chat_template=True but the tokenizer has no chat_template")
        messages = as_messages(prompt)
        if system and not (messages and messages[0]["role"] == "system"):
            messages = [{"role": "system", "content": system}] + messages
        return tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **template_kw
        )
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(str(m["content"]) for m in prompt)


def truncate_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """Cut a completion at the first occurrence of any stop string (the stop string itself is dropped)."""
    if not stop:
        return text
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=len(text))
    return text[:cut]


def count_tokens(policy: Any, text: str) -> int:
    """Tokens in `text` as the policy counts them (`policy.num_tokens`), else whitespace-separated words."""
    fn = getattr(policy, "num_tokens", None)
    return int(fn(text)) if fn is not None else len(text.split())


class TextPolicy:
    """What the tokenizer-backed policies share: sampling defaults, chat rendering, token counting, usage.

    Subclasses call `_setup(...)` in `__init__` once `self.tokenizer` exists and implement `_sample(prompts, n,
    max_new_tokens, temperature, top_p, seed) -> (completions, token counts)`; `sample` checks the request, applies
    the per-call overrides to the defaults and keeps the counts.
    """

    def sample(
        self,
        prompts: list,
        n: int,
        *,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> list[list[str]]:
        """`n` completions for every prompt, `out[i][j]` = j-th completion of `prompts[i]` (the Policy protocol)."""
        prompts = check_request(prompts, n)
        out, self.last_token_counts = self._sample(
            prompts, n, *self._resolve(max_new_tokens, temperature, top_p), seed
        )
        return out

    def _sample(
        self, prompts: list, n: int, max_new_tokens: int, temperature: float, top_p: float, seed: int | None
    ) -> tuple[list[list[str]], list[list[int]]]:
        raise NotImplementedError

    def _setup(
        self, max_new_tokens, temperature, top_p, use_chat_template, chat_template_kwargs, system_prompt, stop
    ):
        check_sampling(max_new_tokens, temperature, top_p)
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self.use_chat_template = use_chat_template
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.system_prompt = system_prompt
        self.stop = list(stop or [])
        self.calls = 0  # number of generate calls so far
        self.usage = {"prompts": 0, "completions": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self.last_token_counts: list[list[int]] = []  # completion lengths (tokens) of the last `sample` call

    def _resolve(self, max_new_tokens, temperature, top_p) -> tuple:
        """Per-call sampling values: the argument where given, else the policy's default; checked."""
        max_new_tokens = self.max_new_tokens if max_new_tokens is None else max_new_tokens
        temperature = self.temperature if temperature is None else temperature
        top_p = self.top_p if top_p is None else top_p
        check_sampling(max_new_tokens, temperature, top_p)
        return max_new_tokens, temperature, top_p

    def render(self, prompt: Any) -> str:
        """The exact text the model is conditioned on for `prompt` (chat template applied where there is one)."""
        return render(
            prompt, self.tokenizer, self.use_chat_template, self.system_prompt, **self.chat_template_kwargs
        )

    def num_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
