"""`VLLMPolicy`: sampling through vLLM (GPU runs). vLLM is imported lazily, so the package works without it.

One `sample(prompts, n)` call sends one request per prompt with `SamplingParams(n=n)` to ONE `LLM.generate`; prefix
caching is on, so the G2 refinements of a node and the many prompts that share a task statement reuse their KV cache
(the paper's rollout setup: "TRL + vLLM with prefix caching").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from murphy_lab.policy.base import TextPolicy, check_sampling, truncate_at_stop


class VLLMPolicy(TextPolicy):
    """A `Policy` over `vllm.LLM(model_path, enable_prefix_caching=True, ...)`.

    Args:
        model_path: a local folder or hub id vLLM can load.
        max_new_tokens, temperature, top_p: sampling defaults (overridable per call; temperature 0 = greedy).
        top_k: passed to SamplingParams when given (vLLM's default: no top-k).
        dtype: passed to vLLM ("auto" by default).
        gpu_memory_utilization: fraction of GPU memory vLLM may take.
        use_chat_template, chat_template_kwargs, system_prompt, stop: as in `TransformersPolicy`.
        llm: an already built `vllm.LLM` (e.g. shared with a trainer), used instead of building one.
        **llm_kw: further `vllm.LLM` keywords (tensor_parallel_size, max_model_len, seed, ...).
    """

    def __init__(
        self,
        model_path: str,
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int | None = None,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.85,
        use_chat_template: bool | None = None,
        chat_template_kwargs: dict | None = None,
        system_prompt: str | None = None,
        stop: Sequence[str] | None = None,
        llm: Any = None,
        **llm_kw: Any,
    ):
        check_sampling(max_new_tokens, temperature, top_p)
        if llm is None:
            try:
                import vllm
            except ImportError as e:  # pragma: no cover - depends on the machine
                raise ImportError(
                    "VLLMPolicy needs vLLM: pip install 'murphy-lab[gpu]' on a CUDA machine"
                ) from e
            llm = vllm.LLM(
                model=str(model_path),
                enable_prefix_caching=True,  # shared task prefixes and G2 repeats hit the KV cache
                dtype=dtype,
                gpu_memory_utilization=gpu_memory_utilization,
                **llm_kw,
            )
        self.llm, self.model_path = llm, str(model_path)
        self.tokenizer = llm.get_tokenizer()
        self.top_k = top_k
        self._setup(
            max_new_tokens, temperature, top_p, use_chat_template, chat_template_kwargs, system_prompt, stop
        )

    def _sample(self, prompts, n, max_new_tokens, temperature, top_p, seed):
        """One request per prompt, all requests in one `LLM.generate`."""
        from vllm import SamplingParams

        params = [
            SamplingParams(
                n=n,
                max_tokens=max_new_tokens,
                temperature=float(temperature),
                top_p=float(top_p),
                # per-request seed: reproducible, different per prompt
                seed=None if seed is None else seed + i,
                **({} if self.top_k is None else {"top_k": self.top_k}),
            )
            for i in range(len(prompts))
        ]
        outputs = self.llm.generate([self.render(p) for p in prompts], params, use_tqdm=False)
        self.calls += 1
        out, counts = [], []
        for req in outputs:  # vLLM returns requests in input order
            out.append([truncate_at_stop(c.text, self.stop) for c in req.outputs])
            counts.append([len(c.token_ids) for c in req.outputs])
            self.usage["prompt_tokens"] += len(req.prompt_token_ids or []) * n
        self.usage["prompts"] += len(prompts)
        self.usage["completions"] += sum(len(o) for o in out)
        self.usage["completion_tokens"] += sum(map(sum, counts))
        return out, counts
