"""Tiny causal LMs and character-level tokenizers built locally (no hub download is possible on these machines).

Tests, smoke runs and the toy world save them with `save_pretrained` and load them back through the same
`from_pretrained` path that real checkpoints take:

    path = build_tiny_model("/tmp/tiny")                       # random-init Qwen2-style LM + char tokenizer
    model = AutoModelForCausalLM.from_pretrained(path); tok = AutoTokenizer.from_pretrained(path)
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from pathlib import Path

# Every printable ASCII character plus newline and tab: enough for Python source, feedback text and prompts.
DEFAULT_CHARS = string.printable.replace("\x0b", "").replace("\x0c", "").replace("\r", "")
SPECIAL = {"pad": "<pad>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"}


def char_tokenizer(chars: str = DEFAULT_CHARS, chat_template: str | None = None, pieces: Sequence[str] = ()):
    """A character-level `PreTrainedTokenizerFast`: one token per character, plus <pad> <s> </s> <unk>.

    Left padding (what batched generation needs). Pass `chat_template` (a Jinja string) to exercise chat paths.
    `pieces`: multi-character strings that are one token each wherever they occur (the longest match wins; the toy
    world makes its fixed phrases and its numbers one token, murphy_lab/toy/tokenizer.py).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL.values())}
    longest_first = sorted(dict.fromkeys(p for p in pieces if len(p) > 1), key=len, reverse=True)
    for tok in [*dict.fromkeys(chars), *longest_first]:
        vocab.setdefault(tok, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk"]))
    split = "".join(f"{re.escape(p)}|" for p in longest_first) + r"[\s\S]"  # a piece, else one character
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(split), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=SPECIAL["pad"],
        bos_token=SPECIAL["bos"],
        eos_token=SPECIAL["eos"],
        unk_token=SPECIAL["unk"],
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    if chat_template is not None:
        tok.chat_template = chat_template
    return tok


def tiny_config(
    vocab_size: int, hidden: int = 32, layers: int = 2, heads: int = 4, max_positions: int = 2048, **kw
):
    """A small OLMo-2 config (the paper's OLMo-2-7B family) with `hidden`-wide layers.

    OLMo-2 because transformers maps its model type to the generic tokenizer class, so our character tokenizer
    comes back from `AutoTokenizer.from_pretrained` unchanged (a Qwen2 config would re-derive a byte-level one).
    """
    from transformers import Olmo2Config

    return Olmo2Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        **kw,
    )


def build_tiny_model(
    path: str | Path,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
    chat_template: str | None = None,
    overwrite: bool = False,
    pieces: Sequence[str] = (),
) -> str:
    """Build a random-init tiny LM with a char tokenizer (`pieces`: see `char_tokenizer`), save both to `path`,
    return the path as str.

    Deterministic for a given seed. Skips the work when `path` already holds a model (unless `overwrite`).
    """
    import torch
    from transformers import AutoModelForCausalLM

    path = Path(path)
    if (path / "config.json").exists() and not overwrite:
        return str(path)
    tok = char_tokenizer(chat_template=chat_template, pieces=pieces)
    cfg = tiny_config(
        len(tok),
        hidden=hidden,
        layers=layers,
        heads=heads,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
