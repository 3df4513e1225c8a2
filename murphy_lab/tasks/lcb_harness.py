"""LiveCodeBench's way of running a program, reproduced: what lcb_runner's `testing_util.py` does to a candidate.

lcb_runner (github.com/LiveCodeBench/LiveCodeBench, `lcb_runner/evaluation/testing_util.py`, main at 16de2a1,
May 2025) does not run a stdin program as a script. `grade_stdio` rewrites it and calls it in its own process:

1. `clean_if_name`: a LAST statement ``if __name__ == '__main__':`` is replaced by its body (an earlier guard
   stays, and is false there: the module is named ``tmp_sol``);
2. `make_function`: the top-level imports are hoisted, everything else becomes the body of ``wrapped_function``
   (so a helper's ``global x`` does not see the ``x`` the top level assigns: it is a local of that function);
3. the module (the import header, the hoisted imports, the function) is loaded once, after `reliability_guard`
   set ``builtins.quit = None`` (the header's ``from builtins import *`` binds that None) and in a process whose
   ``sys.stdin`` is not the input (a `multiprocessing` child reads /dev/null): ``from sys import stdin`` binds it;
4. each test calls ``wrapped_function()`` with ``sys.stdin`` replaced by an in-memory object (``read()`` gives
   the whole input every call, ``readline()`` the next line without its newline, ``readlines()`` the lines
   without newlines, ``.buffer.read()`` the input as bytes, ``.buffer.readline()`` always the FIRST line) and
   ``sys.stdout`` by a `StringIO` whose text is the program's output: what reaches fd 1 directly (``os.write``),
   or through a stdout object bound before the call, is not seen; ``open(0)`` is the header's `io.open` on the
   real fd 0, which is not the input; `SystemExit` is swallowed (output so far counts, whatever the status).

`stdin_harness(code)` is a prelude that does all of this in the program process and then ends it: the executor
runs the task's `Program` as a plain IO program (a script on the test's stdin), the prelude reads that stdin
once, runs the candidate as above and prints only the capture. The candidate's own text stays the `Program`'s
code, which the executor compiles only after the prelude ran (`executor/protocol.py`): the prelude compiles the
wrapped candidate itself, as lcb_runner does (a top-level ``return`` is legal there), and a candidate that does
not compile ends as the executor's syntax verdict; tracebacks keep its line numbers (the rewritten module is
compiled from the candidate's syntax tree, so its line numbers are the candidate's own). The program runs with
lcb_runner's int-string limit (50,000 digits), and the executor compares its values under the same limit.

`functional_prelude(code)` serves LeetCode problems as `grade_call_based` does: the header before the program,
``quit = None``, and ONE ``Solution()`` for all of a problem's tests — or, when the text has no
``class Solution`` (lcb_runner's own test), the program's top-level function of that name.
"""

from __future__ import annotations

from murphy_lab.executor.protocol import SYNTAX_EXIT

# LiveCodeBench's harness puts these lines in front of every program (functional and stdin): lcb_runner's
# `import_string`, exactly. The starter code's signatures use typing names (List, Optional) without importing
# them, and LeetCode-style solutions use deque, Counter, heappush, inf, lru_cache, bisect_left, deepcopy, randint,
# `input = sys.stdin.readline` and deep recursion unimported.
IMPORT_HEADER = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\n"
    "from statistics import *\nfrom itertools import *\nfrom functools import *\nfrom operator import *\n"
    "from io import *\nfrom sys import *\nfrom json import *\nfrom builtins import *\nfrom typing import *\n"
    "import string\nimport re\nimport datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\n"
    "import math\nimport random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n"
)
SHARED = "_lcb_solution"  # the program-side name a functional test calls for the one shared Solution()

# `reliability_guard`'s changes that a program can observe in its own names (the rest of it disables os.kill,
# os.remove, subprocess.Popen, ... whose effects our sandbox forbids anyway): run before the header, so that the
# header's `from builtins import *` binds them as lcb_runner's does; and the int-string limit lcb_runner's
# testing_util.py raises at import (`sys.set_int_max_str_digits(50000)`), in whose process the program runs
INT_DIGITS = 50_000
_GUARD = (
    "import builtins as _b\n_b.quit = None\n_b.help = None\ndel _b\n"
    f"import sys as _s\n_s.set_int_max_str_digits({INT_DIGITS})\ndel _s\n"
)

# The stdin prelude. It runs as the program process's `__main__` (its names are not the candidate's: the
# candidate runs in its own module `tmp_sol`), and ends the process itself (SystemExit: the executor's script
# ending), so the Program's code part is compiled but never run as a script.
_STDIN = r'''
import ast as _ast
import builtins as _builtins
import io as _io
import linecache as _linecache
import os as _os
import sys as _sys
import traceback as _traceback
import types as _types

_CODE = __CODE__
_HEADER = __HEADER__
_FILE = "solution.py"


class _MockBuffer:  # lcb_runner's MockBuffer
    def __init__(self, inputs):
        self.inputs = inputs.encode("utf-8")

    def read(self, *args):
        return self.inputs

    def readline(self, *args):
        return self.inputs.split(b"\n")[0] + b"\n"


class _MockStdin:  # lcb_runner's MockStdinWithBuffer
    def __init__(self, inputs):
        self.inputs = inputs
        self._stringio = _io.StringIO(inputs)
        self.buffer = _MockBuffer(inputs)

    def read(self, *args):
        return self.inputs

    def readline(self, *args):
        return self._stringio.readline(*args)

    def readlines(self, *args):
        return self.inputs.split("\n")

    def __getattr__(self, name):
        return getattr(self._stringio, name)


class _MockFile(_io.StringIO):  # what `mock_open(read_data=inputs)` hands back: the input, writes dropped
    def write(self, s):
        return len(s)


def _module_tree(code):
    """clean_if_name, then make_function, on the syntax tree (the candidate's line numbers kept)."""
    tree = _ast.parse(code, _FILE)
    body = list(tree.body)
    if body and isinstance(body[-1], _ast.If) and _ast.unparse(body[-1].test).strip() == "__name__ == '__main__'":
        body = body[:-1] + body[-1].body  # the else branch goes, as in clean_if_name
    imports = [s for s in body if isinstance(s, (_ast.Import, _ast.ImportFrom))]
    rest = [s for s in body if not isinstance(s, (_ast.Import, _ast.ImportFrom))]
    header = _ast.parse(_HEADER).body
    for node in header:
        for sub in _ast.walk(node):
            if hasattr(sub, "lineno"):
                sub.lineno = sub.end_lineno = 0
    line = rest[0].lineno if rest else 1
    args = _ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=[])
    function = _ast.FunctionDef(name="wrapped_function", args=args, body=rest, decorator_list=[], returns=None,
                                type_comment=None, lineno=line, col_offset=0, end_lineno=line, end_col_offset=0)
    return _ast.Module(body=header + imports + [function], type_ignores=[])


def _report(error):
    """The traceback from the candidate's first frame on (what `python` would print for it), on stderr."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _FILE:
        tb = tb.tb_next
    if tb is None:  # e.g. a SyntaxError of the rewritten module: the error alone
        print("".join(_traceback.format_exception_only(type(error), error)), end="", file=_sys.stderr)
    else:
        _traceback.print_exception(type(error), error, tb)
    _sys.stderr.flush()


def _main():
    chunks = []
    while True:
        chunk = _os.read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    inputs = b"".join(chunks).decode("utf-8", "surrogateescape")
    out = _os.dup(1)
    null = _os.open(_os.devnull, _os.O_RDWR)
    _os.dup2(null, 0)  # open(0) is not the input there
    _os.dup2(null, 1)  # what reaches fd 1 directly is not seen there
    _sys.stdin = _io.TextIOWrapper(_io.FileIO(null, "r", closefd=False))  # a multiprocessing child's stdin
    _linecache.cache[_FILE] = (len(_CODE), None, _CODE.splitlines(True), _FILE)
    tmp_sol = _types.ModuleType("tmp_sol")
    try:  # the program wrapped, then compiled (a top-level `return` is legal inside wrapped_function)
        code = compile(_module_tree(_CODE), _FILE, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:  # the executor's syntax verdict
        text = "".join(_traceback.format_exception_only(type(error), error)).strip()
        _os.write(2, text.encode("utf-8", "replace") + b"\n")
        _os._exit(__SYNTAX_EXIT__)
    try:
        exec(code, tmp_sol.__dict__)
        method = tmp_sol.wrapped_function
    except BaseException as error:  # loading failed: lcb_runner's "Error during testing"
        _report(error)
        raise SystemExit(1) from None
    captured = _io.StringIO()
    captured.close = lambda *args: 1  # Capturing makes closing a no-op
    real_open, _builtins.open = _builtins.open, lambda *args, **kwargs: _MockFile(inputs)
    # call_method's patches of sys.stdin.read/readline/readlines start before its patch of sys.stdin: they land
    # on the stdin object of the loaded module (what `from sys import stdin` bound), not on the mock
    lines = iter(inputs.split("\n"))
    _sys.stdin.readline = lambda *args: next(lines)
    _sys.stdin.readlines = lambda *args: inputs.split("\n")
    _sys.stdin.read = lambda *args: inputs
    _sys.stdin, _sys.stdout = _MockStdin(inputs), captured
    try:
        method()
    except SystemExit:
        pass
    except BaseException as error:  # Runtime Error
        _sys.stdout = _sys.__stdout__
        _report(error)
        raise SystemExit(1) from None
    finally:
        _builtins.open = real_open
    text = captured.getvalue()
    _sys.stdout = _sys.__stdout__
    data = text.encode("utf-8", "surrogateescape")
    while data:
        data = data[_os.write(out, data) :]
    raise SystemExit(0)


_main()
'''


def stdin_harness(code: str) -> str:
    """The prelude that runs `code` as lcb_runner's `grade_stdio` runs one test, printing only what it captured.
    It wraps the code before compiling it (a program that does not compile ends as the executor's own syntax
    verdict: its error on stderr, `protocol.SYNTAX_EXIT`)."""
    template = _STDIN.replace("__HEADER__", repr(IMPORT_HEADER)).replace("__SYNTAX_EXIT__", str(SYNTAX_EXIT))
    return _GUARD + template.replace("__CODE__", repr(code))  # the code last: its text may spell a marker


def functional_prelude(code: str) -> str:
    """The prelude of a LeetCode program: the guard, the header, and `_lcb_solution()`, which gives the ONE object
    all of a problem's tests call (``Solution()``, made on the first call, or the module when the program's text
    has no ``class Solution``, lcb_runner's own test). A test's setup binds ``Solution = _lcb_solution``."""
    has_class = "class Solution" in code
    return (
        _GUARD
        + IMPORT_HEADER
        + f"\n_lcb_shared = []\n\n\ndef {SHARED}():\n"
        + "    if not _lcb_shared:\n"
        + (
            "        _lcb_shared.append(Solution())\n"
            if has_class
            else "        _lcb_shared.append(_lcb_module())\n"
        )
        + "    return _lcb_shared[0]\n\n\n"
        + "class _lcb_module:  # the program's top-level names, as attributes (lcb_runner: getattr(tmp_sol, f))\n"
        + "    def __getattr__(self, name):\n"
        + "        if name in globals():\n"
        + "            return globals()[name]\n"
        + "        raise AttributeError(name)\n"
    )


HARNESSES = {"livecodebench-stdin": stdin_harness, "livecodebench-functional": functional_prelude}
