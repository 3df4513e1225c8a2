"""The toy policy's tokenizer: every constant is one token, and so is every fixed phrase of the world's texts.

With one token per character, a refinement prompt is ~170 tokens and using a constant means copying its digits,
in order, from the right place. Here a number of one or two digits is one token (as the tokenizers of real code
models keep short numbers whole), and so are the phrases the prompts, the programs and the executor's feedback
repeat (`assert f(1) - f(0) == 1*`, `def f(x):\n    return x*`), so

    #task: x* / ? / + / 12 / ### Previous attempt: / def f(x):\n    return x* / 3 / + / 12 / ### Feedback: / ...
        ... / assert f(1) - f(0) == 1* / 6 / # output: / 3 / (via: check(f)) / ### Fixed code:

is 17 tokens, a completion 5, and a repair is the copy of ONE token whose place a fixed phrase marks: SFT, RL
steps and evaluation are several times cheaper than with characters (docs/toy_world.md §3). Any other text (a
traceback, a program the policy garbles) still tokenizes, one character per token: the vocabulary is the printable
ASCII characters plus these pieces (`murphy_lab.policy.tiny.char_tokenizer(pieces=...)`).

    tok = toy_tokenizer()
    tok.tokenize("def f(x):\n    return x*6+12\n")   # ['def f(x):\n    return x*', '6', '+', '12', '\n']
"""

from __future__ import annotations

from murphy_lab.policy.tiny import char_tokenizer

NUMBERS = tuple(f"{n:02d}" for n in range(100))  # "00".."99" (single digits are characters already)

# What the world's texts repeat, each one token: the prompt templates (murphy_lab.prompts), the programs
# (world.program and the corpus's broken ones), and the executor's feedback for them (murphy_lab.executor).
PHRASES = (
    "#task: x*",
    "\n### Code:\n",
    "\n### Previous attempt:\n",
    "\n### Feedback:\n",
    "\n### Fixed code:\n",
    "def f(x):\n    return x*",
    "    return x*",
    "    return x",
    "def f(x)",
    "def f(x",
    "Tests failed:\n",
    "assert f(0) == ",
    "assert f(1) - f(0) == 1*",
    "  # output: ",
    "  (via: check(f))",
    "All tests passed.",
    "The program does not compile:\n",
    'File "solution.py", line ',
    "SyntaxError: ",
    "invalid syntax",
    "'(' was never closed",
    "expected ':'",
    "    ",
)
PIECES = PHRASES + NUMBERS


def toy_tokenizer():
    """The toy policy's `PreTrainedTokenizerFast` (saved with the policy; `AutoTokenizer` loads it back)."""
    return char_tokenizer(pieces=PIECES)
