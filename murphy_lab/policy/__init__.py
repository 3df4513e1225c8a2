"""Policies: one `sample(prompts, n)` protocol, transformers / vLLM / scripted backends."""
