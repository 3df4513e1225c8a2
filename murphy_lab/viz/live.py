"""Showing a model's generation live: each token printed as the model writes it (notebook 08's answer).

    with stream_tokens(policy):            # a TransformersPolicy
        completion = policy.sample([prompt], n=1)[0][0]

The policy's own sampling path runs unchanged (its prompt rendering, decoding settings and stop rule); for the
duration of the block its model's `generate` is given a transformers `TextStreamer`, which prints the new text as
it is decoded. One sequence at a time (a streamer follows one row): a greedy call with one prompt and n = 1.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def stream_tokens(policy: Any) -> Iterator[None]:
    """Print every token `policy` generates inside the block as it is generated (see the module docstring)."""
    from transformers import TextStreamer

    model = policy.model
    generate = model.generate
    streamer = TextStreamer(policy.tokenizer, skip_prompt=True, skip_special_tokens=True)
    model.generate = functools.partial(generate, streamer=streamer)
    try:
        yield
    finally:
        del model.generate  # the instance attribute goes; the class's generate is found again
        print(flush=True)


__all__ = ["stream_tokens"]
