"""`ScriptedPolicy`: a hand-written policy for teaching and tests (no model at all)."""

from __future__ import annotations

from collections.abc import Callable

from murphy_lab.policy.base import Prompt, check_request


class ScriptedPolicy:
    """Completions from a plain function `fn(prompt, n) -> list[str]`.

    Counts its calls so tests can assert the batching contract (one `sample` call per turn):

        policy = ScriptedPolicy(lambda prompt, n: ["def f(x):\\n    return x\\n"] * n)
        policy.sample(["task A", "task B"], n=2)   # -> [[..., ...], [..., ...]]
        policy.calls, policy.prompts_seen           # -> 1, 2

    Sampling keywords (`temperature`, `seed`, ...) are accepted and ignored; `num_tokens` counts words.
    """

    def __init__(self, fn: Callable[[Prompt, int], list[str]]):
        if not callable(fn):
            raise TypeError(f"fn must be callable as fn(prompt, n) -> list[str], got {type(fn).__name__}")
        self.fn = fn
        self.calls = 0  # number of sample() calls = generation calls
        self.prompts_seen = 0  # prompts over all calls
        self.history: list[tuple[list, int]] = []  # (prompts, n) of every call

    def sample(self, prompts: list, n: int, **sampling) -> list[list[str]]:
        prompts = check_request(prompts, n)
        self.calls += 1
        self.prompts_seen += len(prompts)
        self.history.append((prompts, n))
        out = []
        for i, p in enumerate(prompts):
            outs = self.fn(p, n)
            if isinstance(outs, str) or len(outs) != n or not all(isinstance(o, str) for o in outs):
                raise ValueError(
                    f"fn returned {outs!r:.80} for prompt {i}; it must return a list of {n} strings"
                )
            out.append(list(outs))
        return out

    @staticmethod
    def num_tokens(text: str) -> int:
        return len(text.split())
